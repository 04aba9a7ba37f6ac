// The shim's side of the simulator's control channel (cpp/sim/src/sim_control.h): scheduled arrivals on the
// virtual clock. Compiled only in the simulated build (build.rs); the real build's versions, which throw, are in
// shim.cc. Like every shim method, each converts a non-std exception into a std::runtime_error.
#include "shim_internal.h"

#include "trtllm/cpp/sim/src/sim_control.h"

namespace trtllm::shim
{

using detail::guarded;

std::int64_t ExecutorHandle::sim_now_ns() const
{
    return guarded("simulator clock", [&] { return tle::sim::control::nowNs(sim_executor()); });
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
            return tle::sim::control::enqueueAt(sim_executor(), sim_request(request), arrivalNs, after, delayMs);
        });
}

std::uint64_t ExecutorHandle::sim_hold_arrivals(std::int64_t boundNs) const
{
    return guarded("scheduled hold", [&] { return tle::sim::control::hold(sim_executor(), boundNs); });
}

void ExecutorHandle::sim_release_arrivals(std::uint64_t key) const
{
    guarded("scheduled release", [&] { tle::sim::control::release(sim_executor(), key); });
}

} // namespace trtllm::shim
