// The simulator's own control channel, beside the TensorRT-LLM-shaped API: scheduled arrivals on the virtual
// clock (see arrival_gate.h). Only the simulated build has it; the shim compiles these calls only without
// TRTLLM_SHIM_REAL. Every function throws std::invalid_argument for an executor the simulator does not know
// and std::runtime_error when the engine's clock is not virtual.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include <cstdint>
#include <optional>

namespace tensorrt_llm::executor::sim::control
{

/// The executor's current simulated time, steady_clock nanoseconds.
std::int64_t nowNs(Executor const& executor);

/// Enqueues `request` arriving at `arrivalNs` or, with `afterRequest`, at the end of that request plus the
/// follow-up delay it was enqueued with. With `followUpDelayMs`, the executor keeps room for a follow-up to this
/// request (see arrival_gate.h) until one is enqueued or the lease is released.
IdType enqueueAt(Executor& executor, Request const& request, std::int64_t arrivalNs,
    std::optional<IdType> afterRequest, std::optional<double> followUpDelayMs);

/// Holds back iterations starting at or after `boundNs` until released; returns the key.
std::uint64_t hold(Executor& executor, std::int64_t boundNs);

/// Releases a hold (its key) or a follow-up lease (the request id).
void release(Executor& executor, std::uint64_t key);

/// What the executor's implementation offers the control channel.
class ArrivalControl
{
public:
    [[nodiscard]] virtual std::int64_t controlNowNs() const = 0;
    virtual IdType enqueueAt(Request const& request, std::int64_t arrivalNs, std::optional<IdType> afterRequest,
        std::optional<double> followUpDelayMs)
        = 0;
    virtual std::uint64_t holdArrivals(std::int64_t boundNs) = 0;
    virtual void releaseArrivals(std::uint64_t key) = 0;

protected:
    ~ArrivalControl() = default;
};

/// Called by Executor's constructor and destructor (sim_control.cpp keeps the map).
void registerExecutor(Executor const* executor, ArrivalControl* impl);
void unregisterExecutor(Executor const* executor);

} // namespace tensorrt_llm::executor::sim::control
