//! Protocol messages to crate types and back, and crate errors to gRPC status codes.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tonic::{Code, Status};

use crate::proto::trtllm as pb;
use crate::types::speculative::{LookaheadConfig, SpeculativeRequest};
use crate::{Error, ErrorKind, GenerationRequest, PerfMetrics, SamplingParams};

/// Maps a crate error onto the gRPC status a client should see, by its [`ErrorKind`].
///
/// An executor that fails, during enqueue or mid-stream, is UNAVAILABLE (try another server); a
/// request the executor refused when admitting it is INVALID_ARGUMENT.
pub fn status(error: &Error) -> Status {
    Status::new(code(error.kind()), error.to_string())
}

/// The gRPC code of an error kind.
pub fn code(kind: ErrorKind) -> Code {
    match kind {
        ErrorKind::InvalidRequest => Code::InvalidArgument,
        ErrorKind::Overloaded => Code::ResourceExhausted,
        ErrorKind::Unavailable => Code::Unavailable,
        ErrorKind::Configuration => Code::FailedPrecondition,
        ErrorKind::RequestFailed | ErrorKind::Internal => Code::Internal,
    }
}

/// The status of an error that ended a running request's stream. An executor error for this
/// request alone (a prompt that makes the forward pass fail) is INTERNAL, which gateways do not
/// retry; only when the executor as a whole is failing is it UNAVAILABLE (try another server).
pub fn stream_status(error: &Error, executor_failing: bool) -> Status {
    match error.kind() {
        ErrorKind::RequestFailed if executor_failing => Status::unavailable(error.to_string()),
        _ => status(error),
    }
}

/// Refuses, before any work, a non-streaming request whose single reply is certain to exceed the
/// message limit: its length is certain when nothing can end it early (`ignore_eos`, no stop
/// strings or stop tokens, no bad strings to steer it) and each token costs at least one byte
/// (plus a logprob entry of at least 7 bytes when asked for).
pub fn check_reply_fits(request: &pb::GenerateRequest, max_message_size: usize) -> Result<(), Status> {
    let certain_length = request.ignore_eos && request.stop.is_empty() && request.stop_token_ids.is_empty();
    if request.streaming || !certain_length {
        return Ok(());
    }
    let per_token = if request.output_config.as_ref().is_some_and(|o| o.logprobs.is_some()) { 8 } else { 1 };
    let least = (request.max_tokens as usize).saturating_mul(per_token);
    if least > max_message_size {
        return Err(Status::resource_exhausted(format!(
            "the reply to this non-streaming request ({} tokens) takes at least {least} bytes, over the server's \
             message limit of {max_message_size} bytes: stream it, ask for fewer tokens, or raise --max-message-size",
            request.max_tokens
        )));
    }
    Ok(())
}

/// Refuses a reply message over the limit with RESOURCE_EXHAUSTED (gRPC's code for a message
/// too large; tonic's own check would say OUT_OF_RANGE).
pub fn check_message_fits(message: &impl prost::Message, max_message_size: usize) -> Result<(), Status> {
    let size = message.encoded_len();
    if size > max_message_size {
        return Err(Status::resource_exhausted(format!(
            "a reply message of {size} bytes exceeds the server's message limit of {max_message_size} bytes: \
             stream the request, ask for fewer tokens, or raise --max-message-size"
        )));
    }
    Ok(())
}

/// Fields of `GenerateRequest` this server does not implement: naming them beats ignoring them.
pub fn reject_unsupported(request: &pb::GenerateRequest) -> Result<(), Status> {
    let unsupported = [
        ("embedding_bias", !request.embedding_bias.is_empty()),
        ("prompt_tuning_config", request.prompt_tuning_config.is_some()),
        ("multimodal_input", request.multimodal_input.is_some()),
        ("kv_cache_retention", request.kv_cache_retention.is_some()),
        ("cache_salt_id", request.cache_salt_id.is_some()),
        ("tokenized.query_token_ids", request.tokenized.as_ref().is_some_and(|t| !t.query_token_ids.is_empty())),
    ];
    if let Some((field, _)) = unsupported.iter().find(|(_, set)| *set) {
        return Err(Status::invalid_argument(format!("{field} is not supported by this server")));
    }
    if let Some(s) = &request.sampling_config {
        if !s.beam_width_array.is_empty() {
            return Err(Status::invalid_argument("sampling_config.beam_width_array is not supported by this server"));
        }
        if s.prompt_ignore_length.is_some() {
            return Err(Status::invalid_argument(
                "sampling_config.prompt_ignore_length is not supported by this server",
            ));
        }
    }
    if let Some(o) = &request.output_config {
        let unsupported = [
            ("output_config.prompt_logprobs", o.prompt_logprobs.is_some()),
            ("output_config.return_context_logits", o.return_context_logits),
            ("output_config.return_generation_logits", o.return_generation_logits),
            ("output_config.return_encoder_output", o.return_encoder_output),
        ];
        if let Some((field, _)) = unsupported.iter().find(|(_, set)| *set) {
            return Err(Status::invalid_argument(format!("{field} is not supported by this server")));
        }
    }
    Ok(())
}

/// The sampling parameters of a request (`None` fields keep the executor's defaults).
pub fn sampling(config: Option<&pb::SamplingConfig>) -> Result<SamplingParams, Status> {
    let Some(s) = config else { return Ok(SamplingParams::default()) };
    let non_negative = |field: &str, v: Option<i32>| -> Result<Option<u32>, Status> {
        v.map(|v| {
            u32::try_from(v)
                .map_err(|_| Status::invalid_argument(format!("sampling_config.{field} = {v} must be >= 0")))
        })
        .transpose()
    };
    Ok(SamplingParams {
        beam_width: if s.beam_width <= 0 { 1 } else { s.beam_width as u32 },
        num_return_sequences: (s.num_return_sequences > 0).then_some(s.num_return_sequences),
        top_k: non_negative("top_k", s.top_k)?,
        top_p: s.top_p,
        top_p_min: s.top_p_min,
        top_p_reset_ids: s.top_p_reset_ids,
        top_p_decay: s.top_p_decay,
        seed: s.seed,
        temperature: s.temperature,
        min_tokens: s.min_tokens,
        beam_search_diversity_rate: s.beam_search_diversity_rate,
        repetition_penalty: s.repetition_penalty,
        presence_penalty: s.presence_penalty,
        frequency_penalty: s.frequency_penalty,
        length_penalty: s.length_penalty,
        early_stopping: s.early_stopping,
        no_repeat_ngram_size: non_negative("no_repeat_ngram_size", s.no_repeat_ngram_size)?,
        min_p: s.min_p,
    })
}

/// The executor request for a protocol request (stop strings and bad strings are handled by the caller).
pub fn generation_request(
    request: &pb::GenerateRequest,
    eos_token_id: Option<u32>,
    bad_words: Vec<Vec<u32>>,
) -> Result<GenerationRequest, Status> {
    let prompt = request.tokenized.as_ref().map(|t| t.input_token_ids.clone()).unwrap_or_default();
    if request.max_tokens == 0 {
        return Err(Status::invalid_argument("max_tokens must be at least 1"));
    }
    let output = request.output_config.unwrap_or_default();
    let mut generation = GenerationRequest::new(prompt, request.max_tokens)
        .with_streaming(request.streaming)
        .with_sampling(sampling(request.sampling_config.as_ref())?)
        .with_log_probs(output.logprobs.is_some())
        .with_perf_metrics(true)
        .with_stop_words(request.stop_token_ids.iter().map(|&t| vec![t]).collect());
    let mut bad = bad_words;
    bad.extend(request.bad_token_ids.iter().map(|&t| vec![t]));
    if !bad.is_empty() {
        generation = generation.with_bad_words(bad);
    }
    match (request.ignore_eos, eos_token_id) {
        (true, _) => generation = generation.with_end_id(None),
        (false, Some(eos)) => generation = generation.with_end_id(eos),
        (false, None) => {}
    }
    if let Some(lookahead) = &request.lookahead_config {
        generation = generation.with_speculative(SpeculativeRequest {
            lookahead: Some(lookahead_config(lookahead)?),
            ..Default::default()
        });
    }
    if let Some(guide) = super::guided::guided_decoding(request)? {
        generation = generation.with_guided_decoding(guide);
    }
    Ok(generation)
}

/// A request's `lookahead_config`: every size must be positive (the executor then checks them
/// against its own lookahead settings and the engine's mode).
fn lookahead_config(config: &pb::LookaheadConfig) -> Result<LookaheadConfig, Status> {
    let positive = |field: &str, v: i32| {
        u32::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| Status::invalid_argument(format!("lookahead_config.{field} = {v} must be positive")))
    };
    Ok(LookaheadConfig {
        window_size: positive("max_window_size", config.max_window_size)?,
        ngram_size: positive("max_ngram_size", config.max_ngram_size)?,
        verification_set_size: positive("max_verification_set_size", config.max_verification_set_size)?,
    })
}

/// Converts `Instant`s to seconds since the Unix epoch through one anchor taken at startup.
#[derive(Debug, Clone, Copy)]
pub struct WallClock {
    instant: Instant,
    unix: Duration,
}

impl WallClock {
    /// Takes the anchor now.
    pub fn now() -> Self {
        WallClock { instant: Instant::now(), unix: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default() }
    }

    /// Seconds since the Unix epoch of `t`; 0 when unknown.
    pub fn seconds(&self, t: Option<Instant>) -> f64 {
        let Some(t) = t else { return 0.0 };
        let unix = match t.checked_duration_since(self.instant) {
            Some(after) => self.unix + after,
            None => self.unix.saturating_sub(self.instant - t),
        };
        unix.as_secs_f64()
    }

    /// The protocol's `PerfMetrics`.
    pub fn perf_metrics(&self, perf: &PerfMetrics) -> pb::PerfMetrics {
        pb::PerfMetrics {
            arrival_time: self.seconds(perf.arrival),
            first_scheduled_time: self.seconds(perf.first_scheduled),
            first_token_time: self.seconds(perf.first_token),
            last_token_time: self.seconds(perf.last_token),
            kv_cache_transfer_start: self.seconds(perf.kv_transfer_start),
            kv_cache_transfer_end: self.seconds(perf.kv_transfer_end),
            kv_cache_size: i64::try_from(perf.kv_cache_size).unwrap_or(i64::MAX),
        }
    }
}

/// Parses a `grpc-timeout` header value (`<digits><unit>`: at most 8 digits, as the gRPC spec
/// says, and a unit among H M S m u n).
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let (digits, unit) = value.split_at(value.len().checked_sub(1)?);
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(amount.checked_mul(3600)?),
        "M" => Duration::from_secs(amount.checked_mul(60)?),
        "S" => Duration::from_secs(amount),
        "m" => Duration::from_millis(amount),
        "u" => Duration::from_micros(amount),
        "n" => Duration::from_nanos(amount),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_parse() {
        assert_eq!(parse_grpc_timeout("100m"), Some(Duration::from_millis(100)));
        assert_eq!(parse_grpc_timeout("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("x"), None);
        assert_eq!(parse_grpc_timeout(""), None);
        assert_eq!(parse_grpc_timeout("5q"), None);
        assert_eq!(parse_grpc_timeout("99999999H"), Some(Duration::from_secs(99_999_999 * 3600)));
        assert_eq!(parse_grpc_timeout("184467440737095516S"), None, "more than 8 digits");
        assert_eq!(parse_grpc_timeout("+5S"), None);
    }

    #[test]
    fn errors_map_to_the_right_codes() {
        let invalid = Error::InvalidRequest(crate::InvalidRequest::EmptyPrompt);
        assert_eq!(status(&invalid).code(), Code::InvalidArgument);
        assert_eq!(status(&Error::QueueFull("full".into())).code(), Code::ResourceExhausted);
        assert_eq!(status(&Error::ShutDown).code(), Code::Unavailable);
        assert_eq!(status(&Error::Draining).code(), Code::Unavailable);
        assert_eq!(status(&Error::ExecutorFailed("boom".into())).code(), Code::Unavailable);
        assert_eq!(status(&Error::StreamEnded).code(), Code::Unavailable);
        let refused = Error::from_response("Encountered an error when fetching new request: bad beam");
        assert_eq!(status(&refused).code(), Code::InvalidArgument);
        assert!(!status(&refused).message().contains("Encountered"), "{}", status(&refused).message());
        let failed = Error::from_response("Encountered an error in forwardAsync function: boom");
        assert_eq!(stream_status(&failed, false).code(), Code::Internal);
        assert_eq!(stream_status(&failed, true).code(), Code::Unavailable);
        for kind in [ErrorKind::InvalidRequest, ErrorKind::Overloaded, ErrorKind::Unavailable, ErrorKind::Configuration]
        {
            assert_eq!(code(kind) as i32, kind.grpc_code().1, "{kind:?}");
        }
    }
}
