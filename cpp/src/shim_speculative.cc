// Speculative decoding through the shim: the executor's DecodingConfig (mode, lookahead, Medusa
// choices, Eagle) and a request's lookahead, Eagle and external draft-token configs.
#include "shim_internal.h"

#include <optional>
#include <stdexcept>
#include <vector>

namespace trtllm::shim::detail
{
namespace
{

std::optional<tle::LookaheadDecodingConfig> toLookahead(LookaheadSpec const& s)
{
    if (!s.set)
    {
        return std::nullopt;
    }
    return tle::LookaheadDecodingConfig(s.window_size, s.ngram_size, s.verification_set_size);
}

std::vector<std::vector<tle::SizeType32>> toChoices(rust::Vec<TokenSeq> const& seqs)
{
    std::vector<std::vector<tle::SizeType32>> choices;
    for (auto const& seq : seqs)
    {
        choices.emplace_back(seq.ids.begin(), seq.ids.end());
    }
    return choices;
}

std::optional<tle::EagleConfig> toEagle(EagleSpec const& s)
{
    if (!s.set)
    {
        return std::nullopt;
    }
    std::optional<tle::EagleChoices> choices;
    if (!s.choices.empty())
    {
        choices = toChoices(s.choices);
    }
    return tle::EagleConfig(choices, s.greedy_sampling, opt<float>(s.posterior_threshold), s.use_dynamic_tree,
        opt<tle::SizeType32>(s.dynamic_tree_max_top_k));
}

std::optional<tle::DecodingMode> toDecodingMode(DecodingModeKind kind)
{
    switch (kind)
    {
    case DecodingModeKind::Unset: return std::nullopt;
    case DecodingModeKind::Auto: return tle::DecodingMode::Auto();
    case DecodingModeKind::TopKTopP: return tle::DecodingMode::TopKTopP();
    case DecodingModeKind::BeamSearch: return tle::DecodingMode::BeamSearch();
    case DecodingModeKind::Medusa: return tle::DecodingMode::Medusa();
    case DecodingModeKind::Lookahead: return tle::DecodingMode::Lookahead();
    case DecodingModeKind::ExplicitDraftTokens: return tle::DecodingMode::ExplicitDraftTokens();
    case DecodingModeKind::ExternalDraftTokens: return tle::DecodingMode::ExternalDraftTokens();
    case DecodingModeKind::Eagle: return tle::DecodingMode::Eagle();
    }
    throw std::invalid_argument(enumValueMessage("DecodingModeKind", static_cast<int>(kind)));
}

} // namespace

void applyDecodingOptions(tle::ExecutorConfig& config, DecodingOptions const& o)
{
    auto lookahead = toLookahead(o.lookahead);
    auto eagle = toEagle(o.eagle);
    bool const medusa = !o.medusa_choices.empty();
    if (o.mode == DecodingModeKind::Unset && !lookahead && !eagle && !medusa)
    {
        return;
    }
    std::optional<tle::MedusaChoices> choices;
    if (medusa)
    {
        choices = toChoices(o.medusa_choices);
    }
    config.setDecodingConfig(tle::DecodingConfig(toDecodingMode(o.mode), lookahead, choices, eagle));
}

void applySpeculativeRequest(tle::Request& request, SpeculativeSpec const& s)
{
    if (auto lookahead = toLookahead(s.lookahead))
    {
        request.setLookaheadConfig(*lookahead);
    }
    if (auto eagle = toEagle(s.eagle))
    {
        request.setEagleConfig(eagle);
    }
    if (s.has_draft_tokens)
    {
        request.setExternalDraftTokensConfig(tle::ExternalDraftTokensConfig(
            tle::VecTokens(s.draft_tokens.begin(), s.draft_tokens.end()), std::nullopt,
            opt<tle::FloatType>(s.draft_acceptance_threshold)));
    }
}

} // namespace trtllm::shim::detail
