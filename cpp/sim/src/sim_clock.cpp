// The executor's real or virtual clock (see sim_clock.h).
#include "sim_clock.h"

#include <algorithm>
#include <thread>

namespace tensorrt_llm::executor::sim
{

namespace
{

Clock::duration fromMilliseconds(double ms)
{
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

/// The host's sleep overshoots by tens of microseconds idle and by milliseconds under load: sleep to this much
/// before a deadline, then yield until it, so iterations end on time without spinning a core for long.
constexpr auto kSpinMargin = std::chrono::microseconds(1500);

/// How far behind its schedule the real clock may start an iteration before the schedule restarts.
constexpr auto kMaxScheduleLag = std::chrono::milliseconds(100);

void waitUntil(TimePoint deadline)
{
    if (Clock::now() + kSpinMargin < deadline)
    {
        std::this_thread::sleep_until(deadline - kSpinMargin);
    }
    while (Clock::now() < deadline)
    {
        std::this_thread::yield();
    }
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
    auto const deadline = start + fromMilliseconds(std::max(0.0, wallMs));
    mDeadline = deadline;
    waitUntil(deadline);
    // The modelled GPU finished at the deadline: the iteration's stamps say so even when the host woke the
    // thread late (which delays only the delivery), so executor-side timings keep to the model. Without
    // sleeping (time_scale 0) there is no schedule to keep: the stamps follow the host.
    return wallMs > 0.0 ? deadline : Clock::now();
}

void SimClock::advanceTo(TimePoint time)
{
    if (!isVirtual())
    {
        return;
    }
    Clock::rep const target = time.time_since_epoch().count();
    Clock::rep current = mVirtualTicks.load();
    while (current < target && !mVirtualTicks.compare_exchange_weak(current, target))
    {
    }
}

TimePoint SimClock::iterationStart(bool continuing)
{
    auto const current = now();
    // Without sleeping (time_scale 0) there is no schedule to keep: an iteration starts when the loop gets to
    // it and takes everything queued by then. (Holding back what arrived after the previous iteration's start
    // split every wave of arrivals over many small iterations and cost ~40% of the zero-latency token rate.)
    if (isVirtual() || !continuing || !mDeadline || mTimeScale <= 0.0)
    {
        return current;
    }
    // Far behind the schedule (a stopped process, a debugger): start afresh rather than rush to catch up.
    if (current - *mDeadline > kMaxScheduleLag)
    {
        return current;
    }
    return std::min(current, *mDeadline);
}

TimePoint SimClock::idleStart(TimePoint firstArrival)
{
    auto const current = now();
    if (isVirtual() || mTimeScale <= 0.0)
    {
        return current;
    }
    auto start = std::min(current, firstArrival);
    if (mDeadline)
    {
        start = std::max(start, std::min(current, *mDeadline));
    }
    if (current - start > kMaxScheduleLag)
    {
        return current;
    }
    return start;
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
