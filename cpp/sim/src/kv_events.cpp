// KV-cache event recording and the public event types' out-of-line members (see kv_events.h).
#include "kv_events.h"

#include <algorithm>
#include <utility>

namespace tensorrt_llm::batch_manager::kv_cache_manager
{

namespace tle = tensorrt_llm::executor;

BaseKVCacheManager::BaseKVCacheManager(std::size_t maxEvents, tle::SizeType32 windowSize)
    : mMaxEvents(maxEvents)
    , mWindowSize(windowSize)
{
}

void BaseKVCacheManager::record(tle::KVCacheEventData data)
{
    mRecorded.emplace_back(mNextEventId++, std::move(data), mWindowSize);
}

void BaseKVCacheManager::recordCreated(std::vector<tle::SizeType32> numBlocksPerCacheLevel)
{
    if (enabled())
    {
        record(tle::KVCacheCreatedData{std::move(numBlocksPerCacheLevel)});
    }
}

void BaseKVCacheManager::recordStored(
    std::optional<tle::IdType> parentHash, std::vector<tle::KVCacheStoredBlockData> blocks)
{
    if (enabled() && !blocks.empty())
    {
        record(tle::KVCacheStoredData{parentHash, std::move(blocks)});
    }
}

void BaseKVCacheManager::recordRemoved(tle::IdType blockHash)
{
    if (!enabled())
    {
        return;
    }
    if (!mRecorded.empty())
    {
        if (auto* removed = std::get_if<tle::KVCacheRemovedData>(&mRecorded.back().data))
        {
            removed->blockHashes.push_back(blockHash);
            return;
        }
    }
    record(tle::KVCacheRemovedData{{blockHash}});
}

void BaseKVCacheManager::flush()
{
    if (mRecorded.empty())
    {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mMutex);
        for (auto& event : mRecorded)
        {
            mBuffer.push_back(std::move(event));
        }
        while (mBuffer.size() > mMaxEvents)
        {
            mBuffer.pop_front();
        }
    }
    mRecorded.clear();
    mPublished.notify_all();
}

void BaseKVCacheManager::stop()
{
    {
        std::lock_guard<std::mutex> lock(mMutex);
        mStopped = true;
    }
    mPublished.notify_all();
}

std::deque<tle::KVCacheEvent> BaseKVCacheManager::getLatestEvents(std::optional<std::chrono::milliseconds> timeout)
{
    if (!enabled())
    {
        return {};
    }
    // Longest wait honoured, so that "wait forever" values cannot overflow the clock arithmetic.
    constexpr std::chrono::milliseconds kMaxWait = std::chrono::hours(24 * 365);
    std::unique_lock<std::mutex> lock(mMutex);
    auto const ready = [this]() { return !mBuffer.empty() || mStopped; };
    if (timeout)
    {
        mPublished.wait_for(lock, std::clamp(*timeout, std::chrono::milliseconds(0), kMaxWait), ready);
    }
    else
    {
        mPublished.wait(lock, ready);
    }
    std::deque<tle::KVCacheEvent> out;
    out.swap(mBuffer);
    return out;
}

} // namespace tensorrt_llm::batch_manager::kv_cache_manager

namespace tensorrt_llm::executor
{

KVCacheEvent::KVCacheEvent(
    IdType eventId, KVCacheEventData data, SizeType32 windowSize, std::optional<SizeType32> attentionDpRank)
    : eventId{eventId}
    , data{std::move(data)}
    , windowSize{windowSize}
    , attentionDpRank{attentionDpRank}
{
}

KVCacheEventManager::KVCacheEventManager(
    std::shared_ptr<tensorrt_llm::batch_manager::kv_cache_manager::BaseKVCacheManager> kvCacheManager)
    : kvCacheManager(std::move(kvCacheManager))
{
}

std::deque<KVCacheEvent> KVCacheEventManager::getLatestEvents(std::optional<std::chrono::milliseconds> timeout)
{
    if (!kvCacheManager)
    {
        return {};
    }
    return kvCacheManager->getLatestEvents(timeout);
}

} // namespace tensorrt_llm::executor
