// The engine directory's optional simulation.json: the simulated GPU's timing, KV-cache capacity, token
// seed and test-only fault hooks. The format is documented in docs/simulation-json.md.
#pragma once

#include "tensorrt_llm/executor/types.h"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace tensorrt_llm::executor::sim
{

/// Public executor methods that a fault hook can make throw.
enum class FaultMethod
{
    kConstructor,
    kEnqueueRequest,
    kAwaitResponses,
    kCancelRequest,
    kGetLatestIterationStats,
    kGetLatestRequestStats,
    kShutdown,
};

/// The name simulation.json uses for a method ("enqueueRequest", ...).
char const* faultMethodName(FaultMethod method);

struct FaultConfig
{
    /// Method that throws, if any.
    std::optional<FaultMethod> throwIn;
    /// Calls of `throwIn` that succeed before it starts throwing (on every later call).
    std::uint64_t throwAfterCalls{0};
    /// Throw an int instead of a std::runtime_error.
    bool throwNonStd{false};
    /// Any request whose prompt contains this token id fails with an error Response when first scheduled.
    std::optional<TokenIdType> failPromptToken;
    /// From this iteration on (0-based, as IterationStats::iter), every active request fails.
    std::optional<IterationType> failAllFromIteration;
    /// This iteration (0-based) takes `stallMs` extra wall-clock milliseconds.
    std::optional<IterationType> stallIteration;
    double stallMs{0.0};
};

struct SimConfig
{
    /// Informational label of the simulated GPU.
    std::string gpu{"rtx-a6000"};
    /// Simulated duration of one executor iteration, in milliseconds.
    double iterationMs{20.0};
    /// Wall-clock sleep per iteration = iterationMs * timeScale; 0 disables sleeping.
    double timeScale{1.0};
    /// KV-cache capacity in tokens (the smaller of this and KvCacheConfig::maxTokens when that is set).
    std::int64_t kvCacheMaxTokens{65536};
    /// Mixed into every generated token id.
    std::uint64_t seed{0};
    FaultConfig faults;

    /// Parses simulation.json text; `file` names the source in error messages.
    static SimConfig parse(std::string_view text, std::string const& file);

    /// Reads `<engineDir>/simulation.json`, or returns the defaults when the file does not exist.
    static SimConfig load(std::filesystem::path const& engineDir);
};

} // namespace tensorrt_llm::executor::sim
