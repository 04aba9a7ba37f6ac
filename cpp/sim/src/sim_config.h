// The engine directory's optional simulation.json as the simulated executor uses it: the clock, KV-cache
// capacity, token seed, speculative acceptance and test-only fault hooks. The Rust side reads and checks the
// file (src/sim/executor_files.rs; the format is documented in docs/simulation-json.md) and the simulator
// receives the result as this plain data (timing_model.h).
#pragma once

#include "tensorrt_llm/executor/types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tensorrt_llm::executor::sim
{

/// Public executor methods that a fault hook can make throw, in the order of the Rust side's FAULT_METHODS.
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

/// Where the executor's time comes from.
enum class ClockMode
{
    /// Iterations take their simulated time on the wall clock (scaled by time_scale).
    kReal,
    /// No sleeping: a simulated clock advances by each iteration's simulated time.
    kVirtual,
};

struct SimConfig
{
    // The GPU (gpu, gpu_overrides) is read and checked by the Rust timing model (timing_model.h).
    /// A fixed simulated duration of every iteration in milliseconds; unset lets the timing model decide.
    std::optional<double> iterationMs;
    /// Real clock: wall-clock sleep per iteration = simulated time * timeScale; 0 disables sleeping.
    double timeScale{1.0};
    ClockMode clock{ClockMode::kReal};
    /// KV-cache capacity in tokens, overriding the one derived from GPU memory (KvCacheConfig::maxTokens still
    /// caps it).
    std::optional<std::int64_t> kvCacheMaxTokens;
    /// Mixed into every generated token id.
    std::uint64_t seed{0};
    FaultConfig faults;
    /// Speculative decoding: probability that draft position i is accepted (the last value repeats).
    std::vector<double> draftAcceptance{0.7};
    /// Tokens are a function of the whole context (draft-target loops; on for draft_tokens_external engines).
    bool contextTokens{false};
    /// This engine is a draft model agreeing with the context token with this probability.
    std::optional<double> draftAgreement;
};

} // namespace tensorrt_llm::executor::sim
