// The executor's configuration through the shim: scheduler, KV cache, runtime knobs, parallelism,
// and the per-feature parts (PEFT cache, decoding, guided decoding) from their own files.
#include "shim_internal.h"

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace trtllm::shim::detail
{
namespace
{

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

} // namespace

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
    if (auto transceiver = toCacheTransceiverConfig(o.cache_transceiver))
    {
        config.setCacheTransceiverConfig(*transceiver);
    }
    return config;
}

} // namespace trtllm::shim::detail
