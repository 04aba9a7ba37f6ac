// The simulated executor's LoRA adapter caches, with TensorRT-LLM's PeftCacheManager semantics: an adapter arrives
// with its weights and config on first use and is kept in a host cache; a request that runs it needs it in the
// device cache, copied from the host on a miss. Both caches evict least recently used adapters. A task id that
// is in neither and comes without weights fails its request with the upstream message.
// As in TensorRT-LLM, an adapter is pinned in both caches while a request that uses it is in flight (upstream marks
// the task in progress until the request is done): only adapters no request uses are evicted. A host cache full of
// pinned adapters fails the new adapter's request with LoraCache's upstream message; on the device the capacity
// scheduler only starts a request whose adapter fits beside the adapters of started requests, so such a request
// waits (see Scheduler::setStartGate) and the device cache never has to evict a pinned adapter.
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

struct LoraCacheLevels;

/// A request's hold on its adapter: pinned in the host cache from admission, in the device cache once the request
/// starts (LoraCache::ensureOnDevice), both released when the pin is destroyed (when the request's last sequence
/// leaves the executor). Shares the caches' state, so it may outlive the LoraCache.
class LoraPin
{
public:
    LoraPin(std::shared_ptr<LoraCacheLevels> levels, IdType taskId);
    ~LoraPin();
    LoraPin(LoraPin const&) = delete;
    LoraPin& operator=(LoraPin const&) = delete;

    [[nodiscard]] IdType taskId() const { return mTaskId; }
    [[nodiscard]] bool onDevice() const { return mOnDevice; }

private:
    friend class LoraCache;

    std::shared_ptr<LoraCacheLevels> mLevels;
    IdType mTaskId;
    bool mOnDevice{false};
};

/// The outcome of admitting a request's LoraConfig.
struct LoraUse
{
    IdType taskId{0};
    LoraAdapterCost cost;
    /// The adapter's pin in the host cache (and later the device cache) for this request.
    std::shared_ptr<LoraPin> pin;
};

/// One LRU level of adapters: task id -> bytes and pins, most recently used first.
struct LoraCacheLevel
{
    struct Entry
    {
        double bytes{0.0};
        std::list<IdType>::iterator position;
        /// Requests in flight that use the adapter; a pinned adapter is never evicted.
        std::uint32_t pins{0};
    };

    double capacity{0.0};
    double used{0.0};
    std::list<IdType> order;
    std::unordered_map<IdType, Entry> entries;

    bool contains(IdType id) const { return entries.count(id) > 0; }
    void touch(IdType id);
    /// True when `bytes` fit once every unpinned adapter is evicted.
    [[nodiscard]] bool canFit(double bytes) const;
    /// Inserts `id` (canFit must hold), evicting least recently used unpinned adapters until it fits; returns how
    /// many were evicted.
    std::uint64_t insert(IdType id, double bytes);
    void pin(IdType id) { ++entries.at(id).pins; }
    void unpin(IdType id);
};

/// Both cache levels, shared by the LoraCache and the pins of requests in flight.
struct LoraCacheLevels
{
    LoraCacheLevel host;
    LoraCacheLevel device;
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

    /// Admits a request's adapter into the host cache: caches weights that come with it, checks that a bare task
    /// id is cached, and pins the adapter there for the request. Returns the error message for the request on
    /// failure.
    std::variant<LoraUse, std::string> admit(LoraConfig const& config);

    /// Brings the pinned adapter into the device cache and pins it there, once per request. Returns false (and
    /// changes nothing) when it does not fit beside the adapters pinned by started requests: the request must
    /// wait. On a miss, adds the bytes to copy host -> device to `copyBytes`; counts the hit or miss.
    bool ensureOnDevice(LoraPin& pin, double& copyBytes);

    [[nodiscard]] std::shared_ptr<LoraCounterCells> const& counters() const { return mCounters; }
    [[nodiscard]] double hostCapacityBytes() const { return mLevels->host.capacity; }
    [[nodiscard]] double deviceCapacityBytes() const { return mLevels->device.capacity; }

private:
    /// The cost of an adapter from its config tensor, or an error naming the bad row.
    std::variant<LoraAdapterCost, std::string> costOf(Tensor const& weights, Tensor const& config) const;

    EngineConfig const& mEngine;
    std::shared_ptr<LoraCacheLevels> mLevels = std::make_shared<LoraCacheLevels>();
    std::unordered_map<IdType, LoraAdapterCost> mCosts;
    std::shared_ptr<LoraCounterCells> mCounters = std::make_shared<LoraCounterCells>();
};

} // namespace tensorrt_llm::executor::sim
