// The paged KV cache, as TensorRT-LLM's KV-cache manager runs it (it stores no data, only which block holds what).
// A pool of fixed-size blocks shared by all sequences. A sequence's context blocks are allocated when it is first
// scheduled; with block reuse they are looked up first in the reuse tree (block_reuse.h): leading blocks whose
// tokens match are taken over and their prefill skipped (the prompt's last token is always computed), a partially
// matching block is copied or taken over with partial reuse. Once a sequence's context is computed its full prompt
// blocks become reusable, and when it ends so do its other computed blocks. Released blocks stay in the tree and
// count as free; a fresh block comes from the least recently released free block (a sequence releases its last
// block first, so leaves go before their parents), evicting it and everything below it from the tree. Beams share
// the context blocks except the last; every later block is one per beam. Reuse is per LoRA adapter: a sequence only
// reuses blocks computed under its own adapter (or, without one, under the base model).
// Blocks that were never handed out have no state at all: they are taken in id order before any released block
// (as the real pool's initial free queue hands them out), and per-block state (reference counts, the free queue's
// links, reuse-tree nodes) grows only as blocks are first used. A pool of a million blocks costs nothing to create.
#pragma once

#include "block_reuse.h"
#include "kv_events.h"
#include "sequence.h"

#include <memory>
#include <vector>

namespace tensorrt_llm::executor::sim
{

/// reused / (reused + missed), 0 before any lookup: the cache hit rate TensorRT-LLM reports.
float hitRate(SizeType32 reused, SizeType32 missed);

/// KvCacheConfig's reuse switches.
struct KvReuseConfig
{
    bool enableBlockReuse{true};
    bool enablePartialReuse{true};
    /// Partially matching blocks that are in use (or have children) are copied; otherwise only a leaf nobody uses
    /// can be reused partially.
    bool copyOnPartialReuse{true};

    static KvReuseConfig from(KvCacheConfig const& config);
};

class KvCachePool
{
public:
    /// Records the Created event on `events` (which may be disabled). A sequence holds at most the blocks of
    /// `attentionWindow` tokens (0: no limit), as TensorRT-LLM's cyclic KV cache does for a sliding window.
    KvCachePool(SizeType32 totalBlocks, SizeType32 tokensPerBlock, SizeType32 attentionWindow, KvReuseConfig reuse,
        std::shared_ptr<batch_manager::kv_cache_manager::BaseKVCacheManager> events);

    [[nodiscard]] SizeType32 totalBlocks() const { return mTotalBlocks; }
    [[nodiscard]] SizeType32 tokensPerBlock() const { return mTokensPerBlock; }
    /// Blocks held by sequences.
    [[nodiscard]] SizeType32 usedBlocks() const { return mTotalBlocks - freeBlocks(); }
    /// Blocks nobody holds, reusable cached blocks included (a fresh allocation evicts those).
    [[nodiscard]] SizeType32 freeBlocks() const { return mTotalBlocks - mTouchedBlocks + mReleasedFree; }
    /// Blocks that have ever been handed out, the only ones with per-block state.
    [[nodiscard]] SizeType32 touchedBlocks() const { return mTouchedBlocks; }
    /// Blocks promised to started sequences (GUARANTEED_NO_EVICT reserves a request's whole length).
    [[nodiscard]] SizeType32 reservedBlocks() const { return mReservedBlocks; }
    [[nodiscard]] bool reuseEnabled() const { return mReuse.enableBlockReuse; }

    /// Blocks a sequence holds once `tokens` of its tokens are in the cache, `contextTokens` of them its context,
    /// with `beamWidth` beams.
    [[nodiscard]] SizeType32 blocksFor(SizeType32 contextTokens, SizeType32 tokens, SizeType32 beamWidth) const;
    /// Free blocks `sequence` needs for its largest next step: all its context blocks at its first step, then none
    /// until a generation step needs a new block.
    [[nodiscard]] SizeType32 blocksForStep(Sequence const& sequence) const;

    /// Marks `sequence` as started, reserving `reserve` blocks for it.
    void start(Sequence& sequence, SizeType32 reserve);
    /// Allocates the blocks the sequence's scheduled step needs. At its first step these are all its context
    /// blocks, reusing cached ones: the reused tokens move its context position forward and its chunk shrinks to
    /// the tokens still to compute (ending on a block boundary unless it finishes the context).
    void allocateStep(Sequence& sequence);
    /// Makes the full blocks of the sequence's computed context reusable.
    void storeContext(Sequence const& sequence);
    /// Returns all blocks of the sequence. With `storeForReuse` (and reuse on, beam width 1) its computed blocks
    /// become reusable first.
    void release(Sequence& sequence, bool storeForReuse);

    // Cumulative counters since construction, as TensorRT-LLM's KVCacheManager reports them.
    [[nodiscard]] SizeType32 allocTotalBlocks() const { return mAllocTotalBlocks; }
    [[nodiscard]] SizeType32 allocNewBlocks() const { return mAllocNewBlocks; }
    [[nodiscard]] SizeType32 reusedBlocks() const { return mReusedBlocks; }
    [[nodiscard]] SizeType32 missedBlocks() const { return mMissedBlocks; }

private:
    void addSequence(Sequence& sequence);
    /// Reuses cached blocks for the sequence's context; returns the context tokens they hold.
    SizeType32 loadOrAllocateContext(Sequence& sequence, VecTokens const& tokens, SizeType32 contextBlocks,
        SizeType32 sharedBlocks);
    void growTo(Sequence& sequence, SizeType32 tokens);
    /// Links the sequence's blocks into the reuse tree under `keys` and its adapter `lora` (matching blocks already
    /// there are kept).
    void storeBlocks(std::vector<VecTokens> keys, std::vector<SizeType32> const& blockIds, LoraKey lora);
    /// Takes a never used block if any is left, else the least recently released free block, evicting it (and
    /// what is below it) from the reuse tree.
    SizeType32 takeFreeBlock();
    /// Removes a free block from the free queue (it is about to be held).
    void claim(SizeType32 block);
    /// Appends a block nobody holds any more to the free queue (most recently released last).
    void pushFree(SizeType32 block);
    void hold(Sequence& sequence, SizeType32 block);
    [[nodiscard]] SizeType32 contextBlocksOf(SizeType32 contextTokens) const;

    SizeType32 mTotalBlocks;
    SizeType32 mTokensPerBlock;
    /// Blocks one sequence (one beam) holds at most: its attention window's.
    SizeType32 mWindowBlocks;
    /// Tokens of the attention window (the largest SizeType32 when there is none).
    SizeType32 mWindowTokens;
    KvReuseConfig mReuse;
    std::shared_ptr<batch_manager::kv_cache_manager::BaseKVCacheManager> mEvents;
    ReuseTree mTree;
    /// Blocks [0, mTouchedBlocks) have been handed out at least once; the rest are free and stateless.
    SizeType32 mTouchedBlocks{0};
    /// Holders of each touched block.
    std::vector<SizeType32> mRefCount;
    /// The free queue of released blocks, least recently released first: a doubly linked list through the
    /// touched blocks' ids (kNoBlock ends it; kNotQueued marks a block that is held).
    static constexpr SizeType32 kNoBlock = -1;
    static constexpr SizeType32 kNotQueued = -2;
    std::vector<SizeType32> mPrevFree;
    std::vector<SizeType32> mNextFree;
    SizeType32 mFreeHead{kNoBlock};
    SizeType32 mFreeTail{kNoBlock};
    SizeType32 mReleasedFree{0};

    SizeType32 mReservedBlocks{0};
    SizeType32 mAllocTotalBlocks{0};
    SizeType32 mAllocNewBlocks{0};
    SizeType32 mReusedBlocks{0};
    SizeType32 mMissedBlocks{0};
};

} // namespace tensorrt_llm::executor::sim
