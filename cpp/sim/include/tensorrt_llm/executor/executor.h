// Simulated executor: the part of TensorRT-LLM's `tensorrt_llm/executor/executor.h` (1.1/1.2) that the
// trtllm shim uses, with the same class names, method names and signatures, so that the shim compiles
// unchanged against the real headers or these. Written for this project from the documented API; it
// declares nothing the real header lacks (the real classes have more members, which the shim does not
// use). Private members are this simulator's own.
#pragma once

#include "tensorrt_llm/executor/tensor.h"
#include "tensorrt_llm/executor/types.h"
#include "tensorrt_llm/runtime/common.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace tensorrt_llm::batch_manager::kv_cache_manager
{
/// The KV-cache manager behind a KVCacheEventManager (the simulator defines its own, see cpp/sim/src/kv_events.h).
class BaseKVCacheManager;
} // namespace tensorrt_llm::batch_manager::kv_cache_manager

namespace tensorrt_llm::executor
{

/// Version of the library. The simulator reports its own version string.
char const* version() noexcept;

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

class Request
{
public:
    static constexpr PriorityType kDefaultPriority = 0.5;

    // The real constructor has many more trailing defaulted parameters; the shim passes only the first
    // three and uses setters for the rest, which is the only form that is stable across releases.
    Request(VecTokens inputTokenIds, SizeType32 maxTokens, bool streaming = false,
        SamplingConfig const& samplingConfig = SamplingConfig(), OutputConfig const& outputConfig = OutputConfig(),
        std::optional<SizeType32> const& endId = std::nullopt, std::optional<SizeType32> const& padId = std::nullopt);

    [[nodiscard]] VecTokens getInputTokenIds() const;
    [[nodiscard]] SizeType32 getMaxTokens() const;
    [[nodiscard]] bool getStreaming() const;
    [[nodiscard]] SamplingConfig getSamplingConfig() const;
    [[nodiscard]] OutputConfig getOutputConfig() const;
    [[nodiscard]] std::optional<SizeType32> getEndId() const;
    [[nodiscard]] std::optional<SizeType32> getPadId() const;
    [[nodiscard]] std::optional<std::list<VecTokens>> getBadWords() const;
    [[nodiscard]] std::optional<std::list<VecTokens>> getStopWords() const;
    [[nodiscard]] std::optional<IdType> getClientId() const;
    [[nodiscard]] PriorityType getPriority() const;
    [[nodiscard]] bool getReturnAllGeneratedTokens() const;
    [[nodiscard]] std::optional<MillisecondsType> getAllottedTimeMs() const;

    void setStreaming(bool streaming);
    void setSamplingConfig(SamplingConfig const& config);
    void setOutputConfig(OutputConfig const& outputConfig);
    void setEndId(SizeType32 endId);
    void setPadId(SizeType32 padId);
    void setBadWords(std::list<VecTokens> const& badWords);
    void setStopWords(std::list<VecTokens> const& stopWords);
    void setClientId(IdType clientId);
    void setPriority(PriorityType priority);
    void setReturnAllGeneratedTokens(bool returnAllGeneratedTokens);
    void setAllottedTimeMs(MillisecondsType allottedTimeMs);
    // ---- LoRA ----
    [[nodiscard]] std::optional<LoraConfig> getLoraConfig() const;
    void setLoraConfig(LoraConfig const& loraConfig);

    // Speculative decoding
    [[nodiscard]] std::optional<ExternalDraftTokensConfig> getExternalDraftTokensConfig() const;
    [[nodiscard]] std::optional<LookaheadDecodingConfig> getLookaheadConfig() const;
    [[nodiscard]] std::optional<EagleConfig> getEagleConfig() const;
    void setExternalDraftTokensConfig(ExternalDraftTokensConfig const& externalDraftTokensConfig);
    void setLookaheadConfig(LookaheadDecodingConfig const& lookaheadConfig);
    void setEagleConfig(std::optional<EagleConfig> const& eagleConfig);
    // Guided decoding
    [[nodiscard]] std::optional<GuidedDecodingParams> getGuidedDecodingParams() const;
    void setGuidedDecodingParams(GuidedDecodingParams const& guidedDecodingParams);

private:
    VecTokens mInputTokenIds;
    SizeType32 mMaxTokens;
    bool mStreaming;
    SamplingConfig mSamplingConfig;
    OutputConfig mOutputConfig;
    std::optional<SizeType32> mEndId;
    std::optional<SizeType32> mPadId;
    std::optional<std::list<VecTokens>> mBadWords;
    std::optional<std::list<VecTokens>> mStopWords;
    std::optional<IdType> mClientId;
    PriorityType mPriority{kDefaultPriority};
    bool mReturnAllGeneratedTokens{false};
    std::optional<MillisecondsType> mAllottedTimeMs;
    std::optional<LoraConfig> mLoraConfig;
    std::optional<ExternalDraftTokensConfig> mExternalDraftTokensConfig;
    std::optional<LookaheadDecodingConfig> mLookaheadConfig;
    std::optional<EagleConfig> mEagleConfig;
    // Guided decoding
    std::optional<GuidedDecodingParams> mGuidedDecodingParams;
};

struct Result
{
    bool isFinal;
    BeamTokens outputTokenIds;
    std::optional<VecLogProbs> cumLogProbs;
    std::optional<std::vector<VecLogProbs>> logProbs;
    /// One per beam; there is no single finish reason.
    std::vector<FinishReason> finishReasons;
    SizeType32 decodingIter{0};
    /// Mean tokens per decoding step (> 1 under speculative decoding).
    float avgDecodedTokensPerIter{0.f};
    SizeType32 sequenceIndex{0};
    bool isSequenceFinal;
    std::optional<RequestPerfMetrics> requestPerfMetrics;
};

/// Either an error or a result.
class Response
{
public:
    Response(IdType requestId, std::string errorMsg, std::optional<IdType> clientId = std::nullopt);
    Response(IdType requestId, Result Result, std::optional<IdType> clientId = std::nullopt);

    [[nodiscard]] IdType getRequestId() const;
    [[nodiscard]] std::optional<IdType> getClientId() const;
    [[nodiscard]] bool hasError() const;
    /// Throws if the response holds no error.
    [[nodiscard]] std::string const& getErrorMsg() const;
    /// Throws if the response holds an error.
    [[nodiscard]] Result const& getResult() const;

private:
    IdType mRequestId;
    std::optional<IdType> mClientId;
    std::optional<std::string> mErrorMsg;
    std::optional<Result> mResult;
};

class SchedulerConfig
{
public:
    explicit SchedulerConfig(
        CapacitySchedulerPolicy capacitySchedulerPolicy = CapacitySchedulerPolicy::kGUARANTEED_NO_EVICT,
        std::optional<ContextChunkingPolicy> contextChunkingPolicy = std::nullopt);

    [[nodiscard]] CapacitySchedulerPolicy getCapacitySchedulerPolicy() const;
    [[nodiscard]] std::optional<ContextChunkingPolicy> getContextChunkingPolicy() const;

private:
    CapacitySchedulerPolicy mCapacitySchedulerPolicy;
    std::optional<ContextChunkingPolicy> mContextChunkingPolicy;
};

class KvCacheConfig
{
public:
    explicit KvCacheConfig(bool enableBlockReuse = true, std::optional<SizeType32> const& maxTokens = std::nullopt);

    [[nodiscard]] bool getEnableBlockReuse() const;
    [[nodiscard]] std::optional<SizeType32> getMaxTokens() const;
    [[nodiscard]] std::optional<FloatType> getFreeGpuMemoryFraction() const;
    [[nodiscard]] std::optional<std::size_t> getHostCacheSize() const;
    [[nodiscard]] std::size_t getEventBufferMaxSize() const;
    [[nodiscard]] bool getEnablePartialReuse() const;
    [[nodiscard]] bool getCopyOnPartialReuse() const;

    void setEnableBlockReuse(bool enableBlockReuse);
    void setMaxTokens(std::optional<SizeType32> maxTokens);
    void setFreeGpuMemoryFraction(FloatType freeGpuMemoryFraction);
    void setHostCacheSize(std::size_t hostCacheSize);
    void setEventBufferMaxSize(std::size_t eventBufferMaxSize);
    void setEnablePartialReuse(bool enablePartialReuse);
    void setCopyOnPartialReuse(bool copyOnPartialReuse);

private:
    bool mEnableBlockReuse;
    std::optional<SizeType32> mMaxTokens;
    std::optional<FloatType> mFreeGpuMemoryFraction;
    std::optional<std::size_t> mHostCacheSize;
    std::size_t mEventBufferMaxSize{0};
    bool mEnablePartialReuse{true};
    bool mCopyOnPartialReuse{true};
};

class ExtendedRuntimePerfKnobConfig
{
public:
    explicit ExtendedRuntimePerfKnobConfig(bool multiBlockMode = true, bool enableContextFMHAFP32Acc = false,
        bool cudaGraphMode = false, SizeType32 cudaGraphCacheSize = 0);

    [[nodiscard]] bool getMultiBlockMode() const;
    [[nodiscard]] bool getEnableContextFMHAFP32Acc() const;
    [[nodiscard]] bool getCudaGraphMode() const;
    [[nodiscard]] SizeType32 getCudaGraphCacheSize() const;

    void setMultiBlockMode(bool multiBlockMode);
    void setEnableContextFMHAFP32Acc(bool enableContextFMHAFP32Acc);
    void setCudaGraphMode(bool cudaGraphMode);
    void setCudaGraphCacheSize(SizeType32 cacheSize);

private:
    bool mMultiBlockMode;
    bool mEnableContextFMHAFP32Acc;
    bool mCudaGraphMode;
    SizeType32 mCudaGraphCacheSize;
};

class OrchestratorConfig
{
public:
    explicit OrchestratorConfig(bool isOrchestrator = true, std::string workerExecutablePath = "");

    [[nodiscard]] bool getIsOrchestrator() const;
    [[nodiscard]] std::string getWorkerExecutablePath() const;

    void setIsOrchestrator(bool isOrchestrator);
    void setWorkerExecutablePath(std::string const& workerExecutablePath);

private:
    bool mIsOrchestrator;
    std::string mWorkerExecutablePath;
};

class ParallelConfig
{
public:
    explicit ParallelConfig(CommunicationType commType = CommunicationType::kMPI,
        CommunicationMode commMode = CommunicationMode::kLEADER,
        std::optional<std::vector<SizeType32>> deviceIds = std::nullopt,
        std::optional<std::vector<SizeType32>> participantIds = std::nullopt,
        std::optional<OrchestratorConfig> const& orchestratorConfig = std::nullopt);

    [[nodiscard]] CommunicationMode getCommunicationMode() const;
    [[nodiscard]] std::optional<std::vector<SizeType32>> getDeviceIds() const;
    [[nodiscard]] std::optional<std::vector<SizeType32>> getParticipantIds() const;
    [[nodiscard]] std::optional<OrchestratorConfig> getOrchestratorConfig() const;

    void setCommunicationMode(CommunicationMode mode);
    void setDeviceIds(std::vector<SizeType32> const& deviceIds);
    void setParticipantIds(std::vector<SizeType32> const& participantIds);
    void setOrchestratorConfig(OrchestratorConfig const& orchestratorConfig);

private:
    CommunicationType mCommType;
    CommunicationMode mCommMode;
    std::optional<std::vector<SizeType32>> mDeviceIds;
    std::optional<std::vector<SizeType32>> mParticipantIds;
    std::optional<OrchestratorConfig> mOrchestratorConfig;
};

// ---- LoRA: sizes of the executor's adapter caches (PeftCacheManager) ----
class PeftCacheConfig
{
public:
    static constexpr SizeType32 kDefaultOptimalAdapterSize = 8;
    static constexpr SizeType32 kDefaultMaxAdapterSize = 64;
    static constexpr SizeType32 kDefaultMaxPagesPerBlockHost = 24;
    static constexpr SizeType32 kDefaultMaxPagesPerBlockDevice = 8;

    explicit PeftCacheConfig(SizeType32 numHostModuleLayer = 0, SizeType32 numDeviceModuleLayer = 0,
        SizeType32 optimalAdapterSize = kDefaultOptimalAdapterSize, SizeType32 maxAdapterSize = kDefaultMaxAdapterSize,
        SizeType32 numPutWorkers = 1, SizeType32 numEnsureWorkers = 1, SizeType32 numCopyStreams = 1,
        SizeType32 maxPagesPerBlockHost = kDefaultMaxPagesPerBlockHost,
        SizeType32 maxPagesPerBlockDevice = kDefaultMaxPagesPerBlockDevice,
        std::optional<float> const& deviceCachePercent = std::nullopt,
        std::optional<size_t> const& hostCacheSize = std::nullopt,
        std::optional<std::string> const& loraPrefetchDir = std::nullopt);

    [[nodiscard]] SizeType32 getNumHostModuleLayer() const;
    [[nodiscard]] SizeType32 getNumDeviceModuleLayer() const;
    [[nodiscard]] SizeType32 getOptimalAdapterSize() const;
    [[nodiscard]] SizeType32 getMaxAdapterSize() const;
    [[nodiscard]] std::optional<FloatType> getDeviceCachePercent() const;
    [[nodiscard]] std::optional<size_t> getHostCacheSize() const;
    [[nodiscard]] std::optional<std::string> getLoraPrefetchDir() const;

private:
    SizeType32 mNumHostModuleLayer;
    SizeType32 mNumDeviceModuleLayer;
    SizeType32 mOptimalAdapterSize;
    SizeType32 mMaxAdapterSize;
    SizeType32 mNumPutWorkers;
    SizeType32 mNumEnsureWorkers;
    SizeType32 mNumCopyStreams;
    SizeType32 mMaxPagesPerBlockHost;
    SizeType32 mMaxPagesPerBlockDevice;
    std::optional<FloatType> mDeviceCachePercent;
    std::optional<size_t> mHostCacheSize;
    std::optional<std::string> mLoraPrefetchDir;
};

/// The executor's decoding: the mode, and the settings of the speculative mode it names.
class DecodingConfig
{
public:
    explicit DecodingConfig(std::optional<DecodingMode> decodingMode = std::nullopt,
        std::optional<LookaheadDecodingConfig> lookaheadDecodingConfig = std::nullopt,
        std::optional<MedusaChoices> medusaChoices = std::nullopt,
        std::optional<EagleConfig> eagleConfig = std::nullopt);

    bool operator==(DecodingConfig const& other) const;

    void setDecodingMode(DecodingMode const&);
    [[nodiscard]] std::optional<DecodingMode> getDecodingMode() const;
    [[nodiscard]] std::optional<LookaheadDecodingConfig> getLookaheadDecodingConfig() const;
    /// At most this many requests decode with lookahead at once (8).
    [[nodiscard]] SizeType32 getLookaheadDecodingMaxNumRequest() const;
    void setMedusaChoices(MedusaChoices const&);
    [[nodiscard]] std::optional<MedusaChoices> getMedusaChoices() const;
    void setEagleConfig(EagleConfig const&);
    [[nodiscard]] std::optional<EagleConfig> getEagleConfig() const;

private:
    std::optional<DecodingMode> mDecodingMode;
    std::optional<LookaheadDecodingConfig> mLookaheadDecodingConfig;
    std::optional<MedusaChoices> mMedusaChoices;
    std::optional<EagleConfig> mEagleConfig;
    static constexpr SizeType32 mLookaheadDecodingMaxNumRequest{8};
};

/// What the executor's grammar backend needs to build token masks: the vocabulary as tokenizer.json spells each
/// token, the tokenizer.json text and the ids that end a guided generation.
class GuidedDecodingConfig
{
public:
    enum class GuidedDecodingBackend
    {
        kXGRAMMAR = 0,
        kLLGUIDANCE = 1,
    };

    explicit GuidedDecodingConfig(GuidedDecodingBackend backend,
        std::optional<std::vector<std::string>> encodedVocab = std::nullopt,
        std::optional<std::string> tokenizerStr = std::nullopt,
        std::optional<std::vector<TokenIdType>> stopTokenIds = std::nullopt);

    bool operator==(GuidedDecodingConfig const& other) const;

    void setBackend(GuidedDecodingBackend const& backend);
    [[nodiscard]] GuidedDecodingBackend getBackend() const;

    void setEncodedVocab(std::vector<std::string> const& encodedVocab);
    [[nodiscard]] std::optional<std::vector<std::string>> getEncodedVocab() const;

    void setTokenizerStr(std::string const& tokenizerStr);
    [[nodiscard]] std::optional<std::string> getTokenizerStr() const;

    void setStopTokenIds(std::vector<TokenIdType> const& stopTokenIds);
    [[nodiscard]] std::optional<std::vector<TokenIdType>> getStopTokenIds() const;

    void validate() const;

private:
    GuidedDecodingBackend mBackend;
    std::optional<std::vector<std::string>> mEncodedVocab;
    std::optional<std::string> mTokenizerStr;
    std::optional<std::vector<TokenIdType>> mStopTokenIds;
};

class ExecutorConfig
{
public:
    static constexpr SizeType32 kDefaultIterStatsMaxIterations = 1000;
    static constexpr SizeType32 kDefaultRequestStatsMaxIterations = 0;

    explicit ExecutorConfig(SizeType32 maxBeamWidth = 1, SchedulerConfig schedulerConfig = SchedulerConfig(),
        KvCacheConfig kvCacheConfig = KvCacheConfig(), bool enableChunkedContext = true, bool normalizeLogProbs = true,
        SizeType32 iterStatsMaxIterations = kDefaultIterStatsMaxIterations,
        SizeType32 requestStatsMaxIterations = kDefaultRequestStatsMaxIterations,
        BatchingType batchingType = BatchingType::kINFLIGHT, std::optional<SizeType32> maxBatchSize = std::nullopt,
        std::optional<SizeType32> maxNumTokens = std::nullopt);

    [[nodiscard]] SizeType32 getMaxBeamWidth() const;
    [[nodiscard]] SchedulerConfig getSchedulerConfig() const;
    [[nodiscard]] KvCacheConfig getKvCacheConfig() const;
    [[nodiscard]] bool getEnableChunkedContext() const;
    [[nodiscard]] bool getNormalizeLogProbs() const;
    [[nodiscard]] SizeType32 getIterStatsMaxIterations() const;
    [[nodiscard]] SizeType32 getRequestStatsMaxIterations() const;
    [[nodiscard]] BatchingType getBatchingType() const;
    [[nodiscard]] std::optional<SizeType32> getMaxBatchSize() const;
    [[nodiscard]] std::optional<SizeType32> getMaxNumTokens() const;
    [[nodiscard]] std::optional<ParallelConfig> getParallelConfig() const;
    [[nodiscard]] float getGpuWeightsPercent() const;
    [[nodiscard]] std::optional<SizeType32> getMaxQueueSize() const;
    [[nodiscard]] ExtendedRuntimePerfKnobConfig getExtendedRuntimePerfKnobConfig() const;
    [[nodiscard]] bool getGatherGenerationLogits() const;
    [[nodiscard]] std::optional<DecodingConfig> getDecodingConfig() const;

    void setMaxBeamWidth(SizeType32 maxBeamWidth);
    void setMaxBatchSize(SizeType32 maxBatchSize);
    void setMaxNumTokens(SizeType32 maxNumTokens);
    void setSchedulerConfig(SchedulerConfig const& schedulerConfig);
    void setKvCacheConfig(KvCacheConfig const& kvCacheConfig);
    void setEnableChunkedContext(bool enableChunkedContext);
    void setNormalizeLogProbs(bool normalizeLogProbs);
    void setIterStatsMaxIterations(SizeType32 iterStatsMaxIterations);
    void setRequestStatsMaxIterations(SizeType32 requestStatsMaxIterations);
    void setBatchingType(BatchingType batchingType);
    void setParallelConfig(ParallelConfig const& parallelConfig);
    void setGpuWeightsPercent(float const& gpuWeightsPercent);
    void setMaxQueueSize(std::optional<SizeType32> const& maxQueueSize);
    void setExtendedRuntimePerfKnobConfig(ExtendedRuntimePerfKnobConfig const& extendedRuntimePerfKnobConfig);
    void setGatherGenerationLogits(bool gatherGenerationLogits);
    // ---- LoRA ----
    [[nodiscard]] std::optional<PeftCacheConfig> getPeftCacheConfig() const;
    void setPeftCacheConfig(PeftCacheConfig const& peftCacheConfig);
    void setDecodingConfig(DecodingConfig const& decodingConfig);
    // Guided decoding
    void setGuidedDecodingConfig(GuidedDecodingConfig const& guidedDecodingConfig);
    [[nodiscard]] std::optional<GuidedDecodingConfig> getGuidedDecodingConfig() const;

private:
    SizeType32 mMaxBeamWidth;
    SchedulerConfig mSchedulerConfig;
    KvCacheConfig mKvCacheConfig;
    bool mEnableChunkedContext;
    bool mNormalizeLogProbs;
    SizeType32 mIterStatsMaxIterations;
    SizeType32 mRequestStatsMaxIterations;
    BatchingType mBatchingType;
    std::optional<SizeType32> mMaxBatchSize;
    std::optional<SizeType32> mMaxNumTokens;
    std::optional<ParallelConfig> mParallelConfig;
    float mGpuWeightsPercent{1.f};
    std::optional<SizeType32> mMaxQueueSize;
    ExtendedRuntimePerfKnobConfig mExtendedRuntimePerfKnobConfig;
    bool mGatherGenerationLogits{false};
    std::optional<PeftCacheConfig> mPeftCacheConfig;
    std::optional<DecodingConfig> mDecodingConfig;
    // Guided decoding
    std::optional<GuidedDecodingConfig> mGuidedDecodingConfig;
};

// KV-cache events (KvCacheConfig::eventBufferMaxSize > 0): what the cache stored, removed or changed, in order.

/// The cache was created with these many blocks per cache level (0: GPU, 1: host).
struct KVCacheCreatedData
{
    std::vector<SizeType32> numBlocksPerCacheLevel;
};

/// One block that became reusable: its hash (chained with its parent's), its tokens and where it lives.
struct KVCacheStoredBlockData
{
    KVCacheStoredBlockData(IdType blockHash, tensorrt_llm::runtime::VecUniqueTokens tokens,
        std::optional<tensorrt_llm::runtime::LoraTaskIdType> loraId, SizeType32 cacheLevel, SizeType32 priority)
        : blockHash{blockHash}
        , tokens{std::move(tokens)}
        , loraId{loraId}
        , cacheLevel{cacheLevel}
        , priority{priority}
    {
    }

    IdType blockHash;
    tensorrt_llm::runtime::VecUniqueTokens tokens;
    std::optional<tensorrt_llm::runtime::LoraTaskIdType> loraId;
    SizeType32 cacheLevel;
    SizeType32 priority;
};

/// A run of stored blocks: each block's parent is the block before it, the first one's is `parentHash`
/// (none: the first block of a sequence).
struct KVCacheStoredData
{
    std::optional<IdType> parentHash;
    std::vector<KVCacheStoredBlockData> blocks;
};

/// Blocks that are no longer reusable (evicted).
struct KVCacheRemovedData
{
    std::vector<IdType> blockHashes;
};

template <typename T>
struct KVCacheEventDiff
{
    T oldValue;
    T newValue;
};

/// A stored block moved between cache levels or changed priority.
struct KVCacheUpdatedData
{
    explicit KVCacheUpdatedData(IdType blockHash)
        : blockHash{blockHash}
    {
    }

    explicit KVCacheUpdatedData(IdType blockHash, std::optional<KVCacheEventDiff<SizeType32>> cacheLevel,
        std::optional<KVCacheEventDiff<SizeType32>> priority)
        : blockHash{blockHash}
        , cacheLevel{cacheLevel}
        , priority{priority}
    {
    }

    KVCacheUpdatedData& cacheLevelUpdated(SizeType32 oldValue, SizeType32 newValue)
    {
        cacheLevel = KVCacheEventDiff<SizeType32>{oldValue, newValue};
        return *this;
    }

    KVCacheUpdatedData& priorityUpdated(SizeType32 oldValue, SizeType32 newValue)
    {
        priority = KVCacheEventDiff<SizeType32>{oldValue, newValue};
        return *this;
    }

    IdType blockHash;
    std::optional<KVCacheEventDiff<SizeType32>> cacheLevel = std::nullopt;
    std::optional<KVCacheEventDiff<SizeType32>> priority = std::nullopt;
};

using KVCacheEventData = std::variant<KVCacheCreatedData, KVCacheStoredData, KVCacheRemovedData, KVCacheUpdatedData>;

struct KVCacheEvent
{
    KVCacheEvent(IdType eventId, KVCacheEventData data, SizeType32 windowSize,
        std::optional<SizeType32> attentionDpRank = std::nullopt);

    /// Consecutive per executor, from 0 (the Created event); a gap means the bounded buffer dropped events.
    IdType eventId;
    KVCacheEventData data;
    /// The attention window of the cache the event is about.
    SizeType32 windowSize;
    std::optional<SizeType32> attentionDpRank;
};

/// Reads the KV-cache events an executor records.
class KVCacheEventManager
{
public:
    KVCacheEventManager(
        std::shared_ptr<tensorrt_llm::batch_manager::kv_cache_manager::BaseKVCacheManager> kvCacheManager);

    /// Returns and clears the buffered events. Waits up to `timeout` for one when there is none (nullopt: until
    /// one arrives or the executor shuts down).
    std::deque<KVCacheEvent> getLatestEvents(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

private:
    std::shared_ptr<tensorrt_llm::batch_manager::kv_cache_manager::BaseKVCacheManager> kvCacheManager;
};

class Executor
{
public:
    /// Reads `modelPath/config.json` (and, for the simulator, `modelPath/simulation.json`).
    Executor(std::filesystem::path const& modelPath, ModelType modelType, ExecutorConfig const& executorConfig);

    ~Executor();
    Executor(Executor const& executor) = delete;
    Executor& operator=(Executor const& executor) = delete;
    Executor(Executor&&) = default;
    Executor& operator=(Executor&&) = default;

    [[nodiscard]] IdType enqueueRequest(Request const& request);
    [[nodiscard]] std::vector<IdType> enqueueRequests(std::vector<Request> const& requests);
    [[nodiscard]] std::vector<Response> awaitResponses(
        std::optional<std::chrono::milliseconds> const& timeout = std::nullopt);
    [[nodiscard]] std::vector<Response> awaitResponses(
        IdType const& requestId, std::optional<std::chrono::milliseconds> const& timeout = std::nullopt);
    [[nodiscard]] SizeType32 getNumResponsesReady(std::optional<IdType> const& requestId = std::nullopt) const;
    void cancelRequest(IdType requestId);
    void shutdown();
    std::deque<IterationStats> getLatestIterationStats();
    std::deque<RequestStatsPerIteration> getLatestRequestStats();
    [[nodiscard]] bool canEnqueueRequests() const;
    [[nodiscard]] bool isParticipant() const;
    /// The reader of KV-cache events. Works after shutdown too (it then returns what is left).
    std::optional<std::shared_ptr<KVCacheEventManager>> getKVCacheEventManager() const;

private:
    class Impl;
    std::unique_ptr<Impl> mImpl;
};

} // namespace tensorrt_llm::executor
