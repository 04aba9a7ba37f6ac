// LoRA adapter caches of the simulated executor (see lora_cache.h).
#include "lora_cache.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "trtllm_sim/lora_counters.h"

namespace tensorrt_llm::executor::sim
{

namespace
{

/// TensorRT-LLM's default host cache for adapters when PeftCacheConfig gives none (1 GiB).
constexpr double kDefaultHostCacheBytes = 1024.0 * 1024.0 * 1024.0;
/// Share of GPU memory the device cache takes when PeftCacheConfig gives neither a module-layer count nor a
/// percentage (TensorRT-LLM's default deviceCachePercent).
constexpr double kDefaultDeviceCacheFraction = 0.02;

/// The engine's module with TensorRT-LLM id `id`, or nullptr when the engine does not adapt it.
LoraModuleWidths const* moduleOf(EngineConfig const& engine, std::int32_t id)
{
    auto const found = std::find_if(engine.loraModules.begin(), engine.loraModules.end(),
        [id](LoraModuleWidths const& module) { return module.id == id; });
    return found == engine.loraModules.end() ? nullptr : &*found;
}

std::mutex gRegistryMutex;
std::unordered_map<Executor const*, std::shared_ptr<LoraCounterCells>> gRegistry;

} // namespace

void registerLoraCounters(Executor const* executor, std::shared_ptr<LoraCounterCells> cells)
{
    std::lock_guard<std::mutex> lock(gRegistryMutex);
    gRegistry[executor] = std::move(cells);
}

void unregisterLoraCounters(Executor const* executor)
{
    std::lock_guard<std::mutex> lock(gRegistryMutex);
    gRegistry.erase(executor);
}

void LoraCacheLevel::touch(IdType id)
{
    auto& entry = entries.at(id);
    order.splice(order.begin(), order, entry.position);
}

bool LoraCacheLevel::canFit(double bytes) const
{
    double pinned = 0.0;
    for (auto const& [id, entry] : entries)
    {
        pinned += entry.pins > 0 ? entry.bytes : 0.0;
    }
    return pinned + bytes <= capacity;
}

std::uint64_t LoraCacheLevel::insert(IdType id, double bytes)
{
    std::uint64_t evicted = 0;
    // Least recently used first, skipping adapters that requests in flight use.
    auto victim = order.end();
    while (used + bytes > capacity && victim != order.begin())
    {
        --victim;
        auto const found = entries.find(*victim);
        if (found->second.pins > 0)
        {
            continue;
        }
        used -= found->second.bytes;
        entries.erase(found);
        victim = order.erase(victim);
        ++evicted;
    }
    order.push_front(id);
    entries.emplace(id, Entry{bytes, order.begin(), 0});
    used += bytes;
    return evicted;
}

void LoraCacheLevel::unpin(IdType id)
{
    auto const found = entries.find(id);
    if (found != entries.end() && found->second.pins > 0)
    {
        --found->second.pins;
    }
}

LoraPin::LoraPin(std::shared_ptr<LoraCacheLevels> levels, IdType taskId)
    : mLevels(std::move(levels))
    , mTaskId(taskId)
{
    mLevels->host.pin(taskId);
}

LoraPin::~LoraPin()
{
    mLevels->host.unpin(mTaskId);
    if (mOnDevice)
    {
        mLevels->device.unpin(mTaskId);
    }
}

LoraCache::LoraCache(EngineConfig const& engine, std::optional<PeftCacheConfig> const& config, double gpuMemoryBytes)
    : mEngine(engine)
{
    PeftCacheConfig const peft = config.value_or(PeftCacheConfig());
    // One "module layer" slot holds one module of one layer at the optimal adapter size, for the widest module.
    double const slotBytes = peft.getOptimalAdapterSize() * engine.loraSlotWidth * engine.dtypeBytes;
    mLevels->host.capacity = peft.getNumHostModuleLayer() > 0 ? peft.getNumHostModuleLayer() * slotBytes
                                                      : static_cast<double>(peft.getHostCacheSize().value_or(
                                                          static_cast<size_t>(kDefaultHostCacheBytes)));
    mLevels->device.capacity = peft.getNumDeviceModuleLayer() > 0
        ? peft.getNumDeviceModuleLayer() * slotBytes
        : gpuMemoryBytes * peft.getDeviceCachePercent().value_or(kDefaultDeviceCacheFraction);
}

std::variant<LoraAdapterCost, std::string> LoraCache::costOf(Tensor const& weights, Tensor const& config) const
{
    auto const rows = static_cast<std::size_t>(config.getShape()[0]);
    auto const rowLen = static_cast<std::size_t>(weights.getShape()[1]);
    std::vector<std::int32_t> values(rows * 3);
    std::memcpy(values.data(), config.getData(), values.size() * sizeof(std::int32_t));
    LoraAdapterCost cost;
    double const elementBytes = static_cast<double>(weights.getSizeInBytes()) / std::max<std::size_t>(1, weights.getSize());
    for (std::size_t row = 0; row < rows; ++row)
    {
        std::int32_t const module = values[row * 3];
        std::int32_t const layer = values[row * 3 + 1];
        std::int32_t const rank = values[row * 3 + 2];
        std::string const where = "LoRA config row " + std::to_string(row) + " (module " + std::to_string(module)
                                  + ", layer " + std::to_string(layer) + ")";
        if (layer < 0 || layer >= mEngine.numLayers)
        {
            return where + ": layer is outside [0, " + std::to_string(mEngine.numLayers) + ")";
        }
        if (rank <= 0 || rank > mEngine.maxLoraRank)
        {
            return where + ": adapter size " + std::to_string(rank) + " is outside [1, max_lora_rank "
                   + std::to_string(mEngine.maxLoraRank) + "]";
        }
        auto const* widths = moduleOf(mEngine, module);
        if (widths == nullptr)
        {
            return where + ": the engine was not built with this LoRA module";
        }
        double const in = widths->inDim;
        double const out = widths->outDim;
        double const values = rank * (in + out);
        if (values > static_cast<double>(rowLen))
        {
            return where + ": the weights row holds " + std::to_string(rowLen) + " values but rank "
                   + std::to_string(rank) + " needs " + std::to_string(static_cast<std::int64_t>(values));
        }
        cost.flopsPerToken += 2.0 * values;
        cost.weightBytes += values * elementBytes;
    }
    return cost;
}

std::variant<LoraUse, std::string> LoraCache::admit(LoraConfig const& config)
{
    IdType const taskId = config.getTaskId();
    if (!mEngine.loraEnabled)
    {
        return std::string("LoRA task ") + std::to_string(taskId)
               + " sent to an engine built without LoRA support (no lora_plugin / lora_target_modules)";
    }
    auto const weights = config.getWeights();
    auto const tensors = config.getConfig();
    auto& host = mLevels->host;
    if (weights && tensors)
    {
        if (!host.contains(taskId))
        {
            auto cost = costOf(*weights, *tensors);
            if (auto const* error = std::get_if<std::string>(&cost))
            {
                return *error;
            }
            auto const adapter = std::get<LoraAdapterCost>(cost);
            double const deviceCapacity = mLevels->device.capacity;
            if (adapter.weightBytes > host.capacity || adapter.weightBytes > deviceCapacity)
            {
                return "LoRA task " + std::to_string(taskId) + " needs "
                       + std::to_string(static_cast<std::int64_t>(adapter.weightBytes))
                       + " bytes, more than the LoRA cache holds (host "
                       + std::to_string(static_cast<std::int64_t>(host.capacity)) + ", device "
                       + std::to_string(static_cast<std::int64_t>(deviceCapacity)) + " bytes)";
            }
            if (!host.canFit(adapter.weightBytes))
            {
                // Every adapter that would have to go is used by a request in flight: TensorRT-LLM's LoraCache
                // throws LoraCacheFullException with this message, which fails the request.
                return std::string("Cache is full. There are no done tasks to evict");
            }
            host.insert(taskId, adapter.weightBytes);
            mCosts[taskId] = adapter;
        }
    }
    if (!host.contains(taskId))
    {
        mCosts.erase(taskId);
        return "LoRA task " + std::to_string(taskId) + " not found in cache. Please send LoRA weights with request";
    }
    host.touch(taskId);
    LoraUse use;
    use.taskId = taskId;
    use.cost = mCosts.at(taskId);
    use.pin = std::make_shared<LoraPin>(mLevels, taskId);
    return use;
}

bool LoraCache::ensureOnDevice(LoraPin& pin, double& copyBytes)
{
    if (pin.mOnDevice)
    {
        return true;
    }
    IdType const taskId = pin.taskId();
    auto& device = mLevels->device;
    if (device.contains(taskId))
    {
        device.touch(taskId);
        ++mCounters->hits;
    }
    else
    {
        double const bytes = mCosts.at(taskId).weightBytes;
        if (!device.canFit(bytes))
        {
            return false;
        }
        ++mCounters->misses;
        mCounters->evictions += device.insert(taskId, bytes);
        copyBytes += bytes;
    }
    device.pin(taskId);
    pin.mOnDevice = true;
    return true;
}

} // namespace tensorrt_llm::executor::sim

namespace trtllm_sim
{

std::optional<LoraCacheCounts> loraCacheCounts(tensorrt_llm::executor::Executor const& executor)
{
    using namespace tensorrt_llm::executor::sim;
    std::lock_guard<std::mutex> lock(gRegistryMutex);
    auto const found = gRegistry.find(&executor);
    if (found == gRegistry.end())
    {
        return std::nullopt;
    }
    auto const& cells = *found->second;
    return LoraCacheCounts{cells.hits.load(), cells.misses.load(), cells.evictions.load()};
}

} // namespace trtllm_sim
