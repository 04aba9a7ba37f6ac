//! The draft-target bench target: every request runs through a [`SpeculativeExecutor`] (the draft
//! model proposes, the target verifies), recorded like any in-process request, with the loop's
//! acceptance counts for the summary's `speculative` section.

use futures::StreamExt;

use super::records::{finish_record, new_record};
use crate::bench::metrics::record::{Phase, RequestRecord, RunClock};
use crate::bench::traffic::workload::RequestSpec;
use crate::speculative::SpeculativeExecutor;
use crate::{AsyncExecutor, GenerationRequest, SamplingParams, StreamEvent};

/// A [`SpeculativeExecutor`] as a bench target: client-side times (TTFT, TPOT, ITL) are taken as
/// the loop's chunks arrive, one chunk per round.
#[derive(Debug, Clone)]
pub struct DraftTargetBench {
    speculative: SpeculativeExecutor,
}

impl DraftTargetBench {
    /// Benchmarks `speculative`.
    pub fn new(speculative: SpeculativeExecutor) -> Self {
        DraftTargetBench { speculative }
    }

    /// The target executor (its iteration statistics are the run's).
    pub fn target(&self) -> &AsyncExecutor {
        self.speculative.target()
    }

    /// The draft executor.
    pub fn draft(&self) -> &AsyncExecutor {
        self.speculative.draft()
    }

    /// Sends one request through the draft-target loop and records it to the end; never fails
    /// (errors are recorded).
    pub(crate) async fn send(&self, spec: RequestSpec, clock: &RunClock, index: u64, phase: Phase) -> RequestRecord {
        let mut request = GenerationRequest::new(spec.prompt.clone(), spec.max_tokens)
            .with_streaming(true)
            .with_sampling(SamplingParams { min_tokens: spec.min_tokens, ..Default::default() });
        if let Some(end_id) = spec.end_id {
            request = request.with_end_id(u32::try_from(end_id).ok());
        }
        let mut record = new_record(&spec, index, phase, clock.now_s());
        let mut stream = match self.speculative.enqueue(request) {
            Ok(stream) => stream,
            Err(e) => {
                record.fail(clock.now_s(), e.to_string());
                return record;
            }
        };
        while let Some(item) = stream.next().await {
            match item {
                Ok(StreamEvent::Chunk(chunk)) if spec.streaming => record.record_chunk_handled(
                    clock.offset_s(chunk.received_at),
                    chunk.token_ids.len() as u32,
                    clock.now_s(),
                ),
                Ok(StreamEvent::Chunk(_)) => {}
                Ok(StreamEvent::Final(done)) => finish_record(&mut record, &done, done.speculative, clock),
                Err(e) => record.fail(clock.now_s(), e.to_string()),
            }
        }
        record
    }
}
