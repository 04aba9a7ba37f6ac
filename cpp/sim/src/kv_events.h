// KV-cache events. The executor loop records them while an iteration runs and publishes them at its end into a
// bounded buffer, from which KVCacheEventManager::getLatestEvents drains them on any thread. As in TensorRT-LLM,
// a full buffer drops its oldest events (their ids then leave a gap) and consecutive removals of one iteration
// share one Removed event.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

namespace tensorrt_llm::batch_manager::kv_cache_manager
{

/// The simulator's stand-in for TensorRT-LLM's KV-cache manager as a KVCacheEventManager sees it: the event
/// recorder and its buffer. The executor and every KVCacheEventManager it hands out share it, so a manager keeps
/// working (returning what is left) after its executor shut down.
class BaseKVCacheManager
{
public:
    /// `maxEvents` 0 disables events: nothing is recorded and getLatestEvents returns at once, empty.
    BaseKVCacheManager(std::size_t maxEvents, executor::SizeType32 windowSize);

    [[nodiscard]] bool enabled() const { return mMaxEvents > 0; }

    // Recording, on the executor loop thread only; events wait for flush().
    void recordCreated(std::vector<executor::SizeType32> numBlocksPerCacheLevel);
    void recordStored(std::optional<executor::IdType> parentHash, std::vector<executor::KVCacheStoredBlockData> blocks);
    void recordRemoved(executor::IdType blockHash);
    /// Publishes the recorded events and wakes readers. The oldest buffered events go first when over the limit.
    void flush();
    /// The executor shut down: wakes readers; from now on reads return at once with what is left.
    void stop();

    std::deque<executor::KVCacheEvent> getLatestEvents(std::optional<std::chrono::milliseconds> timeout);

private:
    void record(executor::KVCacheEventData data);

    std::size_t const mMaxEvents;
    executor::SizeType32 const mWindowSize;

    // Loop thread only
    executor::IdType mNextEventId{0};
    std::deque<executor::KVCacheEvent> mRecorded;

    // Shared with readers (mMutex)
    std::mutex mMutex;
    std::condition_variable mPublished;
    std::deque<executor::KVCacheEvent> mBuffer;
    bool mStopped{false};
};

} // namespace tensorrt_llm::batch_manager::kv_cache_manager
