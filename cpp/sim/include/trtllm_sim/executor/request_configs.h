// Simulator-private part of the simulated `tensorrt_llm/executor/executor.h`: the per-request configs (sampling,
// output, LoRA, speculative decoding, guided decoding). TensorRT-LLM declares these in executor.h itself; the
// simulator keeps them here only to keep its files small. Include `tensorrt_llm/executor/executor.h`, never this
// file. Same names and signatures as the real 1.1/1.2 classes, nothing they lack.
#pragma once

#include "tensorrt_llm/executor/tensor.h"
#include "tensorrt_llm/executor/types.h"

#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tensorrt_llm::executor
{

class SamplingConfig
{
public:
    explicit SamplingConfig(SizeType32 beamWidth = 1, std::optional<SizeType32> const& topK = std::nullopt,
        std::optional<FloatType> const& topP = std::nullopt, std::optional<FloatType> const& topPMin = std::nullopt,
        std::optional<TokenIdType> const& topPResetIds = std::nullopt,
        std::optional<FloatType> const& topPDecay = std::nullopt,
        std::optional<RandomSeedType> const& seed = std::nullopt,
        std::optional<FloatType> const& temperature = std::nullopt,
        std::optional<SizeType32> const& minTokens = std::nullopt);

    [[nodiscard]] SizeType32 getBeamWidth() const;
    [[nodiscard]] SizeType32 getNumReturnBeams() const;
    [[nodiscard]] std::optional<SizeType32> getTopK() const;
    [[nodiscard]] std::optional<FloatType> getTopP() const;
    [[nodiscard]] std::optional<RandomSeedType> getSeed() const;
    [[nodiscard]] std::optional<FloatType> getTemperature() const;
    [[nodiscard]] std::optional<SizeType32> getMinTokens() const;
    [[nodiscard]] std::optional<SizeType32> getNumReturnSequences() const;

    void setBeamWidth(SizeType32 beamWidth);
    void setTopK(std::optional<SizeType32> const& topK);
    void setTopP(std::optional<FloatType> const& topP);
    void setTopPMin(std::optional<FloatType> const& topPMin);
    void setTopPResetIds(std::optional<TokenIdType> const& topPResetIds);
    void setTopPDecay(std::optional<FloatType> const& topPDecay);
    void setSeed(std::optional<RandomSeedType> const& seed);
    void setTemperature(std::optional<FloatType> const& temperature);
    void setMinTokens(std::optional<SizeType32> const& minTokens);
    void setBeamSearchDiversityRate(std::optional<FloatType> const& beamSearchDiversityRate);
    void setRepetitionPenalty(std::optional<FloatType> const& repetitionPenalty);
    void setPresencePenalty(std::optional<FloatType> const& presencePenalty);
    void setFrequencyPenalty(std::optional<FloatType> const& frequencyPenalty);
    void setLengthPenalty(std::optional<FloatType> const& lengthPenalty);
    void setEarlyStopping(std::optional<SizeType32> const& earlyStopping);
    void setNoRepeatNgramSize(std::optional<SizeType32> const& noRepeatNgramSize);
    void setNumReturnSequences(std::optional<SizeType32> const& numReturnSequences);
    void setMinP(std::optional<FloatType> const& minP);

private:
    SizeType32 mBeamWidth;
    std::optional<SizeType32> mTopK;
    std::optional<FloatType> mTopP;
    std::optional<FloatType> mTopPMin;
    std::optional<TokenIdType> mTopPResetIds;
    std::optional<FloatType> mTopPDecay;
    std::optional<RandomSeedType> mSeed;
    std::optional<FloatType> mTemperature;
    std::optional<SizeType32> mMinTokens;
    std::optional<FloatType> mBeamSearchDiversityRate;
    std::optional<FloatType> mRepetitionPenalty;
    std::optional<FloatType> mPresencePenalty;
    std::optional<FloatType> mFrequencyPenalty;
    std::optional<FloatType> mLengthPenalty;
    std::optional<SizeType32> mEarlyStopping;
    std::optional<SizeType32> mNoRepeatNgramSize;
    std::optional<SizeType32> mNumReturnSequences;
    std::optional<FloatType> mMinP;
};

class OutputConfig
{
public:
    explicit OutputConfig(bool returnLogProbs = false, bool returnContextLogits = false,
        bool returnGenerationLogits = false, bool excludeInputFromOutput = false, bool returnEncoderOutput = false,
        bool returnPerfMetrics = false);

    bool returnLogProbs;
    bool returnContextLogits;
    bool returnGenerationLogits;
    bool excludeInputFromOutput;
    bool returnEncoderOutput;
    bool returnPerfMetrics;
};

// ---- LoRA: a request's adapter (task id, and its weights and config the first time) ----
class LoraConfig
{
public:
    explicit LoraConfig(
        IdType taskId, std::optional<Tensor> weights = std::nullopt, std::optional<Tensor> config = std::nullopt);

    [[nodiscard]] IdType getTaskId() const;
    [[nodiscard]] std::optional<Tensor> getWeights() const;
    [[nodiscard]] std::optional<Tensor> getConfig() const;

private:
    IdType mTaskId;
    std::optional<Tensor> mWeights;
    std::optional<Tensor> mConfig;
};

// ---- Speculative decoding (see cpp/sim/src/decoding_config.cpp) ----

/// Draft-target speculative decoding: the draft tokens a request asks the target engine to verify.
class ExternalDraftTokensConfig
{
public:
    explicit ExternalDraftTokensConfig(VecTokens tokens, std::optional<Tensor> logits = std::nullopt,
        std::optional<FloatType> const& acceptanceThreshold = std::nullopt,
        std::optional<bool> const& fastLogits = std::nullopt);

    [[nodiscard]] VecTokens getTokens() const;
    [[nodiscard]] std::optional<Tensor> getLogits() const;
    [[nodiscard]] std::optional<FloatType> getAcceptanceThreshold() const;
    [[nodiscard]] std::optional<bool> getFastLogits() const;

private:
    VecTokens mTokens;
    std::optional<Tensor> mLogits;
    std::optional<FloatType> mAcceptanceThreshold;
    std::optional<bool> mFastLogits;
};

/// Lookahead decoding: window size (n-grams in the lookahead branch), n-gram size and verification-set size.
struct LookaheadDecodingConfig
{
    LookaheadDecodingConfig(SizeType32 windowSize, SizeType32 ngramSize, SizeType32 verificationSetSize);

    explicit LookaheadDecodingConfig()
        : LookaheadDecodingConfig(
            kDefaultLookaheadDecodingWindow, kDefaultLookaheadDecodingNgram, kDefaultLookaheadDecodingVerificationSet)
    {
    }

    bool operator==(LookaheadDecodingConfig const& other) const;
    [[nodiscard]] SizeType32 getWindowSize() const;
    [[nodiscard]] SizeType32 getNgramSize() const;
    [[nodiscard]] SizeType32 getVerificationSetSize() const;

    /// <maxDecodingTokens, maxPathLen, maxDraftTokens, maxDraftPathLen>
    [[nodiscard]] std::tuple<SizeType32, SizeType32, SizeType32, SizeType32> calculateSpeculativeResource() const;
    /// True when `this` can run on the resources `that` was set up for.
    [[nodiscard]] bool isLE(LookaheadDecodingConfig const& that) const;
    static bool isLegal(SizeType32 windowSize, SizeType32 ngramSize, SizeType32 verificationSetSize) noexcept;

    static constexpr SizeType32 kDefaultLookaheadDecodingWindow = 4;
    static constexpr SizeType32 kDefaultLookaheadDecodingNgram = 3;
    static constexpr SizeType32 kDefaultLookaheadDecodingVerificationSet = 4;

private:
    SizeType32 mWindowSize;
    SizeType32 mNgramSize;
    SizeType32 mVerificationSetSize;
};

/// Eagle: the draft tree (Eagle-1 choices or Eagle-2's dynamic tree) and how drafts are accepted.
struct EagleConfig
{
    explicit EagleConfig(std::optional<EagleChoices> eagleChoices = std::nullopt, bool greedySampling = true,
        std::optional<float> posteriorThreshold = std::nullopt, bool useDynamicTree = false,
        std::optional<SizeType32> dynamicTreeMaxTopK = std::nullopt);

    bool operator==(EagleConfig const& other) const;
    [[nodiscard]] std::optional<EagleChoices> getEagleChoices() const;
    [[nodiscard]] std::optional<float> getPosteriorThreshold() const;
    [[nodiscard]] bool isGreedySampling() const;
    [[nodiscard]] bool useDynamicTree() const;
    [[nodiscard]] std::optional<SizeType32> getDynamicTreeMaxTopK() const;

private:
    std::optional<EagleChoices> mEagleChoices;
    bool mGreedySampling;
    std::optional<float> mPosteriorThreshold;
    bool mUseDynamicTree;
    std::optional<SizeType32> mDynamicTreeMaxTopK;
};

// ---- Guided decoding (structured output) ----

/// A request's output constraint: a guide type and, for every type but kJSON, the guide text.
class GuidedDecodingParams
{
public:
    enum class GuideType
    {
        kJSON = 0,
        kJSON_SCHEMA = 1,
        kREGEX = 2,
        kEBNF_GRAMMAR = 3,
        kSTRUCTURAL_TAG = 4,
    };

    explicit GuidedDecodingParams(GuideType guideType, std::optional<std::string> guide = std::nullopt);

    bool operator==(GuidedDecodingParams const& other) const;
    [[nodiscard]] GuideType getGuideType() const;
    [[nodiscard]] std::optional<std::string> getGuide() const;

private:
    GuideType mGuideType;
    std::optional<std::string> mGuide;
};

} // namespace tensorrt_llm::executor
