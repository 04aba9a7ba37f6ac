// Simulator-only: the key under which a simulated executor's GPU telemetry is kept on the Rust side
// (src/sim/telemetry.rs). TensorRT-LLM has no modelled telemetry (NVML reads a real GPU), so the shim asks for the
// key only in the simulated build.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include <cstdint>

namespace trtllm_sim
{

/// The telemetry key of an executor the simulator created and still holds; 0 for any other.
std::uint64_t gpuTelemetryKey(tensorrt_llm::executor::Executor const& executor);

} // namespace trtllm_sim
