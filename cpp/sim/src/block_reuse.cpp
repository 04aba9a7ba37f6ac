// The reuse tree and block hashing (see block_reuse.h).
#include "block_reuse.h"

#include <algorithm>

namespace tensorrt_llm::executor::sim
{

namespace
{

/// SplitMix64's finaliser: every input bit flips each output bit with probability about one half.
std::uint64_t mix64(std::uint64_t value)
{
    value += 0x9E3779B97F4A7C15ULL;
    value = (value ^ (value >> 30U)) * 0xBF58476D1CE4E5B9ULL;
    value = (value ^ (value >> 27U)) * 0x94D049BB133111EBULL;
    return value ^ (value >> 31U);
}

} // namespace

std::uint64_t blockHash(std::uint64_t parentHash, VecTokens const& tokens, LoraKey lora)
{
    // The parent's hash and the token count seed the chain, so equal tokens under different prefixes (or a block
    // and its own prefix) never share a hash; an adapter's task id joins the seed, so equal tokens computed under
    // different adapters do not either (base-model hashes are unchanged).
    std::uint64_t hash = mix64(parentHash ^ mix64(tokens.size()));
    if (lora)
    {
        hash = mix64(hash ^ mix64(*lora ^ 0x4C6F526141646170ULL));
    }
    for (auto const token : tokens)
    {
        hash = mix64(hash ^ static_cast<std::uint32_t>(token));
    }
    return hash;
}

std::vector<VecTokens> splitIntoBlocks(
    VecTokens const& tokens, std::size_t usable, SizeType32 tokensPerBlock, bool allowPartial)
{
    std::vector<VecTokens> blocks;
    auto const size = static_cast<std::size_t>(tokensPerBlock);
    std::size_t const end = std::min(usable, tokens.size());
    for (std::size_t start = 0; start < end; start += size)
    {
        std::size_t const stop = std::min(start + size, end);
        if (stop - start < size && !allowPartial)
        {
            break;
        }
        blocks.emplace_back(tokens.begin() + static_cast<std::ptrdiff_t>(start),
            tokens.begin() + static_cast<std::ptrdiff_t>(stop));
    }
    return blocks;
}

SizeType32 ReuseTree::commonPrefix(VecTokens const& a, VecTokens const& b)
{
    auto const mismatch = std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(std::min(a.size(), b.size())),
        b.begin());
    return static_cast<SizeType32>(mismatch.first - a.begin());
}

SizeType32 ReuseTree::findExact(SizeType32 parent, LoraKey lora, VecTokens const& key) const
{
    auto const& children = childrenOf(parent, lora);
    auto const it = children.find(key);
    return it == children.end() ? -1 : it->second;
}

void ReuseTree::insert(SizeType32 parent, LoraKey lora, SizeType32 block, VecTokens key, SizeType32 tokensPerBlock)
{
    std::uint64_t const parentHash = parent == kRoot ? 0 : mNodes[parent].hash;
    assign(block, lora, std::move(key), tokensPerBlock, parentHash);
    Node& node = mNodes[block];
    node.parent = parent;
    childrenOf(parent, lora).emplace(node.key, block);
}

void ReuseTree::assign(
    SizeType32 block, LoraKey lora, VecTokens key, SizeType32 tokensPerBlock, std::uint64_t parentHash)
{
    Node& node = mNodes[block];
    node.full = static_cast<SizeType32>(key.size()) == tokensPerBlock;
    node.hash = blockHash(parentHash, key, lora);
    node.key = std::move(key);
    node.lora = lora;
}

void ReuseTree::removeSubtree(SizeType32 block, std::vector<std::uint64_t>& removedHashes)
{
    Node& node = mNodes[block];
    // Children first; each unlinks itself from this node, so iterate over a copy.
    std::vector<SizeType32> children;
    for (auto const& entry : node.children)
    {
        children.push_back(entry.second);
    }
    for (SizeType32 const child : children)
    {
        removeSubtree(child, removedHashes);
    }
    if (inTree(block))
    {
        if (!node.key.empty())
        {
            removedHashes.push_back(node.hash);
        }
        unlinkLeaf(block);
    }
}

void ReuseTree::unlinkLeaf(SizeType32 block)
{
    Node& node = mNodes[block];
    if (node.parent == kDetached)
    {
        return;
    }
    auto& siblings = childrenOf(node.parent, node.lora);
    auto const it = siblings.find(node.key);
    if (it != siblings.end() && it->second == block)
    {
        siblings.erase(it);
    }
    if (node.parent == kRoot && siblings.empty())
    {
        // An adapter with no cached first block keeps no (empty) entry under the root.
        mRootChildren.erase(node.lora);
    }
    node.parent = kDetached;
}

} // namespace tensorrt_llm::executor::sim
