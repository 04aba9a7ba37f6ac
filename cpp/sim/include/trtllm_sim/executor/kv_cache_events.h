// Simulator-private part of the simulated `tensorrt_llm/executor/executor.h`: the KV-cache events and their reader
// (KVCacheEvent, KVCacheEventManager). TensorRT-LLM declares these in executor.h itself; the simulator keeps them
// here only to keep its files small. Include `tensorrt_llm/executor/executor.h`, never this file. Same names and
// signatures as the real 1.1/1.2 classes, nothing they lack.
#pragma once

#include "tensorrt_llm/executor/types.h"
#include "tensorrt_llm/runtime/common.h"

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <variant>
#include <vector>

namespace tensorrt_llm::batch_manager::kv_cache_manager
{
/// The KV-cache manager behind a KVCacheEventManager (the simulator defines its own, see cpp/sim/src/kv_events.h).
class BaseKVCacheManager;
} // namespace tensorrt_llm::batch_manager::kv_cache_manager

namespace tensorrt_llm::executor
{

// KV-cache events (KvCacheConfig::eventBufferMaxSize > 0): what the cache stored, removed or changed, in order.

/// The cache was created with these many blocks per cache level (0: GPU, 1: host).
struct KVCacheCreatedData
{
    std::vector<SizeType32> numBlocksPerCacheLevel;
};

/// One block that became reusable: its hash (chained with its parent's), its tokens and where it lives.
struct KVCacheStoredBlockData
{
    KVCacheStoredBlockData(IdType blockHash, tensorrt_llm::runtime::VecUniqueTokens tokens,
        std::optional<tensorrt_llm::runtime::LoraTaskIdType> loraId, SizeType32 cacheLevel, SizeType32 priority)
        : blockHash{blockHash}
        , tokens{std::move(tokens)}
        , loraId{loraId}
        , cacheLevel{cacheLevel}
        , priority{priority}
    {
    }

    IdType blockHash;
    tensorrt_llm::runtime::VecUniqueTokens tokens;
    std::optional<tensorrt_llm::runtime::LoraTaskIdType> loraId;
    SizeType32 cacheLevel;
    SizeType32 priority;
};

/// A run of stored blocks: each block's parent is the block before it, the first one's is `parentHash`
/// (none: the first block of a sequence).
struct KVCacheStoredData
{
    std::optional<IdType> parentHash;
    std::vector<KVCacheStoredBlockData> blocks;
};

/// Blocks that are no longer reusable (evicted).
struct KVCacheRemovedData
{
    std::vector<IdType> blockHashes;
};

template <typename T>
struct KVCacheEventDiff
{
    T oldValue;
    T newValue;
};

/// A stored block moved between cache levels or changed priority.
struct KVCacheUpdatedData
{
    explicit KVCacheUpdatedData(IdType blockHash)
        : blockHash{blockHash}
    {
    }

    explicit KVCacheUpdatedData(IdType blockHash, std::optional<KVCacheEventDiff<SizeType32>> cacheLevel,
        std::optional<KVCacheEventDiff<SizeType32>> priority)
        : blockHash{blockHash}
        , cacheLevel{cacheLevel}
        , priority{priority}
    {
    }

    KVCacheUpdatedData& cacheLevelUpdated(SizeType32 oldValue, SizeType32 newValue)
    {
        cacheLevel = KVCacheEventDiff<SizeType32>{oldValue, newValue};
        return *this;
    }

    KVCacheUpdatedData& priorityUpdated(SizeType32 oldValue, SizeType32 newValue)
    {
        priority = KVCacheEventDiff<SizeType32>{oldValue, newValue};
        return *this;
    }

    IdType blockHash;
    std::optional<KVCacheEventDiff<SizeType32>> cacheLevel = std::nullopt;
    std::optional<KVCacheEventDiff<SizeType32>> priority = std::nullopt;
};

using KVCacheEventData = std::variant<KVCacheCreatedData, KVCacheStoredData, KVCacheRemovedData, KVCacheUpdatedData>;

struct KVCacheEvent
{
    KVCacheEvent(IdType eventId, KVCacheEventData data, SizeType32 windowSize,
        std::optional<SizeType32> attentionDpRank = std::nullopt);

    /// Consecutive per executor, from 0 (the Created event); a gap means the bounded buffer dropped events.
    IdType eventId;
    KVCacheEventData data;
    /// The attention window of the cache the event is about.
    SizeType32 windowSize;
    std::optional<SizeType32> attentionDpRank;
};

/// Reads the KV-cache events an executor records.
class KVCacheEventManager
{
public:
    KVCacheEventManager(
        std::shared_ptr<tensorrt_llm::batch_manager::kv_cache_manager::BaseKVCacheManager> kvCacheManager);

    /// Returns and clears the buffered events. Waits up to `timeout` for one when there is none (nullopt: until
    /// one arrives or the executor shuts down).
    std::deque<KVCacheEvent> getLatestEvents(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

private:
    std::shared_ptr<tensorrt_llm::batch_manager::kv_cache_manager::BaseKVCacheManager> kvCacheManager;
};

} // namespace tensorrt_llm::executor
