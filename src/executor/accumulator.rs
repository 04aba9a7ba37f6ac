//! Turns one request's routed executor responses into token chunks and exactly one final output.

use std::time::Instant;

use crate::clock::SteadyClock;
use crate::ffi::sys;
use crate::types::handoff::{EngineFingerprint, KvHandoff};
use crate::types::output::{FinalOutput, PerfMetrics, SequenceOutput, StreamEvent, TokenChunk, cached_prompt_tokens};
use crate::types::request::FinishReason;

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
    /// A context-only request: the engine its handoff comes from (stamped on the handoff with the prompt length).
    handoff_origin: Option<EngineFingerprint>,
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
            handoff_origin: None,
        }
    }

    /// Marks a context-only request: its final's handoff names `origin` and the prompt length.
    pub(crate) fn with_handoff_origin(mut self, origin: Option<EngineFingerprint>) -> Self {
        self.handoff_origin = origin;
        self
    }

    pub(crate) fn num_sequences(&self) -> usize {
        self.sequences.len()
    }

    pub(crate) fn enqueued_at(&self) -> Instant {
        self.enqueued_at
    }

    /// Prompt tokens served from reused KV blocks, when the result carries perf metrics.
    fn cached_tokens(&self, item: &sys::ResponseItem) -> Option<u32> {
        item.has_perf_metrics.then(|| {
            cached_prompt_tokens(item.perf_metrics.num_reused_blocks, self.tokens_per_block, self.prompt_tokens)
        })
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
            let reason = item.finish_reasons.first().copied().unwrap_or_default();
            sequence.finish_reason = FinishReason::from_ffi(reason);
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
                let reason = item.finish_reasons.get(slot).or(item.finish_reasons.first()).copied().unwrap_or_default();
                sequence.finish_reason = FinishReason::from_ffi(reason);
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
        let handoff = item.context_phase.first().and_then(KvHandoff::from_ffi).map(|h| match &self.handoff_origin {
            Some(origin) => h.with_origin(self.prompt_tokens, origin.clone()),
            None => h,
        });
        let sequences = std::mem::take(&mut self.sequences);
        out.push(StreamEvent::Final(FinalOutput {
            request_id: crate::RequestId::new(self.request_id),
            finish_reason: sequences.first().map_or(FinishReason::NotFinished, |s| s.finish_reason),
            completion_tokens: sequences.iter().map(|s| s.token_ids.len() as u32).sum(),
            sequences,
            prompt_tokens: self.prompt_tokens,
            cached_tokens,
            decoding_iterations: u32::try_from(item.decoding_iter).unwrap_or(0),
            avg_decoded_tokens_per_iter: item.avg_decoded_tokens_per_iter,
            speculative: perf.map(|p| p.speculative).filter(|s| s.draft_tokens > 0),
            enqueued_at: self.enqueued_at,
            first_token_at: self.first_token_at,
            finished_at: received_at,
            perf,
            handoff,
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
