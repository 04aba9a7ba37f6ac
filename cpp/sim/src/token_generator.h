// The simulated model's output: deterministic token ids derived from a hash of the request (prompt, sampling
// seed), the simulation seed, the sequence/beam and the position, so tests and benchmarks can replay them.
#pragma once

#include "sequence.h"

#include <cstdint>
#include <optional>

namespace tensorrt_llm::executor::sim
{

class TokenGenerator
{
public:
    TokenGenerator(SizeType32 vocabSize, std::uint64_t simulationSeed);

    struct Step
    {
        TokenIdType token;
        FloatType logProb;
    };

    /// The next token of `beam` of `sequence`. Never a single-token bad word (nor a token completing a
    /// multi-token bad word) and never the end id before the request's minTokens, when avoidable.
    [[nodiscard]] Step next(Sequence const& sequence, std::size_t beam) const;

    /// The token the hash yields for one attempt, before any bad-word or minTokens filtering.
    [[nodiscard]] TokenIdType rawToken(RequestState const& request, SizeType32 sequenceIndex, std::size_t beam,
        std::size_t position, std::uint32_t attempt) const;

    /// Draft-target support: `contextTokens` makes each token a function of the whole context (prompt +
    /// tokens so far) instead of the prompt and the position, so a request for prompt + g continues exactly
    /// where one for the prompt generated g; `draftAgreement` makes this engine a draft model that yields that
    /// token with the given probability and a different one otherwise.
    void configureDrafting(bool contextTokens, std::optional<double> draftAgreement);

private:
    [[nodiscard]] std::uint64_t stepHash(RequestState const& request, SizeType32 sequenceIndex, std::size_t beam,
        std::size_t position, std::uint32_t attempt) const;
    [[nodiscard]] static bool allowed(Sequence const& sequence, std::size_t beam, TokenIdType token);

    SizeType32 mVocabSize;
    std::uint64_t mSimulationSeed;
    bool mContextTokens{false};
    std::optional<double> mDraftAgreement;
};

/// A 64-bit hash of the prompt, computed once per request.
std::uint64_t hashTokens(VecTokens const& tokens);

} // namespace tensorrt_llm::executor::sim
