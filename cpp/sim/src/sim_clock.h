// The executor's clock. Real mode: iterations sleep their simulated time (times time_scale) and timestamps are
// steady_clock readings, so what a client measures is what the simulation models. Virtual mode: nothing
// sleeps; a simulated steady_clock time advances by each iteration's simulated time, so planning runs finish
// as fast as the host allows while every executor timestamp stays consistent with the model.
#pragma once

#include "sequence.h"
#include "sim_config.h"

#include <atomic>
#include <chrono>
#include <optional>

namespace tensorrt_llm::executor::sim
{

class SimClock
{
public:
    SimClock(ClockMode mode, double timeScale);

    [[nodiscard]] bool isVirtual() const { return mMode == ClockMode::kVirtual; }

    /// The executor's current time (any thread).
    [[nodiscard]] TimePoint now() const;

    /// Spends one iteration that began at `start` and takes `simulatedMs` (scaled by time_scale in real mode)
    /// plus `stallMs` (a fault hook, never scaled). Returns the iteration's end. Loop thread only.
    TimePoint spend(TimePoint start, double simulatedMs, double stallMs);

    /// Virtual mode: moves the clock forward to the wall clock when it is behind, so that time an idle executor
    /// spends waiting passes as it does for the world. It never moves backwards. No effect in real mode.
    void catchUpWithWall();

    /// Virtual mode: moves the clock forward to `time` (never backwards). No effect in real mode.
    void advanceTo(TimePoint time);

    /// When an iteration starts. Real mode: an iteration that follows the previous one straight on (`continuing`)
    /// starts at that one's deadline rather than when the thread woke up, so iterations keep to the modelled
    /// schedule (absolute deadlines); a wake-up far behind it restarts the schedule from now. Loop thread only.
    TimePoint iterationStart(bool continuing);

    /// Real mode: when an idle executor starts on its earliest queued arrival `firstArrival` (TensorRT-LLM picks a
    /// request up at once): at that arrival, not at the thread's wake-up, yet never before the previous
    /// iteration's deadline; a wake-up far behind restarts from now. Virtual mode: now. Loop thread only.
    TimePoint idleStart(TimePoint firstArrival);

    /// now() as system-clock time, for IterationStats::timestamp.
    [[nodiscard]] std::chrono::system_clock::time_point systemNow() const;

private:
    ClockMode mMode;
    double mTimeScale;
    /// Virtual mode: the current time as steady_clock ticks since its epoch.
    std::atomic<Clock::rep> mVirtualTicks;
    /// Real mode: the last iteration's deadline (loop thread only).
    std::optional<TimePoint> mDeadline;
};

} // namespace tensorrt_llm::executor::sim
