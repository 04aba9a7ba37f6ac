// Speculative decoding in the simulated executor: which mode the engine was built for (config.json), how much
// of each draft is accepted (simulation.json's per-position acceptance probabilities, or, for draft-target,
// exactly the draft tokens equal to what the target generates), and how many draft tokens each request
// verifies per step (lookahead serves at most 8 requests at once). The execution loop asks a Speculator, per
// step, how many tokens to verify and how many to accept; the timing model charges the verified tokens.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include "engine_config.h"
#include "sequence.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tensorrt_llm::executor::sim
{

/// The name config.json uses for `mode`.
char const* specModeName(SpecMode mode);

/// What one iteration's scheduled requests decoded, for IterationStats (InflightBatchingStats'
/// avgNumDecodedTokensPerIter and SpecDecodingStats). Loop thread only; reset after each stats entry.
struct SpecStepTally
{
    /// Requests in the generation phase this iteration, and the sum of their running tokens-per-step averages.
    SizeType32 generationRequests{0};
    double sumAvgDecodedPerIter{0.0};
    /// Verification steps: draft tokens verified and accepted, requests with drafts and the tokens they emitted.
    std::int64_t draftTokens{0};
    std::int64_t acceptedTokens{0};
    std::int64_t requestsWithDrafts{0};
    std::int64_t tokensOfRequestsWithDrafts{0};
    /// The drafter's share of the iteration (timing model), ms.
    double drafterMs{0.0};

    /// A generation-phase request after its step: its running average tokens per decoding step.
    void addGeneration(Sequence const& sequence);
    /// A step that verified `drafted` drafts, accepted `accepted` and emitted `emitted` tokens.
    void addVerification(SizeType32 drafted, SizeType32 accepted, SizeType32 emitted);
    /// The mean over generation requests of their average decoded tokens per step (0 without any).
    [[nodiscard]] float avgDecodedTokensPerIter() const;
    /// TensorRT-LLM's SpecDecodingStats of the iteration that took `iterLatencyMs`.
    [[nodiscard]] SpecDecodingStats stats(double iterLatencyMs) const;
};

/// Decides each step's draft length and acceptance. Immutable after construction except for nothing: all
/// per-request state lives in the Sequence, so it is safe on the loop thread.
class Speculator
{
public:
    /// Throws std::runtime_error when the executor's DecodingConfig asks for a mode the engine was not built for.
    Speculator(EngineConfig const& engine, std::vector<double> acceptance, std::uint64_t simulationSeed,
        ExecutorConfig const& config);

    [[nodiscard]] SpecMode mode() const { return mMode; }
    /// KV-cache tokens a request must keep free beyond its own for draft tokens.
    [[nodiscard]] SizeType32 draftReserve() const;
    /// Why the executor rejects `request` under this mode, if it does; fills the request's draft settings.
    [[nodiscard]] std::optional<std::string> admit(Request const& request, RequestState& state) const;
    /// Sets every generation sequence's draft tokens for this iteration (in scheduling order; lookahead serves
    /// only the first 8). Context sequences completing their prompt verify external drafts in that step.
    void planStep(std::vector<Sequence*> const& order) const;
    /// Draft tokens the sequence's probabilistic drafter gets accepted this step (0..depth), deterministic per
    /// request, seed, position and simulation seed.
    [[nodiscard]] SizeType32 acceptedDrafts(Sequence const& sequence) const;

private:
    SpecMode mMode{SpecMode::kNone};
    /// Tokens verified per step besides the sampled one, and the longest acceptable chain of them.
    SizeType32 mDraftTokens{0};
    SizeType32 mDraftDepth{0};
    SizeType32 mLookaheadMaxRequests{8};
    /// The executor's lookahead sizes (lookahead engines): a request's own must not exceed them.
    std::optional<LookaheadDecodingConfig> mLookahead;
    std::vector<double> mAcceptance;
    std::uint64_t mSeed{0};
};

} // namespace tensorrt_llm::executor::sim
