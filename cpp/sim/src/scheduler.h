// One iteration's batch: the capacity scheduler decides which active sequences may run given the KV cache
// (GUARANTEED_NO_EVICT, MAX_UTILIZATION with pausing, STATIC_BATCH), then the micro-batch scheduler fits them
// into max_batch_size and max_num_tokens, splitting long prompts into chunks when chunked context is on.
#pragma once

#include "kv_cache.h"
#include "sequence.h"

#include <functional>
#include <vector>

namespace tensorrt_llm::executor::sim
{

struct SchedulerLimits
{
    CapacitySchedulerPolicy policy{CapacitySchedulerPolicy::kGUARANTEED_NO_EVICT};
    bool chunkedContext{true};
    ContextChunkingPolicy chunkingPolicy{ContextChunkingPolicy::kFIRST_COME_FIRST_SERVED};
    SizeType32 maxBatchSize{1};
    SizeType32 maxNumTokens{1};
};

struct BatchPlan
{
    /// Scheduled sequences in scheduling order; each has `scheduled` set and, in context, `chunkTokens`.
    std::vector<Sequence*> scheduled;
    SizeType32 numContextRequests{0};
    SizeType32 numGenerationRequests{0};
    SizeType32 numPausedRequests{0};
    SizeType32 numContextTokens{0};
};

class Scheduler
{
public:
    Scheduler(SchedulerLimits limits, KvCachePool& pool);

    [[nodiscard]] SchedulerLimits const& limits() const { return mLimits; }

    /// A check every sequence must pass before the capacity scheduler starts it, beside fitting the KV cache;
    /// false: it waits. LoRA: its adapter must fit the device cache beside those of started requests (as
    /// TensorRT-LLM's capacity scheduler counts PEFT pages).
    void setStartGate(std::function<bool(Sequence&)> gate) { mStartGate = std::move(gate); }

    /// Plans the next iteration over `active` (unfinished sequences in scheduling order) and allocates the
    /// KV blocks the planned work needs (which may shorten first context chunks whose prefix is cached).
    BatchPlan schedule(std::vector<Sequence*> const& active);

private:
    /// Sequences allowed to run this iteration by the capacity policy, in order.
    std::vector<Sequence*> selectByCapacity(std::vector<Sequence*> const& active, BatchPlan& plan);
    std::vector<Sequence*> selectNoEvict(std::vector<Sequence*> const& active, bool admitNew);
    std::vector<Sequence*> selectMaxUtilization(std::vector<Sequence*> const& active, BatchPlan& plan);
    /// Fits the candidates into the batch-size and token budgets.
    void fitBudget(std::vector<Sequence*> const& candidates, BatchPlan& plan);
    void pause(Sequence& sequence, BatchPlan& plan);

    [[nodiscard]] bool mayStart(Sequence& sequence) const { return !mStartGate || mStartGate(sequence); }

    SchedulerLimits mLimits;
    KvCachePool& mPool;
    std::function<bool(Sequence&)> mStartGate;
};

} // namespace tensorrt_llm::executor::sim
