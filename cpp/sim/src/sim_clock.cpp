// The executor's real or virtual clock (see sim_clock.h).
#include "sim_clock.h"

#include <thread>

namespace tensorrt_llm::executor::sim
{

namespace
{

Clock::duration fromMilliseconds(double ms)
{
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

} // namespace

SimClock::SimClock(ClockMode mode, double timeScale)
    : mMode(mode)
    , mTimeScale(timeScale)
    , mVirtualTicks(Clock::now().time_since_epoch().count())
{
}

TimePoint SimClock::now() const
{
    if (isVirtual())
    {
        return TimePoint(Clock::duration(mVirtualTicks.load()));
    }
    return Clock::now();
}

TimePoint SimClock::spend(TimePoint start, double simulatedMs, double stallMs)
{
    if (isVirtual())
    {
        auto const end = start + fromMilliseconds(simulatedMs + stallMs);
        // Only the loop thread advances the clock; catchUpWithWall may have moved it further meanwhile.
        Clock::rep current = mVirtualTicks.load();
        while (current < end.time_since_epoch().count()
            && !mVirtualTicks.compare_exchange_weak(current, end.time_since_epoch().count()))
        {
        }
        return now();
    }
    double const wallMs = simulatedMs * mTimeScale + stallMs;
    if (wallMs > 0.0)
    {
        std::this_thread::sleep_until(start + fromMilliseconds(wallMs));
    }
    return Clock::now();
}

void SimClock::catchUpWithWall()
{
    if (!isVirtual())
    {
        return;
    }
    Clock::rep const wall = Clock::now().time_since_epoch().count();
    Clock::rep current = mVirtualTicks.load();
    while (current < wall && !mVirtualTicks.compare_exchange_weak(current, wall))
    {
    }
}

std::chrono::system_clock::time_point SimClock::systemNow() const
{
    auto const offset = now() - Clock::now();
    return std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(offset);
}

} // namespace tensorrt_llm::executor::sim
