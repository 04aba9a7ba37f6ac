//! The Generate reply messages built from executor events: a chunk per executor chunk, one
//! `complete` per sequence at the end; and the stream type every streaming call answers with.

use std::pin::Pin;

use futures::Stream;
use tonic::Status;

use super::convert::WallClock;
use crate::proto::trtllm as pb;
use crate::{FinalOutput, FinishReason, TokenChunk};

/// The stream a streaming call answers with.
pub(crate) type ResponseStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// A chunk message for `chunk`.
pub(crate) fn chunk_message(request_id: &str, chunk: &TokenChunk) -> pb::GenerateResponse {
    pb::GenerateResponse {
        request_id: request_id.to_string(),
        response: Some(pb::generate_response::Response::Chunk(pb::GenerateStreamChunk {
            token_ids: chunk.token_ids.clone(),
            sequence_index: chunk.sequence_index,
            prompt_tokens: chunk.prompt_tokens,
            completion_tokens: chunk.completion_tokens,
            cached_tokens: chunk.cached_tokens.unwrap_or(0),
            logprobs: logprobs(&chunk.token_ids, chunk.log_probs.as_deref()),
        })),
    }
}

fn logprobs(ids: &[u32], values: Option<&[f32]>) -> Vec<pb::TokenLogprob> {
    let Some(values) = values else { return Vec::new() };
    ids.iter()
        .zip(values)
        .map(|(&token_id, &logprob)| pb::TokenLogprob { token_id, logprob, top_logprobs: Vec::new() })
        .collect()
}

/// What the final messages of a request need to know about it.
#[derive(Debug)]
pub(crate) struct ReplyContext {
    pub(crate) request_id: String,
    pub(crate) stop_token_ids: Vec<u32>,
    pub(crate) include_stop_token: bool,
    pub(crate) perf: bool,
    pub(crate) wall: WallClock,
}

/// One `complete` per sequence, each with the stop that sequence matched.
pub(crate) fn complete_messages(
    ctx: &ReplyContext,
    done: &FinalOutput,
    matched_stops: &[Option<String>],
) -> Vec<pb::GenerateResponse> {
    let cached = done.cached_tokens.unwrap_or(0);
    done.sequences
        .iter()
        .map(|seq| {
            let mut ids = seq.token_ids.clone();
            let mut matched = None;
            if let Some(Some(stop)) = matched_stops.get(seq.index as usize) {
                matched = Some(pb::generate_complete::MatchedStop::MatchedStopStr(stop.clone()));
            } else if seq.finish_reason == FinishReason::StopWords
                && let Some(&last) = ids.last()
                && ctx.stop_token_ids.contains(&last)
            {
                matched = Some(pb::generate_complete::MatchedStop::MatchedTokenId(last));
                if !ctx.include_stop_token {
                    ids.pop();
                }
            }
            pb::GenerateResponse {
                request_id: ctx.request_id.clone(),
                response: Some(pb::generate_response::Response::Complete(pb::GenerateComplete {
                    completion_tokens: ids.len() as u32,
                    logprobs: logprobs(&ids, seq.log_probs.as_deref()),
                    output_token_ids: ids,
                    sequence_index: seq.index,
                    finish_reason: seq.finish_reason.as_openai_str().to_string(),
                    prompt_tokens: done.prompt_tokens,
                    cached_tokens: cached,
                    prompt_logprobs: Vec::new(),
                    perf_metrics: if ctx.perf { done.perf.as_ref().map(|p| ctx.wall.perf_metrics(p)) } else { None },
                    context_logits: None,
                    generation_logits: None,
                    spec_accepted_tokens: done.perf.as_ref().map_or(0, |p| p.speculative.accepted_draft_tokens),
                    spec_draft_tokens: done.perf.as_ref().map_or(0, |p| p.speculative.draft_tokens),
                    matched_stop: matched,
                })),
            }
        })
        .collect()
}
