// LoRA through the shim: a request's adapter (task id, config rows and weights as host tensors),
// the executor's PEFT cache configuration, and the simulated executor's adapter-cache counters.
#include "shim_internal.h"

#include "tensorrt_llm/executor/tensor.h"

#ifndef TRTLLM_SHIM_REAL
#include "trtllm_sim/lora_counters.h"
#endif

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>

namespace trtllm::shim::detail
{
namespace
{

tle::DataType toLoraDataType(LoraWeightKind kind)
{
    switch (kind)
    {
    case LoraWeightKind::F16: return tle::DataType::kFP16;
    case LoraWeightKind::Bf16: return tle::DataType::kBF16;
    case LoraWeightKind::F32: return tle::DataType::kFP32;
    }
    throw std::invalid_argument(
        std::string("unknown LoRA weight type ") + std::to_string(static_cast<int>(kind)));
}

} // namespace

// The request's adapter as owned host tensors (Tensor::cpu, then a copy of the bytes): the request outlives this
// call, so the tensors must not wrap the bridge's buffers.
std::optional<tle::LoraConfig> toLoraConfig(LoraSpec const& spec)
{
    if (!spec.set)
    {
        return std::nullopt;
    }
    if (!spec.has_weights)
    {
        return tle::LoraConfig(spec.task_id);
    }
    if (spec.config.size() % 3 != 0 || spec.config.empty() || spec.row_len <= 0)
    {
        throw std::invalid_argument("LoRA config must hold rows of 3 values and the weights a positive row length");
    }
    auto const rows = static_cast<std::int64_t>(spec.config.size() / 3);
    auto config = tle::Tensor::cpu(tle::DataType::kINT32, {rows, std::int64_t{3}});
    std::memcpy(config.getData(), spec.config.data(), spec.config.size() * sizeof(std::int32_t));
    auto weights = tle::Tensor::cpu(toLoraDataType(spec.dtype), {rows, static_cast<std::int64_t>(spec.row_len)});
    if (weights.getSizeInBytes() != spec.weights.size())
    {
        throw std::invalid_argument("LoRA weights hold " + std::to_string(spec.weights.size()) + " bytes, expected "
            + std::to_string(weights.getSizeInBytes()));
    }
    std::memcpy(weights.getData(), spec.weights.data(), spec.weights.size());
    return tle::LoraConfig(spec.task_id, weights, config);
}

tle::PeftCacheConfig toPeftCacheConfig(PeftCacheOptions const& o)
{
    std::optional<std::string> prefetch;
    if (!o.lora_prefetch_dir.empty())
    {
        prefetch = std::string(o.lora_prefetch_dir.data(), o.lora_prefetch_dir.size());
    }
    tle::PeftCacheConfig defaults;
    return tle::PeftCacheConfig(o.num_host_module_layer, o.num_device_module_layer,
        o.optimal_adapter_size > 0 ? o.optimal_adapter_size : defaults.getOptimalAdapterSize(),
        o.max_adapter_size > 0 ? o.max_adapter_size : defaults.getMaxAdapterSize(), 1, 1, 1,
        tle::PeftCacheConfig::kDefaultMaxPagesPerBlockHost, tle::PeftCacheConfig::kDefaultMaxPagesPerBlockDevice,
        opt<float>(o.device_cache_percent), opt<std::size_t>(o.host_cache_size), prefetch);
}

} // namespace trtllm::shim::detail

namespace trtllm::shim
{

LoraCacheCountsItem ExecutorHandle::lora_cache_counts() const
{
    return detail::guarded("loraCacheCounts",
        [&]
        {
            LoraCacheCountsItem item{};
#ifndef TRTLLM_SHIM_REAL
            if (auto const counts = trtllm_sim::loraCacheCounts(*mImpl->executor))
            {
                item.available = true;
                item.hits = counts->hits;
                item.misses = counts->misses;
                item.evictions = counts->evictions;
            }
#endif
            return item;
        });
}

} // namespace trtllm::shim
