// The simulated executor's background loop. Each iteration: take cancellations and new requests off the
// queue, end cancelled and timed-out requests, validate and activate new ones, schedule a batch, spend the
// iteration's simulated time, advance every scheduled sequence by a prompt chunk or one token, and publish
// responses and statistics. Admission (queue, validation, activation) is in request_admission.cpp, the
// per-iteration statistics in iteration_stats.cpp.
#include "executor_impl.h"

#include <algorithm>
#include <utility>

namespace tensorrt_llm::executor
{

namespace
{

constexpr char kForwardError[] = "Encountered an error in forwardAsync function: ";

/// True when prompt + generated ends with `word` (a stop sequence may start inside the prompt).
bool endsWithWord(VecTokens const& prompt, VecTokens const& generated, VecTokens const& word)
{
    std::size_t const total = prompt.size() + generated.size();
    if (word.empty() || word.size() > total)
    {
        return false;
    }
    for (std::size_t i = 0; i < word.size(); ++i)
    {
        std::size_t const index = total - word.size() + i;
        TokenIdType const token = index < prompt.size() ? prompt[index] : generated[index - prompt.size()];
        if (token != word[i])
        {
            return false;
        }
    }
    return true;
}


/// Guided decoding: the grammar picks this step's token for `sequence` (deterministic per request seed, sequence
/// and step) and consumes it. Returns whether it was a stop id the grammar accepted (the sequence ends with
/// END_ID), or nullopt after ending the sequence because the grammar engine failed.
std::optional<bool> guidedStep(sim::Sequence& sequence, TokenIdType& token)
{
    auto const& request = *sequence.request;
    std::uint64_t const seed = request.seed.value_or(0) ^ static_cast<std::uint64_t>(sequence.sequenceIndex);
    try
    {
        token = sequence.grammar->chooseToken(seed);
        sequence.grammar->consume(token);
        return sequence.grammar->isFinished();
    }
    catch (std::exception const& e)
    {
        sequence.grammarError = e.what();
        sequence.finish(FinishReason::kNOT_FINISHED);
        return std::nullopt;
    }
}

} // namespace

void Executor::Impl::executionLoop()
{
    while (true)
    {
        std::vector<Response> responses;
        try
        {
            IterationInput input;
            if (!waitForWork(input, responses))
            {
                break;
            }
            runIteration(input, responses);
        }
        catch (std::exception const& e)
        {
            failEverything(kForwardError + std::string(e.what()), responses);
        }
        catch (...)
        {
            failEverything(kForwardError + std::string("unknown exception"), responses);
        }
        // The iteration's KV-cache events become visible to readers at its end.
        mKvEvents->flush();
    }
}

void Executor::Impl::failEverything(std::string const& message, std::vector<Response>& responses) noexcept
{
    // As in TensorRT-LLM, an error inside an iteration fails the active requests, not the executor. Should even
    // that fail (memory exhausted), the loop carries on rather than take the process down.
    try
    {
        failRequests(message, [](sim::Sequence const&) { return true; }, responses);
        publish(responses);
        recordStats(sim::BatchPlan{}, IterationCounters{}, 0, 0.0, SequenceList{});
    }
    catch (...)
    {
    }
}

void Executor::Impl::runIteration(IterationInput& input, std::vector<Response>& responses)
{
    bool const wasActive = !mActive.empty();
    // Back to back, an iteration starts at the previous one's modelled end (real clock: its deadline), so a
    // late wake-up delays one step without shifting every later one.
    auto const iterStart = input.start ? *input.start : mClock.iterationStart(wasActive);
    IterationCounters counters;
    SequenceList finished;
    // RequestStats' scheduled and paused describe this iteration only (TensorRT-LLM reports the requests its
    // scheduler picked or paused in the iteration): clear last iteration's before anything ends this one early.
    for (auto const& sequence : mActive)
    {
        sequence->scheduled = false;
        sequence->paused = false;
    }
    terminateActive(input.cancelledActive, iterStart, responses, finished);
    activate(input.fetched, iterStart, counters, responses);
    // Disaggregated serving: held contexts released, transfers started or done (cache_transceiver.h).
    std::vector<std::unique_ptr<sim::Sequence>> transferred;
    double const clockScale = mClock.isVirtual() ? 1.0 : mSim.timeScale;
    bool const transfersChanged
        = mTransceiver.service(iterStart, clockScale, input.cancelledActive, mPool, responses, transferred);
    for (auto& sequence : transferred)
    {
        insertActive(std::move(sequence));
    }

    auto const& faults = mSim.faults;
    std::size_t failed = 0;
    if (faults.failAllFromIteration && mIteration >= *faults.failAllFromIteration)
    {
        std::string const message = kForwardError + std::string("simulated forward failure at iteration ")
                                    + std::to_string(mIteration) + " (simulation.json faults.fail_all_from_iteration)";
        failed += failRequests(message, [](sim::Sequence const&) { return true; }, responses);
    }
    if (faults.failPromptToken)
    {
        TokenIdType const token = *faults.failPromptToken;
        std::string const message = kForwardError + std::string("simulated failure of a request whose prompt ")
                                    + "contains token " + std::to_string(token)
                                    + " (simulation.json faults.fail_prompt_token)";
        failed += failRequests(
            message,
            [token](sim::Sequence const& sequence)
            {
                auto const& prompt = sequence.request->prompt;
                return !sequence.everScheduled && std::find(prompt.begin(), prompt.end(), token) != prompt.end();
            },
            responses);
    }
    if (mActive.empty())
    {
        if (wasActive || failed > 0 || transfersChanged)
        {
            // The last active requests ended without another forward pass: report the now idle executor.
            recordStats(sim::BatchPlan{}, counters, 0, 0.0, finished);
        }
        publish(responses);
        return;
    }
    // Terminations and rejections do not wait for the forward pass.
    publish(responses);

    std::vector<sim::Sequence*> order;
    for (auto const& sequence : mActive)
    {
        order.push_back(sequence.get());
    }
    auto const numActive = static_cast<SizeType32>(order.size());
    mSpeculator.planStep(order);
    sim::BatchPlan const plan = mScheduler.schedule(order);
    double loraCopyBytes = 0.0;
    for (sim::Sequence* sequence : plan.scheduled)
    {
        if (!sequence->everScheduled)
        {
            sequence->everScheduled = true;
            sequence->perf.timingMetrics.firstScheduledTime = iterStart;
        }
        // ---- LoRA: a device-cache miss copies the adapter before the request first runs ----
        loraCopyBytes += std::exchange(sequence->request->loraCopyBytes, 0.0);
    }

    // The simulated forward pass: a fixed time when simulation.json sets iteration_ms, else the timing model's.
    auto work = sim::describeBatch(plan, mEngine.maxAttentionWindow);
    work.loraCopyBytes = loraCopyBytes;
    auto const timed = mTiming.iteration(work);
    double const simulatedMs = mSim.iterationMs ? *mSim.iterationMs : timed.totalMs;
    // ---- Speculative decoding: the drafter's share of the iteration (none with a fixed iteration_ms) ----
    mSpecTally.drafterMs = mSim.iterationMs ? 0.0 : timed.drafterMs;
    double const stallMs = faults.stallIteration && *faults.stallIteration == mIteration ? faults.stallMs : 0.0;
    auto const iterEnd = mClock.spend(iterStart, simulatedMs, stallMs);
    for (sim::Sequence* sequence : plan.scheduled)
    {
        bool const generating = sequence->state == sim::SequenceState::kGeneration;
        advance(*sequence, iterEnd);
        if (generating)
        {
            mSpecTally.addGeneration(*sequence);
        }
    }
    collectResults(responses, finished);
    recordStats(plan, counters, numActive, simulatedMs + stallMs, finished);
    ++mIteration;
    if (mActive.empty())
    {
        // Like TensorRT-LLM, when the active list empties, one more entry shows the idle executor (nothing active,
        // nothing scheduled). It carries the next iteration's number, which the next forward pass reuses.
        recordStats(sim::BatchPlan{}, IterationCounters{}, 0, 0.0, SequenceList{});
    }
    // The iteration's statistics are recorded before its responses go out: a client that has seen a request's
    // final finds every entry up to it (and the count of queued requests does not depend on how fast it reacts).
    publish(responses);
}

bool Executor::Impl::waitForWork(IterationInput& input, std::vector<Response>& responses)
{
    std::unique_lock<std::mutex> lock(mQueueMutex);
    while (true)
    {
        if (mScheduledMode.load())
        {
            return waitForScheduledWork(lock, input, responses);
        }
        if (mActive.empty())
        {
            // Idle: sleep until a request, a cancellation or shutdown arrives (no polling), or (disaggregated
            // serving) until another executor takes held blocks, a transfer ends or held blocks expire.
            mLoopIdle = true;
            auto const woken = [this]()
            { return !mQueue.empty() || !mCancelled.empty() || mStopRequested || mTransceiver.hasMail(); };
            auto const next = mTransceiver.nextEvent();
            if (next && mClock.isVirtual() && mTransceiver.hasPendingTransfer())
            {
                // Nothing runs meanwhile: virtual time moves straight to the transfer's end.
                mClock.advanceTo(*next);
            }
            else if (next)
            {
                mQueueCv.wait_for(lock, std::max(sim::Clock::duration::zero(), *next - mClock.now()), woken);
                mClock.catchUpWithWall();
            }
            else
            {
                mQueueCv.wait(lock, woken);
            }
            mLoopIdle = false;
            if (mScheduledMode.load())
            {
                return waitForScheduledWork(lock, input, responses);
            }
        }
        terminateQueued(mClock.now(), responses);
        takeCancelledActive(input);
        if (!mClock.isVirtual())
        {
            // The iteration starts on schedule (back to back: at the previous deadline; idle: at the first
            // arrival), and only what arrived by then joins it: a request that arrived while the thread was
            // waking up late waits for the next iteration, as it would behind a punctual executor. The host's
            // wake-up latency then changes no batch.
            input.start = mActive.empty() && !mQueue.empty() ? mClock.idleStart(mQueue.front().enqueueTime)
                                                             : mClock.iterationStart(!mActive.empty());
        }
        fetchRequests(input, input.start);
        auto const next = mTransceiver.nextEvent();
        if (!mActive.empty() || !input.fetched.empty() || !input.cancelledActive.empty() || mTransceiver.hasMail()
            || (next && *next <= mClock.now()))
        {
            return true;
        }
        if (!keepWaiting(lock, responses))
        {
            return false;
        }
    }
}

void Executor::Impl::takeCancelledActive(IterationInput& input)
{
    for (auto const& sequence : mActive)
    {
        if (mCancelled.count(sequence->request->id) > 0)
        {
            input.cancelledActive.insert(sequence->request->id);
        }
    }
    // Generation-only requests waiting for their KV cache are active too.
    for (IdType const id : mCancelled)
    {
        if (mTransceiver.isIncoming(id))
        {
            input.cancelledActive.insert(id);
        }
    }
    mCancelled.clear();
}

bool Executor::Impl::keepWaiting(std::unique_lock<std::mutex>& lock, std::vector<Response>& responses)
{
    if (!responses.empty())
    {
        lock.unlock();
        publish(responses);
        lock.lock();
    }
    return !(mStopRequested && mQueue.empty());
}


void Executor::Impl::terminateActive(std::unordered_set<IdType> const& cancelled, sim::TimePoint now,
    std::vector<Response>& responses, SequenceList& finished)
{
    for (auto const& sequence : mActive)
    {
        auto const& request = *sequence->request;
        std::optional<FinishReason> reason;
        if (cancelled.count(request.id) > 0)
        {
            reason = FinishReason::kCANCELLED;
        }
        else if (request.deadline && now >= *request.deadline)
        {
            reason = FinishReason::kTIMED_OUT;
        }
        if (!reason)
        {
            continue;
        }
        sequence->terminate(*reason);
        if (auto result = sim::makeResult(*sequence))
        {
            responses.emplace_back(request.id, std::move(*result), request.clientId);
        }
    }
    retireFinished(finished);
}


template <typename Select>
std::size_t Executor::Impl::failRequests(
    std::string const& message, Select const& select, std::vector<Response>& responses)
{
    std::unordered_set<IdType> failed;
    for (auto const& sequence : mActive)
    {
        if (select(*sequence) && failed.insert(sequence->request->id).second)
        {
            responses.emplace_back(sequence->request->id, message, sequence->request->clientId);
        }
    }
    if (failed.empty())
    {
        return 0;
    }
    // An error Response is terminal: all of the request's sequences leave without Results.
    for (auto it = mActive.begin(); it != mActive.end();)
    {
        if (failed.count((*it)->request->id) > 0)
        {
            // A failed request's blocks are not trusted for reuse.
            mPool.release(**it, false);
            it = mActive.erase(it);
        }
        else
        {
            ++it;
        }
    }
    return failed.size();
}

void Executor::Impl::advance(sim::Sequence& sequence, sim::TimePoint iterEnd)
{
    auto const& request = *sequence.request;
    auto& perf = sequence.perf;
    perf.iter = mIteration;
    perf.kvCacheMetrics.numTotalAllocatedBlocks = sequence.allocTotalBlocks;
    perf.kvCacheMetrics.numNewAllocatedBlocks = sequence.allocNewBlocks;
    perf.kvCacheMetrics.numReusedBlocks = sequence.reusedBlocks;
    perf.kvCacheMetrics.numMissedBlocks = sequence.missedBlocks;
    perf.kvCacheMetrics.kvCacheHitRate = sim::hitRate(sequence.reusedBlocks, sequence.missedBlocks);

    if (sequence.state == sim::SequenceState::kContext)
    {
        sequence.contextPosition += sequence.chunkTokens;
        if (sequence.contextPosition < sequence.contextLength)
        {
            return;
        }
        // Its prompt blocks are reusable from now on, while it generates.
        mPool.storeContext(sequence);
        // The iteration that completes the prompt also samples the first token.
        sequence.state = sim::SequenceState::kGeneration;
    }

    ++sequence.decodingIter;
    if (!perf.firstIter)
    {
        perf.firstIter = mIteration;
        perf.timingMetrics.firstTokenTime = iterEnd;
    }
    if (sequence.stepDraftDepth > 0)
    {
        // A verification step: the accepted draft prefix plus the token sampled after it. Tokens come from the
        // same generator as without speculation, so greedy speculative output equals the plain output.
        auto const& drafts = request.externalDraftTokens;
        bool const external = !drafts.empty() && sequence.numGenerated() == 0;
        SizeType32 const drafted = sequence.stepDraftDepth;
        SizeType32 const probabilistic = external ? 0 : mSpeculator.acceptedDrafts(sequence);
        SizeType32 accepted = 0;
        std::size_t const before = sequence.generated[0].size();
        while (emitToken(sequence))
        {
            auto const emitted = static_cast<SizeType32>(sequence.generated[0].size() - before);
            bool const draftMatched = external
                ? emitted <= drafted && sequence.generated[0].back() == drafts[static_cast<std::size_t>(emitted - 1)]
                : emitted <= probabilistic;
            if (!draftMatched)
            {
                break;
            }
            accepted = emitted;
        }
        // A draft accepted but cut by an end or stop token, or by maxTokens, is not counted as emitted.
        auto const emittedTotal = static_cast<SizeType32>(sequence.generated[0].size() - before);
        accepted = std::min(accepted, std::max<SizeType32>(0, emittedTotal - 1));
        sequence.totalDraftTokens += drafted;
        sequence.acceptedDraftTokens += accepted;
        mSpecTally.addVerification(drafted, accepted, emittedTotal);
        if (sequence.isFinished())
        {
            perf.lastIter = mIteration;
            perf.timingMetrics.lastTokenTime = iterEnd;
        }
        return;
    }
    emitToken(sequence);
    // A context-only request ends with its first token; its KV cache waits for the generation side.
    if (request.requestType == RequestType::REQUEST_TYPE_CONTEXT_ONLY && !sequence.isFinished())
    {
        sequence.finish(FinishReason::kNOT_FINISHED);
    }
    if (sequence.isFinished())
    {
        perf.lastIter = mIteration;
        perf.timingMetrics.lastTokenTime = iterEnd;
    }
}

bool Executor::Impl::emitToken(sim::Sequence& sequence)
{
    auto const& request = *sequence.request;
    // Reused across calls (loop thread only): one allocation per token added up to a tenth of a virtual-clock run.
    thread_local std::vector<sim::TokenGenerator::Step> steps;
    steps.clear();
    for (std::size_t beam = 0; beam < sequence.generated.size(); ++beam)
    {
        steps.push_back(mTokens.next(sequence, beam));
    }
    // Guided decoding: the grammar picks the token; a stop id it accepts ends the sequence.
    bool guidedStop = false;
    if (sequence.grammar)
    {
        auto const guided = guidedStep(sequence, steps[0].token);
        if (!guided)
        {
            // The grammar engine failed and ended the sequence; the caller stamps its last token.
            return false;
        }
        guidedStop = *guided;
    }
    // Beam 0 decides when the sequence ends; the other beams follow it.
    if (guidedStop
        || (!sequence.grammar && request.endId >= 0 && steps[0].token == request.endId
            && sequence.numGenerated() >= request.minTokens))
    {
        sequence.finish(FinishReason::kEND_ID);
    }
    else
    {
        for (std::size_t beam = 0; beam < steps.size(); ++beam)
        {
            sequence.generated[beam].push_back(steps[beam].token);
            sequence.logProbs[beam].push_back(steps[beam].logProb);
        }
        bool const stopped = std::any_of(request.stopWords.begin(), request.stopWords.end(),
            [&](VecTokens const& word) { return endsWithWord(request.prompt, sequence.generated[0], word); });
        if (stopped)
        {
            sequence.finish(FinishReason::kSTOP_WORDS);
        }
        else if (sequence.numGenerated() >= request.maxNewTokens)
        {
            sequence.finish(FinishReason::kLENGTH);
        }
    }
    return !sequence.isFinished();
}

void Executor::Impl::collectResults(std::vector<Response>& responses, SequenceList& finished)
{
    for (auto const& sequence : mActive)
    {
        if (sequence->grammarError)
        {
            responses.emplace_back(sequence->request->id, *sequence->grammarError, sequence->request->clientId);
            continue;
        }
        if (auto result = sim::makeResult(*sequence))
        {
            mTransceiver.attachParams(*sequence, *result, mClock.now());
            responses.emplace_back(sequence->request->id, std::move(*result), sequence->request->clientId);
        }
    }
    retireFinished(finished);
}

void Executor::Impl::retireFinished(SequenceList& finished)
{
    for (auto it = mActive.begin(); it != mActive.end();)
    {
        if ((*it)->isFinished())
        {
            if (mTransceiver.keeps(**it))
            {
                // Its blocks stay for the generation side; hold() takes them out of the sequence.
                mTransceiver.hold(**it);
            }
            mPool.release(**it, true);
            finished.push_back(std::move(*it));
            it = mActive.erase(it);
        }
        else
        {
            ++it;
        }
    }
}

void Executor::Impl::insertActive(std::unique_ptr<sim::Sequence> sequence)
{
    auto const position = std::upper_bound(mActive.begin(), mActive.end(), sequence,
        [](std::unique_ptr<sim::Sequence> const& a, std::unique_ptr<sim::Sequence> const& b)
        { return sim::schedulesBefore(*a, *b); });
    mActive.insert(position, std::move(sequence));
}

void Executor::Impl::publish(std::vector<Response>& responses)
{
    if (responses.empty())
    {
        return;
    }
    noteEnded(responses);
    {
        std::lock_guard<std::mutex> lock(mResponsesMutex);
        for (auto& response : responses)
        {
            mReady.push_back(std::move(response));
        }
    }
    responses.clear();
    mResponsesCv.notify_all();
}

} // namespace tensorrt_llm::executor
