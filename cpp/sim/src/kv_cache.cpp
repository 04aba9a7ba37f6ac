// The paged KV cache with block reuse (see kv_cache.h).
#include "kv_cache.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tensorrt_llm::executor::sim
{

namespace
{

/// TensorRT-LLM's KvCacheRetentionConfig::kDefaultRetentionPriority, the priority every block gets here.
constexpr SizeType32 kDefaultPriority = 35;
/// The GPU cache level of KV-cache events (1 would be host memory).
constexpr SizeType32 kPrimaryLevel = 0;

/// The sequence's tokens as the cache keys them: the prompt and beam 0's generated tokens.
VecTokens tokensOf(Sequence const& sequence)
{
    VecTokens tokens = sequence.request->prompt;
    auto const& generated = sequence.generated.at(0);
    tokens.insert(tokens.end(), generated.begin(), generated.end());
    return tokens;
}

SizeType32 ceilDiv(SizeType32 value, SizeType32 divisor)
{
    return (std::max<SizeType32>(value, 0) + divisor - 1) / divisor;
}

} // namespace

float hitRate(SizeType32 reused, SizeType32 missed)
{
    SizeType32 const lookups = reused + missed;
    return lookups > 0 ? static_cast<float>(reused) / static_cast<float>(lookups) : 0.f;
}

KvReuseConfig KvReuseConfig::from(KvCacheConfig const& config)
{
    return KvReuseConfig{
        config.getEnableBlockReuse(), config.getEnablePartialReuse(), config.getCopyOnPartialReuse()};
}

KvCachePool::KvCachePool(SizeType32 totalBlocks, SizeType32 tokensPerBlock, SizeType32 attentionWindow,
    KvReuseConfig reuse, std::shared_ptr<batch_manager::kv_cache_manager::BaseKVCacheManager> events)
    : mTotalBlocks(totalBlocks)
    , mTokensPerBlock(tokensPerBlock)
    // As KVCacheManager::calculateMaxBlockRequirementsPerBeam (batch_manager/kvCacheManager.cpp): a sequence
    // needs the blocks of min(its length, the window); beyond the window the cache is cyclic.
    , mWindowBlocks(attentionWindow > 0 ? ceilDiv(attentionWindow, tokensPerBlock) : std::numeric_limits<SizeType32>::max())
    , mWindowTokens(attentionWindow > 0 ? attentionWindow : std::numeric_limits<SizeType32>::max())
    , mReuse(reuse)
    , mEvents(std::move(events))
{
    // No per-block state yet: blocks get it when first handed out (takeFreeBlock).
    if (mEvents)
    {
        // GPU blocks, and no host (secondary) blocks.
        mEvents->recordCreated({totalBlocks, 0});
    }
}

SizeType32 KvCachePool::contextBlocksOf(SizeType32 contextTokens) const
{
    return std::min(mWindowBlocks, std::max<SizeType32>(1, ceilDiv(contextTokens, mTokensPerBlock)));
}

SizeType32 KvCachePool::blocksFor(SizeType32 contextTokens, SizeType32 tokens, SizeType32 beamWidth) const
{
    SizeType32 const contextBlocks = contextBlocksOf(contextTokens);
    SizeType32 const positions = std::min(mWindowBlocks, std::max(contextBlocks, ceilDiv(tokens, mTokensPerBlock)));
    // Beams share the context blocks but the last, which each beam writes its own continuation into.
    SizeType32 const shared = beamWidth > 1 ? contextBlocks - 1 : contextBlocks;
    return shared + (positions - shared) * beamWidth;
}

SizeType32 KvCachePool::blocksForStep(Sequence const& sequence) const
{
    SizeType32 const beamWidth = sequence.request->beamWidth;
    if (sequence.blockIds.empty())
    {
        return blocksFor(sequence.contextLength, sequence.contextLength, beamWidth);
    }
    if (sequence.state != SequenceState::kGeneration)
    {
        return 0;
    }
    SizeType32 const held = static_cast<SizeType32>(sequence.heldBlocks.size());
    return std::max<SizeType32>(0, blocksFor(sequence.contextLength, sequence.tokensAfterStep(), beamWidth) - held);
}

void KvCachePool::start(Sequence& sequence, SizeType32 reserve)
{
    sequence.holdsBlocks = true;
    sequence.reservedBlocks = reserve;
    mReservedBlocks += reserve;
}

void KvCachePool::allocateStep(Sequence& sequence)
{
    if (sequence.blockIds.empty())
    {
        addSequence(sequence);
    }
    else if (sequence.state == SequenceState::kGeneration)
    {
        growTo(sequence, sequence.tokensAfterStep());
    }
}

void KvCachePool::addSequence(Sequence& sequence)
{
    SizeType32 const allocTotalBefore = mAllocTotalBlocks;
    SizeType32 const allocNewBefore = mAllocNewBlocks;
    SizeType32 const reusedBefore = mReusedBlocks;
    SizeType32 const missedBefore = mMissedBlocks;

    SizeType32 const beamWidth = sequence.request->beamWidth;
    SizeType32 const contextTokens = sequence.contextLength;
    SizeType32 const contextBlocks = contextBlocksOf(contextTokens);
    SizeType32 const sharedBlocks = beamWidth > 1 ? contextBlocks - 1 : contextBlocks;
    SizeType32 reusedTokens = 0;
    // A context longer than the window wraps around its blocks, which then hold no prefix to share.
    if (mReuse.enableBlockReuse && contextTokens <= mWindowTokens)
    {
        reusedTokens = loadOrAllocateContext(sequence, tokensOf(sequence), contextBlocks, sharedBlocks);
    }
    else
    {
        for (SizeType32 position = 0; position < contextBlocks; ++position)
        {
            SizeType32 const copies = position < sharedBlocks ? 1 : beamWidth;
            for (SizeType32 beam = 0; beam < copies; ++beam)
            {
                SizeType32 const block = takeFreeBlock();
                hold(sequence, block);
                if (beam == 0)
                {
                    sequence.blockIds.push_back(block);
                }
            }
        }
    }

    // As TensorRT-LLM, the per-request counters cover the blocks added with the sequence (its context).
    sequence.allocTotalBlocks += mAllocTotalBlocks - allocTotalBefore;
    sequence.allocNewBlocks += mAllocNewBlocks - allocNewBefore;
    sequence.reusedBlocks += mReusedBlocks - reusedBefore;
    sequence.missedBlocks += mMissedBlocks - missedBefore;

    if (reusedTokens > 0)
    {
        // The reused tokens need no prefill. A chunk that does not finish the context still ends on a block
        // boundary, so that the next chunk starts on one.
        SizeType32 const remaining = contextTokens - reusedTokens;
        SizeType32 chunk = sequence.chunkTokens;
        if (reusedTokens + chunk >= contextTokens)
        {
            chunk = remaining;
        }
        else
        {
            SizeType32 const end = (reusedTokens + chunk) / mTokensPerBlock * mTokensPerBlock;
            chunk = end > reusedTokens ? end - reusedTokens : std::min(chunk, remaining);
        }
        sequence.contextPosition = reusedTokens;
        sequence.chunkTokens = chunk;
    }
}

SizeType32 KvCachePool::loadOrAllocateContext(
    Sequence& sequence, VecTokens const& tokens, SizeType32 contextBlocks, SizeType32 sharedBlocks)
{
    SizeType32 const contextTokens = sequence.contextLength;
    // Keys cover every context token but the last, whose logits must be computed; when that token starts a block
    // of its own, that block gets an empty key (it can never match).
    std::vector<VecTokens> keys
        = splitIntoBlocks(tokens, static_cast<std::size_t>(contextTokens - 1), mTokensPerBlock, true);
    if (contextTokens % mTokensPerBlock == 1)
    {
        keys.emplace_back();
    }
    keys.resize(static_cast<std::size_t>(contextBlocks));

    auto const takeable = [this](SizeType32 block)
    {
        return mReuse.copyOnPartialReuse
               || (mRefCount[static_cast<std::size_t>(block)] == 0 && mTree.isLeaf(block));
    };
    // Blocks are keyed by the request's adapter too: KV computed under another adapter (or none) never matches.
    LoraKey const lora = sequence.request->loraTaskId;
    SizeType32 reusedTokens = 0;
    SizeType32 parent = ReuseTree::kRoot;
    bool searching = true;
    std::uint64_t parentHash = 0;
    for (SizeType32 position = 0; position < sharedBlocks; ++position)
    {
        VecTokens const& key = keys[static_cast<std::size_t>(position)];
        ReuseTree::Match const match
            = searching ? mTree.find(parent, lora, key, mReuse.enablePartialReuse, takeable) : ReuseTree::Match{};
        SizeType32 block = match.block;
        if (block >= 0)
        {
            reusedTokens += match.tokens;
            if (!match.partial)
            {
                claim(block);
                parent = block;
                ++mReusedBlocks;
            }
            else
            {
                if (mRefCount[static_cast<std::size_t>(block)] > 0 || !mTree.isLeaf(block))
                {
                    // Others use it or build on it: copy its matching tokens into a fresh block.
                    block = takeFreeBlock();
                }
                else
                {
                    // A leaf nobody uses: take it over (it leaves the tree without a Removed event, as upstream).
                    mTree.unlinkLeaf(block);
                    claim(block);
                }
                mTree.assign(block, lora, key, mTokensPerBlock, parentHash);
                searching = false;
                // Its matched tokens skip prefill, but the block is not counted as reused: the reuse counters
                // (and `cached_tokens`, which the server derives from them as whole blocks) count only blocks
                // served entirely from cache, so a partly matched block (often just a shared chat-template
                // header) can never inflate the hit rate the gateway and the bench report.
                ++mMissedBlocks;
            }
        }
        else
        {
            block = takeFreeBlock();
            mTree.assign(block, lora, key, mTokensPerBlock, parentHash);
            ++mMissedBlocks;
            searching = false;
        }
        parentHash = mTree.hash(block);
        hold(sequence, block);
        sequence.blockIds.push_back(block);
    }
    // The last context block of a beam search: one per beam, never shared, counted as one miss.
    SizeType32 const beamWidth = sequence.request->beamWidth;
    for (SizeType32 position = sharedBlocks; position < contextBlocks; ++position)
    {
        for (SizeType32 beam = 0; beam < beamWidth; ++beam)
        {
            SizeType32 const block = takeFreeBlock();
            mTree.assign(block, lora, keys[static_cast<std::size_t>(position)], mTokensPerBlock, parentHash);
            hold(sequence, block);
            if (beam == 0)
            {
                sequence.blockIds.push_back(block);
            }
        }
        ++mMissedBlocks;
    }
    return reusedTokens;
}

void KvCachePool::growTo(Sequence& sequence, SizeType32 tokens)
{
    SizeType32 const beamWidth = sequence.request->beamWidth;
    auto const positions = static_cast<std::size_t>(std::min(mWindowBlocks, ceilDiv(tokens, mTokensPerBlock)));
    while (sequence.blockIds.size() < positions)
    {
        // A block filled during generation gets a successor per beam.
        for (SizeType32 beam = 0; beam < beamWidth; ++beam)
        {
            SizeType32 const block = takeFreeBlock();
            hold(sequence, block);
            if (beam == 0)
            {
                sequence.blockIds.push_back(block);
            }
        }
    }
}

void KvCachePool::storeContext(Sequence const& sequence)
{
    if (!mReuse.enableBlockReuse || sequence.blockIds.empty() || sequence.contextLength > mWindowTokens)
    {
        return;
    }
    auto const usable = static_cast<std::size_t>(std::max<SizeType32>(0, sequence.contextLength - 1));
    storeBlocks(splitIntoBlocks(tokensOf(sequence), usable, mTokensPerBlock, false), sequence.blockIds,
        sequence.request->loraTaskId);
}

void KvCachePool::release(Sequence& sequence, bool storeForReuse)
{
    // Beam search results are not stored (as TensorRT-LLM): the beams' last blocks differ.
    // Blocks that wrapped around the window hold no prefix to share.
    bool const wrapped = sequence.request->prompt.size() + sequence.generated.at(0).size()
        > static_cast<std::size_t>(mWindowTokens);
    if (storeForReuse && mReuse.enableBlockReuse && sequence.request->beamWidth == 1 && !sequence.blockIds.empty()
        && !wrapped)
    {
        VecTokens const tokens = tokensOf(sequence);
        // Only computed tokens are stored: all but the last token once the context is done, else the prefix so far.
        std::size_t const computed = sequence.contextPosition < sequence.contextLength
                                         ? static_cast<std::size_t>(sequence.contextPosition)
                                         : tokens.size() - 1;
        std::vector<VecTokens> keys
            = splitIntoBlocks(tokens, std::min(computed, tokens.size() - 1), mTokensPerBlock, true);
        keys.resize(std::min(keys.size(), sequence.blockIds.size()));
        storeBlocks(std::move(keys), sequence.blockIds, sequence.request->loraTaskId);
    }
    // Last block first, so that a sequence's leaves are evicted before its earlier blocks.
    for (auto it = sequence.heldBlocks.rbegin(); it != sequence.heldBlocks.rend(); ++it)
    {
        if (--mRefCount[static_cast<std::size_t>(*it)] == 0)
        {
            pushFree(*it);
        }
    }
    mReservedBlocks -= sequence.reservedBlocks;
    sequence.heldBlocks.clear();
    sequence.blockIds.clear();
    sequence.reservedBlocks = 0;
    sequence.holdsBlocks = false;
}

void KvCachePool::storeBlocks(std::vector<VecTokens> keys, std::vector<SizeType32> const& blockIds, LoraKey lora)
{
    SizeType32 parent = ReuseTree::kRoot;
    bool matching = true;
    std::vector<SizeType32> stored;
    for (std::size_t position = 0; position < keys.size() && position < blockIds.size(); ++position)
    {
        if (matching)
        {
            // Blocks with these tokens may already be cached (this sequence's reused ones, or another's copy).
            SizeType32 const existing = mTree.findExact(parent, lora, keys[position]);
            if (existing >= 0)
            {
                parent = existing;
                continue;
            }
            matching = false;
        }
        SizeType32 const block = blockIds[position];
        if (mTree.inTree(block))
        {
            break;
        }
        mTree.insert(parent, lora, block, std::move(keys[position]), mTokensPerBlock);
        stored.push_back(block);
        parent = block;
    }
    if (stored.empty() || !mEvents || !mEvents->enabled())
    {
        return;
    }
    SizeType32 const firstParent = mTree.parent(stored.front());
    std::optional<IdType> parentHash;
    if (firstParent != ReuseTree::kRoot)
    {
        parentHash = mTree.hash(firstParent);
    }
    std::vector<KVCacheStoredBlockData> blocks;
    blocks.reserve(stored.size());
    for (SizeType32 const block : stored)
    {
        tensorrt_llm::runtime::VecUniqueTokens uniqueTokens;
        for (TokenIdType const token : mTree.tokens(block))
        {
            uniqueTokens.push_back({token, 0});
        }
        // Stored blocks carry the adapter they were computed under, as TensorRT-LLM's do (the block key's task id).
        blocks.emplace_back(
            mTree.hash(block), std::move(uniqueTokens), mTree.lora(block), kPrimaryLevel, kDefaultPriority);
    }
    mEvents->recordStored(parentHash, std::move(blocks));
}

SizeType32 KvCachePool::takeFreeBlock()
{
    if (mTouchedBlocks < mTotalBlocks)
    {
        ++mAllocTotalBlocks;
        // Never used blocks go first, in id order, as from the real pool's initial free queue.
        SizeType32 const block = mTouchedBlocks++;
        mRefCount.push_back(0);
        mPrevFree.push_back(kNotQueued);
        mNextFree.push_back(kNotQueued);
        mTree.addBlock();
        ++mAllocNewBlocks;
        return block;
    }
    if (mFreeHead == kNoBlock)
    {
        throw std::runtime_error("the simulated KV cache has no free block left (scheduler accounting error)");
    }
    ++mAllocTotalBlocks;
    SizeType32 const block = mFreeHead;
    claim(block);
    if (!mTree.hasContent(block))
    {
        ++mAllocNewBlocks;
    }
    if (mTree.inTree(block) || !mTree.isLeaf(block))
    {
        std::vector<std::uint64_t> removed;
        mTree.removeSubtree(block, removed);
        if (mEvents)
        {
            for (auto const hash : removed)
            {
                mEvents->recordRemoved(hash);
            }
        }
    }
    return block;
}

void KvCachePool::claim(SizeType32 block)
{
    auto const index = static_cast<std::size_t>(block);
    if (mPrevFree[index] == kNotQueued)
    {
        return;
    }
    SizeType32 const prev = mPrevFree[index];
    SizeType32 const next = mNextFree[index];
    (prev == kNoBlock ? mFreeHead : mNextFree[static_cast<std::size_t>(prev)]) = next;
    (next == kNoBlock ? mFreeTail : mPrevFree[static_cast<std::size_t>(next)]) = prev;
    mPrevFree[index] = kNotQueued;
    mNextFree[index] = kNotQueued;
    --mReleasedFree;
}

void KvCachePool::pushFree(SizeType32 block)
{
    auto const index = static_cast<std::size_t>(block);
    mPrevFree[index] = mFreeTail;
    mNextFree[index] = kNoBlock;
    (mFreeTail == kNoBlock ? mFreeHead : mNextFree[static_cast<std::size_t>(mFreeTail)]) = block;
    mFreeTail = block;
    ++mReleasedFree;
}

void KvCachePool::hold(Sequence& sequence, SizeType32 block)
{
    ++mRefCount[static_cast<std::size_t>(block)];
    sequence.heldBlocks.push_back(block);
}

} // namespace tensorrt_llm::executor::sim
