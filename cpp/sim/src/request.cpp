// The simulated OutputConfig and Request. Request never throws: the executor reports an empty prompt or
// maxTokens < 1 as an error Response (TensorRT-LLM's Request constructor throws for those two instead).
#include "tensorrt_llm/executor/executor.h"

#include <utility>

namespace tensorrt_llm::executor
{

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

} // namespace tensorrt_llm::executor
