// The simulated executor's value classes: SamplingConfig, OutputConfig, Request, Response and the
// ExecutorConfig family. They hold what they are given; SamplingConfig rejects out-of-range values by throwing,
// as TensorRT-LLM's does. Request never throws: the executor reports an empty prompt or maxTokens < 1 as an
// error Response (TensorRT-LLM's Request constructor throws for those two instead).
#include "tensorrt_llm/executor/executor.h"

#include <stdexcept>
#include <utility>

namespace tensorrt_llm::executor
{

namespace
{

/// TensorRT-LLM's kernels support at most this beam width.
constexpr SizeType32 kMaxBeamWidthSupported = 1024;

void check(bool condition, char const* what)
{
    if (!condition)
    {
        throw std::runtime_error(std::string("Assertion failed: ") + what);
    }
}

SizeType32 checkBeamWidth(SizeType32 beamWidth)
{
    check(beamWidth > 0 && beamWidth <= kMaxBeamWidthSupported, "beamWidth > 0 && beamWidth <= kMaxBeamWidth (1024)");
    return beamWidth;
}

template <typename T>
std::optional<T> const& checkAtLeast(std::optional<T> const& value, T min, char const* what)
{
    check(!value || *value >= min, what);
    return value;
}

std::optional<FloatType> const& checkUnitInterval(
    std::optional<FloatType> const& value, bool allowZero, char const* what)
{
    check(!value || ((allowZero ? *value >= 0.f : *value > 0.f) && *value <= 1.f), what);
    return value;
}

std::optional<SizeType32> const& checkNumReturnSequences(
    std::optional<SizeType32> const& numReturnSequences, SizeType32 beamWidth)
{
    check(!numReturnSequences || *numReturnSequences > 0, "numReturnSequences > 0");
    check(!numReturnSequences || beamWidth == 1 || *numReturnSequences <= beamWidth,
        "beamWidth == 1 || numReturnSequences <= beamWidth");
    return numReturnSequences;
}

} // namespace

// ---------------------------------------------------------------------------------------------------------------
// SamplingConfig

SamplingConfig::SamplingConfig(SizeType32 beamWidth, std::optional<SizeType32> const& topK,
    std::optional<FloatType> const& topP, std::optional<FloatType> const& topPMin,
    std::optional<TokenIdType> const& topPResetIds, std::optional<FloatType> const& topPDecay,
    std::optional<RandomSeedType> const& seed, std::optional<FloatType> const& temperature,
    std::optional<SizeType32> const& minTokens)
    : mBeamWidth(checkBeamWidth(beamWidth))
    , mTopK(checkAtLeast(topK, 0, "topK >= 0"))
    , mTopP(checkUnitInterval(topP, false, "topP > 0 && topP <= 1"))
    , mTopPMin(checkUnitInterval(topPMin, true, "topPMin >= 0 && topPMin <= 1"))
    , mTopPResetIds(checkAtLeast(topPResetIds, 0, "topPResetIds >= 0"))
    , mTopPDecay(checkUnitInterval(topPDecay, false, "topPDecay > 0 && topPDecay <= 1"))
    , mSeed(seed)
    , mTemperature(checkAtLeast(temperature, 0.f, "temperature >= 0"))
    , mMinTokens(checkAtLeast(minTokens, 0, "minTokens >= 0"))
{
}

SizeType32 SamplingConfig::getBeamWidth() const
{
    return mBeamWidth;
}

SizeType32 SamplingConfig::getNumReturnBeams() const
{
    return (mNumReturnSequences && mBeamWidth > 1) ? std::min(*mNumReturnSequences, mBeamWidth) : mBeamWidth;
}

std::optional<SizeType32> SamplingConfig::getTopK() const
{
    return mTopK;
}

std::optional<FloatType> SamplingConfig::getTopP() const
{
    return mTopP;
}

std::optional<RandomSeedType> SamplingConfig::getSeed() const
{
    return mSeed;
}

std::optional<FloatType> SamplingConfig::getTemperature() const
{
    return mTemperature;
}

std::optional<SizeType32> SamplingConfig::getMinTokens() const
{
    return mMinTokens;
}

std::optional<SizeType32> SamplingConfig::getNumReturnSequences() const
{
    return mNumReturnSequences;
}

void SamplingConfig::setBeamWidth(SizeType32 beamWidth)
{
    mBeamWidth = checkBeamWidth(beamWidth);
}

void SamplingConfig::setTopK(std::optional<SizeType32> const& topK)
{
    mTopK = checkAtLeast(topK, 0, "topK >= 0");
}

void SamplingConfig::setTopP(std::optional<FloatType> const& topP)
{
    mTopP = checkUnitInterval(topP, false, "topP > 0 && topP <= 1");
}

void SamplingConfig::setTopPMin(std::optional<FloatType> const& topPMin)
{
    mTopPMin = checkUnitInterval(topPMin, true, "topPMin >= 0 && topPMin <= 1");
}

void SamplingConfig::setTopPResetIds(std::optional<TokenIdType> const& topPResetIds)
{
    mTopPResetIds = checkAtLeast(topPResetIds, 0, "topPResetIds >= 0");
}

void SamplingConfig::setTopPDecay(std::optional<FloatType> const& topPDecay)
{
    mTopPDecay = checkUnitInterval(topPDecay, false, "topPDecay > 0 && topPDecay <= 1");
}

void SamplingConfig::setSeed(std::optional<RandomSeedType> const& seed)
{
    mSeed = seed;
}

void SamplingConfig::setTemperature(std::optional<FloatType> const& temperature)
{
    mTemperature = checkAtLeast(temperature, 0.f, "temperature >= 0");
}

void SamplingConfig::setMinTokens(std::optional<SizeType32> const& minTokens)
{
    mMinTokens = checkAtLeast(minTokens, 0, "minTokens >= 0");
}

void SamplingConfig::setBeamSearchDiversityRate(std::optional<FloatType> const& beamSearchDiversityRate)
{
    mBeamSearchDiversityRate = checkAtLeast(beamSearchDiversityRate, 0.f, "beamSearchDiversityRate >= 0");
}

void SamplingConfig::setRepetitionPenalty(std::optional<FloatType> const& repetitionPenalty)
{
    check(!repetitionPenalty || *repetitionPenalty > 0.f, "repetitionPenalty > 0");
    mRepetitionPenalty = repetitionPenalty;
}

void SamplingConfig::setPresencePenalty(std::optional<FloatType> const& presencePenalty)
{
    mPresencePenalty = presencePenalty;
}

void SamplingConfig::setFrequencyPenalty(std::optional<FloatType> const& frequencyPenalty)
{
    mFrequencyPenalty = frequencyPenalty;
}

void SamplingConfig::setLengthPenalty(std::optional<FloatType> const& lengthPenalty)
{
    mLengthPenalty = lengthPenalty;
}

void SamplingConfig::setEarlyStopping(std::optional<SizeType32> const& earlyStopping)
{
    mEarlyStopping = earlyStopping;
}

void SamplingConfig::setNoRepeatNgramSize(std::optional<SizeType32> const& noRepeatNgramSize)
{
    mNoRepeatNgramSize = checkAtLeast(noRepeatNgramSize, 0, "noRepeatNgramSize >= 0");
}

void SamplingConfig::setNumReturnSequences(std::optional<SizeType32> const& numReturnSequences)
{
    mNumReturnSequences = checkNumReturnSequences(numReturnSequences, mBeamWidth);
}

void SamplingConfig::setMinP(std::optional<FloatType> const& minP)
{
    mMinP = checkUnitInterval(minP, true, "minP >= 0 && minP <= 1");
}

// ---------------------------------------------------------------------------------------------------------------
// OutputConfig

OutputConfig::OutputConfig(
    bool logProbs, bool contextLogits, bool generationLogits, bool excludeInput, bool encoderOutput, bool perfMetrics)
    : returnLogProbs(logProbs)
    , returnContextLogits(contextLogits)
    , returnGenerationLogits(generationLogits)
    , excludeInputFromOutput(excludeInput)
    , returnEncoderOutput(encoderOutput)
    , returnPerfMetrics(perfMetrics)
{
}

// ---------------------------------------------------------------------------------------------------------------
// Request

Request::Request(VecTokens inputTokenIds, SizeType32 maxTokens, bool streaming, SamplingConfig const& samplingConfig,
    OutputConfig const& outputConfig, std::optional<SizeType32> const& endId, std::optional<SizeType32> const& padId)
    : mInputTokenIds(std::move(inputTokenIds))
    , mMaxTokens(maxTokens)
    , mStreaming(streaming)
    , mSamplingConfig(samplingConfig)
    , mOutputConfig(outputConfig)
    , mEndId(endId)
    , mPadId(padId)
{
}

VecTokens Request::getInputTokenIds() const
{
    return mInputTokenIds;
}

SizeType32 Request::getMaxTokens() const
{
    return mMaxTokens;
}

bool Request::getStreaming() const
{
    return mStreaming;
}

SamplingConfig Request::getSamplingConfig() const
{
    return mSamplingConfig;
}

OutputConfig Request::getOutputConfig() const
{
    return mOutputConfig;
}

std::optional<SizeType32> Request::getEndId() const
{
    return mEndId;
}

std::optional<SizeType32> Request::getPadId() const
{
    return mPadId;
}

std::optional<std::list<VecTokens>> Request::getBadWords() const
{
    return mBadWords;
}

std::optional<std::list<VecTokens>> Request::getStopWords() const
{
    return mStopWords;
}

std::optional<IdType> Request::getClientId() const
{
    return mClientId;
}

PriorityType Request::getPriority() const
{
    return mPriority;
}

bool Request::getReturnAllGeneratedTokens() const
{
    return mReturnAllGeneratedTokens;
}

std::optional<MillisecondsType> Request::getAllottedTimeMs() const
{
    return mAllottedTimeMs;
}

void Request::setStreaming(bool streaming)
{
    mStreaming = streaming;
}

void Request::setSamplingConfig(SamplingConfig const& config)
{
    mSamplingConfig = config;
}

void Request::setOutputConfig(OutputConfig const& outputConfig)
{
    mOutputConfig = outputConfig;
}

void Request::setEndId(SizeType32 endId)
{
    mEndId = endId;
}

void Request::setPadId(SizeType32 padId)
{
    mPadId = padId;
}

void Request::setBadWords(std::list<VecTokens> const& badWords)
{
    mBadWords = badWords;
}

void Request::setStopWords(std::list<VecTokens> const& stopWords)
{
    mStopWords = stopWords;
}

void Request::setClientId(IdType clientId)
{
    mClientId = clientId;
}

void Request::setPriority(PriorityType priority)
{
    mPriority = priority;
}

void Request::setReturnAllGeneratedTokens(bool returnAllGeneratedTokens)
{
    mReturnAllGeneratedTokens = returnAllGeneratedTokens;
}

void Request::setAllottedTimeMs(MillisecondsType allottedTimeMs)
{
    mAllottedTimeMs = allottedTimeMs;
}

// ---------------------------------------------------------------------------------------------------------------
// Response

Response::Response(IdType requestId, std::string errorMsg, std::optional<IdType> clientId)
    : mRequestId(requestId)
    , mClientId(clientId)
    , mErrorMsg(std::move(errorMsg))
{
    check(!mErrorMsg->empty(), "Error message should not be empty");
}

Response::Response(IdType requestId, Result Result, std::optional<IdType> clientId)
    : mRequestId(requestId)
    , mClientId(clientId)
    , mResult(std::move(Result))
{
}

IdType Response::getRequestId() const
{
    return mRequestId;
}

std::optional<IdType> Response::getClientId() const
{
    return mClientId;
}

bool Response::hasError() const
{
    return mErrorMsg.has_value();
}

std::string const& Response::getErrorMsg() const
{
    if (!mErrorMsg)
    {
        throw std::runtime_error("Cannot get the error message for a response without error");
    }
    return *mErrorMsg;
}

Result const& Response::getResult() const
{
    if (!mResult)
    {
        throw std::runtime_error("Cannot get the result for a response with an error: " + *mErrorMsg);
    }
    return *mResult;
}

// ---------------------------------------------------------------------------------------------------------------
// SchedulerConfig

SchedulerConfig::SchedulerConfig(
    CapacitySchedulerPolicy capacitySchedulerPolicy, std::optional<ContextChunkingPolicy> contextChunkingPolicy)
    : mCapacitySchedulerPolicy(capacitySchedulerPolicy)
    , mContextChunkingPolicy(contextChunkingPolicy)
{
}

CapacitySchedulerPolicy SchedulerConfig::getCapacitySchedulerPolicy() const
{
    return mCapacitySchedulerPolicy;
}

std::optional<ContextChunkingPolicy> SchedulerConfig::getContextChunkingPolicy() const
{
    return mContextChunkingPolicy;
}

// ---------------------------------------------------------------------------------------------------------------
// KvCacheConfig

KvCacheConfig::KvCacheConfig(bool enableBlockReuse, std::optional<SizeType32> const& maxTokens)
    : mEnableBlockReuse(enableBlockReuse)
    , mMaxTokens(checkAtLeast(maxTokens, 0, "maxTokens >= 0"))
{
}

bool KvCacheConfig::getEnableBlockReuse() const
{
    return mEnableBlockReuse;
}

std::optional<SizeType32> KvCacheConfig::getMaxTokens() const
{
    return mMaxTokens;
}

std::optional<FloatType> KvCacheConfig::getFreeGpuMemoryFraction() const
{
    return mFreeGpuMemoryFraction;
}

std::optional<std::size_t> KvCacheConfig::getHostCacheSize() const
{
    return mHostCacheSize;
}

std::size_t KvCacheConfig::getEventBufferMaxSize() const
{
    return mEventBufferMaxSize;
}

bool KvCacheConfig::getEnablePartialReuse() const
{
    return mEnablePartialReuse;
}

void KvCacheConfig::setEnableBlockReuse(bool enableBlockReuse)
{
    mEnableBlockReuse = enableBlockReuse;
}

void KvCacheConfig::setMaxTokens(std::optional<SizeType32> maxTokens)
{
    mMaxTokens = checkAtLeast(maxTokens, 0, "maxTokens >= 0");
}

void KvCacheConfig::setFreeGpuMemoryFraction(FloatType freeGpuMemoryFraction)
{
    check(freeGpuMemoryFraction >= 0.f && freeGpuMemoryFraction <= 1.f,
        "freeGpuMemoryFraction >= 0 && freeGpuMemoryFraction <= 1");
    mFreeGpuMemoryFraction = freeGpuMemoryFraction;
}

void KvCacheConfig::setHostCacheSize(std::size_t hostCacheSize)
{
    mHostCacheSize = hostCacheSize;
}

void KvCacheConfig::setEventBufferMaxSize(std::size_t eventBufferMaxSize)
{
    mEventBufferMaxSize = eventBufferMaxSize;
}

void KvCacheConfig::setEnablePartialReuse(bool enablePartialReuse)
{
    mEnablePartialReuse = enablePartialReuse;
}

bool KvCacheConfig::getCopyOnPartialReuse() const
{
    return mCopyOnPartialReuse;
}

void KvCacheConfig::setCopyOnPartialReuse(bool copyOnPartialReuse)
{
    mCopyOnPartialReuse = copyOnPartialReuse;
}

// ---------------------------------------------------------------------------------------------------------------
// ExtendedRuntimePerfKnobConfig

ExtendedRuntimePerfKnobConfig::ExtendedRuntimePerfKnobConfig(
    bool multiBlockMode, bool enableContextFMHAFP32Acc, bool cudaGraphMode, SizeType32 cudaGraphCacheSize)
    : mMultiBlockMode(multiBlockMode)
    , mEnableContextFMHAFP32Acc(enableContextFMHAFP32Acc)
    , mCudaGraphMode(cudaGraphMode)
    , mCudaGraphCacheSize(cudaGraphCacheSize)
{
}

bool ExtendedRuntimePerfKnobConfig::getMultiBlockMode() const
{
    return mMultiBlockMode;
}

bool ExtendedRuntimePerfKnobConfig::getEnableContextFMHAFP32Acc() const
{
    return mEnableContextFMHAFP32Acc;
}

bool ExtendedRuntimePerfKnobConfig::getCudaGraphMode() const
{
    return mCudaGraphMode;
}

SizeType32 ExtendedRuntimePerfKnobConfig::getCudaGraphCacheSize() const
{
    return mCudaGraphCacheSize;
}

void ExtendedRuntimePerfKnobConfig::setMultiBlockMode(bool multiBlockMode)
{
    mMultiBlockMode = multiBlockMode;
}

void ExtendedRuntimePerfKnobConfig::setEnableContextFMHAFP32Acc(bool enableContextFMHAFP32Acc)
{
    mEnableContextFMHAFP32Acc = enableContextFMHAFP32Acc;
}

void ExtendedRuntimePerfKnobConfig::setCudaGraphMode(bool cudaGraphMode)
{
    mCudaGraphMode = cudaGraphMode;
}

void ExtendedRuntimePerfKnobConfig::setCudaGraphCacheSize(SizeType32 cacheSize)
{
    mCudaGraphCacheSize = cacheSize;
}

// ---------------------------------------------------------------------------------------------------------------
// OrchestratorConfig

OrchestratorConfig::OrchestratorConfig(bool isOrchestrator, std::string workerExecutablePath)
    : mIsOrchestrator(isOrchestrator)
    , mWorkerExecutablePath(std::move(workerExecutablePath))
{
}

bool OrchestratorConfig::getIsOrchestrator() const
{
    return mIsOrchestrator;
}

std::string OrchestratorConfig::getWorkerExecutablePath() const
{
    return mWorkerExecutablePath;
}

void OrchestratorConfig::setIsOrchestrator(bool isOrchestrator)
{
    mIsOrchestrator = isOrchestrator;
}

void OrchestratorConfig::setWorkerExecutablePath(std::string const& workerExecutablePath)
{
    mWorkerExecutablePath = workerExecutablePath;
}

// ---------------------------------------------------------------------------------------------------------------
// ParallelConfig

ParallelConfig::ParallelConfig(CommunicationType commType, CommunicationMode commMode,
    std::optional<std::vector<SizeType32>> deviceIds, std::optional<std::vector<SizeType32>> participantIds,
    std::optional<OrchestratorConfig> const& orchestratorConfig)
    : mCommType(commType)
    , mCommMode(commMode)
    , mDeviceIds(std::move(deviceIds))
    , mParticipantIds(std::move(participantIds))
    , mOrchestratorConfig(orchestratorConfig)
{
}

CommunicationMode ParallelConfig::getCommunicationMode() const
{
    return mCommMode;
}

std::optional<std::vector<SizeType32>> ParallelConfig::getDeviceIds() const
{
    return mDeviceIds;
}

std::optional<std::vector<SizeType32>> ParallelConfig::getParticipantIds() const
{
    return mParticipantIds;
}

std::optional<OrchestratorConfig> ParallelConfig::getOrchestratorConfig() const
{
    return mOrchestratorConfig;
}

void ParallelConfig::setCommunicationMode(CommunicationMode mode)
{
    mCommMode = mode;
}

void ParallelConfig::setDeviceIds(std::vector<SizeType32> const& deviceIds)
{
    mDeviceIds = deviceIds;
}

void ParallelConfig::setParticipantIds(std::vector<SizeType32> const& participantIds)
{
    mParticipantIds = participantIds;
}

void ParallelConfig::setOrchestratorConfig(OrchestratorConfig const& orchestratorConfig)
{
    mOrchestratorConfig = orchestratorConfig;
}

// ---------------------------------------------------------------------------------------------------------------
// ExecutorConfig

ExecutorConfig::ExecutorConfig(SizeType32 maxBeamWidth, SchedulerConfig schedulerConfig, KvCacheConfig kvCacheConfig,
    bool enableChunkedContext, bool normalizeLogProbs, SizeType32 iterStatsMaxIterations,
    SizeType32 requestStatsMaxIterations, BatchingType batchingType, std::optional<SizeType32> maxBatchSize,
    std::optional<SizeType32> maxNumTokens)
    : mMaxBeamWidth(maxBeamWidth)
    , mSchedulerConfig(std::move(schedulerConfig))
    , mKvCacheConfig(std::move(kvCacheConfig))
    , mEnableChunkedContext(enableChunkedContext)
    , mNormalizeLogProbs(normalizeLogProbs)
    , mIterStatsMaxIterations(iterStatsMaxIterations)
    , mRequestStatsMaxIterations(requestStatsMaxIterations)
    , mBatchingType(batchingType)
    , mMaxBatchSize(maxBatchSize)
    , mMaxNumTokens(maxNumTokens)
{
}

SizeType32 ExecutorConfig::getMaxBeamWidth() const
{
    return mMaxBeamWidth;
}

SchedulerConfig ExecutorConfig::getSchedulerConfig() const
{
    return mSchedulerConfig;
}

KvCacheConfig ExecutorConfig::getKvCacheConfig() const
{
    return mKvCacheConfig;
}

bool ExecutorConfig::getEnableChunkedContext() const
{
    return mEnableChunkedContext;
}

bool ExecutorConfig::getNormalizeLogProbs() const
{
    return mNormalizeLogProbs;
}

SizeType32 ExecutorConfig::getIterStatsMaxIterations() const
{
    return mIterStatsMaxIterations;
}

SizeType32 ExecutorConfig::getRequestStatsMaxIterations() const
{
    return mRequestStatsMaxIterations;
}

BatchingType ExecutorConfig::getBatchingType() const
{
    return mBatchingType;
}

std::optional<SizeType32> ExecutorConfig::getMaxBatchSize() const
{
    return mMaxBatchSize;
}

std::optional<SizeType32> ExecutorConfig::getMaxNumTokens() const
{
    return mMaxNumTokens;
}

std::optional<ParallelConfig> ExecutorConfig::getParallelConfig() const
{
    return mParallelConfig;
}

float ExecutorConfig::getGpuWeightsPercent() const
{
    return mGpuWeightsPercent;
}

std::optional<SizeType32> ExecutorConfig::getMaxQueueSize() const
{
    return mMaxQueueSize;
}

ExtendedRuntimePerfKnobConfig ExecutorConfig::getExtendedRuntimePerfKnobConfig() const
{
    return mExtendedRuntimePerfKnobConfig;
}

bool ExecutorConfig::getGatherGenerationLogits() const
{
    return mGatherGenerationLogits;
}

void ExecutorConfig::setMaxBeamWidth(SizeType32 maxBeamWidth)
{
    mMaxBeamWidth = maxBeamWidth;
}

void ExecutorConfig::setMaxBatchSize(SizeType32 maxBatchSize)
{
    mMaxBatchSize = maxBatchSize;
}

void ExecutorConfig::setMaxNumTokens(SizeType32 maxNumTokens)
{
    mMaxNumTokens = maxNumTokens;
}

void ExecutorConfig::setSchedulerConfig(SchedulerConfig const& schedulerConfig)
{
    mSchedulerConfig = schedulerConfig;
}

void ExecutorConfig::setKvCacheConfig(KvCacheConfig const& kvCacheConfig)
{
    mKvCacheConfig = kvCacheConfig;
}

void ExecutorConfig::setEnableChunkedContext(bool enableChunkedContext)
{
    mEnableChunkedContext = enableChunkedContext;
}

void ExecutorConfig::setNormalizeLogProbs(bool normalizeLogProbs)
{
    mNormalizeLogProbs = normalizeLogProbs;
}

void ExecutorConfig::setIterStatsMaxIterations(SizeType32 iterStatsMaxIterations)
{
    mIterStatsMaxIterations = iterStatsMaxIterations;
}

void ExecutorConfig::setRequestStatsMaxIterations(SizeType32 requestStatsMaxIterations)
{
    mRequestStatsMaxIterations = requestStatsMaxIterations;
}

void ExecutorConfig::setBatchingType(BatchingType batchingType)
{
    mBatchingType = batchingType;
}

void ExecutorConfig::setParallelConfig(ParallelConfig const& parallelConfig)
{
    mParallelConfig = parallelConfig;
}

void ExecutorConfig::setGpuWeightsPercent(float const& gpuWeightsPercent)
{
    mGpuWeightsPercent = gpuWeightsPercent;
}

void ExecutorConfig::setMaxQueueSize(std::optional<SizeType32> const& maxQueueSize)
{
    mMaxQueueSize = maxQueueSize;
}

void ExecutorConfig::setExtendedRuntimePerfKnobConfig(
    ExtendedRuntimePerfKnobConfig const& extendedRuntimePerfKnobConfig)
{
    mExtendedRuntimePerfKnobConfig = extendedRuntimePerfKnobConfig;
}

void ExecutorConfig::setGatherGenerationLogits(bool gatherGenerationLogits)
{
    mGatherGenerationLogits = gatherGenerationLogits;
}

} // namespace tensorrt_llm::executor
