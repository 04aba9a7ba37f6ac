// The simulated executor's per-iteration statistics: what one iteration scheduled, computed and held, recorded
// for getLatestIterationStats and getLatestRequestStats.
#include "executor_impl.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace tensorrt_llm::executor
{

void Executor::Impl::recordStats(sim::BatchPlan const& plan, IterationCounters const& counters, SizeType32 numActive,
    double iterLatencyMs, SequenceList const& finished)
{
    std::vector<RequestStats> queuedStats;
    SizeType32 numQueued = 0;
    {
        // Only requests that have arrived by now are queued: a scheduled arrival still in the future is not, and
        // counting it would make the figure depend on when the client thread happened to enqueue it. With scheduled
        // arrivals the queue is in arrival order (admission relies on it too), so the arrived ones are its head;
        // otherwise every request in it has arrived.
        auto const now = mClock.now();
        std::lock_guard<std::mutex> lock(mQueueMutex);
        auto const arrivedEnd = mScheduledMode.load()
            ? std::find_if(mQueue.begin(), mQueue.end(), [&](QueuedRequest const& q) { return q.enqueueTime > now; })
            : mQueue.end();
        numQueued = static_cast<SizeType32>(std::distance(mQueue.begin(), arrivedEnd));
        if (mRequestStats.enabled())
        {
            for (auto it = mQueue.begin(); it != arrivedEnd; ++it)
            {
                RequestStats stats{};
                stats.id = it->id;
                stats.stage = RequestStage::kQUEUED;
                queuedStats.push_back(stats);
            }
        }
    }

    if (mIterationStats.enabled())
    {
        IterationStats stats{};
        stats.timestamp = sim::formatTimestamp(mClock.systemNow());
        stats.iter = mIteration;
        stats.iterLatencyMS = iterLatencyMs;
        stats.newActiveRequestsQueueLatencyMS = counters.queueLatencyMs;
        stats.numNewActiveRequests = counters.newActive;
        stats.numActiveRequests = numActive;
        stats.numQueuedRequests = numQueued;
        stats.numCompletedRequests = static_cast<SizeType32>(finished.size());
        stats.maxNumActiveRequests = mSettings.maxNumActiveRequests;
        stats.maxBatchSizeStatic = mEngine.maxBatchSize;
        stats.maxBatchSizeTunerRecommended = 0;
        stats.maxBatchSizeRuntime = mSettings.maxBatchSize;
        stats.maxNumTokensStatic = mEngine.maxNumTokens;
        stats.maxNumTokensTunerRecommended = 0;
        stats.maxNumTokensRuntime = mSettings.maxNumTokens;
        stats.gpuMemUsage = mSettings.memory.gpu;
        stats.cpuMemUsage = mSettings.memory.cpu;
        stats.pinnedMemUsage = mSettings.memory.pinned;

        KvCacheStats kv{};
        kv.maxNumBlocks = mPool.totalBlocks();
        kv.freeNumBlocks = mPool.freeBlocks();
        kv.usedNumBlocks = mPool.usedBlocks();
        kv.tokensPerBlock = mPool.tokensPerBlock();
        kv.allocTotalBlocks = mPool.allocTotalBlocks();
        kv.allocNewBlocks = mPool.allocNewBlocks();
        kv.reusedBlocks = mPool.reusedBlocks();
        kv.missedBlocks = mPool.missedBlocks();
        kv.cacheHitRate = sim::hitRate(kv.reusedBlocks, kv.missedBlocks);
        stats.kvCacheStats = kv;

        InflightBatchingStats batch{};
        batch.numScheduledRequests = static_cast<SizeType32>(plan.scheduled.size());
        batch.numContextRequests = plan.numContextRequests;
        batch.numGenRequests = plan.numGenerationRequests;
        batch.numPausedRequests = plan.numPausedRequests;
        batch.numCtxTokens = plan.numContextTokens;
        batch.microBatchId = 0;
        batch.avgNumDecodedTokensPerIter = mSpecTally.avgDecodedTokensPerIter();
        stats.inflightBatchingStats = batch;
        if (mSpeculator.mode() != sim::SpecMode::kNone)
        {
            stats.specDecodingStats = mSpecTally.stats(iterLatencyMs);
        }
        mIterationStats.push(std::move(stats));
    }

    if (mRequestStats.enabled())
    {
        RequestStatsPerIteration perIteration{mIteration, {}};
        auto const describe = [](sim::Sequence const& sequence)
        {
            RequestStats stats{};
            stats.id = sequence.id;
            stats.stage = sequence.isFinished()                            ? RequestStage::kGENERATION_COMPLETE
                          : sequence.state == sim::SequenceState::kContext ? RequestStage::kCONTEXT_IN_PROGRESS
                                                                           : RequestStage::kGENERATION_IN_PROGRESS;
            stats.contextPrefillPosition = sequence.contextPosition;
            stats.numGeneratedTokens = sequence.numGenerated();
            stats.avgNumDecodedTokensPerIter = sequence.decodingIter > 0
                ? static_cast<float>(sequence.numGenerated()) / static_cast<float>(sequence.decodingIter)
                : 0.f;
            stats.scheduled = sequence.scheduled;
            stats.paused = sequence.paused;
            stats.allocTotalBlocksPerRequest = sequence.allocTotalBlocks;
            stats.allocNewBlocksPerRequest = sequence.allocNewBlocks;
            stats.reusedBlocksPerRequest = sequence.reusedBlocks;
            stats.missedBlocksPerRequest = sequence.missedBlocks;
            stats.kvCacheHitRatePerRequest = sim::hitRate(sequence.reusedBlocks, sequence.missedBlocks);
            stats.disServingStats = sequence.request->disServing;
            return stats;
        };
        for (auto const& sequence : mActive)
        {
            perIteration.requestStats.push_back(describe(*sequence));
        }
        for (auto const& stats : queuedStats)
        {
            perIteration.requestStats.push_back(stats);
        }
        for (auto const& sequence : finished)
        {
            perIteration.requestStats.push_back(describe(*sequence));
        }
        mRequestStats.push(std::move(perIteration));
    }
    // ---- Speculative decoding: the next entry counts its own iteration ----
    mSpecTally = sim::SpecStepTally{};
}

} // namespace tensorrt_llm::executor
