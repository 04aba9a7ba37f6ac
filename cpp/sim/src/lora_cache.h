// The simulated executor's LoRA adapter caches, with TensorRT-LLM's PeftCacheManager semantics: an adapter arrives
// with its weights and config on first use and is kept in a host cache; a request that runs it needs it in the
// device cache, copied from the host on a miss. Both caches evict least recently used adapters. A task id that
// is in neither and comes without weights fails its request with the upstream message.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include "engine_config.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>

namespace tensorrt_llm::executor::sim
{

/// What running one adapter costs, from its config rows and the model's widths.
struct LoraAdapterCost
{
    /// Extra FLOPs per token through the model: sum over rows of 2 * rank * (in + out).
    double flopsPerToken{0.0};
    /// Bytes of the adapter's A and B matrices (unpadded): read every step that runs it, copied on a device miss.
    double weightBytes{0.0};
};

/// The outcome of admitting a request's LoraConfig.
struct LoraUse
{
    IdType taskId{0};
    LoraAdapterCost cost;
    /// Bytes copied host -> device because the adapter was not in the device cache (0 on a hit).
    double copyBytes{0.0};
};

/// Device-cache counters since start, readable from any thread. These are the simulator's own counters:
/// TensorRT-LLM's IterationStats has no LoRA cache fields. Read them through trtllm_sim/lora_counters.h.
struct LoraCounterCells
{
    std::atomic<std::uint64_t> hits{0};
    std::atomic<std::uint64_t> misses{0};
    std::atomic<std::uint64_t> evictions{0};
};

/// Makes `cells` readable as the counters of `executor` (the Executor constructor calls it), until unregistered.
void registerLoraCounters(Executor const* executor, std::shared_ptr<LoraCounterCells> cells);
void unregisterLoraCounters(Executor const* executor);

class LoraCache
{
public:
    /// Capacities from the PeftCacheConfig (defaults when absent); `gpuMemoryBytes` sizes deviceCachePercent.
    LoraCache(EngineConfig const& engine, std::optional<PeftCacheConfig> const& config, double gpuMemoryBytes);

    /// Admits a request's adapter: caches weights that come with it, checks that a bare task id is cached, and
    /// brings the adapter into the device cache. Returns the error message for the request on failure.
    std::variant<LoraUse, std::string> admit(LoraConfig const& config);

    [[nodiscard]] std::shared_ptr<LoraCounterCells> const& counters() const { return mCounters; }
    [[nodiscard]] double hostCapacityBytes() const { return mHost.capacity; }
    [[nodiscard]] double deviceCapacityBytes() const { return mDevice.capacity; }

private:
    /// One LRU level: task id -> bytes, most recently used first.
    struct Level
    {
        double capacity{0.0};
        double used{0.0};
        std::list<IdType> order;
        std::unordered_map<IdType, std::pair<double, std::list<IdType>::iterator>> entries;

        bool contains(IdType id) const { return entries.count(id) > 0; }
        void touch(IdType id);
        /// Inserts `id`, evicting least recently used entries until it fits; returns how many were evicted.
        std::uint64_t insert(IdType id, double bytes);
    };

    /// The cost of an adapter from its config tensor, or an error naming the bad row.
    std::variant<LoraAdapterCost, std::string> costOf(Tensor const& weights, Tensor const& config) const;

    EngineConfig const& mEngine;
    Level mHost;
    Level mDevice;
    std::unordered_map<IdType, LoraAdapterCost> mCosts;
    std::shared_ptr<LoraCounterCells> mCounters = std::make_shared<LoraCounterCells>();
};

} // namespace tensorrt_llm::executor::sim
