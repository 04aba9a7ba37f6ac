// Deterministic token generation (see token_generator.h).
#include "token_generator.h"

namespace tensorrt_llm::executor::sim
{

namespace
{

/// SplitMix64's finaliser: a fast bijective mix with good avalanche.
std::uint64_t mix(std::uint64_t value)
{
    value += 0x9E3779B97F4A7C15ULL;
    value = (value ^ (value >> 30U)) * 0xBF58476D1CE4E5B9ULL;
    value = (value ^ (value >> 27U)) * 0x94D049BB133111EBULL;
    return value ^ (value >> 31U);
}

/// Attempts made by hashing before falling back to a linear scan for an allowed token.
constexpr std::uint32_t kMaxHashAttempts = 32;

bool endsWith(VecTokens const& prompt, VecTokens const& generated, TokenIdType next, VecTokens const& word)
{
    std::size_t const total = prompt.size() + generated.size() + 1;
    if (word.empty() || word.size() > total)
    {
        return false;
    }
    // Walk the candidate sequence (prompt + generated + next) backwards against the word.
    for (std::size_t i = 0; i < word.size(); ++i)
    {
        std::size_t const index = total - 1 - i;
        TokenIdType const token = index == total - 1       ? next
                                  : index >= prompt.size() ? generated[index - prompt.size()]
                                                           : prompt[index];
        if (token != word[word.size() - 1 - i])
        {
            return false;
        }
    }
    return true;
}

} // namespace

std::uint64_t hashTokens(VecTokens const& tokens)
{
    std::uint64_t hash = mix(tokens.size());
    for (auto const token : tokens)
    {
        hash = mix(hash ^ static_cast<std::uint32_t>(token));
    }
    return hash;
}

TokenGenerator::TokenGenerator(SizeType32 vocabSize, std::uint64_t simulationSeed)
    : mVocabSize(vocabSize)
    , mSimulationSeed(simulationSeed)
{
}

void TokenGenerator::configureDrafting(bool contextTokens, std::optional<double> draftAgreement)
{
    mContextTokens = contextTokens;
    mDraftAgreement = draftAgreement;
}

std::uint64_t TokenGenerator::stepHash(RequestState const& request, SizeType32 sequenceIndex, std::size_t beam,
    std::size_t position, std::uint32_t attempt) const
{
    // Like TensorRT-LLM, an unset sampling seed behaves as seed 0, and sequence i samples with seed + i.
    std::uint64_t const seed = request.seed.value_or(0) + static_cast<std::uint64_t>(sequenceIndex);
    if (mContextTokens)
    {
        // `position` carries the hash of the whole context (see next()).
        std::uint64_t hash = mix(static_cast<std::uint64_t>(position) ^ mix(seed));
        hash = mix(hash ^ mix(mSimulationSeed + 0x5EEDULL));
        return mix(hash ^ (static_cast<std::uint64_t>(beam) << 8U) ^ attempt);
    }
    std::uint64_t hash = mix(request.promptHash ^ mix(seed));
    hash = mix(hash ^ mix(mSimulationSeed + 0x5EEDULL));
    hash = mix(
        hash ^ (static_cast<std::uint64_t>(position) << 20U) ^ (static_cast<std::uint64_t>(beam) << 8U) ^ attempt);
    return hash;
}

TokenIdType TokenGenerator::rawToken(RequestState const& request, SizeType32 sequenceIndex, std::size_t beam,
    std::size_t position, std::uint32_t attempt) const
{
    return static_cast<TokenIdType>(
        stepHash(request, sequenceIndex, beam, position, attempt) % static_cast<std::uint64_t>(mVocabSize));
}

bool TokenGenerator::allowed(Sequence const& sequence, std::size_t beam, TokenIdType token)
{
    RequestState const& request = *sequence.request;
    VecTokens const& generated = sequence.generated.at(beam);
    if (token == request.endId && static_cast<SizeType32>(generated.size()) < request.minTokens)
    {
        return false;
    }
    for (auto const& word : request.badWords)
    {
        if (endsWith(request.prompt, generated, token, word))
        {
            return false;
        }
    }
    return true;
}

TokenGenerator::Step TokenGenerator::next(Sequence const& sequence, std::size_t beam) const
{
    RequestState const& request = *sequence.request;
    std::size_t position = sequence.generated.at(beam).size();
    if (mContextTokens)
    {
        // A rolling hash of prompt + generated: the same context gives the same token, however it was split.
        std::uint64_t context = 0xC0C7E47ULL;
        for (auto const token : request.prompt)
        {
            context = mix(context ^ static_cast<std::uint32_t>(token));
        }
        for (auto const token : sequence.generated.at(beam))
        {
            context = mix(context ^ static_cast<std::uint32_t>(token));
        }
        position = static_cast<std::size_t>(context);
    }
    TokenIdType token = rawToken(request, sequence.sequenceIndex, beam, position, 0);
    std::uint32_t attempt = 0;
    while (!allowed(sequence, beam, token) && attempt < kMaxHashAttempts)
    {
        ++attempt;
        token = rawToken(request, sequence.sequenceIndex, beam, position, attempt);
    }
    if (!allowed(sequence, beam, token))
    {
        // Tiny vocabularies: take the next allowed id; if every id is banned, keep the hashed one.
        for (SizeType32 offset = 1; offset < mVocabSize; ++offset)
        {
            auto const candidate = static_cast<TokenIdType>((token + offset) % mVocabSize);
            if (allowed(sequence, beam, candidate))
            {
                token = candidate;
                break;
            }
        }
    }
    if (mDraftAgreement && mVocabSize > 1)
    {
        // A draft model: agrees with the target's token with the stated probability.
        std::uint64_t const draw = mix(stepHash(request, sequence.sequenceIndex, beam, position, 0xD4AF7U));
        double const uniform = static_cast<double>(draw >> 11U) * (1.0 / 9007199254740992.0);
        if (uniform >= *mDraftAgreement)
        {
            auto const shift = 1 + static_cast<TokenIdType>(mix(draw) % static_cast<std::uint64_t>(mVocabSize - 1));
            token = static_cast<TokenIdType>((token + shift) % mVocabSize);
        }
    }
    // A plausible log-probability in [-5.01, -0.01], derived from the same inputs.
    std::uint64_t const probabilityHash = mix(stepHash(request, sequence.sequenceIndex, beam, position, 0xFFFFU));
    auto const logProb = static_cast<FloatType>(-0.01 - static_cast<double>(probabilityHash % 10000U) / 2000.0);
    return Step{token, logProb};
}

} // namespace tensorrt_llm::executor::sim
