// The C++ half of the trtllm bridge (see shim.h): the executor handle's methods, the core request
// conversion (Request/SamplingConfig/OutputConfig) and Response/Result back. The executor
// configuration, the statistics and KV events, and the LoRA, speculative-decoding and
// guided-decoding conversions live in the shim_*.cc files beside this one (declared in
// shim_internal.h). The same sources compile against the real TensorRT-LLM headers
// (TRTLLM_SHIM_REAL defined by build.rs) and against the simulated executor in cpp/sim.
#include "shim_internal.h"

#include "tensorrt_llm/executor/tensor.h"

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

namespace trtllm::shim
{

using detail::guarded;
using detail::opt;
using detail::toIterationStats;
using detail::toKvEventItem;
using detail::toRequest;
using detail::toRequestStats;
using detail::toRust;

namespace
{

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

} // namespace

namespace detail
{
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
    if (auto lora = detail::toLoraConfig(spec.lora))
    {
        request.setLoraConfig(*lora);
    }
    detail::applySpeculativeRequest(request, spec.speculative);
    if (spec.guided_decoding.set)
    {
        request.setGuidedDecodingParams(detail::toGuidedDecodingParams(spec.guided_decoding));
    }
    detail::applyDisaggregation(request, spec);
    return request;
}

} // namespace detail

namespace
{

// Enum conversions: one case per enumerator, by name, never a cast of the number (the numbering is
// upstream's to change). The switches have no default, so that the compiler's -Wswitch points at any
// enumerator a newer upstream adds; at run time an unlisted value falls through to the error or the
// Unknown after the switch.

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

// Fills `item`, freshly made in the batch's vector: built in place, a response is never moved or copied
// (each of its vectors would cross the language boundary again to move and to drop the moved-from one).
void fillResponseItem(ResponseItem& item, tle::Response const& response)
{
    auto const requestId = response.getRequestId();
    auto const clientId = response.getClientId();
    // An error response is terminal and getResult() throws on it: check hasError() first.
    if (response.hasError())
    {
        item = errorItem(requestId, clientId, response.getErrorMsg());
        return;
    }
    auto const& result = response.getResult();
    item.request_id = requestId;
    item.client_id = OptU64{clientId.has_value(), clientId.value_or(0)};
    item.is_error = false;
    item.is_final = result.isFinal;
    item.is_sequence_final = result.isSequenceFinal;
    item.sequence_index = result.sequenceIndex;
    item.decoding_iter = result.decodingIter;
    item.avg_decoded_tokens_per_iter = static_cast<float>(result.avgDecodedTokensPerIter);
    // Token vectors may be empty (a cancelled or timed-out final usually carries none): copy, never index.
    // Each vector is sized once: a response is converted for every token of every stream.
    item.output_token_ids.reserve(result.outputTokenIds.size());
    item.finish_reasons.reserve(result.finishReasons.size());
    for (auto const& beam : result.outputTokenIds)
    {
        // Made in place, as the item is.
        item.output_token_ids.emplace_back();
        auto& ids = item.output_token_ids.back().ids;
        ids.reserve(beam.size());
        for (auto const id : beam)
        {
            ids.push_back(id);
        }
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
    // Only a context-only request's final carries params: every other response skips them.
    if (result.contextPhaseParams)
    {
        item.context_phase.push_back(detail::toContextPhaseItem(*result.contextPhaseParams));
    }
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

ExecutorHandle::ExecutorHandle(rust::Str engineDir, ExecutorOptions const& options)
    : mImpl(std::make_shared<Impl>())
{
    initPluginsOnce();
    std::filesystem::path const dir(std::string(engineDir.data(), engineDir.size()));
    mImpl->executor
        = std::make_unique<tle::Executor>(dir, tle::ModelType::kDECODER_ONLY, detail::toExecutorConfig(options));
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

rust::Vec<ResponseItem> ExecutorHandle::await_responses(std::uint32_t timeoutMs, std::int64_t& receivedNs) const
{
    return guarded("awaitResponses",
        [&]
        {
            auto responses = mImpl->executor->awaitResponses(std::chrono::milliseconds(timeoutMs));
            // One clock read per batch, before converting it: converting a thousand responses is
            // the response thread's work, not the executor's lateness, and must not delay the stamp.
            receivedNs = steady_clock_now_ns();
            rust::Vec<ResponseItem> out;
            out.reserve(responses.size());
            for (auto const& response : responses)
            {
                // A response that fails to convert becomes an error for that request only.
                out.emplace_back();
                try
                {
                    fillResponseItem(out.back(), response);
                }
                catch (std::exception const& e)
                {
                    out.back() = errorItem(response.getRequestId(), std::nullopt,
                        std::string("failed to convert executor response: ") + e.what());
                }
                catch (...)
                {
                    out.back() = errorItem(
                        response.getRequestId(), std::nullopt, "failed to convert executor response: unknown error");
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


std::int64_t steady_clock_now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace trtllm::shim
