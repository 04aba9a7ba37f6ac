// trtllm_sim::setKvLink (trtllm_sim/kv_transfer.h): the simulator's own control of the link its KV transfers
// cross, reached through a map from each live Executor to its cache transceiver (cache_transceiver.h).
#include "trtllm_sim/kv_transfer.h"

#include "cache_transceiver.h"

#include <mutex>
#include <stdexcept>
#include <unordered_map>

namespace tensorrt_llm::executor::sim
{

namespace
{

std::mutex& linkRegistryMutex()
{
    static std::mutex mutex;
    return mutex;
}

std::unordered_map<Executor const*, CacheTransceiver*>& linkRegistry()
{
    static std::unordered_map<Executor const*, CacheTransceiver*> map;
    return map;
}

} // namespace

void registerTransceiver(Executor const* executor, CacheTransceiver* transceiver)
{
    std::lock_guard<std::mutex> lock(linkRegistryMutex());
    linkRegistry()[executor] = transceiver;
}

void unregisterTransceiver(Executor const* executor)
{
    std::lock_guard<std::mutex> lock(linkRegistryMutex());
    linkRegistry().erase(executor);
}

} // namespace tensorrt_llm::executor::sim

namespace trtllm_sim
{

void setKvLink(tensorrt_llm::executor::Executor const& executor, KvLinkFigures const& link)
{
    using namespace tensorrt_llm::executor::sim;
    if (!(link.bandwidthGbS > 0.0) || !(link.latencyUs >= 0.0) || !(link.efficiency > 0.0 && link.efficiency <= 1.0))
    {
        throw std::invalid_argument("KV link figures out of range: bandwidth must be positive, latency zero or more, "
                                    "efficiency in (0, 1]");
    }
    std::lock_guard<std::mutex> lock(linkRegistryMutex());
    auto const found = linkRegistry().find(&executor);
    if (found == linkRegistry().end())
    {
        throw std::invalid_argument("not a live simulated executor");
    }
    found->second->setLink(KvLink{link.bandwidthGbS, link.latencyUs, link.efficiency});
}

} // namespace trtllm_sim
