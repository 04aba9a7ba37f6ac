// Simulator-only: the simulated executor's LoRA adapter cache counters. TensorRT-LLM reports no LoRA cache figures
// (its IterationStats has none), so these are the simulator's own; the shim reads them only in the simulated build.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include <cstdint>
#include <optional>

namespace trtllm_sim
{

struct LoraCacheCounts
{
    /// Requests whose adapter was already in the device cache.
    std::uint64_t hits;
    /// Requests whose adapter had to be copied host -> device.
    std::uint64_t misses;
    /// Adapters evicted from the device cache to make room.
    std::uint64_t evictions;
};

/// The counters of an executor the simulator created; nullopt for any other.
std::optional<LoraCacheCounts> loraCacheCounts(tensorrt_llm::executor::Executor const& executor);

} // namespace trtllm_sim
