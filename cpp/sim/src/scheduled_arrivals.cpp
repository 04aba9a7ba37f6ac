// Scheduled arrivals on the virtual clock (see arrival_gate.h and sim_control.h): the executor's side of the
// control channel, and the loop's wait when a client schedules arrivals. The loop then starts each iteration
// at a simulated time, not when the host gets round to it: back to back while requests are active, else at the
// earliest queued arrival; and only once no arrival up to that time can still come (every lease bound lies
// beyond it). A request joins the first iteration starting at or after its arrival, as a real request that
// arrives mid-iteration waits for the next one.
#include "executor_impl.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace tensorrt_llm::executor
{

namespace
{

sim::TimePoint fromNs(std::int64_t ns)
{
    return sim::TimePoint(std::chrono::duration_cast<sim::Clock::duration>(std::chrono::nanoseconds(ns)));
}

} // namespace

std::int64_t Executor::Impl::controlNowNs() const
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(mClock.now().time_since_epoch()).count();
}

IdType Executor::Impl::enqueueAt(Request const& request, std::int64_t arrivalNs, std::optional<IdType> afterRequest,
    std::optional<double> followUpDelayMs)
{
    throwIfShutdown("Shutdown called, cannot enqueue requests");
    if (!mClock.isVirtual())
    {
        throw std::runtime_error("scheduled arrivals need the virtual clock (simulation.json \"clock\": \"virtual\")");
    }
    auto const sampling = request.getSamplingConfig();
    if (sampling.getBeamWidth() == 1 && sampling.getNumReturnSequences().value_or(1) > 1)
    {
        throw std::invalid_argument("scheduled arrivals take requests with one sequence (numReturnSequences 1)");
    }
    if (followUpDelayMs && !(*followUpDelayMs >= 0.0))
    {
        throw std::invalid_argument("a follow-up delay must be a non-negative number of milliseconds");
    }
    IdType id = 0;
    {
        std::lock_guard<std::mutex> lock(mQueueMutex);
        if (mStopRequested)
        {
            throw std::runtime_error("Shutdown called, cannot enqueue requests");
        }
        if (mSettings.maxQueueSize && *mSettings.maxQueueSize > 0 && mQueuedSequences + 1 > *mSettings.maxQueueSize)
        {
            throw std::runtime_error("Maximum queue size of " + std::to_string(*mSettings.maxQueueSize)
                                     + " has been reached, please try again later");
        }
        mArrivals.activate();
        mScheduledMode.store(true);
        if (afterRequest && !mArrivals.hasEnded(*afterRequest))
        {
            // The follow-up of a request still running: it joins the queue when that request ends (noteEnded),
            // so the loop need not wait for the client to send it.
            id = mNextId++;
            mArrivals.chain(*afterRequest, sim::ChainedFollowUp{id, request});
            if (followUpDelayMs)
            {
                mArrivals.expectFollowUp(id, *followUpDelayMs);
            }
            return id;
        }
        sim::TimePoint const arrival = afterRequest ? mArrivals.takeFollowUp(*afterRequest) : fromNs(arrivalNs);
        id = mNextId++;
        if (followUpDelayMs)
        {
            mArrivals.expectFollowUp(id, *followUpDelayMs);
        }
        queueArrival(QueuedRequest{id, {}, request, arrival, 1, true});
    }
    mQueueCv.notify_one();
    return id;
}

void Executor::Impl::queueArrival(QueuedRequest queued)
{
    // In arrival order; equal arrivals keep the order they were enqueued in.
    auto const position = std::find_if(mQueue.begin(), mQueue.end(),
        [&](QueuedRequest const& other) { return other.enqueueTime > queued.enqueueTime; });
    mQueue.insert(position, std::move(queued));
    mQueuedSequences += 1;
}

std::uint64_t Executor::Impl::holdArrivals(std::int64_t boundNs)
{
    throwIfShutdown("Shutdown called");
    if (!mClock.isVirtual())
    {
        throw std::runtime_error("scheduled arrivals need the virtual clock (simulation.json \"clock\": \"virtual\")");
    }
    std::lock_guard<std::mutex> lock(mQueueMutex);
    mArrivals.activate();
    mScheduledMode.store(true);
    return mArrivals.hold(fromNs(boundNs));
}

void Executor::Impl::releaseArrivals(std::uint64_t key)
{
    {
        std::lock_guard<std::mutex> lock(mQueueMutex);
        mArrivals.release(key);
    }
    mQueueCv.notify_one();
}

void Executor::Impl::noteEnded(std::vector<Response> const& responses)
{
    if (!mScheduledMode.load())
    {
        return;
    }
    auto const now = mClock.now();
    std::lock_guard<std::mutex> lock(mQueueMutex);
    for (auto const& response : responses)
    {
        if (response.hasError() || response.getResult().isFinal)
        {
            // A chained follow-up arrives now, as the client would have sent it (loop thread: no wake-up needed).
            if (auto released = mArrivals.ended(response.getRequestId(), now))
            {
                queueArrival(QueuedRequest{
                    released->followUp.id, {}, std::move(released->followUp.request), released->arrival, 1, true});
            }
        }
    }
}

bool Executor::Impl::waitForScheduledWork(
    std::unique_lock<std::mutex>& lock, IterationInput& input, std::vector<Response>& responses)
{
    while (true)
    {
        // When the next iteration would start: back to back while anything is active (or a cancellation is to
        // be handled), else at the earliest queued arrival; never before the clock.
        std::optional<sim::TimePoint> start;
        if (!mActive.empty() || !mCancelled.empty())
        {
            start = mClock.now();
        }
        else if (!mQueue.empty())
        {
            start = std::max(mClock.now(), mQueue.front().enqueueTime);
        }
        // Disaggregated serving: a KV transfer in flight ends at its own simulated time, when the request it
        // brings starts decoding (an iteration then starts to take it, as for an arrival).
        std::optional<sim::TimePoint> transferDue;
        if (mTransceiver.hasPendingTransfer())
        {
            if (auto const next = mTransceiver.nextEvent())
            {
                transferDue = std::max(mClock.now(), *next);
                start = start ? std::min(*start, *transferDue) : *transferDue;
            }
        }
        auto const bound = mArrivals.bound();
        // A request arriving exactly at `start` would join this iteration: the start must lie before every bound.
        bool const allowed = start && (mStopRequested || !bound || *start < *bound);
        if (!allowed)
        {
            if (mStopRequested && mActive.empty() && mQueue.empty())
            {
                return false;
            }
            mLoopIdle = mActive.empty();
            mQueueCv.wait(lock);
            mLoopIdle = false;
            continue;
        }
        mClock.advanceTo(*start);
        // A cancelled follow-up still chained to a running request ends now, as a queued one would.
        for (IdType const id : mCancelled)
        {
            if (auto followUp = mArrivals.unchain(id))
            {
                queueArrival(QueuedRequest{followUp->id, {}, std::move(followUp->request), *start, 1, true});
            }
        }
        terminateQueued(*start, responses);
        takeCancelledActive(input);
        fetchRequests(input, start);
        if (!mActive.empty() || !input.fetched.empty() || !input.cancelledActive.empty()
            || (transferDue && *transferDue <= *start))
        {
            return true;
        }
        if (!keepWaiting(lock, responses))
        {
            return false;
        }
    }
}

} // namespace tensorrt_llm::executor
