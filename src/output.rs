//! What a request produces: token chunks while it runs, then one final output.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::clock::SteadyClock;
use crate::ffi::sys;
use crate::request::FinishReason;

/// The executor's own view of a request (`RequestPerfMetrics`), on the same clock as `Instant`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerfMetrics {
    /// When the executor took the request off its queue (so queue wait in the executor is excluded).
    pub arrival: Option<Instant>,
    /// When the scheduler first scheduled it.
    pub first_scheduled: Option<Instant>,
    /// When its first token was produced.
    pub first_token: Option<Instant>,
    /// When its last token was produced.
    pub last_token: Option<Instant>,
    /// KV-cache transfer start (disaggregated serving only).
    pub kv_transfer_start: Option<Instant>,
    /// KV-cache transfer end (disaggregated serving only).
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
        cached_tokens(self.num_reused_blocks, tokens_per_block, prompt_tokens)
    }
}

fn cached_tokens(reused_blocks: i32, tokens_per_block: u32, prompt_tokens: u32) -> u32 {
    let reused = u64::from(reused_blocks.max(0) as u32) * u64::from(tokens_per_block);
    reused.min(u64::from(prompt_tokens.saturating_sub(1))) as u32
}

/// New tokens of one sequence, as one executor result delivered them.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenChunk {
    /// Which sequence (0 unless `num_return_sequences` > 1).
    pub sequence_index: u32,
    /// The new token ids (usually one; more under speculative decoding).
    pub token_ids: Vec<u32>,
    /// Log probabilities of the new tokens, when asked for.
    pub log_probs: Option<Vec<f32>>,
    /// When the response thread received this chunk from the executor.
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
pub struct FinalOutput {
    /// The executor's request id.
    pub request_id: u64,
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
    /// Just before the request was handed to the executor.
    pub enqueued_at: Instant,
    /// When the first token was received.
    pub first_token_at: Option<Instant>,
    /// When the final response was received.
    pub finished_at: Instant,
    /// The executor's own timings, when asked for.
    pub perf: Option<PerfMetrics>,
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
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// New tokens.
    Chunk(TokenChunk),
    /// The request finished (the last item).
    Final(FinalOutput),
}

/// A response as the response thread routed it.
#[derive(Debug)]
pub(crate) struct Routed {
    pub(crate) item: sys::ResponseItem,
    pub(crate) received_at: Instant,
}

/// Turns routed executor responses into chunks and one final, keeping per-sequence state.
#[derive(Debug)]
pub(crate) struct Accumulator {
    request_id: u64,
    prompt_tokens: u32,
    tokens_per_block: u32,
    streaming: bool,
    /// Beam search: every result carries each returned beam in full, and beams may be rewritten
    /// until the request finishes, so beam `b` is sequence `b` and is replaced, not appended.
    whole_beams: bool,
    enqueued_at: Instant,
    first_token_at: Option<Instant>,
    sequences: Vec<SequenceOutput>,
}

impl Accumulator {
    pub(crate) fn new(
        request_id: u64,
        prompt_tokens: u32,
        tokens_per_block: u32,
        sequences: u32,
        streaming: bool,
        beam_search: bool,
        enqueued_at: Instant,
    ) -> Self {
        let sequences = (0..sequences.max(1)).map(empty_sequence).collect();
        Accumulator {
            request_id,
            prompt_tokens,
            tokens_per_block,
            streaming,
            whole_beams: beam_search,
            enqueued_at,
            first_token_at: None,
            sequences,
        }
    }

    pub(crate) fn num_sequences(&self) -> usize {
        self.sequences.len()
    }

    pub(crate) fn enqueued_at(&self) -> Instant {
        self.enqueued_at
    }

    /// Prompt tokens served from reused KV blocks, when the result carries perf metrics.
    fn cached_tokens(&self, item: &sys::ResponseItem) -> Option<u32> {
        item.has_perf_metrics
            .then(|| cached_tokens(item.perf_metrics.num_reused_blocks, self.tokens_per_block, self.prompt_tokens))
    }

    /// Makes sure sequence `slot` exists: more sequences than asked for are kept, never dropped.
    fn ensure_slot(&mut self, slot: usize) {
        for i in self.sequences.len()..=slot {
            self.sequences.push(empty_sequence(i as u32));
        }
    }

    /// Applies one successful result; pushes a chunk (if it carries tokens) and, if final, the final.
    pub(crate) fn apply(&mut self, routed: Routed, clock: &SteadyClock, out: &mut Vec<StreamEvent>) {
        if self.whole_beams {
            return self.apply_beams(routed, clock, out);
        }
        let Routed { mut item, received_at } = routed;
        let index = u32::try_from(item.sequence_index).unwrap_or(0);
        let slot = index as usize;
        self.ensure_slot(slot);
        // Beam 0 is the sequence; the vectors may be empty (cancelled or timed-out finals).
        let new_tokens: Vec<u32> = if item.output_token_ids.is_empty() {
            Vec::new()
        } else {
            std::mem::take(&mut item.output_token_ids[0].ids).into_iter().map(|t| t.max(0) as u32).collect()
        };
        let new_log_probs =
            if item.log_probs.is_empty() { None } else { Some(std::mem::take(&mut item.log_probs[0].values)) };
        let cached_tokens = self.cached_tokens(&item);
        let sequence = &mut self.sequences[slot];
        if !new_tokens.is_empty() && self.first_token_at.is_none() {
            self.first_token_at = Some(received_at);
        }
        sequence.token_ids.extend_from_slice(&new_tokens);
        // Log probs come per new token in delta mode, but a result may also carry the whole
        // sequence's; tell the two apart by length so neither duplicates nor drops values.
        let new_log_probs = new_log_probs.map(|lp| {
            let total = sequence.token_ids.len();
            let kept = sequence.log_probs.get_or_insert_with(Vec::new);
            if lp.len() == total && lp.len() != new_tokens.len() {
                *kept = lp;
            } else {
                kept.extend_from_slice(&lp);
            }
            kept[kept.len().saturating_sub(new_tokens.len())..].to_vec()
        });
        if let Some(&cum) = item.cum_log_probs.first() {
            sequence.cum_log_prob = Some(cum);
        }
        if item.is_sequence_final || item.is_final {
            let raw = item.finish_reasons.first().copied().unwrap_or(0);
            sequence.finish_reason = FinishReason::from_raw(raw);
        }
        if self.streaming && !new_tokens.is_empty() {
            out.push(StreamEvent::Chunk(TokenChunk {
                sequence_index: index,
                completion_tokens: sequence.token_ids.len() as u32,
                token_ids: new_tokens,
                log_probs: new_log_probs,
                received_at,
                prompt_tokens: self.prompt_tokens,
                cached_tokens,
            }));
        }
        if item.is_final {
            self.push_final(&item, received_at, clock, out);
        }
    }

    /// Beam search: each result replaces every returned beam. Beams are provisional until the
    /// request finishes, so a streaming request gets one chunk per beam (all its tokens) at the end.
    fn apply_beams(&mut self, routed: Routed, clock: &SteadyClock, out: &mut Vec<StreamEvent>) {
        let Routed { mut item, received_at } = routed;
        let beams = std::mem::take(&mut item.output_token_ids);
        let mut log_probs = std::mem::take(&mut item.log_probs).into_iter();
        if beams.iter().any(|b| !b.ids.is_empty()) && self.first_token_at.is_none() {
            self.first_token_at = Some(received_at);
        }
        for (slot, beam) in beams.into_iter().enumerate() {
            self.ensure_slot(slot);
            let sequence = &mut self.sequences[slot];
            // A result without tokens (a cancelled final) keeps what the beam had.
            if !beam.ids.is_empty() {
                sequence.token_ids = beam.ids.into_iter().map(|t| t.max(0) as u32).collect();
            }
            if let Some(lp) = log_probs.next() {
                sequence.log_probs = Some(lp.values);
            }
            if let Some(&cum) = item.cum_log_probs.get(slot) {
                sequence.cum_log_prob = Some(cum);
            }
            if item.is_final {
                let raw = item.finish_reasons.get(slot).or(item.finish_reasons.first()).copied().unwrap_or(0);
                sequence.finish_reason = FinishReason::from_raw(raw);
            }
        }
        if !item.is_final {
            return;
        }
        if self.streaming {
            let cached_tokens = self.cached_tokens(&item);
            for sequence in self.sequences.iter().filter(|s| !s.token_ids.is_empty()) {
                out.push(StreamEvent::Chunk(TokenChunk {
                    sequence_index: sequence.index,
                    completion_tokens: sequence.token_ids.len() as u32,
                    token_ids: sequence.token_ids.clone(),
                    log_probs: sequence.log_probs.clone(),
                    received_at,
                    prompt_tokens: self.prompt_tokens,
                    cached_tokens,
                }));
            }
        }
        self.push_final(&item, received_at, clock, out);
    }

    fn push_final(
        &mut self,
        item: &sys::ResponseItem,
        received_at: Instant,
        clock: &SteadyClock,
        out: &mut Vec<StreamEvent>,
    ) {
        let perf = item.has_perf_metrics.then(|| PerfMetrics::from_ffi(&item.perf_metrics, clock));
        let cached_tokens = self.cached_tokens(item);
        let sequences = std::mem::take(&mut self.sequences);
        out.push(StreamEvent::Final(FinalOutput {
            request_id: self.request_id,
            finish_reason: sequences.first().map_or(FinishReason::NotFinished, |s| s.finish_reason),
            completion_tokens: sequences.iter().map(|s| s.token_ids.len() as u32).sum(),
            sequences,
            prompt_tokens: self.prompt_tokens,
            cached_tokens,
            decoding_iterations: u32::try_from(item.decoding_iter).unwrap_or(0),
            enqueued_at: self.enqueued_at,
            first_token_at: self.first_token_at,
            finished_at: received_at,
            perf,
        }));
    }
}

fn empty_sequence(index: u32) -> SequenceOutput {
    SequenceOutput {
        index,
        token_ids: Vec::new(),
        finish_reason: FinishReason::NotFinished,
        log_probs: None,
        cum_log_prob: None,
    }
}
