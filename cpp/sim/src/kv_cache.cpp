// KV-cache block accounting (see kv_cache.h).
#include "kv_cache.h"

#include <algorithm>

namespace tensorrt_llm::executor::sim
{

KvCachePool::KvCachePool(SizeType32 totalBlocks, SizeType32 tokensPerBlock)
    : mTotalBlocks(totalBlocks)
    , mTokensPerBlock(tokensPerBlock)
{
}

SizeType32 KvCachePool::blocksFor(SizeType32 tokens, SizeType32 beamWidth) const
{
    return (std::max<SizeType32>(tokens, 0) + mTokensPerBlock - 1) / mTokensPerBlock * beamWidth;
}

void KvCachePool::start(Sequence& sequence, SizeType32 reserve)
{
    sequence.holdsBlocks = true;
    sequence.reservedBlocks = reserve;
    mReservedBlocks += reserve;
}

void KvCachePool::growTo(Sequence& sequence, SizeType32 tokens)
{
    SizeType32 const wanted = blocksFor(tokens, sequence.request->beamWidth);
    if (wanted <= sequence.allocatedBlocks)
    {
        return;
    }
    SizeType32 const added = wanted - sequence.allocatedBlocks;
    // Prompt blocks are looked up for reuse first; with no reusable content every lookup misses.
    SizeType32 const promptBlocks
        = blocksFor(static_cast<SizeType32>(sequence.request->prompt.size()), sequence.request->beamWidth);
    SizeType32 const missed = std::max<SizeType32>(0, std::min(wanted, promptBlocks) - sequence.allocatedBlocks);
    sequence.allocatedBlocks = wanted;
    sequence.allocTotalBlocks += added;
    sequence.missedBlocks += missed;
    mUsedBlocks += added;
    mAllocTotalBlocks += added;
    mAllocNewBlocks += added;
    mMissedBlocks += missed;
}

void KvCachePool::release(Sequence& sequence)
{
    mUsedBlocks -= sequence.allocatedBlocks;
    mReservedBlocks -= sequence.reservedBlocks;
    sequence.allocatedBlocks = 0;
    sequence.reservedBlocks = 0;
    sequence.holdsBlocks = false;
}

} // namespace tensorrt_llm::executor::sim
