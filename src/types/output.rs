//! What a request produces: token chunks while it runs, then one final output.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::clock::SteadyClock;
use crate::ffi::sys;
use crate::types::handoff::KvHandoff;
use crate::types::request::FinishReason;
use crate::types::speculative::SpeculativeMetrics;

/// The executor's own view of a request (`RequestPerfMetrics`), on the same clock as `Instant`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[non_exhaustive]
pub struct PerfMetrics {
    /// When the executor took the request off its queue (so queue wait in the executor is excluded).
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::optional_instant"))]
    pub arrival: Option<Instant>,
    /// When the scheduler first scheduled it.
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::optional_instant"))]
    pub first_scheduled: Option<Instant>,
    /// When its first token was produced.
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::optional_instant"))]
    pub first_token: Option<Instant>,
    /// When its last token was produced.
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::optional_instant"))]
    pub last_token: Option<Instant>,
    /// KV-cache transfer start (disaggregated serving only).
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::optional_instant"))]
    pub kv_transfer_start: Option<Instant>,
    /// KV-cache transfer end (disaggregated serving only).
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::optional_instant"))]
    pub kv_transfer_end: Option<Instant>,
    /// KV-cache bytes transferred (disaggregated serving only).
    pub kv_cache_size: u64,
    /// KV blocks allocated in total.
    pub num_total_allocated_blocks: i32,
    /// KV blocks newly allocated.
    pub num_new_allocated_blocks: i32,
    /// KV blocks reused from the cache.
    pub num_reused_blocks: i32,
    /// KV blocks not found for reuse.
    pub num_missed_blocks: i32,
    /// reused / (reused + missed).
    pub kv_cache_hit_rate: f32,
    /// First iteration that processed the request.
    pub first_iter: Option<u64>,
    /// Last iteration that produced a token.
    pub last_iter: Option<u64>,
    /// The current iteration.
    pub iter: Option<u64>,
    /// Speculative decoding: draft tokens proposed and accepted.
    pub speculative: SpeculativeMetrics,
}

impl PerfMetrics {
    pub(crate) fn from_ffi(m: &sys::PerfMetricsItem, clock: &SteadyClock) -> Self {
        let iter = |v: i64| u64::try_from(v).ok();
        PerfMetrics {
            arrival: clock.instant_at(m.arrival_ns),
            first_scheduled: clock.instant_at(m.first_scheduled_ns),
            first_token: clock.instant_at(m.first_token_ns),
            last_token: clock.instant_at(m.last_token_ns),
            kv_transfer_start: clock.instant_at(m.kv_transfer_start_ns),
            kv_transfer_end: clock.instant_at(m.kv_transfer_end_ns),
            kv_cache_size: m.kv_cache_size,
            num_total_allocated_blocks: m.num_total_allocated_blocks,
            num_new_allocated_blocks: m.num_new_allocated_blocks,
            num_reused_blocks: m.num_reused_blocks,
            num_missed_blocks: m.num_missed_blocks,
            kv_cache_hit_rate: m.kv_cache_hit_rate,
            first_iter: iter(m.first_iter),
            last_iter: iter(m.last_iter),
            iter: iter(m.iter),
            speculative: SpeculativeMetrics::from_ffi(m),
        }
    }

    /// Executor-side time to first token: first token − arrival (excludes queueing before arrival).
    pub fn ttft(&self) -> Option<Duration> {
        self.first_token?.checked_duration_since(self.arrival?)
    }

    /// Executor-side queue time: first scheduled − arrival.
    pub fn queue_time(&self) -> Option<Duration> {
        self.first_scheduled?.checked_duration_since(self.arrival?)
    }

    /// Executor-side prefill time: first token − first scheduled.
    pub fn prefill_time(&self) -> Option<Duration> {
        self.first_token?.checked_duration_since(self.first_scheduled?)
    }

    /// Number of KV blocks reused: the prompt tokens served from cache are at most this × tokens per block.
    pub fn reused_blocks(&self) -> u32 {
        self.num_reused_blocks.max(0) as u32
    }

    /// Prompt tokens served from reused KV blocks: reused blocks × `tokens_per_block`, at most
    /// `prompt_tokens` − 1 (the prompt's last token is always computed).
    pub fn cached_tokens(&self, tokens_per_block: u32, prompt_tokens: u32) -> u32 {
        cached_prompt_tokens(self.num_reused_blocks, tokens_per_block, prompt_tokens)
    }
}

pub(crate) fn cached_prompt_tokens(reused_blocks: i32, tokens_per_block: u32, prompt_tokens: u32) -> u32 {
    let reused = u64::from(reused_blocks.max(0) as u32) * u64::from(tokens_per_block);
    reused.min(u64::from(prompt_tokens.saturating_sub(1))) as u32
}

/// New tokens of one sequence, as one executor result delivered them.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[non_exhaustive]
pub struct TokenChunk {
    /// Which sequence (0 unless `num_return_sequences` > 1).
    pub sequence_index: u32,
    /// The new token ids (usually one; more under speculative decoding).
    pub token_ids: Vec<u32>,
    /// Log probabilities of the new tokens, when asked for.
    pub log_probs: Option<Vec<f32>>,
    /// When the response thread received this chunk from the executor.
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::instant"))]
    pub received_at: Instant,
    /// Tokens generated so far in this sequence, this chunk included.
    pub completion_tokens: u32,
    /// Prompt tokens of the request.
    pub prompt_tokens: u32,
    /// Prompt tokens served from reused KV blocks instead of prefilled, when the executor reports it
    /// (requests with perf metrics, the default); see [`PerfMetrics::cached_tokens`].
    pub cached_tokens: Option<u32>,
}

/// The complete output of one sequence.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct SequenceOutput {
    /// Sequence index.
    pub index: u32,
    /// Every generated token id (the prompt is not included).
    pub token_ids: Vec<u32>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Log probabilities of the generated tokens, when asked for.
    pub log_probs: Option<Vec<f32>>,
    /// Cumulative log probability, when asked for.
    pub cum_log_prob: Option<f32>,
}

/// The terminal success item of a request.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[non_exhaustive]
pub struct FinalOutput {
    /// The executor's request id.
    pub request_id: crate::types::ids::RequestId,
    /// Why sequence 0 stopped (a cancelled request reports [`FinishReason::Cancelled`]).
    pub finish_reason: FinishReason,
    /// Every sequence, by index.
    pub sequences: Vec<SequenceOutput>,
    /// Prompt tokens enqueued.
    pub prompt_tokens: u32,
    /// Prompt tokens served from reused KV blocks instead of prefilled, when the executor reports it
    /// (requests with perf metrics, the default); see [`PerfMetrics::cached_tokens`].
    pub cached_tokens: Option<u32>,
    /// Generated tokens over all sequences, as counted by the executor.
    pub completion_tokens: u32,
    /// Decoding iterations used (fewer than tokens under speculative decoding).
    pub decoding_iterations: u32,
    /// Mean tokens per decoding iteration (`avgDecodedTokensPerIter`; > 1 under speculative decoding).
    pub avg_decoded_tokens_per_iter: f32,
    /// Draft tokens proposed and accepted, when the request speculated.
    pub speculative: Option<SpeculativeMetrics>,
    /// Just before the request was handed to the executor.
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::instant"))]
    pub enqueued_at: Instant,
    /// When the first token was received.
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::optional_instant"))]
    pub first_token_at: Option<Instant>,
    /// When the final response was received.
    #[cfg_attr(feature = "serde", serde(serialize_with = "super::wall_time::instant"))]
    pub finished_at: Instant,
    /// The executor's own timings, when asked for.
    pub perf: Option<PerfMetrics>,
    /// A context-only request's handoff (`Result::contextPhaseParams`): what a generation executor
    /// decodes from ([`Executor::decode`](crate::Executor::decode)). `None` for every other request.
    pub handoff: Option<KvHandoff>,
}

impl FinalOutput {
    /// Client-side time to first token (includes all queueing).
    pub fn ttft(&self) -> Option<Duration> {
        self.first_token_at.map(|t| t.saturating_duration_since(self.enqueued_at))
    }

    /// Client-side end-to-end latency.
    pub fn e2e_latency(&self) -> Duration {
        self.finished_at.saturating_duration_since(self.enqueued_at)
    }

    /// Client-side time per output token after the first: (E2E − TTFT) / (tokens − 1), for
    /// requests with more than one token.
    pub fn tpot(&self) -> Option<Duration> {
        let tokens = self.sequences.first()?.token_ids.len();
        if tokens < 2 {
            return None;
        }
        let decode = self.e2e_latency().checked_sub(self.ttft()?)?;
        Some(decode / (tokens as u32 - 1))
    }

    /// The generated token ids of sequence 0.
    pub fn token_ids(&self) -> &[u32] {
        self.sequences.first().map(|s| s.token_ids.as_slice()).unwrap_or(&[])
    }
}

/// One item of a [`GenerationStream`](crate::GenerationStream).
// One Final per request against many Chunks: boxing it would save little and change the public enum.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "type", rename_all = "snake_case"))]
pub enum StreamEvent {
    /// New tokens.
    Chunk(TokenChunk),
    /// The request finished (the last item).
    Final(FinalOutput),
}
