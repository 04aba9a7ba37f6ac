//! Filling a request's record from what the in-process executor returns: shared by the targets
//! that run requests in this process (plain and draft-target).

use crate::FinalOutput;
use crate::bench::metrics::record::{Phase, RequestRecord, RunClock};
use crate::bench::metrics::speculative::SpecCounts;
use crate::bench::traffic::workload::RequestSpec;
use crate::types::speculative::SpeculativeMetrics;

/// A record for `spec`, sent at `send_s`.
pub(crate) fn new_record(spec: &RequestSpec, index: u64, phase: Phase, send_s: f64) -> RequestRecord {
    let mut record = RequestRecord::new(index, phase, send_s);
    record.streaming = spec.streaming;
    record.prompt_tokens = spec.prompt.len() as u64;
    record.expected_output_tokens = spec.expected_output_tokens;
    record.session = spec.session.map(|s| s.session);
    record.turn = spec.session.map(|s| s.turn);
    // One chunk per token at most: room for them up front, so recording a token never
    // reallocates (capped: a wrong guess costs only a regrowth).
    if spec.streaming {
        record.chunks.reserve(spec.max_tokens.min(4096) as usize);
    }
    record
}

/// Ends `record` with a request's final: its end, output tokens and finish reason, and the draft
/// tokens `speculative` counts when the request speculated.
pub(crate) fn finish_record(
    record: &mut RequestRecord,
    done: &FinalOutput,
    speculative: Option<SpeculativeMetrics>,
    clock: &RunClock,
) {
    // A session's next turn carries this answer: without streamed chunks, take it from the final.
    if record.session.is_some()
        && record.answer_ids.is_empty()
        && let Some(sequence) = done.sequences.first()
    {
        record.answer_ids = sequence.token_ids.clone();
    }
    if let Some(s) = speculative.filter(|s| s.draft_tokens > 0) {
        record.speculative = Some(SpecCounts {
            decoding_steps: u64::from(done.decoding_iterations),
            accepted_draft_tokens: u64::from(s.accepted_draft_tokens),
            draft_tokens: u64::from(s.draft_tokens),
        });
    }
    record.finish(
        clock.offset_s(done.finished_at),
        u64::from(done.completion_tokens),
        Some(done.finish_reason.as_openai_str().to_owned()),
    );
}
