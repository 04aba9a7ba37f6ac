// The simulated speculative-decoding settings: ExternalDraftTokensConfig, LookaheadDecodingConfig, EagleConfig,
// DecodingConfig, and the Request / ExecutorConfig accessors that carry them.
#include "tensorrt_llm/executor/executor.h"

#include <stdexcept>
#include <string>
#include <utility>

namespace tensorrt_llm::executor
{

// ---------------------------------------------------------------------------------------------------------------
// ExternalDraftTokensConfig

ExternalDraftTokensConfig::ExternalDraftTokensConfig(VecTokens tokens, std::optional<Tensor> logits,
    std::optional<FloatType> const& acceptanceThreshold, std::optional<bool> const& fastLogits)
    : mTokens(std::move(tokens))
    , mLogits(std::move(logits))
    , mAcceptanceThreshold(acceptanceThreshold)
    , mFastLogits(fastLogits)
{
    if (mAcceptanceThreshold && (*mAcceptanceThreshold <= 0.f || *mAcceptanceThreshold > 1.f))
    {
        throw std::invalid_argument("ExternalDraftTokensConfig: acceptanceThreshold must be in (0, 1], got "
                                    + std::to_string(*mAcceptanceThreshold));
    }
}

VecTokens ExternalDraftTokensConfig::getTokens() const
{
    return mTokens;
}

std::optional<Tensor> ExternalDraftTokensConfig::getLogits() const
{
    return mLogits;
}

std::optional<FloatType> ExternalDraftTokensConfig::getAcceptanceThreshold() const
{
    return mAcceptanceThreshold;
}

std::optional<bool> ExternalDraftTokensConfig::getFastLogits() const
{
    return mFastLogits;
}

// ---------------------------------------------------------------------------------------------------------------
// LookaheadDecodingConfig

LookaheadDecodingConfig::LookaheadDecodingConfig(
    SizeType32 windowSize, SizeType32 ngramSize, SizeType32 verificationSetSize)
    : mWindowSize(windowSize)
    , mNgramSize(ngramSize)
    , mVerificationSetSize(verificationSetSize)
{
    if (!isLegal(windowSize, ngramSize, verificationSetSize))
    {
        throw std::invalid_argument("Illegal lookahead decoding config: window " + std::to_string(windowSize)
                                    + ", ngram " + std::to_string(ngramSize) + ", verification set "
                                    + std::to_string(verificationSetSize) + " (each must be positive)");
    }
}

bool LookaheadDecodingConfig::operator==(LookaheadDecodingConfig const& other) const
{
    return mWindowSize == other.mWindowSize && mNgramSize == other.mNgramSize
           && mVerificationSetSize == other.mVerificationSetSize;
}

SizeType32 LookaheadDecodingConfig::getWindowSize() const
{
    return mWindowSize;
}

SizeType32 LookaheadDecodingConfig::getNgramSize() const
{
    return mNgramSize;
}

SizeType32 LookaheadDecodingConfig::getVerificationSetSize() const
{
    return mVerificationSetSize;
}

std::tuple<SizeType32, SizeType32, SizeType32, SizeType32> LookaheadDecodingConfig::calculateSpeculativeResource()
    const
{
    // The simulator's accounting: the lookahead branch carries (window - 1) n-grams and the verification branch
    // `verificationSet` candidate n-grams, each n-gram proposing ngram - 1 tokens; one path of ngram - 1 draft
    // tokens (plus the token sampled after it) can be accepted per step.
    SizeType32 const draftPathLen = mNgramSize - 1;
    SizeType32 const draftTokens = (mWindowSize - 1 + mVerificationSetSize) * draftPathLen;
    return {draftTokens + 1, draftPathLen + 1, draftTokens, draftPathLen};
}

bool LookaheadDecodingConfig::isLE(LookaheadDecodingConfig const& that) const
{
    return mWindowSize <= that.mWindowSize && mNgramSize <= that.mNgramSize
           && mVerificationSetSize <= that.mVerificationSetSize;
}

bool LookaheadDecodingConfig::isLegal(
    SizeType32 windowSize, SizeType32 ngramSize, SizeType32 verificationSetSize) noexcept
{
    return windowSize > 0 && ngramSize > 0 && verificationSetSize > 0;
}

// ---------------------------------------------------------------------------------------------------------------
// EagleConfig

EagleConfig::EagleConfig(std::optional<EagleChoices> eagleChoices, bool greedySampling,
    std::optional<float> posteriorThreshold, bool useDynamicTree, std::optional<SizeType32> dynamicTreeMaxTopK)
    : mEagleChoices(std::move(eagleChoices))
    , mGreedySampling(greedySampling)
    , mPosteriorThreshold(posteriorThreshold)
    , mUseDynamicTree(useDynamicTree)
    , mDynamicTreeMaxTopK(dynamicTreeMaxTopK)
{
    if (mPosteriorThreshold && (*mPosteriorThreshold <= 0.f || *mPosteriorThreshold >= 1.f))
    {
        throw std::invalid_argument(
            "EagleConfig: posteriorThreshold must be in (0, 1), got " + std::to_string(*mPosteriorThreshold));
    }
}

bool EagleConfig::operator==(EagleConfig const& other) const
{
    return mEagleChoices == other.mEagleChoices && mGreedySampling == other.mGreedySampling
           && mPosteriorThreshold == other.mPosteriorThreshold && mUseDynamicTree == other.mUseDynamicTree
           && mDynamicTreeMaxTopK == other.mDynamicTreeMaxTopK;
}

std::optional<EagleChoices> EagleConfig::getEagleChoices() const
{
    return mEagleChoices;
}

std::optional<float> EagleConfig::getPosteriorThreshold() const
{
    return mPosteriorThreshold;
}

bool EagleConfig::isGreedySampling() const
{
    return mGreedySampling;
}

bool EagleConfig::useDynamicTree() const
{
    return mUseDynamicTree;
}

std::optional<SizeType32> EagleConfig::getDynamicTreeMaxTopK() const
{
    return mDynamicTreeMaxTopK;
}

// ---------------------------------------------------------------------------------------------------------------
// DecodingConfig

DecodingConfig::DecodingConfig(std::optional<DecodingMode> decodingMode,
    std::optional<LookaheadDecodingConfig> lookaheadDecodingConfig, std::optional<MedusaChoices> medusaChoices,
    std::optional<EagleConfig> eagleConfig)
    : mDecodingMode(decodingMode)
    , mLookaheadDecodingConfig(std::move(lookaheadDecodingConfig))
    , mMedusaChoices(std::move(medusaChoices))
    , mEagleConfig(std::move(eagleConfig))
{
    if (mLookaheadDecodingConfig)
    {
        if (mDecodingMode && !mDecodingMode->isLookahead())
        {
            throw std::invalid_argument("DecodingConfig: a lookahead config needs the Lookahead decoding mode");
        }
        mDecodingMode = DecodingMode::Lookahead();
    }
    if (mMedusaChoices && mDecodingMode && !mDecodingMode->isMedusa())
    {
        throw std::invalid_argument("DecodingConfig: Medusa choices need the Medusa decoding mode");
    }
    if (mEagleConfig && mDecodingMode && !mDecodingMode->isEagle())
    {
        throw std::invalid_argument("DecodingConfig: an Eagle config needs the Eagle decoding mode");
    }
}

bool DecodingConfig::operator==(DecodingConfig const& other) const
{
    return mDecodingMode == other.mDecodingMode && mLookaheadDecodingConfig == other.mLookaheadDecodingConfig
           && mMedusaChoices == other.mMedusaChoices && mEagleConfig == other.mEagleConfig;
}

void DecodingConfig::setDecodingMode(DecodingMode const& decodingMode)
{
    mDecodingMode = decodingMode;
}

std::optional<DecodingMode> DecodingConfig::getDecodingMode() const
{
    return mDecodingMode;
}

std::optional<LookaheadDecodingConfig> DecodingConfig::getLookaheadDecodingConfig() const
{
    return mLookaheadDecodingConfig;
}

SizeType32 DecodingConfig::getLookaheadDecodingMaxNumRequest() const
{
    return mLookaheadDecodingMaxNumRequest;
}

void DecodingConfig::setMedusaChoices(MedusaChoices const& medusaChoices)
{
    mMedusaChoices = medusaChoices;
    mDecodingMode = DecodingMode::Medusa();
}

std::optional<MedusaChoices> DecodingConfig::getMedusaChoices() const
{
    return mMedusaChoices;
}

void DecodingConfig::setEagleConfig(EagleConfig const& eagleConfig)
{
    mEagleConfig = eagleConfig;
    mDecodingMode = DecodingMode::Eagle();
}

std::optional<EagleConfig> DecodingConfig::getEagleConfig() const
{
    return mEagleConfig;
}

// ---------------------------------------------------------------------------------------------------------------
// Request and ExecutorConfig accessors

std::optional<ExternalDraftTokensConfig> Request::getExternalDraftTokensConfig() const
{
    return mExternalDraftTokensConfig;
}

std::optional<LookaheadDecodingConfig> Request::getLookaheadConfig() const
{
    return mLookaheadConfig;
}

std::optional<EagleConfig> Request::getEagleConfig() const
{
    return mEagleConfig;
}

void Request::setExternalDraftTokensConfig(ExternalDraftTokensConfig const& externalDraftTokensConfig)
{
    mExternalDraftTokensConfig = externalDraftTokensConfig;
}

void Request::setLookaheadConfig(LookaheadDecodingConfig const& lookaheadConfig)
{
    mLookaheadConfig = lookaheadConfig;
}

void Request::setEagleConfig(std::optional<EagleConfig> const& eagleConfig)
{
    mEagleConfig = eagleConfig;
}

std::optional<DecodingConfig> ExecutorConfig::getDecodingConfig() const
{
    return mDecodingConfig;
}

void ExecutorConfig::setDecodingConfig(DecodingConfig const& decodingConfig)
{
    mDecodingConfig = decodingConfig;
}

} // namespace tensorrt_llm::executor
