//! Executor statistics: per-iteration, per-request and KV-cache figures as typed Rust values.

use serde::Serialize;

use crate::ffi::sys;
use crate::types::disagg::DisServingStats;

/// KV-cache block figures of one iteration (`KvCacheStats`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct KvCacheStats {
    /// Blocks the cache can hold.
    pub max_num_blocks: i32,
    /// Blocks free.
    pub free_num_blocks: i32,
    /// Blocks in use.
    pub used_num_blocks: i32,
    /// Tokens per block.
    pub tokens_per_block: i32,
    /// Blocks allocated in total.
    pub alloc_total_blocks: i32,
    /// Blocks newly allocated.
    pub alloc_new_blocks: i32,
    /// Blocks reused from earlier requests.
    pub reused_blocks: i32,
    /// Blocks looked up for reuse and not found.
    pub missed_blocks: i32,
    /// reused / (reused + missed).
    pub cache_hit_rate: f32,
}

impl KvCacheStats {
    /// Used blocks over capacity, in [0, 1].
    pub fn utilization(&self) -> f64 {
        if self.max_num_blocks <= 0 { 0.0 } else { f64::from(self.used_num_blocks) / f64::from(self.max_num_blocks) }
    }
}

/// In-flight batching figures of one iteration (`InflightBatchingStats`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct InflightBatchingStats {
    /// Requests scheduled this iteration.
    pub num_scheduled_requests: i32,
    /// Of which in the context (prefill) phase.
    pub num_context_requests: i32,
    /// Of which in the generation phase.
    pub num_gen_requests: i32,
    /// Requests paused for lack of KV blocks.
    pub num_paused_requests: i32,
    /// Context tokens processed this iteration.
    pub num_ctx_tokens: i32,
    /// Micro-batch index (pipeline parallelism).
    pub micro_batch_id: i32,
    /// Mean tokens decoded per request this iteration (> 1 under speculative decoding).
    pub avg_num_decoded_tokens_per_iter: f32,
}

/// Static batching figures of one iteration (`StaticBatchingStats`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct StaticBatchingStats {
    /// Requests scheduled.
    pub num_scheduled_requests: i32,
    /// Of which in the context phase.
    pub num_context_requests: i32,
    /// Context tokens.
    pub num_ctx_tokens: i32,
    /// Generation tokens.
    pub num_gen_tokens: i32,
    /// Unused generation slots.
    pub empty_gen_slots: i32,
}

/// Speculative decoding in one iteration (`SpecDecodingStats`), on engines built for a speculative mode.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SpecDecodingStats {
    /// Draft tokens verified by all requests.
    pub num_draft_tokens: i64,
    /// Draft tokens accepted by all requests.
    pub num_accepted_tokens: i64,
    /// Requests that verified at least one draft token.
    pub num_requests_with_draft_tokens: i64,
    /// Tokens per step of the requests with draft tokens (accepted drafts + 1, averaged).
    pub acceptance_length: f64,
    /// Time spent drafting, in milliseconds.
    pub iter_latency_ms: f64,
    /// The drafting's share of the iteration's latency.
    pub draft_overhead: f64,
}

/// One executor iteration (`IterationStats`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct IterationStats {
    /// End of the iteration as the executor's local wall-clock text.
    pub timestamp: String,
    /// Iteration number.
    pub iter: u64,
    /// Iteration latency in milliseconds.
    pub iter_latency_ms: f64,
    /// Sum of the queue times of requests activated this iteration, in milliseconds.
    pub new_active_requests_queue_latency_ms: f64,
    /// Requests activated this iteration.
    pub num_new_active_requests: i32,
    /// Active requests.
    pub num_active_requests: i32,
    /// Queued requests.
    pub num_queued_requests: i32,
    /// Requests completed this iteration.
    pub num_completed_requests: i32,
    /// The maximum number of active requests.
    pub max_num_active_requests: i32,
    /// Static max batch size.
    pub max_batch_size_static: i32,
    /// Runtime max batch size.
    pub max_batch_size_runtime: i32,
    /// Static max tokens per iteration.
    pub max_num_tokens_static: i32,
    /// Runtime max tokens per iteration.
    pub max_num_tokens_runtime: i32,
    /// GPU memory in use, bytes.
    pub gpu_mem_usage: u64,
    /// CPU memory in use, bytes.
    pub cpu_mem_usage: u64,
    /// Pinned memory in use, bytes.
    pub pinned_mem_usage: u64,
    /// KV-cache figures.
    pub kv_cache: Option<KvCacheStats>,
    /// In-flight batching figures.
    pub inflight_batching: Option<InflightBatchingStats>,
    /// Static batching figures.
    pub static_batching: Option<StaticBatchingStats>,
    /// Speculative-decoding figures (engines built for a speculative mode).
    pub spec_decoding: Option<SpecDecodingStats>,
}

impl IterationStats {
    /// Mean queue latency of the requests activated this iteration, in milliseconds.
    pub fn mean_new_request_queue_latency_ms(&self) -> Option<f64> {
        (self.num_new_active_requests > 0)
            .then(|| self.new_active_requests_queue_latency_ms / f64::from(self.num_new_active_requests))
    }

    /// The end of the iteration as a time: [`IterationStats::timestamp`] read as the executor
    /// writes it (local time, `%m-%d-%Y %H:%M:%S.%f`); `None` when it does not parse. Needs the
    /// `text` feature, which brings the time-zone support (chrono).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use trtllm::{Executor, ExecutorConfig, GenerationRequest};
    /// let dir = tempfile::tempdir()?;
    /// trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
    /// let executor = Executor::load(dir.path(), ExecutorConfig::default())?;
    /// let before = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
    /// executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 4))?.blocking_iter().last();
    /// executor.refresh_stats();
    /// let stats = executor.latest_iteration_stats().expect("an iteration ran");
    /// assert!(stats.time().expect("parses") >= before);
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "text")]
    pub fn time(&self) -> Option<std::time::SystemTime> {
        use chrono::TimeZone;
        let naive = chrono::NaiveDateTime::parse_from_str(self.timestamp.trim(), "%m-%d-%Y %H:%M:%S%.f").ok()?;
        let local = chrono::Local.from_local_datetime(&naive).earliest()?;
        Some(std::time::SystemTime::from(local))
    }
}

impl IterationStats {
    /// The stats of one iteration as the shim hands them over.
    pub(crate) fn from_ffi(s: sys::IterationStatsItem) -> Self {
        let k = s.kv_cache_stats;
        let b = s.inflight_batching_stats;
        let st = s.static_batching_stats;
        IterationStats {
            timestamp: s.timestamp,
            iter: s.iter,
            iter_latency_ms: s.iter_latency_ms,
            new_active_requests_queue_latency_ms: s.new_active_requests_queue_latency_ms,
            num_new_active_requests: s.num_new_active_requests,
            num_active_requests: s.num_active_requests,
            num_queued_requests: s.num_queued_requests,
            num_completed_requests: s.num_completed_requests,
            max_num_active_requests: s.max_num_active_requests,
            max_batch_size_static: s.max_batch_size_static,
            max_batch_size_runtime: s.max_batch_size_runtime,
            max_num_tokens_static: s.max_num_tokens_static,
            max_num_tokens_runtime: s.max_num_tokens_runtime,
            gpu_mem_usage: s.gpu_mem_usage,
            cpu_mem_usage: s.cpu_mem_usage,
            pinned_mem_usage: s.pinned_mem_usage,
            kv_cache: s.has_kv_cache_stats.then_some(KvCacheStats {
                max_num_blocks: k.max_num_blocks,
                free_num_blocks: k.free_num_blocks,
                used_num_blocks: k.used_num_blocks,
                tokens_per_block: k.tokens_per_block,
                alloc_total_blocks: k.alloc_total_blocks,
                alloc_new_blocks: k.alloc_new_blocks,
                reused_blocks: k.reused_blocks,
                missed_blocks: k.missed_blocks,
                cache_hit_rate: k.cache_hit_rate,
            }),
            inflight_batching: s.has_inflight_batching_stats.then_some(InflightBatchingStats {
                num_scheduled_requests: b.num_scheduled_requests,
                num_context_requests: b.num_context_requests,
                num_gen_requests: b.num_gen_requests,
                num_paused_requests: b.num_paused_requests,
                num_ctx_tokens: b.num_ctx_tokens,
                micro_batch_id: b.micro_batch_id,
                avg_num_decoded_tokens_per_iter: b.avg_num_decoded_tokens_per_iter,
            }),
            static_batching: s.has_static_batching_stats.then_some(StaticBatchingStats {
                num_scheduled_requests: st.num_scheduled_requests,
                num_context_requests: st.num_context_requests,
                num_ctx_tokens: st.num_ctx_tokens,
                num_gen_tokens: st.num_gen_tokens,
                empty_gen_slots: st.empty_gen_slots,
            }),
            spec_decoding: s.has_spec_decoding_stats.then_some(SpecDecodingStats {
                num_draft_tokens: s.spec_decoding_stats.num_draft_tokens,
                num_accepted_tokens: s.spec_decoding_stats.num_accepted_tokens,
                num_requests_with_draft_tokens: s.spec_decoding_stats.num_requests_with_draft_tokens,
                acceptance_length: s.spec_decoding_stats.acceptance_length,
                iter_latency_ms: s.spec_decoding_stats.iter_latency_ms,
                draft_overhead: s.spec_decoding_stats.draft_overhead,
            }),
        }
    }
}

/// Where a request is in its life (`RequestStage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestStage {
    /// Received, not yet active.
    Queued,
    /// Encoder phase (encoder-decoder models).
    EncoderInProgress,
    /// Prefill.
    ContextInProgress,
    /// Decoding.
    GenerationInProgress,
    /// Done.
    GenerationComplete,
    /// A value this crate does not know.
    Unknown(i32),
}

impl RequestStage {
    /// The bridge's stage; `raw` is the upstream value, kept for one the shim does not know.
    fn from_ffi(kind: sys::RequestStageKind, raw: i32) -> Self {
        match kind {
            sys::RequestStageKind::Queued => RequestStage::Queued,
            sys::RequestStageKind::EncoderInProgress => RequestStage::EncoderInProgress,
            sys::RequestStageKind::ContextInProgress => RequestStage::ContextInProgress,
            sys::RequestStageKind::GenerationInProgress => RequestStage::GenerationInProgress,
            sys::RequestStageKind::GenerationComplete => RequestStage::GenerationComplete,
            // `Unknown`, or a value outside the shared enum (cxx lets C++ pass any).
            _ => RequestStage::Unknown(raw),
        }
    }
}

/// One request in one iteration (`RequestStats`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RequestStats {
    /// The executor's request id.
    pub id: crate::types::ids::RequestId,
    /// Its stage.
    pub stage: RequestStage,
    /// Prefill position under chunked context.
    pub context_prefill_position: i32,
    /// Tokens generated so far.
    pub num_generated_tokens: i32,
    /// Mean tokens decoded per iteration.
    pub avg_num_decoded_tokens_per_iter: f32,
    /// Scheduled this iteration.
    pub scheduled: bool,
    /// Paused for lack of resources.
    pub paused: bool,
    /// Blocks allocated for it in total.
    pub alloc_total_blocks: i32,
    /// Blocks newly allocated for it.
    pub alloc_new_blocks: i32,
    /// Blocks reused for it.
    pub reused_blocks: i32,
    /// Blocks missed for it.
    pub missed_blocks: i32,
    /// Its KV hit rate.
    pub kv_cache_hit_rate: f32,
    /// A disaggregated request's KV-cache transfer (`disServingStats`), on the generation executor.
    pub dis_serving: Option<DisServingStats>,
}

/// The request stats of one iteration (`RequestStatsPerIteration`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RequestStatsPerIteration {
    /// Iteration number.
    pub iter: u64,
    /// Every active, queued and just-finished request.
    pub requests: Vec<RequestStats>,
}

impl RequestStatsPerIteration {
    /// One iteration's request stats as the shim hands them over.
    pub(crate) fn from_ffi(it: sys::RequestStatsIteration) -> Self {
        let requests = it
            .requests
            .into_iter()
            .map(|r| RequestStats {
                id: crate::types::ids::RequestId::new(r.id),
                stage: RequestStage::from_ffi(r.stage, r.stage_raw),
                context_prefill_position: r.context_prefill_position,
                num_generated_tokens: r.num_generated_tokens,
                avg_num_decoded_tokens_per_iter: r.avg_num_decoded_tokens_per_iter,
                scheduled: r.scheduled,
                paused: r.paused,
                alloc_total_blocks: r.alloc_total_blocks,
                alloc_new_blocks: r.alloc_new_blocks,
                reused_blocks: r.reused_blocks,
                missed_blocks: r.missed_blocks,
                kv_cache_hit_rate: r.kv_cache_hit_rate,
                dis_serving: DisServingStats::from_ffi(
                    r.has_dis_serving_stats,
                    r.kv_cache_transfer_ms,
                    r.kv_cache_size,
                ),
            })
            .collect();
        RequestStatsPerIteration { iter: it.iter, requests }
    }
}
