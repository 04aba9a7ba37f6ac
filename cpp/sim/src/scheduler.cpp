// Capacity and micro-batch scheduling (see scheduler.h).
#include "scheduler.h"

#include <algorithm>

namespace tensorrt_llm::executor::sim
{

Scheduler::Scheduler(SchedulerLimits limits, KvCachePool& pool)
    : mLimits(limits)
    , mPool(pool)
{
}

BatchPlan Scheduler::schedule(std::vector<Sequence*> const& active)
{
    BatchPlan plan;
    for (Sequence* sequence : active)
    {
        sequence->scheduled = false;
        sequence->paused = false;
        sequence->chunkTokens = 0;
    }
    fitBudget(selectByCapacity(active, plan), plan);
    // Blocks are allocated for the scheduled work only. A first context chunk may find part of its prompt cached:
    // the iteration's context tokens are those still computed.
    plan.numContextTokens = 0;
    for (Sequence* sequence : plan.scheduled)
    {
        mPool.allocateStep(*sequence);
        if (sequence->state == SequenceState::kContext)
        {
            plan.numContextTokens += sequence->chunkTokens;
        }
    }
    return plan;
}

std::vector<Sequence*> Scheduler::selectByCapacity(std::vector<Sequence*> const& active, BatchPlan& plan)
{
    switch (mLimits.policy)
    {
    case CapacitySchedulerPolicy::kMAX_UTILIZATION: return selectMaxUtilization(active, plan);
    case CapacitySchedulerPolicy::kSTATIC_BATCH:
    {
        bool const batchRunning
            = std::any_of(active.begin(), active.end(), [](Sequence const* s) { return s->holdsBlocks; });
        return selectNoEvict(active, !batchRunning);
    }
    case CapacitySchedulerPolicy::kGUARANTEED_NO_EVICT: break;
    }
    return selectNoEvict(active, true);
}

std::vector<Sequence*> Scheduler::selectNoEvict(std::vector<Sequence*> const& active, bool admitNew)
{
    // Started sequences always continue; new ones start, in order, while their whole length fits in the
    // blocks nobody has reserved yet. The first that does not fit blocks those behind it (no overtaking).
    std::vector<Sequence*> candidates;
    bool admitting = admitNew;
    for (Sequence* sequence : active)
    {
        if (sequence->holdsBlocks)
        {
            candidates.push_back(sequence);
            continue;
        }
        if (!admitting)
        {
            continue;
        }
        SizeType32 const needed = mPool.blocksFor(
            sequence->contextLength, sequence->maxTotalTokens(), sequence->request->beamWidth);
        if (mPool.reservedBlocks() + needed > mPool.totalBlocks())
        {
            admitting = false;
            continue;
        }
        if (!mayStart(*sequence))
        {
            // As upstream, a request whose adapter does not fit waits without blocking those behind it.
            continue;
        }
        mPool.start(*sequence, needed);
        candidates.push_back(sequence);
    }
    return candidates;
}

std::vector<Sequence*> Scheduler::selectMaxUtilization(std::vector<Sequence*> const& active, BatchPlan& plan)
{
    // Free blocks a sequence needs to do its largest possible step this iteration. Free blocks include cached
    // reusable ones, which an allocation evicts; blocks promised earlier in this pass are not available.
    auto const extraBlocks = [this](Sequence const& sequence) { return mPool.blocksForStep(sequence); };
    SizeType32 promised = 0;
    auto const available = [&]() { return mPool.freeBlocks() - promised; };

    std::vector<Sequence*> started;
    for (Sequence* sequence : active)
    {
        if (sequence->holdsBlocks)
        {
            started.push_back(sequence);
        }
    }
    // Started sequences keep running in order; when the cache runs out, the last started ones are paused
    // (their blocks freed, their tokens recomputed later) to make room for those ahead of them.
    std::vector<Sequence*> candidates;
    std::size_t end = started.size();
    for (std::size_t i = 0; i < end; ++i)
    {
        Sequence& sequence = *started[i];
        SizeType32 const needed = extraBlocks(sequence);
        while (needed > available() && end > i + 1)
        {
            pause(*started[--end], plan);
        }
        if (needed > available())
        {
            pause(sequence, plan);
            break;
        }
        promised += needed;
        candidates.push_back(&sequence);
    }
    // New (or paused) sequences start greedily while their first step fits.
    for (Sequence* sequence : active)
    {
        if (sequence->holdsBlocks || sequence->paused)
        {
            continue;
        }
        SizeType32 const needed = extraBlocks(*sequence);
        if (needed > available() || !mayStart(*sequence))
        {
            break;
        }
        promised += needed;
        mPool.start(*sequence, 0);
        candidates.push_back(sequence);
    }
    // Keep scheduling order (a pause may have removed entries from the middle).
    std::stable_sort(candidates.begin(), candidates.end(),
        [](Sequence const* a, Sequence const* b) { return schedulesBefore(*a, *b); });
    return candidates;
}

void Scheduler::pause(Sequence& sequence, BatchPlan& plan)
{
    // Its computed blocks stay cached, so resuming may reuse them instead of recomputing.
    mPool.release(sequence, true);
    sequence.paused = true;
    sequence.state = SequenceState::kContext;
    sequence.contextLength = static_cast<SizeType32>(sequence.request->prompt.size()) + sequence.numGenerated();
    sequence.contextPosition = 0;
    ++plan.numPausedRequests;
}

void Scheduler::fitBudget(std::vector<Sequence*> const& candidates, BatchPlan& plan)
{
    SizeType32 budget = mLimits.maxNumTokens;
    SizeType32 scheduledCount = 0;
    auto const batchFull = [&]() { return scheduledCount >= mLimits.maxBatchSize; };

    // Generation steps come first: each costs one token per beam and keeps a started request moving.
    for (Sequence* sequence : candidates)
    {
        // A speculative step verifies its draft tokens beside the sampled one.
        SizeType32 const cost = sequence->request->beamWidth + sequence->stepDraftTokens;
        if (sequence->state != SequenceState::kGeneration || budget < cost || batchFull())
        {
            continue;
        }
        sequence->scheduled = true;
        budget -= cost;
        ++scheduledCount;
        ++plan.numGenerationRequests;
    }

    // Context work shares what is left of the token budget.
    std::vector<Sequence*> contexts;
    for (Sequence* sequence : candidates)
    {
        if (sequence->state == SequenceState::kContext)
        {
            contexts.push_back(sequence);
        }
    }
    SizeType32 const tokensPerBlock = mPool.tokensPerBlock();
    if (!mLimits.chunkedContext)
    {
        // Whole prompts only, first come first served; one that does not fit waits, and so do those behind
        // it. A prompt larger than the whole budget (a resumed request) may run alone in an empty batch.
        for (Sequence* sequence : contexts)
        {
            SizeType32 const remaining = sequence->contextLength - sequence->contextPosition;
            bool const fits = remaining <= budget || scheduledCount == 0;
            if (!fits || batchFull() || budget <= 0)
            {
                break;
            }
            sequence->chunkTokens = remaining;
            budget -= std::min(budget, remaining);
            sequence->scheduled = true;
            ++scheduledCount;
        }
    }
    else if (mLimits.chunkingPolicy == ContextChunkingPolicy::kEQUAL_PROGRESS)
    {
        // Rounds of one block's worth of tokens each, so that all prompts advance together.
        bool progressed = true;
        while (budget > 0 && progressed)
        {
            progressed = false;
            for (Sequence* sequence : contexts)
            {
                SizeType32 const remaining
                    = sequence->contextLength - sequence->contextPosition - sequence->chunkTokens;
                if (remaining <= 0 || budget <= 0 || (!sequence->scheduled && batchFull()))
                {
                    continue;
                }
                SizeType32 const step = std::min({remaining, tokensPerBlock, budget});
                sequence->chunkTokens += step;
                scheduledCount += sequence->scheduled ? 0 : 1;
                sequence->scheduled = true;
                budget -= step;
                progressed = true;
            }
        }
    }
    else
    {
        // First come first served: each prompt takes as much of the budget as it can, in chunks that are
        // whole blocks unless they finish the prompt.
        for (Sequence* sequence : contexts)
        {
            if (budget <= 0 || batchFull())
            {
                break;
            }
            SizeType32 const remaining = sequence->contextLength - sequence->contextPosition;
            SizeType32 chunk = std::min(remaining, budget);
            if (chunk < remaining && chunk >= tokensPerBlock)
            {
                chunk = chunk / tokensPerBlock * tokensPerBlock;
            }
            sequence->chunkTokens = chunk;
            sequence->scheduled = true;
            ++scheduledCount;
            budget -= chunk;
        }
    }

    for (Sequence* sequence : candidates)
    {
        if (!sequence->scheduled)
        {
            continue;
        }
        plan.scheduled.push_back(sequence);
        if (sequence->state == SequenceState::kContext)
        {
            ++plan.numContextRequests;
            plan.numContextTokens += sequence->chunkTokens;
        }
    }
}

} // namespace tensorrt_llm::executor::sim
