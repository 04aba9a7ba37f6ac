// Paged KV-cache accounting: a pool of fixed-size blocks shared by all sequences. It counts blocks (it stores
// no data); the scheduler uses it to decide admission and the stats report its counters.
#pragma once

#include "sequence.h"

namespace tensorrt_llm::executor::sim
{

class KvCachePool
{
public:
    KvCachePool(SizeType32 totalBlocks, SizeType32 tokensPerBlock);

    [[nodiscard]] SizeType32 totalBlocks() const { return mTotalBlocks; }
    [[nodiscard]] SizeType32 tokensPerBlock() const { return mTokensPerBlock; }
    [[nodiscard]] SizeType32 usedBlocks() const { return mUsedBlocks; }
    [[nodiscard]] SizeType32 freeBlocks() const { return mTotalBlocks - mUsedBlocks; }
    /// Blocks promised to started sequences (GUARANTEED_NO_EVICT reserves a request's whole length).
    [[nodiscard]] SizeType32 reservedBlocks() const { return mReservedBlocks; }

    /// Blocks that `tokens` tokens of one sequence with `beamWidth` beams occupy.
    [[nodiscard]] SizeType32 blocksFor(SizeType32 tokens, SizeType32 beamWidth = 1) const;

    /// Marks `sequence` as started, reserving `reserve` blocks for it.
    void start(Sequence& sequence, SizeType32 reserve);
    /// Grows the sequence's allocation to cover `tokens` tokens (never shrinks).
    void growTo(Sequence& sequence, SizeType32 tokens);
    /// Returns all blocks of the sequence to the pool.
    void release(Sequence& sequence);

    // Cumulative counters since construction, as TensorRT-LLM's KVCacheManager reports them.
    [[nodiscard]] SizeType32 allocTotalBlocks() const { return mAllocTotalBlocks; }
    [[nodiscard]] SizeType32 allocNewBlocks() const { return mAllocNewBlocks; }
    [[nodiscard]] SizeType32 reusedBlocks() const { return 0; }
    [[nodiscard]] SizeType32 missedBlocks() const { return mMissedBlocks; }

private:
    SizeType32 mTotalBlocks;
    SizeType32 mTokensPerBlock;
    SizeType32 mUsedBlocks{0};
    SizeType32 mReservedBlocks{0};
    SizeType32 mAllocTotalBlocks{0};
    SizeType32 mAllocNewBlocks{0};
    SizeType32 mMissedBlocks{0};
};

} // namespace tensorrt_llm::executor::sim
