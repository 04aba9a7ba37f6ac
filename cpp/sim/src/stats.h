// Helpers for the executor's statistics: TensorRT-LLM's timestamp format, a bounded drain-on-read buffer and
// plausible memory figures for a simulated engine.
#pragma once

#include "timing_model.h"

#include <chrono>
#include <cstddef>
#include <deque>
#include <mutex>
#include <string>

namespace tensorrt_llm::executor::sim
{

/// Local wall-clock time as "%m-%d-%Y %H:%M:%S.uuuuuu", the format of IterationStats::timestamp.
std::string formatTimestamp(std::chrono::system_clock::time_point time);

/// A thread-safe FIFO holding at most `capacity` entries (the oldest are dropped), drained by take().
template <typename T>
class StatsBuffer
{
public:
    explicit StatsBuffer(std::size_t capacity)
        : mCapacity(capacity)
    {
    }

    [[nodiscard]] bool enabled() const { return mCapacity > 0; }

    void push(T value)
    {
        if (mCapacity == 0)
        {
            return;
        }
        std::lock_guard<std::mutex> lock(mMutex);
        while (mEntries.size() >= mCapacity)
        {
            mEntries.pop_front();
        }
        mEntries.push_back(std::move(value));
    }

    std::deque<T> take()
    {
        std::lock_guard<std::mutex> lock(mMutex);
        std::deque<T> out;
        out.swap(mEntries);
        return out;
    }

private:
    std::size_t mCapacity;
    std::mutex mMutex;
    std::deque<T> mEntries;
};

/// Memory the simulated engine would use, in bytes.
struct MemoryFigures
{
    std::size_t gpu;
    std::size_t cpu;
    std::size_t pinned;
};

/// One GPU's weights, KV-cache pool and runtime reserve; small constant host buffers.
MemoryFigures estimateMemory(TimingModel const& timing, std::int64_t kvCacheTokens, double reserveBytes);

} // namespace tensorrt_llm::executor::sim
