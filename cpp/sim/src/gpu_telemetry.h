// Each live simulated executor's GPU telemetry key (its timing model's, see timing_model.h), for the shim to hand to
// Rust (trtllm_sim/gpu_telemetry.h): the TensorRT-LLM-shaped Executor class exposes nothing beyond the real one's API.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include <cstdint>

namespace tensorrt_llm::executor::sim
{

/// Called by Executor's constructor and destructor.
void registerGpuTelemetry(Executor const* executor, std::uint64_t key);
void unregisterGpuTelemetry(Executor const* executor);

} // namespace tensorrt_llm::executor::sim
