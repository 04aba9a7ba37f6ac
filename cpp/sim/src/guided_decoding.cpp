// GuidedDecodingParams, GuidedDecodingConfig and the guided-decoding accessors of Request and ExecutorConfig.
#include "tensorrt_llm/executor/executor.h"

#include <stdexcept>
#include <utility>

namespace tensorrt_llm::executor
{

GuidedDecodingParams::GuidedDecodingParams(GuideType guideType, std::optional<std::string> guide)
    : mGuideType(guideType)
    , mGuide(std::move(guide))
{
    // Like TensorRT-LLM: every guide type but kJSON carries its guide text.
    if (mGuideType != GuideType::kJSON && !mGuide)
    {
        throw std::runtime_error("GuidedDecodingParams: a guide is required for every guide type but kJSON");
    }
}

bool GuidedDecodingParams::operator==(GuidedDecodingParams const& other) const
{
    return mGuideType == other.mGuideType && mGuide == other.mGuide;
}

GuidedDecodingParams::GuideType GuidedDecodingParams::getGuideType() const
{
    return mGuideType;
}

std::optional<std::string> GuidedDecodingParams::getGuide() const
{
    return mGuide;
}

GuidedDecodingConfig::GuidedDecodingConfig(GuidedDecodingBackend backend,
    std::optional<std::vector<std::string>> encodedVocab, std::optional<std::string> tokenizerStr,
    std::optional<std::vector<TokenIdType>> stopTokenIds)
    : mBackend(backend)
    , mEncodedVocab(std::move(encodedVocab))
    , mTokenizerStr(std::move(tokenizerStr))
    , mStopTokenIds(std::move(stopTokenIds))
{
}

bool GuidedDecodingConfig::operator==(GuidedDecodingConfig const& other) const
{
    return mBackend == other.mBackend && mEncodedVocab == other.mEncodedVocab && mTokenizerStr == other.mTokenizerStr
           && mStopTokenIds == other.mStopTokenIds;
}

void GuidedDecodingConfig::setBackend(GuidedDecodingBackend const& backend)
{
    mBackend = backend;
}

GuidedDecodingConfig::GuidedDecodingBackend GuidedDecodingConfig::getBackend() const
{
    return mBackend;
}

void GuidedDecodingConfig::setEncodedVocab(std::vector<std::string> const& encodedVocab)
{
    mEncodedVocab = encodedVocab;
}

std::optional<std::vector<std::string>> GuidedDecodingConfig::getEncodedVocab() const
{
    return mEncodedVocab;
}

void GuidedDecodingConfig::setTokenizerStr(std::string const& tokenizerStr)
{
    mTokenizerStr = tokenizerStr;
}

std::optional<std::string> GuidedDecodingConfig::getTokenizerStr() const
{
    return mTokenizerStr;
}

void GuidedDecodingConfig::setStopTokenIds(std::vector<TokenIdType> const& stopTokenIds)
{
    mStopTokenIds = stopTokenIds;
}

std::optional<std::vector<TokenIdType>> GuidedDecodingConfig::getStopTokenIds() const
{
    return mStopTokenIds;
}

void GuidedDecodingConfig::validate() const
{
    if (!mEncodedVocab || mEncodedVocab->empty())
    {
        throw std::runtime_error("GuidedDecodingConfig: encodedVocab must be set to a non-empty vocabulary");
    }
    if (!mStopTokenIds || mStopTokenIds->empty())
    {
        throw std::runtime_error("GuidedDecodingConfig: stopTokenIds must hold at least one token id");
    }
}

std::optional<GuidedDecodingParams> Request::getGuidedDecodingParams() const
{
    return mGuidedDecodingParams;
}

void Request::setGuidedDecodingParams(GuidedDecodingParams const& guidedDecodingParams)
{
    mGuidedDecodingParams = guidedDecodingParams;
}

void ExecutorConfig::setGuidedDecodingConfig(GuidedDecodingConfig const& guidedDecodingConfig)
{
    guidedDecodingConfig.validate();
    mGuidedDecodingConfig = guidedDecodingConfig;
}

std::optional<GuidedDecodingConfig> ExecutorConfig::getGuidedDecodingConfig() const
{
    return mGuidedDecodingConfig;
}

} // namespace tensorrt_llm::executor
