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
    std::tm local{};
    localtime_r(&seconds, &local);
    char date[32];
    std::strftime(date, sizeof(date), "%m-%d-%Y %H:%M:%S", &local);
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
