// The simulator's control channel (see sim_control.h): a map from each live Executor to its implementation,
// since the TensorRT-LLM-shaped Executor class exposes nothing beyond the real one's API.
#include "sim_control.h"

#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace tensorrt_llm::executor::sim::control
{

namespace
{

std::mutex& registryMutex()
{
    static std::mutex mutex;
    return mutex;
}

std::unordered_map<Executor const*, ArrivalControl*>& registry()
{
    static std::unordered_map<Executor const*, ArrivalControl*> map;
    return map;
}

ArrivalControl& controlOf(Executor const& executor)
{
    std::lock_guard<std::mutex> lock(registryMutex());
    auto const found = registry().find(&executor);
    if (found == registry().end())
    {
        throw std::invalid_argument("not a live simulated executor");
    }
    return *found->second;
}

} // namespace

void registerExecutor(Executor const* executor, ArrivalControl* impl)
{
    std::lock_guard<std::mutex> lock(registryMutex());
    registry()[executor] = impl;
}

void unregisterExecutor(Executor const* executor)
{
    std::lock_guard<std::mutex> lock(registryMutex());
    registry().erase(executor);
}

std::int64_t nowNs(Executor const& executor)
{
    return controlOf(executor).controlNowNs();
}

IdType enqueueAt(Executor& executor, Request const& request, std::int64_t arrivalNs,
    std::optional<IdType> afterRequest, std::optional<double> followUpDelayMs)
{
    return controlOf(executor).enqueueAt(request, arrivalNs, afterRequest, followUpDelayMs);
}

std::uint64_t hold(Executor& executor, std::int64_t boundNs)
{
    return controlOf(executor).holdArrivals(boundNs);
}

void release(Executor& executor, std::uint64_t key)
{
    controlOf(executor).releaseArrivals(key);
}

} // namespace tensorrt_llm::executor::sim::control
