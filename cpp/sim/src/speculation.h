// Speculative decoding in the simulated executor: which mode the engine was built for (config.json), how much
// of each draft is accepted (simulation.json's per-position acceptance probabilities, or, for draft-target,
// exactly the draft tokens equal to what the target generates), and how many draft tokens each request
// verifies per step (lookahead serves at most 8 requests at once). The execution loop asks a Speculator, per
// step, how many tokens to verify and how many to accept; the timing model charges the verified tokens.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include "engine_config.h"
#include "json_fields.h"
#include "sequence.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tensorrt_llm::executor::sim
{

struct SimConfig;

/// build_config.speculative_decoding_mode: by name ("medusa", "lookahead_decoding", ...) or by
/// TensorRT-LLM's flag value (1 none, 2 draft tokens external, 4 medusa, 8 lookahead, 16 explicit, 32 eagle).
/// Also reads build_config.max_draft_len and pretrained_config.num_medusa_heads.
void readSpeculativeEngine(JsonFields const& build, JsonFields const& pretrained, EngineConfig& config);

/// The name config.json uses for `mode`.
char const* specModeName(SpecMode mode);

/// simulation.json's "speculative" object: {"acceptance": p | [p1, p2, ...]} (probability that draft position i
/// is accepted given the ones before it were; the last value repeats for deeper positions).
std::vector<double> readAcceptance(JsonFields const& speculative);

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
