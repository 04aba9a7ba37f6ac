// The C++ half of the trtllm bridge (see shim.h). Converts the plain bridge structs into
// tensorrt_llm::executor Request/SamplingConfig/OutputConfig/ExecutorConfig and converts
// Response/Result/stats back. The same source compiles against the real TensorRT-LLM headers
// (TRTLLM_SHIM_REAL defined by build.rs) and against the simulated executor in cpp/sim.
#include "trtllm/cpp/include/trtllm/shim.h"
#include "trtllm/src/ffi.rs.h"

#include "tensorrt_llm/executor/executor.h"
#include "tensorrt_llm/executor/tensor.h"

#ifndef TRTLLM_SHIM_REAL
#include "trtllm_sim/lora_counters.h"
#endif

#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#ifdef TRTLLM_SHIM_REAL
// Declared here rather than through tllmPlugin.h, whose older versions pull in TensorRT headers.
extern "C" bool initTrtLlmPlugins(void* logger, char const* libNamespace);
#endif

namespace tle = tensorrt_llm::executor;

namespace trtllm::shim
{
namespace
{

// Runs `body`, turning anything thrown that is not a std::exception into one, so that cxx (which
// catches std::exception) never lets an exception escape into Rust unconverted.
template <typename F>
auto guarded(char const* what, F&& body) -> decltype(body())
{
    try
    {
        return body();
    }
    catch (std::exception const&)
    {
        throw;
    }
    catch (...)
    {
        throw std::runtime_error(std::string(what) + ": unknown C++ exception (not derived from std::exception)");
    }
}

// Converts through pointer and length only: cxx's own std::string overloads are compiled with the
// default _GLIBCXX_USE_CXX11_ABI, which need not match the one TensorRT-LLM forces on this file.
rust::String toRust(std::string const& text)
{
    return rust::String::lossy(text.data(), text.size());
}

template <typename T, typename O>
std::optional<T> opt(O const& o)
{
    if (o.set)
    {
        return static_cast<T>(o.value);
    }
    return std::nullopt;
}

std::int64_t toNs(tle::RequestPerfMetrics::TimePoint const& tp)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(tp.time_since_epoch()).count();
}

std::int64_t iterOr(std::optional<tle::IterationType> const& it)
{
    return it ? static_cast<std::int64_t>(*it) : -1;
}

std::list<tle::VecTokens> toTokenList(rust::Vec<TokenSeq> const& seqs)
{
    std::list<tle::VecTokens> out;
    for (auto const& seq : seqs)
    {
        out.emplace_back(seq.ids.begin(), seq.ids.end());
    }
    return out;
}

tle::SamplingConfig toSamplingConfig(SamplingSpec const& s)
{
    tle::SamplingConfig sc(s.beam_width);
    sc.setTopK(opt<tle::SizeType32>(s.top_k));
    sc.setTopP(opt<tle::FloatType>(s.top_p));
    sc.setTopPMin(opt<tle::FloatType>(s.top_p_min));
    sc.setTopPResetIds(opt<tle::TokenIdType>(s.top_p_reset_ids));
    sc.setTopPDecay(opt<tle::FloatType>(s.top_p_decay));
    sc.setSeed(opt<tle::RandomSeedType>(s.seed));
    sc.setTemperature(opt<tle::FloatType>(s.temperature));
    sc.setMinTokens(opt<tle::SizeType32>(s.min_tokens));
    sc.setBeamSearchDiversityRate(opt<tle::FloatType>(s.beam_search_diversity_rate));
    sc.setRepetitionPenalty(opt<tle::FloatType>(s.repetition_penalty));
    sc.setPresencePenalty(opt<tle::FloatType>(s.presence_penalty));
    sc.setFrequencyPenalty(opt<tle::FloatType>(s.frequency_penalty));
    sc.setLengthPenalty(opt<tle::FloatType>(s.length_penalty));
    sc.setEarlyStopping(opt<tle::SizeType32>(s.early_stopping));
    sc.setNoRepeatNgramSize(opt<tle::SizeType32>(s.no_repeat_ngram_size));
    sc.setNumReturnSequences(opt<tle::SizeType32>(s.num_return_sequences));
    sc.setMinP(opt<tle::FloatType>(s.min_p));
    return sc;
}

// ---- LoRA ----

tle::DataType toLoraDataType(LoraWeightKind kind)
{
    switch (kind)
    {
    case LoraWeightKind::F16: return tle::DataType::kFP16;
    case LoraWeightKind::Bf16: return tle::DataType::kBF16;
    case LoraWeightKind::F32: return tle::DataType::kFP32;
    }
    throw std::invalid_argument(
        std::string("unknown LoRA weight type ") + std::to_string(static_cast<int>(kind)));
}

// The request's adapter as owned host tensors (Tensor::cpu, then a copy of the bytes): the request outlives this
// call, so the tensors must not wrap the bridge's buffers.
std::optional<tle::LoraConfig> toLoraConfig(LoraSpec const& spec)
{
    if (!spec.set)
    {
        return std::nullopt;
    }
    if (!spec.has_weights)
    {
        return tle::LoraConfig(spec.task_id);
    }
    if (spec.config.size() % 3 != 0 || spec.config.empty() || spec.row_len <= 0)
    {
        throw std::invalid_argument("LoRA config must hold rows of 3 values and the weights a positive row length");
    }
    auto const rows = static_cast<std::int64_t>(spec.config.size() / 3);
    auto config = tle::Tensor::cpu(tle::DataType::kINT32, {rows, std::int64_t{3}});
    std::memcpy(config.getData(), spec.config.data(), spec.config.size() * sizeof(std::int32_t));
    auto weights = tle::Tensor::cpu(toLoraDataType(spec.dtype), {rows, static_cast<std::int64_t>(spec.row_len)});
    if (weights.getSizeInBytes() != spec.weights.size())
    {
        throw std::invalid_argument("LoRA weights hold " + std::to_string(spec.weights.size()) + " bytes, expected "
            + std::to_string(weights.getSizeInBytes()));
    }
    std::memcpy(weights.getData(), spec.weights.data(), spec.weights.size());
    return tle::LoraConfig(spec.task_id, weights, config);
}

tle::PeftCacheConfig toPeftCacheConfig(PeftCacheOptions const& o)
{
    std::optional<std::string> prefetch;
    if (!o.lora_prefetch_dir.empty())
    {
        prefetch = std::string(o.lora_prefetch_dir.data(), o.lora_prefetch_dir.size());
    }
    tle::PeftCacheConfig defaults;
    return tle::PeftCacheConfig(o.num_host_module_layer, o.num_device_module_layer,
        o.optimal_adapter_size > 0 ? o.optimal_adapter_size : defaults.getOptimalAdapterSize(),
        o.max_adapter_size > 0 ? o.max_adapter_size : defaults.getMaxAdapterSize(), 1, 1, 1,
        tle::PeftCacheConfig::kDefaultMaxPagesPerBlockHost, tle::PeftCacheConfig::kDefaultMaxPagesPerBlockDevice,
        opt<float>(o.device_cache_percent), opt<std::size_t>(o.host_cache_size), prefetch);
}
// Defined with the other speculative-decoding conversions below.
void applySpeculativeRequest(tle::Request& request, SpeculativeSpec const& s);
// ---- Guided decoding (structured output) ----

tle::GuidedDecodingParams::GuideType toGuideType(GuideKind kind)
{
    switch (kind)
    {
    case GuideKind::Json: return tle::GuidedDecodingParams::GuideType::kJSON;
    case GuideKind::JsonSchema: return tle::GuidedDecodingParams::GuideType::kJSON_SCHEMA;
    case GuideKind::Regex: return tle::GuidedDecodingParams::GuideType::kREGEX;
    case GuideKind::EbnfGrammar: return tle::GuidedDecodingParams::GuideType::kEBNF_GRAMMAR;
    case GuideKind::StructuralTag: return tle::GuidedDecodingParams::GuideType::kSTRUCTURAL_TAG;
    }
    throw std::invalid_argument("unknown guide type " + std::to_string(static_cast<int>(kind)));
}

tle::GuidedDecodingParams toGuidedDecodingParams(GuidedDecodingSpec const& spec)
{
    std::optional<std::string> guide;
    if (spec.has_guide)
    {
        guide = std::string(spec.guide.data(), spec.guide.size());
    }
    return tle::GuidedDecodingParams(toGuideType(spec.guide_type), guide);
}

tle::GuidedDecodingConfig toGuidedDecodingConfig(GuidedDecodingOptions const& o)
{
    auto backend = tle::GuidedDecodingConfig::GuidedDecodingBackend::kLLGUIDANCE;
    switch (o.backend)
    {
    case GuidedBackendKind::Xgrammar: backend = tle::GuidedDecodingConfig::GuidedDecodingBackend::kXGRAMMAR; break;
    case GuidedBackendKind::Llguidance: backend = tle::GuidedDecodingConfig::GuidedDecodingBackend::kLLGUIDANCE; break;
    }
    std::vector<std::string> vocab;
    vocab.reserve(o.encoded_vocab.size());
    for (auto const& token : o.encoded_vocab)
    {
        vocab.emplace_back(token.data(), token.size());
    }
    std::optional<std::string> tokenizer;
    if (o.has_tokenizer_str)
    {
        tokenizer = std::string(o.tokenizer_str.data(), o.tokenizer_str.size());
    }
    std::vector<tle::TokenIdType> stops(o.stop_token_ids.begin(), o.stop_token_ids.end());
    return tle::GuidedDecodingConfig(backend, std::move(vocab), std::move(tokenizer), std::move(stops));
}

tle::Request toRequest(RequestSpec const& spec)
{
    // Construct with the three stable leading arguments only and use setters for the rest: the
    // positional list has had parameters inserted in the middle across releases.
    tle::Request request(
        tle::VecTokens(spec.input_token_ids.begin(), spec.input_token_ids.end()), spec.max_tokens, spec.streaming);
    request.setSamplingConfig(toSamplingConfig(spec.sampling));
    tle::OutputConfig oc;
    oc.returnLogProbs = spec.return_log_probs;
    oc.excludeInputFromOutput = spec.exclude_input_from_output;
    oc.returnPerfMetrics = spec.return_perf_metrics;
    request.setOutputConfig(oc);
    if (spec.end_id.set)
    {
        request.setEndId(spec.end_id.value);
    }
    if (spec.pad_id.set)
    {
        request.setPadId(spec.pad_id.value);
    }
    if (!spec.stop_words.empty())
    {
        request.setStopWords(toTokenList(spec.stop_words));
    }
    if (!spec.bad_words.empty())
    {
        request.setBadWords(toTokenList(spec.bad_words));
    }
    if (spec.client_id.set)
    {
        request.setClientId(spec.client_id.value);
    }
    request.setPriority(spec.priority);
    request.setReturnAllGeneratedTokens(spec.return_all_generated_tokens);
    if (spec.allotted_time_ms > 0)
    {
        request.setAllottedTimeMs(std::chrono::milliseconds(spec.allotted_time_ms));
    }
    if (auto lora = toLoraConfig(spec.lora))
    {
        request.setLoraConfig(*lora);
    }
    applySpeculativeRequest(request, spec.speculative);
    if (spec.guided_decoding.set)
    {
        request.setGuidedDecodingParams(toGuidedDecodingParams(spec.guided_decoding));
    }
    return request;
}

// Enum conversions: one case per enumerator, by name, never a cast of the number (the numbering is
// upstream's to change). The switches have no default, so that the compiler's -Wswitch points at any
// enumerator a newer upstream adds; at run time an unlisted value falls through to the error or the
// Unknown after the switch.

std::string enumValueMessage(char const* what, int value)
{
    return std::string("unknown ") + what + " value " + std::to_string(value);
}

tle::CapacitySchedulerPolicy toSchedulerPolicy(SchedulerPolicyKind kind)
{
    switch (kind)
    {
    case SchedulerPolicyKind::MaxUtilization: return tle::CapacitySchedulerPolicy::kMAX_UTILIZATION;
    case SchedulerPolicyKind::GuaranteedNoEvict: return tle::CapacitySchedulerPolicy::kGUARANTEED_NO_EVICT;
    case SchedulerPolicyKind::StaticBatch: return tle::CapacitySchedulerPolicy::kSTATIC_BATCH;
    }
    throw std::invalid_argument(enumValueMessage("capacity scheduler policy", static_cast<int>(kind)));
}

std::optional<tle::ContextChunkingPolicy> toChunkingPolicy(ChunkingPolicyKind kind)
{
    switch (kind)
    {
    case ChunkingPolicyKind::Unset: return std::nullopt;
    case ChunkingPolicyKind::FirstComeFirstServed: return tle::ContextChunkingPolicy::kFIRST_COME_FIRST_SERVED;
    case ChunkingPolicyKind::EqualProgress: return tle::ContextChunkingPolicy::kEQUAL_PROGRESS;
    }
    throw std::invalid_argument(enumValueMessage("context chunking policy", static_cast<int>(kind)));
}

FinishItem toFinishItem(tle::FinishReason reason)
{
    FinishItem item{FinishKind::Unknown, static_cast<std::int32_t>(reason)};
    switch (reason)
    {
    case tle::FinishReason::kNOT_FINISHED: item.kind = FinishKind::NotFinished; break;
    case tle::FinishReason::kEND_ID: item.kind = FinishKind::EndId; break;
    case tle::FinishReason::kSTOP_WORDS: item.kind = FinishKind::StopWords; break;
    case tle::FinishReason::kLENGTH: item.kind = FinishKind::Length; break;
    case tle::FinishReason::kTIMED_OUT: item.kind = FinishKind::TimedOut; break;
    case tle::FinishReason::kCANCELLED: item.kind = FinishKind::Cancelled; break;
    }
    return item;
}

RequestStageKind toRequestStage(tle::RequestStage stage)
{
    switch (stage)
    {
    case tle::RequestStage::kQUEUED: return RequestStageKind::Queued;
    case tle::RequestStage::kENCODER_IN_PROGRESS: return RequestStageKind::EncoderInProgress;
    case tle::RequestStage::kCONTEXT_IN_PROGRESS: return RequestStageKind::ContextInProgress;
    case tle::RequestStage::kGENERATION_IN_PROGRESS: return RequestStageKind::GenerationInProgress;
    case tle::RequestStage::kGENERATION_COMPLETE: return RequestStageKind::GenerationComplete;
    }
    return RequestStageKind::Unknown;
}

// ---- Speculative decoding: DecodingConfig and the per-request configs ----

std::optional<tle::LookaheadDecodingConfig> toLookahead(LookaheadSpec const& s)
{
    if (!s.set)
    {
        return std::nullopt;
    }
    return tle::LookaheadDecodingConfig(s.window_size, s.ngram_size, s.verification_set_size);
}

std::vector<std::vector<tle::SizeType32>> toChoices(rust::Vec<TokenSeq> const& seqs)
{
    std::vector<std::vector<tle::SizeType32>> choices;
    for (auto const& seq : seqs)
    {
        choices.emplace_back(seq.ids.begin(), seq.ids.end());
    }
    return choices;
}

std::optional<tle::EagleConfig> toEagle(EagleSpec const& s)
{
    if (!s.set)
    {
        return std::nullopt;
    }
    std::optional<tle::EagleChoices> choices;
    if (!s.choices.empty())
    {
        choices = toChoices(s.choices);
    }
    return tle::EagleConfig(choices, s.greedy_sampling, opt<float>(s.posterior_threshold), s.use_dynamic_tree,
        opt<tle::SizeType32>(s.dynamic_tree_max_top_k));
}

std::optional<tle::DecodingMode> toDecodingMode(DecodingModeKind kind)
{
    switch (kind)
    {
    case DecodingModeKind::Unset: return std::nullopt;
    case DecodingModeKind::Auto: return tle::DecodingMode::Auto();
    case DecodingModeKind::TopKTopP: return tle::DecodingMode::TopKTopP();
    case DecodingModeKind::BeamSearch: return tle::DecodingMode::BeamSearch();
    case DecodingModeKind::Medusa: return tle::DecodingMode::Medusa();
    case DecodingModeKind::Lookahead: return tle::DecodingMode::Lookahead();
    case DecodingModeKind::ExplicitDraftTokens: return tle::DecodingMode::ExplicitDraftTokens();
    case DecodingModeKind::ExternalDraftTokens: return tle::DecodingMode::ExternalDraftTokens();
    case DecodingModeKind::Eagle: return tle::DecodingMode::Eagle();
    }
    throw std::invalid_argument(enumValueMessage("DecodingModeKind", static_cast<int>(kind)));
}

void applyDecodingOptions(tle::ExecutorConfig& config, DecodingOptions const& o)
{
    auto lookahead = toLookahead(o.lookahead);
    auto eagle = toEagle(o.eagle);
    bool const medusa = !o.medusa_choices.empty();
    if (o.mode == DecodingModeKind::Unset && !lookahead && !eagle && !medusa)
    {
        return;
    }
    std::optional<tle::MedusaChoices> choices;
    if (medusa)
    {
        choices = toChoices(o.medusa_choices);
    }
    config.setDecodingConfig(tle::DecodingConfig(toDecodingMode(o.mode), lookahead, choices, eagle));
}

void applySpeculativeRequest(tle::Request& request, SpeculativeSpec const& s)
{
    if (auto lookahead = toLookahead(s.lookahead))
    {
        request.setLookaheadConfig(*lookahead);
    }
    if (auto eagle = toEagle(s.eagle))
    {
        request.setEagleConfig(eagle);
    }
    if (s.has_draft_tokens)
    {
        request.setExternalDraftTokensConfig(tle::ExternalDraftTokensConfig(
            tle::VecTokens(s.draft_tokens.begin(), s.draft_tokens.end()), std::nullopt,
            opt<tle::FloatType>(s.draft_acceptance_threshold)));
    }
}

tle::ExecutorConfig toExecutorConfig(ExecutorOptions const& o)
{
    // Default-construct and use setters: the constructor's positional order has changed between releases.
    tle::ExecutorConfig config;
    config.setMaxBeamWidth(o.max_beam_width);
    if (o.max_batch_size > 0)
    {
        config.setMaxBatchSize(o.max_batch_size);
    }
    if (o.max_num_tokens > 0)
    {
        config.setMaxNumTokens(o.max_num_tokens);
    }
    config.setSchedulerConfig(tle::SchedulerConfig(
        toSchedulerPolicy(o.capacity_scheduler_policy), toChunkingPolicy(o.context_chunking_policy)));
    config.setEnableChunkedContext(o.enable_chunked_context);

    tle::KvCacheConfig kv;
    kv.setEnableBlockReuse(o.kv_enable_block_reuse);
    kv.setEnablePartialReuse(o.kv_enable_partial_reuse);
    kv.setCopyOnPartialReuse(o.kv_copy_on_partial_reuse);
    if (o.kv_max_tokens > 0)
    {
        kv.setMaxTokens(static_cast<tle::SizeType32>(o.kv_max_tokens));
    }
    if (o.kv_free_gpu_memory_fraction > 0.f)
    {
        kv.setFreeGpuMemoryFraction(o.kv_free_gpu_memory_fraction);
    }
    if (o.kv_host_cache_size > 0)
    {
        kv.setHostCacheSize(static_cast<std::size_t>(o.kv_host_cache_size));
    }
    kv.setEventBufferMaxSize(static_cast<std::size_t>(o.kv_event_buffer_max_size));
    config.setKvCacheConfig(kv);

    tle::ExtendedRuntimePerfKnobConfig knobs(
        o.multi_block_mode, o.enable_context_fmha_fp32_acc, o.cuda_graph_mode, o.cuda_graph_cache_size);
    config.setExtendedRuntimePerfKnobConfig(knobs);

    if (o.max_queue_size > 0)
    {
        config.setMaxQueueSize(std::optional<tle::SizeType32>(o.max_queue_size));
    }
    config.setIterStatsMaxIterations(o.iter_stats_max_iterations);
    config.setRequestStatsMaxIterations(o.request_stats_max_iterations);
    config.setNormalizeLogProbs(o.normalize_log_probs);
    config.setGpuWeightsPercent(o.gpu_weights_percent);
    config.setGatherGenerationLogits(o.gather_generation_logits);

    if (o.parallel.set)
    {
        tle::ParallelConfig parallel;
        parallel.setCommunicationMode(
            o.parallel.orchestrator ? tle::CommunicationMode::kORCHESTRATOR : tle::CommunicationMode::kLEADER);
        if (!o.parallel.device_ids.empty())
        {
            parallel.setDeviceIds(std::vector<tle::SizeType32>(o.parallel.device_ids.begin(), o.parallel.device_ids.end()));
        }
        if (!o.parallel.participant_ids.empty())
        {
            parallel.setParticipantIds(
                std::vector<tle::SizeType32>(o.parallel.participant_ids.begin(), o.parallel.participant_ids.end()));
        }
        if (o.parallel.orchestrator)
        {
            tle::OrchestratorConfig orchestrator(
                true, std::string(o.parallel.worker_executable_path.data(), o.parallel.worker_executable_path.size()));
            parallel.setOrchestratorConfig(orchestrator);
        }
        config.setParallelConfig(parallel);
    }
    if (o.peft_cache.set)
    {
        config.setPeftCacheConfig(toPeftCacheConfig(o.peft_cache));
    }
    applyDecodingOptions(config, o.decoding);
    if (o.guided_decoding.set)
    {
        config.setGuidedDecodingConfig(toGuidedDecodingConfig(o.guided_decoding));
    }
    return config;
}

PerfMetricsItem toPerfMetrics(tle::RequestPerfMetrics const& m)
{
    PerfMetricsItem p{};
    auto const& t = m.timingMetrics;
    p.arrival_ns = toNs(t.arrivalTime);
    p.first_scheduled_ns = toNs(t.firstScheduledTime);
    p.first_token_ns = toNs(t.firstTokenTime);
    p.last_token_ns = toNs(t.lastTokenTime);
    p.kv_transfer_start_ns = toNs(t.kvCacheTransferStart);
    p.kv_transfer_end_ns = toNs(t.kvCacheTransferEnd);
    p.kv_cache_size = static_cast<std::uint64_t>(t.kvCacheSize);
    auto const& kv = m.kvCacheMetrics;
    p.num_total_allocated_blocks = kv.numTotalAllocatedBlocks;
    p.num_new_allocated_blocks = kv.numNewAllocatedBlocks;
    p.num_reused_blocks = kv.numReusedBlocks;
    p.num_missed_blocks = kv.numMissedBlocks;
    p.kv_cache_hit_rate = static_cast<float>(kv.kvCacheHitRate);
    p.first_iter = iterOr(m.firstIter);
    p.last_iter = iterOr(m.lastIter);
    p.iter = iterOr(m.iter);
    p.spec_acceptance_rate = static_cast<float>(m.speculativeDecoding.acceptanceRate);
    p.spec_total_accepted_draft_tokens = m.speculativeDecoding.totalAcceptedDraftTokens;
    p.spec_total_draft_tokens = m.speculativeDecoding.totalDraftTokens;
    return p;
}

ResponseItem errorItem(tle::IdType requestId, std::optional<tle::IdType> clientId, std::string const& message)
{
    ResponseItem item{};
    item.request_id = requestId;
    item.client_id = OptU64{clientId.has_value(), clientId.value_or(0)};
    item.is_error = true;
    item.error_message = toRust(message);
    return item;
}

ResponseItem toResponseItem(tle::Response const& response)
{
    auto const requestId = response.getRequestId();
    auto const clientId = response.getClientId();
    // An error response is terminal and getResult() throws on it: check hasError() first.
    if (response.hasError())
    {
        return errorItem(requestId, clientId, response.getErrorMsg());
    }
    auto const& result = response.getResult();
    ResponseItem item{};
    item.request_id = requestId;
    item.client_id = OptU64{clientId.has_value(), clientId.value_or(0)};
    item.is_error = false;
    item.is_final = result.isFinal;
    item.is_sequence_final = result.isSequenceFinal;
    item.sequence_index = result.sequenceIndex;
    item.decoding_iter = result.decodingIter;
    item.avg_decoded_tokens_per_iter = static_cast<float>(result.avgDecodedTokensPerIter);
    // Token vectors may be empty (a cancelled or timed-out final usually carries none): copy, never index.
    for (auto const& beam : result.outputTokenIds)
    {
        TokenSeq seq;
        seq.ids.reserve(beam.size());
        for (auto const id : beam)
        {
            seq.ids.push_back(id);
        }
        item.output_token_ids.push_back(std::move(seq));
    }
    for (auto const reason : result.finishReasons)
    {
        item.finish_reasons.push_back(toFinishItem(reason));
    }
    if (result.logProbs)
    {
        for (auto const& beam : *result.logProbs)
        {
            FloatSeq seq;
            for (auto const lp : beam)
            {
                seq.values.push_back(lp);
            }
            item.log_probs.push_back(std::move(seq));
        }
    }
    if (result.cumLogProbs)
    {
        for (auto const lp : *result.cumLogProbs)
        {
            item.cum_log_probs.push_back(lp);
        }
    }
    if (result.requestPerfMetrics)
    {
        item.has_perf_metrics = true;
        item.perf_metrics = toPerfMetrics(*result.requestPerfMetrics);
    }
    return item;
}

KvCacheStatsItem toKvStats(tle::KvCacheStats const& s)
{
    KvCacheStatsItem k{};
    k.max_num_blocks = s.maxNumBlocks;
    k.free_num_blocks = s.freeNumBlocks;
    k.used_num_blocks = s.usedNumBlocks;
    k.tokens_per_block = s.tokensPerBlock;
    k.alloc_total_blocks = s.allocTotalBlocks;
    k.alloc_new_blocks = s.allocNewBlocks;
    k.reused_blocks = s.reusedBlocks;
    k.missed_blocks = s.missedBlocks;
    k.cache_hit_rate = s.cacheHitRate;
    return k;
}

IterationStatsItem toIterationStats(tle::IterationStats const& s)
{
    IterationStatsItem it{};
    it.timestamp = toRust(s.timestamp);
    it.iter = s.iter;
    it.iter_latency_ms = s.iterLatencyMS;
    it.new_active_requests_queue_latency_ms = s.newActiveRequestsQueueLatencyMS;
    it.num_new_active_requests = s.numNewActiveRequests;
    it.num_active_requests = s.numActiveRequests;
    it.num_queued_requests = s.numQueuedRequests;
    it.num_completed_requests = s.numCompletedRequests;
    it.max_num_active_requests = s.maxNumActiveRequests;
    it.max_batch_size_static = s.maxBatchSizeStatic;
    it.max_batch_size_runtime = s.maxBatchSizeRuntime;
    it.max_num_tokens_static = s.maxNumTokensStatic;
    it.max_num_tokens_runtime = s.maxNumTokensRuntime;
    it.gpu_mem_usage = static_cast<std::uint64_t>(s.gpuMemUsage);
    it.cpu_mem_usage = static_cast<std::uint64_t>(s.cpuMemUsage);
    it.pinned_mem_usage = static_cast<std::uint64_t>(s.pinnedMemUsage);
    if (s.kvCacheStats)
    {
        it.has_kv_cache_stats = true;
        it.kv_cache_stats = toKvStats(*s.kvCacheStats);
    }
    if (s.inflightBatchingStats)
    {
        auto const& b = *s.inflightBatchingStats;
        it.has_inflight_batching_stats = true;
        it.inflight_batching_stats = InflightBatchingStatsItem{b.numScheduledRequests, b.numContextRequests,
            b.numGenRequests, b.numPausedRequests, b.numCtxTokens, b.microBatchId, b.avgNumDecodedTokensPerIter};
    }
    if (s.staticBatchingStats)
    {
        auto const& b = *s.staticBatchingStats;
        it.has_static_batching_stats = true;
        it.static_batching_stats = StaticBatchingStatsItem{
            b.numScheduledRequests, b.numContextRequests, b.numCtxTokens, b.numGenTokens, b.emptyGenSlots};
    }
    return it;
}

RequestStatsItem toRequestStats(tle::RequestStats const& s)
{
    RequestStatsItem r{};
    r.id = s.id;
    r.stage = toRequestStage(s.stage);
    r.stage_raw = static_cast<std::int32_t>(s.stage);
    r.context_prefill_position = s.contextPrefillPosition;
    r.num_generated_tokens = s.numGeneratedTokens;
    r.avg_num_decoded_tokens_per_iter = s.avgNumDecodedTokensPerIter;
    r.scheduled = s.scheduled;
    r.paused = s.paused;
    r.alloc_total_blocks = s.allocTotalBlocksPerRequest;
    r.alloc_new_blocks = s.allocNewBlocksPerRequest;
    r.reused_blocks = s.reusedBlocksPerRequest;
    r.missed_blocks = s.missedBlocksPerRequest;
    r.kv_cache_hit_rate = static_cast<float>(s.kvCacheHitRatePerRequest);
    return r;
}

KvEventItem toKvEventItem(tle::KVCacheEvent const& event)
{
    KvEventItem item{};
    item.event_id = static_cast<std::uint64_t>(event.eventId);
    item.window_size = event.windowSize;
    item.attention_dp_rank = OptI32{event.attentionDpRank.has_value(), event.attentionDpRank.value_or(0)};
    // An alternative added upstream later is reported as Unknown, never read as one of these.
    item.kind = KvEventKind::Unknown;
    if (auto const* created = std::get_if<tle::KVCacheCreatedData>(&event.data))
    {
        item.kind = KvEventKind::Created;
        for (auto const blocks : created->numBlocksPerCacheLevel)
        {
            item.num_blocks_per_cache_level.push_back(blocks);
        }
    }
    else if (auto const* stored = std::get_if<tle::KVCacheStoredData>(&event.data))
    {
        item.kind = KvEventKind::Stored;
        item.parent_hash
            = OptU64{stored->parentHash.has_value(), static_cast<std::uint64_t>(stored->parentHash.value_or(0))};
        for (auto const& block : stored->blocks)
        {
            KvStoredBlockItem out{};
            out.block_hash = static_cast<std::uint64_t>(block.blockHash);
            out.token_ids.reserve(block.tokens.size());
            for (auto const& token : block.tokens)
            {
                out.token_ids.push_back(token.tokenId);
            }
            out.lora_id = OptU64{block.loraId.has_value(), static_cast<std::uint64_t>(block.loraId.value_or(0))};
            out.cache_level = block.cacheLevel;
            out.priority = block.priority;
            item.blocks.push_back(std::move(out));
        }
    }
    else if (auto const* removed = std::get_if<tle::KVCacheRemovedData>(&event.data))
    {
        item.kind = KvEventKind::Removed;
        for (auto const hash : removed->blockHashes)
        {
            item.block_hashes.push_back(static_cast<std::uint64_t>(hash));
        }
    }
    else if (auto const* updated = std::get_if<tle::KVCacheUpdatedData>(&event.data))
    {
        item.kind = KvEventKind::Updated;
        item.updated_block_hash = static_cast<std::uint64_t>(updated->blockHash);
        if (updated->cacheLevel)
        {
            item.cache_level_changed = true;
            item.old_cache_level = updated->cacheLevel->oldValue;
            item.new_cache_level = updated->cacheLevel->newValue;
        }
        if (updated->priority)
        {
            item.priority_changed = true;
            item.old_priority = updated->priority->oldValue;
            item.new_priority = updated->priority->newValue;
        }
    }
    return item;
}

void initPluginsOnce()
{
#ifdef TRTLLM_SHIM_REAL
    // Engines built by trtllm-build contain plugin layers: register them before the first Executor.
    static std::once_flag once;
    std::call_once(once,
        []
        {
            // A throw leaves the flag unset, so the next load tries again.
            if (!initTrtLlmPlugins(nullptr, "tensorrt_llm"))
            {
                throw std::runtime_error("initTrtLlmPlugins failed to register the TensorRT-LLM plugins");
            }
        });
#endif
}

} // namespace

struct ExecutorHandle::Impl
{
    // Held by pointer: the executor's move constructor was undeclared in some releases.
    std::unique_ptr<tle::Executor> executor;
    // Set when the executor records KV-cache events; it stays readable after shutdown.
    std::shared_ptr<tle::KVCacheEventManager> kvEvents;
};

ExecutorHandle::ExecutorHandle(rust::Str engineDir, ExecutorOptions const& options)
    : mImpl(std::make_shared<Impl>())
{
    initPluginsOnce();
    std::filesystem::path const dir(std::string(engineDir.data(), engineDir.size()));
    mImpl->executor = std::make_unique<tle::Executor>(dir, tle::ModelType::kDECODER_ONLY, toExecutorConfig(options));
    if (options.kv_event_buffer_max_size > 0)
    {
        mImpl->kvEvents = mImpl->executor->getKVCacheEventManager().value_or(nullptr);
    }
}

std::uint64_t ExecutorHandle::enqueue(RequestSpec const& request) const
{
    return guarded("enqueueRequest", [&] { return mImpl->executor->enqueueRequest(toRequest(request)); });
}

rust::Vec<std::uint64_t> ExecutorHandle::enqueue_many(rust::Slice<RequestSpec const> requests) const
{
    return guarded("enqueueRequests",
        [&]
        {
            std::vector<tle::Request> converted;
            converted.reserve(requests.size());
            for (auto const& spec : requests)
            {
                converted.push_back(toRequest(spec));
            }
            rust::Vec<std::uint64_t> ids;
            for (auto const id : mImpl->executor->enqueueRequests(converted))
            {
                ids.push_back(id);
            }
            return ids;
        });
}

rust::Vec<ResponseItem> ExecutorHandle::await_responses(std::uint32_t timeoutMs) const
{
    return guarded("awaitResponses",
        [&]
        {
            auto responses = mImpl->executor->awaitResponses(std::chrono::milliseconds(timeoutMs));
            rust::Vec<ResponseItem> out;
            out.reserve(responses.size());
            for (auto const& response : responses)
            {
                // A response that fails to convert becomes an error for that request only.
                try
                {
                    out.push_back(toResponseItem(response));
                }
                catch (std::exception const& e)
                {
                    out.push_back(errorItem(response.getRequestId(), std::nullopt,
                        std::string("failed to convert executor response: ") + e.what()));
                }
                catch (...)
                {
                    out.push_back(errorItem(
                        response.getRequestId(), std::nullopt, "failed to convert executor response: unknown error"));
                }
            }
            return out;
        });
}

void ExecutorHandle::cancel(std::uint64_t requestId) const
{
    guarded("cancelRequest", [&] { mImpl->executor->cancelRequest(requestId); });
}

rust::Vec<IterationStatsItem> ExecutorHandle::iteration_stats() const
{
    return guarded("getLatestIterationStats",
        [&]
        {
            rust::Vec<IterationStatsItem> out;
            for (auto const& s : mImpl->executor->getLatestIterationStats())
            {
                out.push_back(toIterationStats(s));
            }
            return out;
        });
}

rust::Vec<RequestStatsIteration> ExecutorHandle::request_stats() const
{
    return guarded("getLatestRequestStats",
        [&]
        {
            rust::Vec<RequestStatsIteration> out;
            for (auto const& perIter : mImpl->executor->getLatestRequestStats())
            {
                RequestStatsIteration it{};
                it.iter = perIter.iter;
                for (auto const& s : perIter.requestStats)
                {
                    it.requests.push_back(toRequestStats(s));
                }
                out.push_back(std::move(it));
            }
            return out;
        });
}

bool ExecutorHandle::can_enqueue() const
{
    return guarded("canEnqueueRequests", [&] { return mImpl->executor->canEnqueueRequests(); });
}

rust::Vec<KvEventItem> ExecutorHandle::kv_cache_events(std::uint32_t timeoutMs) const
{
    return guarded("getLatestEvents",
        [&]
        {
            rust::Vec<KvEventItem> out;
            if (!mImpl->kvEvents)
            {
                return out;
            }
            for (auto const& event : mImpl->kvEvents->getLatestEvents(std::chrono::milliseconds(timeoutMs)))
            {
                out.push_back(toKvEventItem(event));
            }
            return out;
        });
}

void ExecutorHandle::shutdown() const
{
    guarded("shutdown", [&] { mImpl->executor->shutdown(); });
}

LoraCacheCountsItem ExecutorHandle::lora_cache_counts() const
{
    return guarded("loraCacheCounts",
        [&]
        {
            LoraCacheCountsItem item{};
#ifndef TRTLLM_SHIM_REAL
            if (auto const counts = trtllm_sim::loraCacheCounts(*mImpl->executor))
            {
                item.available = true;
                item.hits = counts->hits;
                item.misses = counts->misses;
                item.evictions = counts->evictions;
            }
#endif
            return item;
        });
}

std::unique_ptr<ExecutorHandle> new_executor(rust::Str engineDir, ExecutorOptions const& options)
{
    return guarded("Executor", [&] { return std::make_unique<ExecutorHandle>(engineDir, options); });
}

rust::String library_version()
{
    return rust::String::lossy(tle::version());
}

rust::String backend_kind()
{
#ifdef TRTLLM_SHIM_REAL
    return rust::String("tensorrt-llm");
#else
    return rust::String("simulated");
#endif
}

// ---- Sim control (scheduled arrivals, simulated build: cpp/src/shim_sim_control.cc) ----
tle::Executor& ExecutorHandle::sim_executor() const
{
    return *mImpl->executor;
}

tle::Request ExecutorHandle::sim_request(RequestSpec const& request)
{
    return toRequest(request);
}

#ifdef TRTLLM_SHIM_REAL
namespace
{
[[noreturn]] void simulatorOnly()
{
    throw std::runtime_error("scheduled arrivals exist only in the simulated executor (virtual clock)");
}
} // namespace

std::int64_t ExecutorHandle::sim_now_ns() const
{
    simulatorOnly();
}

std::uint64_t ExecutorHandle::sim_enqueue_at(RequestSpec const&, std::int64_t, std::uint64_t, std::int64_t) const
{
    simulatorOnly();
}

std::uint64_t ExecutorHandle::sim_hold_arrivals(std::int64_t) const
{
    simulatorOnly();
}

void ExecutorHandle::sim_release_arrivals(std::uint64_t) const
{
    simulatorOnly();
}
#endif
// ---- end sim control

std::int64_t steady_clock_now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace trtllm::shim
