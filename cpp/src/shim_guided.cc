// Guided decoding (structured output) through the shim: a request's guide, and the executor's
// grammar backend, encoded vocabulary, tokenizer and stop ids.
#include "shim_internal.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trtllm::shim::detail
{
namespace
{

tle::GuidedDecodingParams::GuideType toGuideType(GuideKind kind)
{
    switch (kind)
    {
    case GuideKind::Json: return tle::GuidedDecodingParams::GuideType::kJSON;
    case GuideKind::JsonSchema: return tle::GuidedDecodingParams::GuideType::kJSON_SCHEMA;
    case GuideKind::Regex: return tle::GuidedDecodingParams::GuideType::kREGEX;
    case GuideKind::EbnfGrammar: return tle::GuidedDecodingParams::GuideType::kEBNF_GRAMMAR;
    case GuideKind::StructuralTag: return tle::GuidedDecodingParams::GuideType::kSTRUCTURAL_TAG;
    }
    throw std::invalid_argument("unknown guide type " + std::to_string(static_cast<int>(kind)));
}

} // namespace

tle::GuidedDecodingParams toGuidedDecodingParams(GuidedDecodingSpec const& spec)
{
    std::optional<std::string> guide;
    if (spec.has_guide)
    {
        guide = std::string(spec.guide.data(), spec.guide.size());
    }
    return tle::GuidedDecodingParams(toGuideType(spec.guide_type), guide);
}

tle::GuidedDecodingConfig toGuidedDecodingConfig(GuidedDecodingOptions const& o)
{
    auto backend = tle::GuidedDecodingConfig::GuidedDecodingBackend::kLLGUIDANCE;
    switch (o.backend)
    {
    case GuidedBackendKind::Xgrammar: backend = tle::GuidedDecodingConfig::GuidedDecodingBackend::kXGRAMMAR; break;
    case GuidedBackendKind::Llguidance: backend = tle::GuidedDecodingConfig::GuidedDecodingBackend::kLLGUIDANCE; break;
    }
    std::vector<std::string> vocab;
    vocab.reserve(o.encoded_vocab.size());
    for (auto const& token : o.encoded_vocab)
    {
        vocab.emplace_back(token.data(), token.size());
    }
    std::optional<std::string> tokenizer;
    if (o.has_tokenizer_str)
    {
        tokenizer = std::string(o.tokenizer_str.data(), o.tokenizer_str.size());
    }
    std::vector<tle::TokenIdType> stops(o.stop_token_ids.begin(), o.stop_token_ids.end());
    return tle::GuidedDecodingConfig(backend, std::move(vocab), std::move(tokenizer), std::move(stops));
}

} // namespace trtllm::shim::detail
