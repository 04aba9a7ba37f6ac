// Statistics helpers (see stats.h).
#include "stats.h"

#include <cstdio>
#include <ctime>

namespace tensorrt_llm::executor::sim
{

std::string formatTimestamp(std::chrono::system_clock::time_point time)
{
    auto const seconds = std::chrono::system_clock::to_time_t(time);
    auto const micros
        = std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count() % 1000000;
    // The date and time to the second, formatted once per second (thread-local: each executor loop formats
    // its own): a virtual clock stamps thousands of iterations per simulated second, and localtime_r plus
    // strftime were a visible share of each one.
    thread_local std::time_t cachedSeconds = -1;
    thread_local char date[32];
    if (seconds != cachedSeconds)
    {
        std::tm local{};
        localtime_r(&seconds, &local);
        std::strftime(date, sizeof(date), "%m-%d-%Y %H:%M:%S", &local);
        cachedSeconds = seconds;
    }
    char out[48];
    std::snprintf(out, sizeof(out), "%s.%06lld", date, static_cast<long long>(micros < 0 ? micros + 1000000 : micros));
    return out;
}

MemoryFigures estimateMemory(TimingModel const& timing, std::int64_t kvCacheTokens, double reserveBytes)
{
    double const kvCache = timing.kvBytesPerTokenPerGpu() * static_cast<double>(kvCacheTokens);
    return MemoryFigures{static_cast<std::size_t>(timing.weightBytesPerGpu() + kvCache + reserveBytes),
        std::size_t{64} * 1024 * 1024, std::size_t{32} * 1024 * 1024};
}

} // namespace tensorrt_llm::executor::sim
