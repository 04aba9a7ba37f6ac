// Simulated executor: the part of TensorRT-LLM's `tensorrt_llm/executor/types.h` that the trtllm shim
// uses, declared with the same names, types and layout as the 1.1/1.2 headers so that the shim compiles
// unchanged against either. Written for this project; it declares nothing the real header lacks.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tensorrt_llm::executor
{

using SizeType32 = std::int32_t;
using SizeType64 = std::int64_t;
using FloatType = float;
using TokenIdType = std::int32_t;
using VecTokens = std::vector<TokenIdType>;
using BeamTokens = std::vector<VecTokens>;
using IdType = std::uint64_t;
using IterationType = std::uint64_t;
using RandomSeedType = std::uint64_t;
using VecLogProbs = std::vector<FloatType>;
using PriorityType = float;
using MillisecondsType = std::chrono::milliseconds;

enum class ModelType
{
    kDECODER_ONLY = 0,
    kENCODER_ONLY = 1,
    kENCODER_DECODER = 2,
};

enum class BatchingType
{
    kSTATIC = 0,
    kINFLIGHT = 1,
};

enum class CapacitySchedulerPolicy
{
    kMAX_UTILIZATION = 0,
    kGUARANTEED_NO_EVICT = 1,
    kSTATIC_BATCH = 2,
};

enum class ContextChunkingPolicy
{
    kFIRST_COME_FIRST_SERVED = 0,
    kEQUAL_PROGRESS = 1,
};

enum class CommunicationType
{
    kMPI = 0
};

enum class CommunicationMode
{
    kLEADER,
    kORCHESTRATOR,
};

// ---- LoRA (tensor element and memory types) ----

enum class DataType
{
    kBOOL,
    kUINT8,
    kINT8,
    kINT32,
    kINT64,
    kBF16,
    kFP8,
    kFP16,
    kFP32,
    kUNKNOWN
};

enum class MemoryType
{
    kCPU,
    kCPU_PINNED,
    kCPU_PINNEDPOOL,
    kGPU,
    kUVM,
    kUNKNOWN
};

struct KvCacheStats
{
    SizeType32 maxNumBlocks;
    SizeType32 freeNumBlocks;
    SizeType32 usedNumBlocks;
    SizeType32 tokensPerBlock;
    SizeType32 allocTotalBlocks;
    SizeType32 allocNewBlocks;
    SizeType32 reusedBlocks;
    SizeType32 missedBlocks;
    float cacheHitRate;
};

struct StaticBatchingStats
{
    SizeType32 numScheduledRequests;
    SizeType32 numContextRequests;
    SizeType32 numCtxTokens;
    SizeType32 numGenTokens;
    SizeType32 emptyGenSlots;
};

struct InflightBatchingStats
{
    SizeType32 numScheduledRequests;
    SizeType32 numContextRequests;
    SizeType32 numGenRequests;
    SizeType32 numPausedRequests;
    SizeType32 numCtxTokens;
    SizeType32 microBatchId;
    float avgNumDecodedTokensPerIter;
};

/// Speculative decoding in one iteration (engines built for a speculative mode).
struct SpecDecodingStats
{
    /// Draft tokens verified, all requests.
    SizeType64 numDraftTokens;
    /// Draft tokens accepted, all requests.
    SizeType64 numAcceptedTokens;
    /// Requests that verified at least one draft token.
    SizeType64 numRequestsWithDraftTokens;
    /// Tokens emitted per step by the requests with draft tokens (accepted drafts + 1, averaged).
    double acceptanceLength;
    /// Time spent producing draft tokens (ms).
    double iterLatencyMS;
    /// iterLatencyMS of the drafting / iterLatencyMS of the iteration.
    double draftOverhead;
};

struct IterationStats
{
    /// End of the iteration as local wall-clock text, "%m-%d-%Y %H:%M:%S.uuuuuu".
    std::string timestamp;
    IterationType iter;
    double iterLatencyMS;
    /// Sum (not mean) of the queue times of the requests activated in this iteration.
    double newActiveRequestsQueueLatencyMS;
    SizeType32 numNewActiveRequests;
    SizeType32 numActiveRequests;
    SizeType32 numQueuedRequests;
    SizeType32 numCompletedRequests;
    SizeType32 maxNumActiveRequests;
    SizeType32 maxBatchSizeStatic;
    SizeType32 maxBatchSizeTunerRecommended;
    SizeType32 maxBatchSizeRuntime;
    SizeType32 maxNumTokensStatic;
    SizeType32 maxNumTokensTunerRecommended;
    SizeType32 maxNumTokensRuntime;
    std::size_t gpuMemUsage;
    std::size_t cpuMemUsage;
    std::size_t pinnedMemUsage;
    std::optional<KvCacheStats> kvCacheStats;
    std::optional<KvCacheStats> crossKvCacheStats;
    std::optional<StaticBatchingStats> staticBatchingStats;
    std::optional<InflightBatchingStats> inflightBatchingStats;
    std::optional<SpecDecodingStats> specDecodingStats;
};

enum class RequestType
{
    REQUEST_TYPE_CONTEXT_AND_GENERATION = 0,
    REQUEST_TYPE_CONTEXT_ONLY = 1,
    REQUEST_TYPE_GENERATION_ONLY = 2
};

enum class RequestStage
{
    kQUEUED,
    kENCODER_IN_PROGRESS,
    kCONTEXT_IN_PROGRESS,
    kGENERATION_IN_PROGRESS,
    kGENERATION_COMPLETE,
};

/// A disaggregated request's KV-cache transfer, on the generation side.
struct DisServingRequestStats
{
    /// Time spent transferring the KV cache from the context side (ms).
    double kvCacheTransferMS;
    /// Bytes of KV cache transferred.
    std::size_t kvCacheSize;
};

struct RequestStats
{
    IdType id;
    RequestStage stage;
    SizeType32 contextPrefillPosition;
    SizeType32 numGeneratedTokens;
    float avgNumDecodedTokensPerIter;
    bool scheduled;
    bool paused;
    std::optional<DisServingRequestStats> disServingStats;
    SizeType32 allocTotalBlocksPerRequest;
    SizeType32 allocNewBlocksPerRequest;
    SizeType32 reusedBlocksPerRequest;
    SizeType32 missedBlocksPerRequest;
    FloatType kvCacheHitRatePerRequest;
};

struct RequestStatsPerIteration
{
    IterationType iter;
    std::vector<RequestStats> requestStats;
};

struct RequestPerfMetrics
{
    using TimePoint = std::chrono::time_point<std::chrono::steady_clock>;

    struct TimingMetrics
    {
        /// When the executor loop took the request off its queue (excludes the queue wait).
        TimePoint arrivalTime;
        TimePoint firstScheduledTime;
        TimePoint firstTokenTime;
        TimePoint lastTokenTime;
        TimePoint kvCacheTransferStart;
        TimePoint kvCacheTransferEnd;
        mutable std::size_t kvCacheSize = 0;
    };

    struct KvCacheMetrics
    {
        SizeType32 numTotalAllocatedBlocks{0};
        SizeType32 numNewAllocatedBlocks{0};
        SizeType32 numReusedBlocks{0};
        SizeType32 numMissedBlocks{0};
        FloatType kvCacheHitRate{0.f};
    };

    /// Speculative decoding: draft tokens proposed and accepted over the request's steps.
    struct SpeculativeDecodingMetrics
    {
        /// totalAcceptedDraftTokens / totalDraftTokens (0 without drafts).
        FloatType acceptanceRate{0.f};
        SizeType32 totalAcceptedDraftTokens{0};
        SizeType32 totalDraftTokens{0};
    };

    TimingMetrics timingMetrics;
    KvCacheMetrics kvCacheMetrics;
    SpeculativeDecodingMetrics speculativeDecoding;

    std::optional<IterationType> firstIter;
    std::optional<IterationType> lastIter;
    std::optional<IterationType> iter;
};

// ---- Speculative decoding ----

/// Draft-token trees of Medusa heads (and Eagle-1): each entry is a path of top-k indices.
using MedusaChoices = std::vector<std::vector<SizeType32>>;
using EagleChoices = MedusaChoices;

/// How the executor decodes: sampling, beam search, or one of the speculative modes.
class DecodingMode
{
public:
    using UnderlyingType = std::uint32_t;

    static auto constexpr Auto() { return DecodingMode{kAuto}; }
    static auto constexpr TopK() { return DecodingMode{kTopK}; }
    static auto constexpr TopP() { return DecodingMode{kTopP}; }
    static auto constexpr TopKTopP() { return DecodingMode{kTopKTopP}; }
    static auto constexpr BeamSearch() { return DecodingMode{kBeamSearch}; }
    static auto constexpr Medusa() { return DecodingMode{kMedusa}; }
    static auto constexpr Lookahead() { return DecodingMode{kLookahead}; }
    static auto constexpr ExplicitDraftTokens() { return DecodingMode{kExplicitDraftTokens}; }
    static auto constexpr ExternalDraftTokens() { return DecodingMode{kExternalDraftTokens}; }
    static auto constexpr Eagle() { return DecodingMode{kEagle}; }

    [[nodiscard]] bool constexpr isAuto() const { return mState == kAuto; }
    [[nodiscard]] bool constexpr isTopK() const { return mState == kTopK || mState == kTopKTopP; }
    [[nodiscard]] bool constexpr isTopP() const { return mState == kTopP || mState == kTopKTopP; }
    [[nodiscard]] bool constexpr isTopKorTopP() const { return isTopK() || isTopP(); }
    [[nodiscard]] bool constexpr isBeamSearch() const { return mState == kBeamSearch; }
    [[nodiscard]] bool constexpr isMedusa() const { return mState == kMedusa; }
    [[nodiscard]] bool constexpr isLookahead() const { return mState == kLookahead; }
    [[nodiscard]] bool constexpr isExplicitDraftTokens() const { return mState == kExplicitDraftTokens; }
    [[nodiscard]] bool constexpr isExternalDraftTokens() const { return mState == kExternalDraftTokens; }
    [[nodiscard]] bool constexpr isEagle() const { return mState == kEagle; }

    [[nodiscard]] UnderlyingType constexpr getState() const { return mState; }

    bool operator==(DecodingMode const& other) const { return mState == other.mState; }

private:
    constexpr explicit DecodingMode(UnderlyingType state)
        : mState(state)
    {
    }

    // This simulator's own encoding (one value per mode, no option bits).
    static UnderlyingType constexpr kAuto{0};
    static UnderlyingType constexpr kTopK{1};
    static UnderlyingType constexpr kTopP{2};
    static UnderlyingType constexpr kTopKTopP{3};
    static UnderlyingType constexpr kBeamSearch{4};
    static UnderlyingType constexpr kMedusa{5};
    static UnderlyingType constexpr kLookahead{6};
    static UnderlyingType constexpr kExplicitDraftTokens{7};
    static UnderlyingType constexpr kExternalDraftTokens{8};
    static UnderlyingType constexpr kEagle{9};

    UnderlyingType mState{kAuto};
};

enum class FinishReason
{
    kNOT_FINISHED = 0,
    kEND_ID = 1,
    kSTOP_WORDS = 2,
    kLENGTH = 3,
    kTIMED_OUT = 4,
    kCANCELLED = 5
};

} // namespace tensorrt_llm::executor
