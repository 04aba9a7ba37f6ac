// Simulator-private part of the simulated `tensorrt_llm/executor/executor.h`: the executor configs (scheduler, KV
// cache, runtime knobs, parallelism, PEFT cache, decoding, guided decoding, ExecutorConfig). TensorRT-LLM declares
// these in executor.h itself; the simulator keeps them here only to keep its files small. Include
// `tensorrt_llm/executor/executor.h`, never this file. Same names and signatures as the real 1.1/1.2 classes,
// nothing they lack.
#pragma once

#include "tensorrt_llm/executor/types.h"
#include "trtllm_sim/executor/disaggregated.h"
#include "trtllm_sim/executor/request_configs.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tensorrt_llm::executor
{

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
    // Disaggregated serving
    [[nodiscard]] std::optional<CacheTransceiverConfig> getCacheTransceiverConfig() const;
    void setCacheTransceiverConfig(CacheTransceiverConfig const& cacheTransceiverConfig);

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
    // Disaggregated serving
    std::optional<CacheTransceiverConfig> mCacheTransceiverConfig;
};

} // namespace tensorrt_llm::executor
