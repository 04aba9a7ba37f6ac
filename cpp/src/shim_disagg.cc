// Disaggregated serving in the shim: the executor's CacheTransceiverConfig, a request's RequestType and
// ContextPhaseParams (with its state serialized to bytes, so it can cross a process boundary), a context-only
// result's params back, and the transfer's DisServingRequestStats. Only the 1.1/1.2 API: the same source compiles
// against the real headers and the simulator's. The simulator's KV link (sim_set_kv_link) is its own control
// channel beside that API; the real build's version fails.
#include "shim_internal.h"

#ifndef TRTLLM_SHIM_REAL
#include "trtllm_sim/kv_transfer.h"
#endif

#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace trtllm::shim
{
namespace detail
{
namespace
{

tle::VecTokens toTokens(rust::Vec<std::int32_t> const& ids)
{
    return tle::VecTokens(ids.begin(), ids.end());
}

rust::Vec<std::int32_t> toRustTokens(tle::VecTokens const& ids)
{
    rust::Vec<std::int32_t> out;
    out.reserve(ids.size());
    for (auto const id : ids)
    {
        out.push_back(id);
    }
    return out;
}

} // namespace

std::optional<tle::CacheTransceiverConfig> toCacheTransceiverConfig(CacheTransceiverOptions const& o)
{
    if (!o.set)
    {
        return std::nullopt;
    }
    using Backend = tle::CacheTransceiverConfig::BackendType;
    std::optional<Backend> backend;
    switch (o.backend)
    {
    case TransceiverBackendKind::Unset: break;
    case TransceiverBackendKind::Default: backend = Backend::DEFAULT; break;
    case TransceiverBackendKind::Mpi: backend = Backend::MPI; break;
    case TransceiverBackendKind::Ucx: backend = Backend::UCX; break;
    case TransceiverBackendKind::Nixl: backend = Backend::NIXL; break;
    default: throw std::invalid_argument(enumValueMessage("cache transceiver backend", static_cast<int>(o.backend)));
    }
    tle::CacheTransceiverConfig config;
    config.setBackendType(backend);
    if (o.max_tokens_in_buffer.set)
    {
        config.setMaxTokensInBuffer(static_cast<std::size_t>(o.max_tokens_in_buffer.value));
    }
    if (o.kv_transfer_timeout_ms.set)
    {
        config.setKvTransferTimeoutMs(o.kv_transfer_timeout_ms.value);
    }
    return config;
}

void applyDisaggregation(tle::Request& request, RequestSpec const& spec)
{
    switch (spec.request_type)
    {
    case RequestTypeKind::ContextAndGeneration: return;
    case RequestTypeKind::ContextOnly: request.setRequestType(tle::RequestType::REQUEST_TYPE_CONTEXT_ONLY); break;
    case RequestTypeKind::GenerationOnly:
        request.setRequestType(tle::RequestType::REQUEST_TYPE_GENERATION_ONLY);
        break;
    default: throw std::invalid_argument(enumValueMessage("request type", static_cast<int>(spec.request_type)));
    }
    auto const& phase = spec.context_phase;
    if (!phase.set)
    {
        return;
    }
    std::optional<tle::VecTokens> draft;
    if (phase.has_draft_tokens)
    {
        draft = toTokens(phase.draft_tokens);
    }
    // The state as bytes: the constructor that deserializes what getSerializedState wrote on the context side.
    std::vector<char> const state(phase.serialized_state.begin(), phase.serialized_state.end());
    request.setContextPhaseParams(
        tle::ContextPhaseParams(toTokens(phase.first_gen_tokens), phase.request_id, state, std::move(draft)));
}

ContextPhaseItem toContextPhaseItem(tle::ContextPhaseParams const& params)
{
    ContextPhaseItem item{};
    item.set = true;
    item.request_id = params.getReqId();
    item.first_gen_tokens = toRustTokens(params.getFirstGenTokens());
    if (auto const& draft = params.getDraftTokens())
    {
        item.has_draft_tokens = true;
        item.draft_tokens = toRustTokens(*draft);
    }
    auto const state = params.getSerializedState();
    item.serialized_state.reserve(state.size());
    for (auto const byte : state)
    {
        item.serialized_state.push_back(static_cast<std::uint8_t>(byte));
    }
    return item;
}

void fillDisServingStats(RequestStatsItem& item, tle::RequestStats const& stats)
{
    if (stats.disServingStats)
    {
        item.has_dis_serving_stats = true;
        item.kv_cache_transfer_ms = stats.disServingStats->kvCacheTransferMS;
        item.kv_cache_size = static_cast<std::uint64_t>(stats.disServingStats->kvCacheSize);
    }
}

} // namespace detail

#ifdef TRTLLM_SHIM_REAL
void ExecutorHandle::sim_set_kv_link(double, double, double) const
{
    throw std::runtime_error("a simulated KV link exists only in the simulated executor");
}
#else
void ExecutorHandle::sim_set_kv_link(double bandwidthGbS, double latencyUs, double efficiency) const
{
    detail::guarded("simulated KV link",
        [&] { trtllm_sim::setKvLink(*mImpl->executor, trtllm_sim::KvLinkFigures{bandwidthGbS, latencyUs, efficiency}); });
}
#endif

} // namespace trtllm::shim
