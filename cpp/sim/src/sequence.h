// The executor's in-flight state of a request: the validated parameters shared by all of its sequences
// (RequestState) and the progress of each sequence (Sequence), plus building Results from that state the
// way TensorRT-LLM's LlmRequest::createResult does.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include "guided_grammar.h"

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

namespace tensorrt_llm::executor::sim
{

class LoraPin;

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

/// A request after validation, shared by its sequences (several when numReturnSequences > 1).
struct RequestState
{
    IdType id{0};
    std::optional<IdType> clientId;
    TimePoint enqueueTime;
    std::optional<TimePoint> deadline;
    PriorityType priority{Request::kDefaultPriority};

    VecTokens prompt;
    /// maxTokens after clamping to the engine's max_seq_len.
    SizeType32 maxNewTokens{0};
    bool streaming{false};
    bool returnAllGeneratedTokens{false};
    bool excludeInputFromOutput{false};
    bool returnLogProbs{false};
    bool returnPerfMetrics{false};
    /// -1 disables stopping on an end token.
    TokenIdType endId{-1};
    SizeType32 minTokens{1};
    std::vector<VecTokens> stopWords;
    std::vector<VecTokens> badWords;
    std::optional<RandomSeedType> seed;
    /// Hash of the prompt, the base of every generated token id.
    std::uint64_t promptHash{0};
    SizeType32 beamWidth{1};
    SizeType32 numReturnBeams{1};
    SizeType32 numSequences{1};

    // Speculative decoding (speculation.h)
    /// Draft-target: the draft tokens to verify in the step that completes the prompt.
    VecTokens externalDraftTokens;
    /// This request drafts with the engine's mode (beam width 1, mode active).
    bool speculative{false};
    /// KV-cache tokens reserved beyond prompt + max tokens for the draft tokens a step writes.
    SizeType32 draftReserve{0};

    /// isSequenceFinal of each sequence, for the request-level isFinal.
    std::vector<bool> sequenceFinal;

    // ---- LoRA: the request's adapter, once admitted (lora_cache.h) ----
    std::optional<IdType> loraTaskId;
    /// Extra FLOPs per token the adapter adds.
    double loraFlopsPerToken{0.0};
    /// Bytes of the adapter's weights, read every step that runs it.
    double loraWeightBytes{0.0};
    /// Bytes to copy host -> device before the request first runs (a device-cache miss); 0 once paid.
    double loraCopyBytes{0.0};
    /// The adapter's pin in the LoRA caches, released when the last sequence drops this state.
    std::shared_ptr<LoraPin> loraPin;
    // Guided decoding
    /// The request's output constraint; each sequence compiles its own matcher from it.
    std::optional<GuidedDecodingParams> guided;
    // Disaggregated serving (cache_transceiver.h)
    RequestType requestType{RequestType::REQUEST_TYPE_CONTEXT_AND_GENERATION};
    /// A generation-only request's KV-cache transfer, once done.
    std::optional<DisServingRequestStats> disServing;
};

enum class SequenceState
{
    kContext,
    kGeneration,
    kFinished,
};

/// One sequence being served: its prefill progress, generated tokens and KV blocks.
struct Sequence
{
    std::shared_ptr<RequestState> request;
    /// The sequence's own id (the request id for sequence 0, a child id otherwise).
    IdType id{0};
    SizeType32 sequenceIndex{0};
    /// Position in fetch order, to keep equal priorities first-come first-served.
    std::uint64_t arrivalOrder{0};

    SequenceState state{SequenceState::kContext};
    /// Tokens the context phase must process: the prompt, or prompt + generated after being paused.
    SizeType32 contextLength{0};
    SizeType32 contextPosition{0};
    /// Generated tokens (and their log-probabilities) per beam.
    std::vector<VecTokens> generated;
    std::vector<VecLogProbs> logProbs;
    /// Generated tokens of beam 0 already sent to the client (streaming).
    std::size_t sentTokens{0};
    std::vector<FinishReason> finishReasons;
    /// Decoding steps that produced a token.
    SizeType32 decodingIter{0};

    // KV cache (kv_cache.h)
    /// Admitted by the capacity scheduler; its blocks are allocated when it is first scheduled.
    bool holdsBlocks{false};
    SizeType32 reservedBlocks{0};
    /// Beam 0's block at each block position of the sequence (empty until its first scheduled step).
    std::vector<SizeType32> blockIds;
    /// Every block the sequence holds, all beams, in allocation order.
    std::vector<SizeType32> heldBlocks;
    // Per-request block counters, as TensorRT-LLM counts them when it adds the sequence to the cache.
    SizeType32 allocTotalBlocks{0};
    SizeType32 allocNewBlocks{0};
    SizeType32 reusedBlocks{0};
    SizeType32 missedBlocks{0};

    // This iteration's schedule
    bool scheduled{false};
    bool paused{false};
    SizeType32 chunkTokens{0};
    /// Draft tokens verified this step besides the sampled token (speculative decoding), and the longest chain
    /// of them that can be accepted.
    SizeType32 stepDraftTokens{0};
    SizeType32 stepDraftDepth{0};
    /// Draft tokens proposed and accepted over all steps.
    SizeType32 totalDraftTokens{0};
    SizeType32 acceptedDraftTokens{0};

    bool everScheduled{false};
    RequestPerfMetrics perf;

    // Guided decoding
    /// The sequence's grammar matcher (guided requests only): it picks every token.
    std::unique_ptr<GrammarState> grammar;
    /// Set when the grammar engine failed mid-generation: the request gets this error instead of a result.
    std::optional<std::string> grammarError;

    [[nodiscard]] SizeType32 numGenerated() const { return static_cast<SizeType32>(generated.at(0).size()); }
    [[nodiscard]] bool isFinished() const { return state == SequenceState::kFinished; }
    /// Tokens that will sit in the KV cache once this iteration's work is done.
    [[nodiscard]] SizeType32 tokensAfterStep() const;
    /// Tokens the whole request can occupy: prompt plus every new token it may generate.
    [[nodiscard]] SizeType32 maxTotalTokens() const;

    /// Ends the sequence with `reason` for every beam.
    void finish(FinishReason reason);
    /// Ends the sequence and drops its generated tokens (cancellation and timeout do this).
    void terminate(FinishReason reason);
};

/// The Result to send for `sequence` now, or nullopt when nothing is due (a non-streaming request before
/// its end, or a streaming one without new tokens). Updates the sequence's sent-token mark.
std::optional<Result> makeResult(Sequence& sequence);

/// True when `sequence` precedes `other` in scheduling order: higher priority first, then arrival order.
bool schedulesBefore(Sequence const& sequence, Sequence const& other);

} // namespace tensorrt_llm::executor::sim
