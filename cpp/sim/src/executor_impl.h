// Executor::Impl: the simulated executor. Client threads enqueue, cancel, await and read stats through the
// public methods; one background thread runs the execution loop (fetch, schedule, simulate a forward pass,
// emit responses and stats), mirroring TensorRT-LLM's executorImpl.
//
// Locking: mQueueMutex guards the request queue, the cancel set and the stop flag (and wakes the loop);
// mResponsesMutex guards ready responses and drained ids (and wakes awaitResponses); the stats buffers have
// their own locks, and so does the KV-cache event buffer. Everything else (active sequences, KV cache, scheduler)
// belongs to the loop thread alone.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include "cache_transceiver.h"
#include "engine_config.h"
#include "kv_cache.h"
#include "kv_events.h"
#include "lora_cache.h"
#include "scheduler.h"
#include "arrival_gate.h"
#include "sim_control.h"
#include "sequence.h"
#include "sim_clock.h"
#include "sim_config.h"
#include "speculation.h"
#include "stats.h"
#include "timing_model.h"
#include "token_generator.h"
#include "guided_grammar.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tensorrt_llm::executor
{

namespace sim
{

/// A set of request ids stored as disjoint runs of consecutive ids, as TensorRT-LLM keeps its terminated ids:
/// ids are handed out in order and nearly all of them end, so the runs merge and the set costs memory in
/// proportion to the ids still in flight below the highest one that ended, not to every request ever served.
class IdIntervalSet
{
public:
    /// Adds every id in [first, last]; merges with the runs it touches or overlaps.
    void insert(std::uint64_t first, std::uint64_t last)
    {
        auto next = mRuns.upper_bound(first);
        if (next != mRuns.begin())
        {
            auto previous = std::prev(next);
            if (previous->second + 1 >= first) // overlaps or touches: grow it instead of adding a run
            {
                first = previous->first;
                last = std::max(last, previous->second);
                next = mRuns.erase(previous);
            }
        }
        while (next != mRuns.end() && next->first <= last + 1)
        {
            last = std::max(last, next->second);
            next = mRuns.erase(next);
        }
        mRuns.emplace(first, last);
    }

    bool contains(std::uint64_t id) const
    {
        auto next = mRuns.upper_bound(id);
        return next != mRuns.begin() && std::prev(next)->second >= id;
    }

    /// Number of runs: what the set costs in memory.
    std::size_t runs() const
    {
        return mRuns.size();
    }

private:
    /// First id of each run -> last id of it (inclusive).
    std::map<std::uint64_t, std::uint64_t> mRuns;
};

} // namespace sim

/// The version string the simulator reports: the TensorRT-LLM release whose behaviour it imitates, tagged.
inline constexpr char kSimulatorVersion[] = "1.2.0-sim";

class Executor::Impl : public sim::control::ArrivalControl
{
public:
    Impl(std::filesystem::path const& modelPath, ModelType modelType, ExecutorConfig const& executorConfig);
    Impl(sim::LoadedEngine loaded, std::filesystem::path const& modelPath, ModelType modelType,
        ExecutorConfig const& executorConfig);
    ~Impl();

    Impl(Impl const&) = delete;
    Impl& operator=(Impl const&) = delete;

    std::vector<IdType> enqueueRequests(std::vector<Request> const& requests);
    std::vector<Response> awaitResponses(std::optional<std::chrono::milliseconds> const& timeout);
    std::vector<Response> awaitResponses(IdType requestId, std::optional<std::chrono::milliseconds> const& timeout);
    SizeType32 getNumResponsesReady(std::optional<IdType> const& requestId) const;
    void cancelRequest(IdType requestId);
    void shutdown();
    std::deque<IterationStats> getLatestIterationStats();
    std::deque<RequestStatsPerIteration> getLatestRequestStats();
    bool canEnqueueRequests() const;
    bool isParticipant() const;
    /// The LoRA cache counters (the simulator's own), for trtllm_sim::loraCacheCounts.
    std::shared_ptr<sim::LoraCounterCells> const& loraCounters() const { return mLora.counters(); }
    std::uint64_t gpuTelemetryKey() const { return mTiming.telemetryKey(); }
    std::optional<std::shared_ptr<KVCacheEventManager>> getKVCacheEventManager() const;
    /// Disaggregated serving: the cache transceiver, for trtllm_sim::setKvLink.
    sim::CacheTransceiver& transceiver() { return mTransceiver; }

    // Scheduled arrivals on the virtual clock (sim_control.h; scheduled_arrivals.cpp)
    [[nodiscard]] std::int64_t controlNowNs() const override;
    IdType enqueueAt(Request const& request, std::int64_t arrivalNs, std::optional<IdType> afterRequest,
        std::optional<double> followUpDelayMs) override;
    std::uint64_t holdArrivals(std::int64_t boundNs) override;
    void releaseArrivals(std::uint64_t key) override;

private:
    /// A request waiting in the queue, with the ids reserved for it (children for numReturnSequences > 1).
    struct QueuedRequest
    {
        IdType id;
        std::vector<IdType> childIds;
        Request request;
        sim::TimePoint enqueueTime;
        SizeType32 numSequences;
        /// Enqueued with a scheduled arrival: enqueueTime is that arrival.
        bool scheduled{false};
    };

    /// What the loop took from the shared state at the start of an iteration.
    struct IterationInput
    {
        std::vector<QueuedRequest> fetched;
        std::unordered_set<IdType> cancelledActive;
        /// Real clock: when the iteration starts (decided before fetching, which takes only what arrived by then).
        std::optional<sim::TimePoint> start;
    };

    /// Counters of one iteration, for its IterationStats.
    struct IterationCounters
    {
        double queueLatencyMs{0.0};
        SizeType32 newActive{0};
    };

    /// Limits derived from the engine, simulation.json and ExecutorConfig at construction.
    struct Settings
    {
        SizeType32 maxBeamWidth{1};
        SizeType32 maxBatchSize{1};
        SizeType32 maxNumTokens{1};
        SizeType32 maxNumActiveRequests{1};
        std::optional<SizeType32> maxQueueSize;
        bool gatherGenerationLogits{false};
        /// KV-cache capacity in tokens, a whole number of blocks.
        std::int64_t kvCacheTokens{0};
        sim::SchedulerLimits scheduler;
        sim::MemoryFigures memory{};
    };

    static Settings deriveSettings(sim::EngineConfig const& engine, sim::SimConfig const& simConfig,
        sim::TimingModel const& timing, ModelType modelType, ExecutorConfig const& config);

    /// shutdown() without the fault hook (the destructor uses it: a thread must never outlive its executor).
    void stopAndJoin();

    // Public-method guards
    void throwIfShutdown(char const* message) const;
    void maybeInjectFault(sim::FaultMethod method);
    /// Records `responses` that end their request (mResponsesMutex held).
    void rememberTerminated(std::vector<Response> const& responses);

    // Execution loop (execution_loop.cpp)
    using SequenceList = std::vector<std::unique_ptr<sim::Sequence>>;
    void executionLoop();
    void runIteration(IterationInput& input, std::vector<Response>& responses);
    /// Fails every active request after an unexpected error in an iteration.
    void failEverything(std::string const& message, std::vector<Response>& responses) noexcept;
    /// Blocks until there is work; takes cancellations and new requests. False once stopping with nothing left.
    bool waitForWork(IterationInput& input, std::vector<Response>& responses);
    void terminateQueued(sim::TimePoint now, std::vector<Response>& responses);
    /// Moves the pending cancellations of active requests into `input` and forgets the rest: ids neither queued
    /// nor active belong to finished or unknown requests (mQueueMutex held).
    void takeCancelledActive(IterationInput& input);
    /// After a wait that found nothing to run: publishes what it produced (ended queued requests) without the
    /// lock; false once stopping with an empty queue.
    bool keepWaiting(std::unique_lock<std::mutex>& lock, std::vector<Response>& responses);
    void fetchRequests(IterationInput& input, std::optional<sim::TimePoint> arrivedBy);
    void terminateActive(std::unordered_set<IdType> const& cancelled, sim::TimePoint now,
        std::vector<Response>& responses, SequenceList& finished);
    void activate(std::vector<QueuedRequest>& fetched, sim::TimePoint now, IterationCounters& counters,
        std::vector<Response>& responses);
    /// Fills `state` from the request; returns the reason the executor rejects it, if it does.
    std::optional<std::string> validate(QueuedRequest const& queued, sim::RequestState& state) const;
    /// Ends every active request selected by `select` with one error Response each; returns how many.
    template <typename Select>
    std::size_t failRequests(std::string const& message, Select const& select, std::vector<Response>& responses);
    void advance(sim::Sequence& sequence, sim::TimePoint iterEnd);
    /// Appends one generated token per beam (or ends the sequence); false once the sequence has finished.
    bool emitToken(sim::Sequence& sequence);
    void collectResults(std::vector<Response>& responses, SequenceList& finished);
    void recordStats(sim::BatchPlan const& plan, IterationCounters const& counters, SizeType32 numActive,
        double iterLatencyMs, SequenceList const& finished);
    void publish(std::vector<Response>& responses);
    void insertActive(std::unique_ptr<sim::Sequence> sequence);
    /// Moves finished sequences out of mActive (releasing their blocks) into `finished`.
    void retireFinished(SequenceList& finished);

    // Scheduled arrivals (scheduled_arrivals.cpp)
    /// waitForWork when a client schedules arrivals: starts the next iteration at the simulated time the
    /// arrivals allow and takes only the requests that have arrived by then (mQueueMutex held by `lock`).
    bool waitForScheduledWork(
        std::unique_lock<std::mutex>& lock, IterationInput& input, std::vector<Response>& responses);
    /// Tells the arrival gate which requests `responses` end, at the clock's current time; queues the follow-ups
    /// chained to them.
    void noteEnded(std::vector<Response> const& responses);
    /// Inserts a scheduled request into the queue in arrival order (mQueueMutex held).
    void queueArrival(QueuedRequest queued);

    // Configuration (immutable after construction)
    sim::EngineConfig mEngine;
    sim::SimConfig mSim;
    sim::TimingModel mTiming;
    Settings mSettings;
    std::array<std::atomic<std::uint64_t>, 7> mFaultCalls{};

    // Request queue, cancellations, stop flag (mQueueMutex)
    std::mutex mQueueMutex;
    std::condition_variable mQueueCv;
    std::deque<QueuedRequest> mQueue;
    SizeType32 mQueuedSequences{0};
    IdType mNextId{1};
    std::unordered_set<IdType> mCancelled;
    bool mStopRequested{false};
    /// The loop waits for work with nothing active (a virtual clock then follows the wall clock).
    bool mLoopIdle{false};
    /// Scheduled arrivals and the leases that bound the simulation's progress.
    sim::ArrivalGate mArrivals;
    /// mArrivals.active(), readable without the lock.
    std::atomic<bool> mScheduledMode{false};

    // Ready responses (mResponsesMutex)
    mutable std::mutex mResponsesMutex;
    std::condition_variable mResponsesCv;
    std::vector<Response> mReady;
    /// Requests that sent their final (or error) response; bounded by the ids in flight (see IdIntervalSet).
    sim::IdIntervalSet mTerminatedIds;
    /// Requests with numReturnSequences > 1 still running -> how many child ids follow theirs: those end with them.
    std::unordered_map<IdType, IdType> mChildIdCounts;

    // Statistics
    sim::StatsBuffer<IterationStats> mIterationStats;
    sim::StatsBuffer<RequestStatsPerIteration> mRequestStats;

    /// Real or virtual time of every executor timestamp.
    sim::SimClock mClock;

    std::atomic<bool> mShutdownCalled{false};
    std::mutex mShutdownMutex;

    // KV-cache events: recorded by the loop thread, read by any (own locking)
    std::shared_ptr<batch_manager::kv_cache_manager::BaseKVCacheManager> mKvEvents;

    // Loop-thread state
    sim::KvCachePool mPool;
    sim::Scheduler mScheduler;
    sim::TokenGenerator mTokens;
    sim::Speculator mSpeculator;
    /// ---- Speculative decoding: this iteration's decoded tokens and drafts, for its IterationStats ----
    sim::SpecStepTally mSpecTally;
    // Guided decoding: the grammar engine built from the GuidedDecodingConfig (null without one).
    std::unique_ptr<sim::GrammarBackend> mGrammar;
    std::vector<std::unique_ptr<sim::Sequence>> mActive;
    IterationType mIteration{0};
    std::uint64_t mArrivalCounter{0};
    // ---- LoRA: the adapter caches (loop thread; counters readable from any thread) ----
    sim::LoraCache mLora;
    // Disaggregated serving: held contexts and incoming transfers (loop thread; see cache_transceiver.h)
    sim::CacheTransceiver mTransceiver;

    std::thread mThread;
};

} // namespace tensorrt_llm::executor
