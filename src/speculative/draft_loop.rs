//! One speculative request's rounds: draft `k` tokens, verify them on the target, emit the run.

use std::time::Instant;

use futures::{FutureExt, StreamExt};
use tokio::sync::mpsc;

use super::draft_length::DraftLength;
use crate::error::{Error, Result};
use crate::executor::{AsyncExecutor, GenerationStream};
use crate::types::output::{FinalOutput, SequenceOutput, StreamEvent, TokenChunk};
use crate::types::request::{FinishReason, GenerationRequest};
use crate::types::speculative::{DraftTokens, SpeculativeMetrics};

pub(super) struct DraftLoop {
    draft: AsyncExecutor,
    target: AsyncExecutor,
    length: DraftLength,
    request: GenerationRequest,
}

/// What one verification round returned.
struct Verified {
    tokens: Vec<u32>,
    finish: Option<FinishReason>,
}

impl DraftLoop {
    pub(super) fn new(
        draft: AsyncExecutor,
        target: AsyncExecutor,
        length: DraftLength,
        request: GenerationRequest,
    ) -> Self {
        DraftLoop { draft, target, length, request }
    }

    pub(super) async fn run(self, tx: mpsc::Sender<Result<StreamEvent>>) {
        let item = match self.rounds(&tx).await {
            Ok(done) => Ok(StreamEvent::Final(done)),
            Err(e) => Err(e),
        };
        let _ = tx.send(item).await;
    }

    /// A request for `context` with the user's sampling, end id and stop words. The user's
    /// `min_tokens` counts from the prompt: a round asks for what is still missing, at most its own
    /// `max_tokens`.
    fn round_request(&self, context: Vec<u32>, max_tokens: u32) -> GenerationRequest {
        let r = &self.request;
        let generated = (context.len() - r.prompt().len()) as u32;
        let mut sampling = r.sampling().clone();
        sampling.min_tokens = sampling.min_tokens.map(|min| min.saturating_sub(generated).min(max_tokens));
        let mut round = GenerationRequest::new(context, max_tokens)
            .with_sampling(sampling)
            .with_stop_words(r.stop_words().to_vec())
            .with_perf_metrics(false);
        if let Some(end_id) = r.end_id() {
            round = round.with_end_id(end_id);
        }
        round
    }

    async fn rounds(&self, tx: &mpsc::Sender<Result<StreamEvent>>) -> Result<FinalOutput> {
        let enqueued_at = Instant::now();
        let max_tokens = self.request.max_tokens();
        let prompt = self.request.prompt().to_vec();
        let mut generated: Vec<u32> = Vec::new();
        let (mut steps, mut accepted_total, mut drafted_total) = (0u32, 0u32, 0u32);
        let mut first_token_at = None;
        let mut k = self.length.initial;
        let finish = loop {
            let remaining = max_tokens - generated.len() as u32;
            let context: Vec<u32> = prompt.iter().chain(&generated).copied().collect();
            // Drafting more than the target may still emit (minus its own token) is wasted.
            let want = k.min(remaining.saturating_sub(1));
            let drafts = if want == 0 { Vec::new() } else { self.propose(context.clone(), want).await? };
            // One verification step emits at most the drafts + 1: capping the round there lets a
            // round whose drafts are all accepted end in that step, with nothing to cancel.
            let cap = remaining.min(drafts.len() as u32 + 1);
            let verified = self.verify(context, cap, &drafts).await?;
            steps += 1;
            let accepted = drafts.iter().zip(&verified.tokens).take_while(|(d, t)| d == t).count() as u32;
            let accepted = accepted.min((verified.tokens.len() as u32).saturating_sub(1));
            accepted_total += accepted;
            drafted_total += drafts.len() as u32;
            k = self.length.next(k, accepted, drafts.len() as u32);
            if !verified.tokens.is_empty() {
                let now = Instant::now();
                first_token_at.get_or_insert(now);
                generated.extend(&verified.tokens);
                let chunk = TokenChunk {
                    sequence_index: 0,
                    token_ids: verified.tokens,
                    log_probs: None,
                    received_at: now,
                    completion_tokens: generated.len() as u32,
                    prompt_tokens: prompt.len() as u32,
                    cached_tokens: None,
                };
                if tx.send(Ok(StreamEvent::Chunk(chunk))).await.is_err() {
                    // The consumer is gone: stop drafting (dropping this future cancels nothing
                    // further; the round's streams were already consumed).
                    return Err(Error::StreamEnded);
                }
            }
            match verified.finish {
                // The round's own cap is not the request's length limit (checked below).
                Some(FinishReason::Length) if (generated.len() as u32) < max_tokens => {}
                Some(reason) => break reason,
                None if generated.len() as u32 >= max_tokens => break FinishReason::Length,
                None => {}
            }
        };
        let completion_tokens = generated.len() as u32;
        let rate = if drafted_total > 0 { accepted_total as f32 / drafted_total as f32 } else { 0.0 };
        Ok(FinalOutput {
            request_id: crate::RequestId::new(0),
            finish_reason: finish,
            sequences: vec![SequenceOutput {
                index: 0,
                token_ids: generated,
                finish_reason: finish,
                log_probs: None,
                cum_log_prob: None,
            }],
            prompt_tokens: prompt.len() as u32,
            cached_tokens: None,
            speculative: None,
            completion_tokens,
            decoding_iterations: steps,
            avg_decoded_tokens_per_iter: if steps > 0 { completion_tokens as f32 / steps as f32 } else { 0.0 },
            enqueued_at,
            first_token_at,
            finished_at: Instant::now(),
            handoff: None,
            perf: None,
        })
        .map(|done| with_speculative(done, rate, accepted_total, drafted_total))
    }

    /// The draft model's next `k` tokens after `context` (fewer if it stops early).
    async fn propose(&self, context: Vec<u32>, k: u32) -> Result<Vec<u32>> {
        let request = self.round_request(context, k).with_streaming(false);
        let done = self.draft.enqueue(request)?.collect_final().await?;
        Ok(done.token_ids().to_vec())
    }

    /// The target's verification step: its first response carries the accepted drafts and its
    /// own token. The rest of the round request is cancelled (the stream is dropped).
    async fn verify(&self, context: Vec<u32>, remaining: u32, drafts: &[u32]) -> Result<Verified> {
        let mut request = self.round_request(context, remaining);
        if !drafts.is_empty() {
            request = request.with_draft_tokens(DraftTokens { tokens: drafts.to_vec(), acceptance_threshold: None });
        }
        let mut stream: GenerationStream = self.target.enqueue(request)?;
        match stream.next().await {
            Some(Ok(StreamEvent::Chunk(chunk))) => {
                // A step that also ended the request delivers its final in the same response.
                let finish = match stream.next().now_or_never() {
                    Some(Some(Ok(StreamEvent::Final(done)))) if done.finish_reason != FinishReason::NotFinished => {
                        Some(done.finish_reason)
                    }
                    _ => None,
                };
                Ok(Verified { tokens: chunk.token_ids, finish })
            }
            Some(Ok(StreamEvent::Final(done))) => {
                let finish = match done.finish_reason {
                    FinishReason::NotFinished => None,
                    reason => Some(reason),
                };
                Ok(Verified { tokens: done.token_ids().to_vec(), finish })
            }
            Some(Err(e)) => Err(e),
            None => Err(Error::StreamEnded),
        }
    }
}

/// Attaches the acceptance counts (there are no executor perf metrics for a loop of requests).
fn with_speculative(mut done: FinalOutput, rate: f32, accepted: u32, drafted: u32) -> FinalOutput {
    done.speculative =
        Some(SpeculativeMetrics { acceptance_rate: rate, accepted_draft_tokens: accepted, draft_tokens: drafted });
    done
}
