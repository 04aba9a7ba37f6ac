// Speculative decoding in the simulated executor (see speculation.h).
#include "speculation.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tensorrt_llm::executor::sim
{

namespace
{

/// SplitMix64's finaliser (the token generator uses the same mix; acceptance draws are a separate stream).
std::uint64_t mix(std::uint64_t value)
{
    value += 0x9E3779B97F4A7C15ULL;
    value = (value ^ (value >> 30U)) * 0xBF58476D1CE4E5B9ULL;
    value = (value ^ (value >> 27U)) * 0x94D049BB133111EBULL;
    return value ^ (value >> 31U);
}

/// The mode a DecodingMode names, or nullopt for the non-speculative ones (Auto, TopK, TopP, BeamSearch).
std::optional<SpecMode> specModeOf(DecodingMode const& mode)
{
    if (mode.isMedusa())
    {
        return SpecMode::kMedusa;
    }
    if (mode.isLookahead())
    {
        return SpecMode::kLookahead;
    }
    if (mode.isExplicitDraftTokens())
    {
        return SpecMode::kExplicitDraftTokens;
    }
    if (mode.isExternalDraftTokens())
    {
        return SpecMode::kDraftTokensExternal;
    }
    if (mode.isEagle())
    {
        return SpecMode::kEagle;
    }
    return std::nullopt;
}

} // namespace

char const* specModeName(SpecMode mode)
{
    switch (mode)
    {
    case SpecMode::kNone: return "none";
    case SpecMode::kDraftTokensExternal: return "draft_tokens_external";
    case SpecMode::kMedusa: return "medusa";
    case SpecMode::kLookahead: return "lookahead_decoding";
    case SpecMode::kExplicitDraftTokens: return "explicit_draft_tokens";
    case SpecMode::kEagle: return "eagle";
    }
    return "unknown";
}

Speculator::Speculator(
    EngineConfig const& engine, std::vector<double> acceptance, std::uint64_t simulationSeed, ExecutorConfig const& config)
    : mMode(engine.speculativeDecodingMode)
    , mAcceptance(std::move(acceptance))
    , mSeed(simulationSeed)
{
    auto const decoding = config.getDecodingConfig();
    std::optional<DecodingMode> const requested = decoding ? decoding->getDecodingMode() : std::nullopt;
    std::optional<SpecMode> const asked = requested ? specModeOf(*requested) : std::nullopt;
    if (asked && *asked != mMode)
    {
        throw std::runtime_error(std::string("DecodingConfig asks for speculative decoding mode ")
                                 + specModeName(*asked) + ", but the engine was built with speculative_decoding_mode "
                                 + specModeName(mMode) + " (config.json build_config)");
    }
    if (mMode != SpecMode::kNone && requested && !asked && !requested->isAuto())
    {
        throw std::runtime_error(std::string("The engine was built for speculative decoding (")
                                 + specModeName(mMode)
                                 + "); DecodingConfig must leave the decoding mode unset, Auto, or that mode");
    }
    switch (mMode)
    {
    case SpecMode::kNone:
    case SpecMode::kDraftTokensExternal: break;
    case SpecMode::kMedusa:
        mDraftTokens = engine.maxDraftLen;
        mDraftDepth = engine.numMedusaHeads > 0 ? std::min(engine.numMedusaHeads, engine.maxDraftLen) : engine.maxDraftLen;
        break;
    case SpecMode::kEagle:
    case SpecMode::kExplicitDraftTokens:
        mDraftTokens = engine.maxDraftLen;
        mDraftDepth = engine.maxDraftLen;
        break;
    case SpecMode::kLookahead:
    {
        LookaheadDecodingConfig const lookahead = decoding && decoding->getLookaheadDecodingConfig()
            ? *decoding->getLookaheadDecodingConfig()
            : LookaheadDecodingConfig();
        auto const [decodingTokens, pathLen, draftTokens, draftPathLen] = lookahead.calculateSpeculativeResource();
        (void) decodingTokens;
        (void) pathLen;
        if (engine.maxDraftLen > 0 && draftTokens > engine.maxDraftLen)
        {
            throw std::runtime_error("The lookahead config (window " + std::to_string(lookahead.getWindowSize())
                                     + ", ngram " + std::to_string(lookahead.getNgramSize()) + ", verification set "
                                     + std::to_string(lookahead.getVerificationSetSize()) + ") needs "
                                     + std::to_string(draftTokens)
                                     + " draft tokens per step, more than the engine's max_draft_len ("
                                     + std::to_string(engine.maxDraftLen) + ")");
        }
        mDraftTokens = draftTokens;
        mDraftDepth = draftPathLen;
        mLookahead = lookahead;
        if (decoding)
        {
            mLookaheadMaxRequests = decoding->getLookaheadDecodingMaxNumRequest();
        }
        break;
    }
    }
}

SizeType32 Speculator::draftReserve() const
{
    return mDraftTokens;
}

std::optional<std::string> Speculator::admit(Request const& request, RequestState& state) const
{
    auto const external = request.getExternalDraftTokensConfig();
    if (external && mMode != SpecMode::kDraftTokensExternal)
    {
        return std::string("Request has external draft tokens, but the engine's speculative_decoding_mode is ")
               + specModeName(mMode) + " (draft tokens need an engine built with draft_tokens_external)";
    }
    if (request.getLookaheadConfig() && mMode != SpecMode::kLookahead)
    {
        return std::string("Request has a lookahead config, but the engine's speculative_decoding_mode is ")
               + specModeName(mMode);
    }
    if (auto const own = request.getLookaheadConfig(); own && mLookahead && !own->isLE(*mLookahead))
    {
        return "Request's lookahead config (window " + std::to_string(own->getWindowSize()) + ", ngram "
               + std::to_string(own->getNgramSize()) + ", verification set "
               + std::to_string(own->getVerificationSetSize()) + ") exceeds the executor's (window "
               + std::to_string(mLookahead->getWindowSize()) + ", ngram " + std::to_string(mLookahead->getNgramSize())
               + ", verification set " + std::to_string(mLookahead->getVerificationSetSize()) + ")";
    }
    if (request.getEagleConfig() && mMode != SpecMode::kEagle)
    {
        return std::string("Request has an Eagle config, but the engine's speculative_decoding_mode is ")
               + specModeName(mMode);
    }
    if (mMode == SpecMode::kNone)
    {
        return std::nullopt;
    }
    if (state.beamWidth > 1)
    {
        return "Speculative decoding (" + std::string(specModeName(mMode)) + ") supports beam width 1 only, got "
               + std::to_string(state.beamWidth);
    }
    if (external)
    {
        state.externalDraftTokens = external->getTokens();
        // Drafts beyond what maxTokens lets the request emit could never be used.
        auto const usable = static_cast<std::size_t>(std::max<SizeType32>(0, state.maxNewTokens - 1));
        if (state.externalDraftTokens.size() > usable)
        {
            state.externalDraftTokens.resize(usable);
        }
        state.draftReserve = static_cast<SizeType32>(state.externalDraftTokens.size());
        return std::nullopt;
    }
    state.speculative = mMode != SpecMode::kDraftTokensExternal;
    state.draftReserve = state.speculative ? mDraftTokens : 0;
    return std::nullopt;
}

void Speculator::planStep(std::vector<Sequence*> const& order) const
{
    SizeType32 lookaheadSlots = mLookaheadMaxRequests;
    for (Sequence* sequence : order)
    {
        sequence->stepDraftTokens = 0;
        sequence->stepDraftDepth = 0;
        RequestState const& request = *sequence->request;
        if (sequence->state == SequenceState::kContext)
        {
            // Draft-target: the target verifies the drafts in the pass that completes the prompt (one request
            // per draft round, as Triton's draft-target loop sends them).
            if (!request.externalDraftTokens.empty() && sequence->numGenerated() == 0)
            {
                auto const drafts = static_cast<SizeType32>(request.externalDraftTokens.size());
                sequence->stepDraftTokens = drafts;
                sequence->stepDraftDepth = drafts;
            }
            continue;
        }
        if (sequence->state != SequenceState::kGeneration || !request.speculative)
        {
            continue;
        }
        if (mMode == SpecMode::kLookahead)
        {
            if (lookaheadSlots == 0)
            {
                continue;
            }
            --lookaheadSlots;
        }
        // No point verifying drafts beyond the tokens the request may still generate.
        SizeType32 const left = request.maxNewTokens - sequence->numGenerated() - 1;
        sequence->stepDraftDepth = std::max<SizeType32>(0, std::min(mDraftDepth, left));
        sequence->stepDraftTokens = sequence->stepDraftDepth > 0 ? mDraftTokens : 0;
    }
}

SizeType32 Speculator::acceptedDrafts(Sequence const& sequence) const
{
    RequestState const& request = *sequence.request;
    std::uint64_t const seed = request.seed.value_or(0) + static_cast<std::uint64_t>(sequence.sequenceIndex);
    std::uint64_t const base = mix(request.promptHash ^ mix(seed) ^ mix(mSeed + 0xD4AF7ULL))
                               ^ mix(static_cast<std::uint64_t>(sequence.numGenerated()));
    SizeType32 accepted = 0;
    while (accepted < sequence.stepDraftDepth)
    {
        double const p = mAcceptance.empty()
            ? 0.0
            : mAcceptance[std::min<std::size_t>(static_cast<std::size_t>(accepted), mAcceptance.size() - 1)];
        std::uint64_t const draw = mix(base ^ (static_cast<std::uint64_t>(accepted) << 32U));
        double const uniform = static_cast<double>(draw >> 11U) * (1.0 / 9007199254740992.0);
        if (uniform >= p)
        {
            break;
        }
        ++accepted;
    }
    return accepted;
}

void SpecStepTally::addGeneration(Sequence const& sequence)
{
    if (sequence.decodingIter <= 0)
    {
        return;
    }
    ++generationRequests;
    sumAvgDecodedPerIter += static_cast<double>(sequence.numGenerated()) / static_cast<double>(sequence.decodingIter);
}

void SpecStepTally::addVerification(SizeType32 drafted, SizeType32 accepted, SizeType32 emitted)
{
    if (drafted <= 0)
    {
        return;
    }
    draftTokens += drafted;
    acceptedTokens += accepted;
    ++requestsWithDrafts;
    tokensOfRequestsWithDrafts += emitted;
}

float SpecStepTally::avgDecodedTokensPerIter() const
{
    return generationRequests > 0 ? static_cast<float>(sumAvgDecodedPerIter / generationRequests) : 0.f;
}

SpecDecodingStats SpecStepTally::stats(double iterLatencyMs) const
{
    SpecDecodingStats out{};
    out.numDraftTokens = draftTokens;
    out.numAcceptedTokens = acceptedTokens;
    out.numRequestsWithDraftTokens = requestsWithDrafts;
    out.acceptanceLength = requestsWithDrafts > 0
        ? static_cast<double>(tokensOfRequestsWithDrafts) / static_cast<double>(requestsWithDrafts)
        : 0.0;
    out.iterLatencyMS = drafterMs;
    out.draftOverhead = iterLatencyMs > 0.0 ? drafterMs / iterLatencyMs : 0.0;
    return out;
}

} // namespace tensorrt_llm::executor::sim
