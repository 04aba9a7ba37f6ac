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

/// A chunk message for `chunk`, taking its token ids rather than copying them.
pub(crate) fn chunk_message(request_id: &str, chunk: TokenChunk) -> pb::GenerateResponse {
    let logprobs = logprobs(&chunk.token_ids, chunk.log_probs.as_deref());
    pb::GenerateResponse {
        request_id: request_id.to_string(),
        response: Some(pb::generate_response::Response::Chunk(pb::GenerateStreamChunk {
            token_ids: chunk.token_ids,
            sequence_index: chunk.sequence_index,
            prompt_tokens: chunk.prompt_tokens,
            completion_tokens: chunk.completion_tokens,
            cached_tokens: chunk.cached_tokens.unwrap_or(0),
            logprobs,
        })),
    }
}

/// Appends `chunk` (a later chunk of the same request) to the chunk message `pending`, so a
/// client that lags gets one message for everything that waited instead of one per token.
/// Returns `chunk` untouched when it cannot join: another sequence, or `pending` would grow past
/// `max_size` bytes.
pub(crate) fn coalesce(pending: &mut pb::GenerateResponse, chunk: TokenChunk, max_size: usize) -> Option<TokenChunk> {
    use prost::Message;
    let Some(pb::generate_response::Response::Chunk(into)) = pending.response.as_mut() else { return Some(chunk) };
    if into.sequence_index != chunk.sequence_index {
        return Some(chunk);
    }
    // A bound without encoding: a token id takes at most 5 bytes, with its log prob entry 21,
    // and the rest of the message well under 64 bytes besides the request id. Only a message
    // near the limit is measured exactly.
    let tokens = into.token_ids.len() + chunk.token_ids.len();
    let bound = pending.request_id.len() + 64 + tokens * 21;
    if bound > max_size {
        let grows = chunk.token_ids.len() * if chunk.log_probs.is_some() { 21 } else { 5 };
        if pending.encoded_len() + grows > max_size {
            return Some(chunk);
        }
    }
    let Some(pb::generate_response::Response::Chunk(into)) = pending.response.as_mut() else { return Some(chunk) };
    into.logprobs.extend(logprobs(&chunk.token_ids, chunk.log_probs.as_deref()));
    into.token_ids.extend_from_slice(&chunk.token_ids);
    into.completion_tokens = chunk.completion_tokens;
    into.cached_tokens = chunk.cached_tokens.unwrap_or(into.cached_tokens);
    None
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
                    finish_reason: super::disagg::finish_word(seq.finish_reason, done).to_string(),
                    prompt_tokens: done.prompt_tokens,
                    cached_tokens: cached,
                    prompt_logprobs: Vec::new(),
                    perf_metrics: if ctx.perf { done.perf.as_ref().map(|p| ctx.wall.perf_metrics(p)) } else { None },
                    context_logits: None,
                    generation_logits: None,
                    spec_accepted_tokens: done.perf.as_ref().map_or(0, |p| p.speculative.accepted_draft_tokens),
                    spec_draft_tokens: done.perf.as_ref().map_or(0, |p| p.speculative.draft_tokens),
                    matched_stop: matched,
                    kv_handoff: done.handoff.as_ref().map(crate::KvHandoff::to_bytes),
                })),
            }
        })
        .collect()
}
