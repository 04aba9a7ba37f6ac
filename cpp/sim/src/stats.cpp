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

MemoryFigures estimateMemory(EngineConfig const& engine, std::int64_t kvCacheTokens)
{
    double const ranks = static_cast<double>(engine.tpSize) * engine.ppSize;
    double const weights = engine.approxParameterCount() * engine.dtypeBytes() / ranks;
    double const kvCache = engine.kvBytesPerToken() * static_cast<double>(kvCacheTokens);
    // Activations and runtime buffers, a fixed allowance.
    double const runtime = 256.0 * 1024 * 1024;
    return MemoryFigures{static_cast<std::size_t>(weights + kvCache + runtime), std::size_t{64} * 1024 * 1024,
        std::size_t{32} * 1024 * 1024};
}

} // namespace tensorrt_llm::executor::sim
