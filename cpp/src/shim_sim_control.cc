// The shim's side of the simulator's control channel (cpp/sim/src/sim_control.h): scheduled arrivals on the
// virtual clock, and the key of the executor's modelled GPU telemetry. In the real build the arrival methods fail:
// TensorRT-LLM has no such channel (and its telemetry key is 0). Like every shim method, each converts a non-std
// exception into a std::runtime_error.
#include "shim_internal.h"

#ifndef TRTLLM_SHIM_REAL
#include "trtllm/cpp/sim/src/sim_control.h"
#include "trtllm_sim/gpu_telemetry.h"
#endif

namespace trtllm::shim
{

#ifdef TRTLLM_SHIM_REAL
namespace
{
[[noreturn]] void simulatorOnly()
{
    throw std::runtime_error("scheduled arrivals exist only in the simulated executor (virtual clock)");
}
} // namespace

std::int64_t ExecutorHandle::sim_now_ns() const
{
    simulatorOnly();
}

std::uint64_t ExecutorHandle::sim_enqueue_at(RequestSpec const&, std::int64_t, std::uint64_t, std::int64_t) const
{
    simulatorOnly();
}

std::uint64_t ExecutorHandle::sim_hold_arrivals(std::int64_t) const
{
    simulatorOnly();
}

void ExecutorHandle::sim_release_arrivals(std::uint64_t) const
{
    simulatorOnly();
}

std::uint64_t ExecutorHandle::sim_telemetry_key() const
{
    return 0;
}
#else

using detail::guarded;

std::int64_t ExecutorHandle::sim_now_ns() const
{
    return guarded("simulator clock", [&] { return tle::sim::control::nowNs(*mImpl->executor); });
}

std::uint64_t ExecutorHandle::sim_enqueue_at(
    RequestSpec const& request, std::int64_t arrivalNs, std::uint64_t afterRequest, std::int64_t followUpDelayNs) const
{
    return guarded("scheduled enqueue",
        [&]
        {
            // The bridge has no optionals: request id 0 is never issued, and a negative delay means none.
            std::optional<tle::IdType> after;
            if (afterRequest != 0)
            {
                after = afterRequest;
            }
            std::optional<double> delayMs;
            if (followUpDelayNs >= 0)
            {
                delayMs = static_cast<double>(followUpDelayNs) / 1e6;
            }
            return tle::sim::control::enqueueAt(*mImpl->executor, detail::toRequest(request), arrivalNs, after, delayMs);
        });
}

std::uint64_t ExecutorHandle::sim_hold_arrivals(std::int64_t boundNs) const
{
    return guarded("scheduled hold", [&] { return tle::sim::control::hold(*mImpl->executor, boundNs); });
}

void ExecutorHandle::sim_release_arrivals(std::uint64_t key) const
{
    guarded("scheduled release", [&] { tle::sim::control::release(*mImpl->executor, key); });
}

std::uint64_t ExecutorHandle::sim_telemetry_key() const
{
    return guarded("GPU telemetry key", [&] { return trtllm_sim::gpuTelemetryKey(*mImpl->executor); });
}

#endif

} // namespace trtllm::shim
