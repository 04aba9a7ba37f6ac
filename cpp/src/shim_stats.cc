// The executor's statistics and KV-cache events, converted for Rust: iteration stats (with their KV
// and in-flight-batching parts), per-request stats, and KV events. Part of the shim (shim.cc uses
// these, declared in shim_internal.h); the same source compiles in the real and the simulated build.
#include "shim_internal.h"

#include <cstdint>
#include <utility>
#include <variant>

namespace trtllm::shim::detail
{

namespace
{

// One case per enumerator, no default: see the enum conversions in shim.cc.
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

} // namespace

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
    // ---- Speculative decoding ----
    if (s.specDecodingStats)
    {
        auto const& d = *s.specDecodingStats;
        it.has_spec_decoding_stats = true;
        it.spec_decoding_stats = SpecDecodingStatsItem{static_cast<std::int64_t>(d.numDraftTokens),
            static_cast<std::int64_t>(d.numAcceptedTokens), static_cast<std::int64_t>(d.numRequestsWithDraftTokens),
            d.acceptanceLength, d.iterLatencyMS, d.draftOverhead};
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
    fillDisServingStats(r, s);
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

} // namespace trtllm::shim::detail
