// Simulated executor: the part of TensorRT-LLM's `tensorrt_llm/executor/executor.h` (1.1/1.2) that the
// trtllm shim uses, with the same class names, method names and signatures, so that the shim compiles
// unchanged against the real headers or these. Written for this project from the documented API; it
// declares nothing the real header lacks (the real classes have more members, which the shim does not
// use). Private members are this simulator's own.
//
// The real header declares all of it in this one file. To keep files small, the simulator keeps three
// groups of its classes in sim-private headers included here (never included on their own by the shim):
// the per-request configs, the executor configs and the KV-cache events. This file keeps the request,
// the response and the executor.
#pragma once

#include "tensorrt_llm/executor/tensor.h"
#include "tensorrt_llm/executor/types.h"
#include "tensorrt_llm/runtime/common.h"
#include "trtllm_sim/executor/disaggregated.h"
#include "trtllm_sim/executor/executor_config.h"
#include "trtllm_sim/executor/kv_cache_events.h"
#include "trtllm_sim/executor/request_configs.h"

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

namespace tensorrt_llm::executor
{

/// Version of the library. The simulator reports its own version string.
char const* version() noexcept;

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
    // Disaggregated serving
    [[nodiscard]] std::optional<ContextPhaseParams> const& getContextPhaseParams() const;
    [[nodiscard]] RequestType getRequestType() const;
    void setRequestType(RequestType const& requestType);
    void setContextPhaseParams(ContextPhaseParams contextPhaseParams);

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
    // Disaggregated serving
    RequestType mRequestType{RequestType::REQUEST_TYPE_CONTEXT_AND_GENERATION};
    std::optional<ContextPhaseParams> mContextPhaseParams;
};

struct Result
{
    bool isFinal;
    BeamTokens outputTokenIds;
    std::optional<VecLogProbs> cumLogProbs;
    std::optional<std::vector<VecLogProbs>> logProbs;
    /// One per beam; there is no single finish reason.
    std::vector<FinishReason> finishReasons;
    /// A context-only request's params, for the generation-only request that continues it.
    std::optional<ContextPhaseParams> contextPhaseParams;
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
