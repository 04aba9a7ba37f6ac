// The map from each live simulated executor to its GPU telemetry key (see gpu_telemetry.h).
#include "gpu_telemetry.h"

#include "trtllm_sim/gpu_telemetry.h"

#include <mutex>
#include <unordered_map>

namespace tensorrt_llm::executor::sim
{

namespace
{

std::mutex gTelemetryMutex;
std::unordered_map<Executor const*, std::uint64_t> gTelemetryKeys;

} // namespace

void registerGpuTelemetry(Executor const* executor, std::uint64_t key)
{
    std::lock_guard<std::mutex> lock(gTelemetryMutex);
    gTelemetryKeys[executor] = key;
}

void unregisterGpuTelemetry(Executor const* executor)
{
    std::lock_guard<std::mutex> lock(gTelemetryMutex);
    gTelemetryKeys.erase(executor);
}

} // namespace tensorrt_llm::executor::sim

namespace trtllm_sim
{

std::uint64_t gpuTelemetryKey(tensorrt_llm::executor::Executor const& executor)
{
    using namespace tensorrt_llm::executor::sim;
    std::lock_guard<std::mutex> lock(gTelemetryMutex);
    auto const found = gTelemetryKeys.find(&executor);
    return found == gTelemetryKeys.end() ? 0 : found->second;
}

} // namespace trtllm_sim
