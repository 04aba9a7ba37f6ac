// Block reuse: the radix tree of reusable KV-cache blocks, as TensorRT-LLM's KV-cache manager keeps it. Each node
// is a block keyed by its tokens under its parent block, so a path from the root spells a token prefix; a block is
// named by a 64-bit hash chained from its parent's hash and its own tokens. The tree stores block ids only; who
// holds a block, and which blocks are free, is the pool's business (kv_cache.h).
// As in TensorRT-LLM, a block's key includes the LoRA task id of the request that computed it (none for the base
// model): KV computed under one adapter differs from any other's, so each adapter (and the base model) has its own
// first blocks under the root, and the task id is mixed into every block hash and reported with stored blocks.
#pragma once

#include "tensorrt_llm/executor/types.h"

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace tensorrt_llm::executor::sim
{

/// The LoRA task id a block was computed under, none for the base model.
using LoraKey = std::optional<IdType>;

/// The hash of a block holding `tokens` computed under `lora`, whose parent block has hash `parentHash` (0 for a
/// sequence's first block).
std::uint64_t blockHash(std::uint64_t parentHash, VecTokens const& tokens, LoraKey lora = std::nullopt);

/// The first `usable` tokens split into blocks of `tokensPerBlock`; a shorter last block only with `allowPartial`.
std::vector<VecTokens> splitIntoBlocks(
    VecTokens const& tokens, std::size_t usable, SizeType32 tokensPerBlock, bool allowPartial);

class ReuseTree
{
public:
    /// The parent of a sequence's first block.
    static constexpr SizeType32 kRoot = -1;

    /// Adds the next block id (the tree knows blocks 0..n-1 once n have been added): the pool adds a block the
    /// first time it hands it out, so that the tree's memory follows the blocks in use, not the pool's capacity.
    void addBlock() { mNodes.emplace_back(); }

    /// A reusable block found for a key.
    struct Match
    {
        /// The block, or -1 when nothing matched.
        SizeType32 block{-1};
        /// Leading tokens of the key the block holds.
        SizeType32 tokens{0};
        /// True unless the block holds exactly the key and is full: the reuser must copy it or take it over.
        bool partial{false};
    };

    /// The child of `parent` to reuse for the next block of a sequence run under `lora`, whose tokens are `key`: the
    /// child with
    /// exactly those tokens, else (with `partialReuse`) the child sharing the longest token prefix with the key
    /// among those `takeable` allows (TensorRT-LLM's copyOnPartialReuse lets every child be copied).
    template <typename Takeable>
    [[nodiscard]] Match find(
        SizeType32 parent, LoraKey lora, VecTokens const& key, bool partialReuse, Takeable const& takeable) const
    {
        auto const& children = childrenOf(parent, lora);
        if (key.empty() || children.empty())
        {
            return {};
        }
        if (auto const exact = children.find(key); exact != children.end())
        {
            return {exact->second, static_cast<SizeType32>(key.size()), !mNodes[exact->second].full};
        }
        Match best;
        if (!partialReuse)
        {
            return best;
        }
        for (auto const& [childKey, child] : children)
        {
            SizeType32 const shared = commonPrefix(childKey, key);
            if (shared > best.tokens && takeable(child))
            {
                best = Match{child, shared, true};
            }
        }
        return best;
    }

    /// The child of `parent` holding exactly `key` computed under `lora`, or -1.
    [[nodiscard]] SizeType32 findExact(SizeType32 parent, LoraKey lora, VecTokens const& key) const;

    /// Links `block` (not in the tree) under `parent` with `key`, computed under `lora`; it becomes reusable.
    void insert(SizeType32 parent, LoraKey lora, SizeType32 block, VecTokens key, SizeType32 tokensPerBlock);
    /// Gives a block not in the tree the tokens it is about to hold under `lora` (and the hash they make after
    /// `parentHash`).
    void assign(SizeType32 block, LoraKey lora, VecTokens key, SizeType32 tokensPerBlock, std::uint64_t parentHash);
    /// Unlinks `block` and every block below it; appends the hashes of those that were in the tree, deepest
    /// first (the order TensorRT-LLM reports removals in).
    void removeSubtree(SizeType32 block, std::vector<std::uint64_t>& removedHashes);
    /// Unlinks a leaf without reporting it (a sequence takes over a partially matching leaf nobody uses).
    void unlinkLeaf(SizeType32 block);

    [[nodiscard]] bool inTree(SizeType32 block) const { return mNodes[block].parent != kDetached; }
    [[nodiscard]] bool isLeaf(SizeType32 block) const { return mNodes[block].children.empty(); }
    /// True once the block has held keyed tokens (a block that never did counts as newly allocated).
    [[nodiscard]] bool hasContent(SizeType32 block) const { return !mNodes[block].key.empty(); }
    [[nodiscard]] std::uint64_t hash(SizeType32 block) const { return mNodes[block].hash; }
    [[nodiscard]] VecTokens const& tokens(SizeType32 block) const { return mNodes[block].key; }
    /// The LoRA task id the block's tokens were computed under.
    [[nodiscard]] LoraKey lora(SizeType32 block) const { return mNodes[block].lora; }
    /// The tree parent of a block in the tree (kRoot for a first block).
    [[nodiscard]] SizeType32 parent(SizeType32 block) const { return mNodes[block].parent; }

private:
    static constexpr SizeType32 kDetached = -2;

    struct Node
    {
        VecTokens key;
        LoraKey lora;
        bool full{false};
        std::uint64_t hash{0};
        SizeType32 parent{kDetached};
        std::map<VecTokens, SizeType32> children;
    };

    /// The children of `parent`; under the root, those of `lora` only (below the root, every block shares its
    /// first block's adapter).
    [[nodiscard]] std::map<VecTokens, SizeType32> const& childrenOf(SizeType32 parent, LoraKey lora) const
    {
        if (parent != kRoot)
        {
            return mNodes[parent].children;
        }
        static std::map<VecTokens, SizeType32> const kNone;
        auto const it = mRootChildren.find(lora);
        return it == mRootChildren.end() ? kNone : it->second;
    }

    std::map<VecTokens, SizeType32>& childrenOf(SizeType32 parent, LoraKey lora)
    {
        return parent == kRoot ? mRootChildren[lora] : mNodes[parent].children;
    }

    static SizeType32 commonPrefix(VecTokens const& a, VecTokens const& b);

    std::vector<Node> mNodes;
    /// First blocks of sequences, per adapter (nullopt: the base model).
    std::map<LoraKey, std::map<VecTokens, SizeType32>> mRootChildren;
};

} // namespace tensorrt_llm::executor::sim
