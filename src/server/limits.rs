//! Bounds on what one Generate request may ask for, so that numbers and lists from the network
//! cannot make the server allocate, echo or enqueue without limit. Each refusal is
//! INVALID_ARGUMENT naming the protocol field and the limit.

use tonic::Status;

use crate::Executor;
use crate::proto::trtllm as pb;

/// Longest `request_id` accepted: it is echoed in every response message and kept while the
/// request runs.
pub const MAX_REQUEST_ID_BYTES: usize = 1024;
/// Most entries in each of `stop`, `stop_token_ids`, `bad` and `bad_token_ids`.
pub const MAX_LIST_ENTRIES: usize = 1024;
/// Longest single `stop` or `bad` string.
pub const MAX_STRING_BYTES: usize = 4096;

/// The limits of one server, from its executor's configuration and engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLimits {
    /// Sequences one request may return: each takes a batch slot, so the executor's batch size
    /// (its `max_batch_size`, else the engine's).
    pub max_return_sequences: u32,
    /// The executor's `max_beam_width`.
    pub max_beam_width: u32,
    /// Token ids must be below this.
    pub vocab_size: usize,
}

impl RequestLimits {
    /// The limits `executor` imposes.
    pub fn of(executor: &Executor) -> Self {
        let engine = executor.engine();
        let config = executor.config();
        RequestLimits {
            max_return_sequences: u32::try_from(executor.max_batch_size()).unwrap_or(u32::MAX),
            max_beam_width: config.max_beam_width.min(u32::try_from(engine.max_beam_width()).unwrap_or(u32::MAX)),
            vocab_size: engine.vocab_size(),
        }
    }

    /// Checks the parts of `request` whose size the client controls.
    pub fn check(&self, request: &pb::GenerateRequest) -> Result<(), Status> {
        let invalid = |message: String| Err(Status::invalid_argument(message));
        if request.request_id.len() > MAX_REQUEST_ID_BYTES {
            return invalid(format!(
                "request_id is {} bytes, over the limit of {MAX_REQUEST_ID_BYTES}",
                request.request_id.len()
            ));
        }
        if let Some(s) = &request.sampling_config {
            if s.beam_width < 0 {
                return invalid(format!("sampling_config.beam_width = {} must be >= 1 (0 means 1)", s.beam_width));
            }
            if s.beam_width as u32 > self.max_beam_width {
                return invalid(format!(
                    "sampling_config.beam_width = {} exceeds this server's max beam width of {}",
                    s.beam_width, self.max_beam_width
                ));
            }
            if s.num_return_sequences > self.max_return_sequences {
                return invalid(format!(
                    "sampling_config.num_return_sequences = {} exceeds this server's limit of {} (its max batch size)",
                    s.num_return_sequences, self.max_return_sequences
                ));
            }
            if let Some(id) = s.top_p_reset_ids
                && (id < 0 || id as usize >= self.vocab_size)
            {
                return invalid(format!(
                    "sampling_config.top_p_reset_ids = {id} is outside the vocabulary (size {})",
                    self.vocab_size
                ));
            }
        }
        if let Some(logprobs) = request.output_config.and_then(|o| o.logprobs)
            && logprobs != 0
        {
            return invalid(format!(
                "output_config.logprobs = {logprobs}: only the sampled token's log probability is available \
                 (set 0); top alternatives are not supported"
            ));
        }
        for (field, count) in [
            ("stop", request.stop.len()),
            ("stop_token_ids", request.stop_token_ids.len()),
            ("bad", request.bad.len()),
            ("bad_token_ids", request.bad_token_ids.len()),
        ] {
            if count > MAX_LIST_ENTRIES {
                return invalid(format!("{field} has {count} entries, over the limit of {MAX_LIST_ENTRIES}"));
            }
        }
        for (field, strings) in [("stop", &request.stop), ("bad", &request.bad)] {
            if let Some((i, s)) = strings.iter().enumerate().find(|(_, s)| s.len() > MAX_STRING_BYTES) {
                return invalid(format!("{field}[{i}] is {} bytes, over the limit of {MAX_STRING_BYTES}", s.len()));
            }
        }
        for (field, ids) in [("stop_token_ids", &request.stop_token_ids), ("bad_token_ids", &request.bad_token_ids)] {
            if let Some((i, id)) = ids.iter().enumerate().find(|(_, id)| **id as usize >= self.vocab_size) {
                return invalid(format!("{field}[{i}] = {id} is outside the vocabulary (size {})", self.vocab_size));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> RequestLimits {
        RequestLimits { max_return_sequences: 8, max_beam_width: 1, vocab_size: 100 }
    }

    fn refused(request: pb::GenerateRequest) -> String {
        let status = limits().check(&request).unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        status.message().to_string()
    }

    fn sampling(s: pb::SamplingConfig) -> pb::GenerateRequest {
        pb::GenerateRequest { sampling_config: Some(s), ..Default::default() }
    }

    #[test]
    fn every_refusal_names_the_field_and_the_limit() {
        let huge_n = refused(sampling(pb::SamplingConfig { num_return_sequences: u32::MAX, ..Default::default() }));
        assert!(huge_n.contains("num_return_sequences") && huge_n.contains("limit of 8"), "{huge_n}");
        let beams = refused(sampling(pb::SamplingConfig { beam_width: 4, ..Default::default() }));
        assert!(beams.contains("beam_width = 4") && beams.contains("of 1"), "{beams}");
        let negative = refused(sampling(pb::SamplingConfig { beam_width: -2, ..Default::default() }));
        assert!(negative.contains("beam_width = -2"), "{negative}");
        let stop = refused(pb::GenerateRequest { stop_token_ids: vec![5, 100], ..Default::default() });
        assert!(stop.contains("stop_token_ids[1] = 100") && stop.contains("size 100"), "{stop}");
        let bad = refused(pb::GenerateRequest { bad_token_ids: vec![1000], ..Default::default() });
        assert!(bad.contains("bad_token_ids[0] = 1000"), "{bad}");
        let many = refused(pb::GenerateRequest { stop: vec!["x".into(); MAX_LIST_ENTRIES + 1], ..Default::default() });
        assert!(many.contains("stop has 1025 entries"), "{many}");
        let long = refused(pb::GenerateRequest { bad: vec!["y".repeat(MAX_STRING_BYTES + 1)], ..Default::default() });
        assert!(long.contains("bad[0]"), "{long}");
        let id =
            refused(pb::GenerateRequest { request_id: "r".repeat(MAX_REQUEST_ID_BYTES + 1), ..Default::default() });
        assert!(id.contains("request_id"), "{id}");
        let top = refused(pb::GenerateRequest {
            output_config: Some(pb::OutputConfig { logprobs: Some(5), ..Default::default() }),
            ..Default::default()
        });
        assert!(top.contains("output_config.logprobs = 5"), "{top}");
        let reset = refused(sampling(pb::SamplingConfig { top_p_reset_ids: Some(-1), ..Default::default() }));
        assert!(reset.contains("top_p_reset_ids"), "{reset}");
    }

    #[test]
    fn ordinary_requests_pass() {
        let ok = pb::GenerateRequest {
            request_id: "chatcmpl-123".into(),
            sampling_config: Some(pb::SamplingConfig { num_return_sequences: 8, beam_width: 1, ..Default::default() }),
            output_config: Some(pb::OutputConfig { logprobs: Some(0), ..Default::default() }),
            stop: vec!["\n\n".into()],
            stop_token_ids: vec![99],
            bad_token_ids: vec![0],
            ..Default::default()
        };
        assert!(limits().check(&ok).is_ok());
    }
}
