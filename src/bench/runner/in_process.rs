//! Requests to an executor in this process: the executor request for a workload's request, and its
//! responses recorded as they arrive (shared by the plain, LoRA and disaggregated targets and the
//! virtual-clock runs).

use std::time::Instant;

use futures::StreamExt;

use super::records::{finish_record, new_record};
use crate::bench::metrics::record::{Phase, RequestRecord, RunClock, ServerTimes};
use crate::bench::traffic::workload::RequestSpec;
use crate::{AsyncExecutor, GenerationRequest, SamplingParams, StreamEvent};

pub(crate) fn generation_request(spec: &RequestSpec) -> GenerationRequest {
    let mut request = GenerationRequest::new(spec.prompt.clone(), spec.max_tokens)
        .with_streaming(spec.streaming)
        .with_perf_metrics(true)
        .with_sampling(SamplingParams { min_tokens: spec.min_tokens, ..Default::default() });
    if let Some(end_id) = spec.end_id {
        request = request.with_end_id(u32::try_from(end_id).ok());
    }
    if let Some(guide) = &spec.guide {
        request = request.with_guided_decoding(guide.clone());
    }
    request
}

pub(crate) async fn in_process(
    executor: &AsyncExecutor,
    lora: Option<&crate::bench::lora::LoraTraffic>,
    spec: RequestSpec,
    clock: &RunClock,
    index: u64,
    phase: Phase,
) -> RequestRecord {
    match enqueue_in_process(executor, lora, &spec, clock, index, phase) {
        (Some(stream), record) => consume_in_process(stream, record, clock).await,
        (None, record) => record,
    }
}

/// Enqueues one request on `executor`: its stream and the record started at its enqueue time,
/// or no stream and the failed record when the executor refused it.
pub(crate) fn enqueue_in_process(
    executor: &AsyncExecutor,
    lora: Option<&crate::bench::lora::LoraTraffic>,
    spec: &RequestSpec,
    clock: &RunClock,
    index: u64,
    phase: Phase,
) -> (Option<crate::GenerationStream>, RequestRecord) {
    // LoRA traffic: the adapter is attached and the request enqueued in one step (see bench::lora).
    let (lora, result) = match lora {
        Some(traffic) => {
            let (task, with_weights, result) =
                traffic.enqueue(index, generation_request(spec), |request| executor.enqueue(request));
            (Some((task, with_weights)), result)
        }
        None => (None, executor.enqueue(generation_request(spec))),
    };
    let (stream, mut record) = match result {
        Ok(stream) => {
            let record = new_record(spec, index, phase, clock.offset_s(stream.enqueued_at()));
            (Some(stream), record)
        }
        Err(e) => {
            let mut record = new_record(spec, index, phase, clock.now_s());
            record.fail(clock.now_s(), e.to_string());
            (None, record)
        }
    };
    if let Some((task, with_weights)) = lora {
        record.lora_task = Some(task);
        record.lora_with_weights = with_weights;
    }
    (stream, record)
}

/// Receives an enqueued request's responses into its record until the end.
pub(crate) async fn consume_in_process(
    mut stream: crate::GenerationStream,
    mut record: RequestRecord,
    clock: &RunClock,
) -> RequestRecord {
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent::Chunk(chunk)) => {
                record.record_chunk_handled(
                    clock.offset_s(chunk.received_at),
                    chunk.token_ids.len() as u32,
                    clock.now_s(),
                );
                if record.session.is_some() || record.disagg.is_some() {
                    record.answer_ids.extend_from_slice(&chunk.token_ids);
                }
            }
            Ok(StreamEvent::Final(done)) => {
                // The same figure the gRPC server sends in `complete.cached_tokens`.
                record.cached_tokens = u64::from(done.cached_tokens.unwrap_or(0));
                if let Some(perf) = done.perf {
                    let at = |t: Option<Instant>| t.map(|t| clock.offset_s(t));
                    if let Some(disagg) = record.disagg.as_mut() {
                        (disagg.transfer_start_s, disagg.transfer_end_s) =
                            (at(perf.kv_transfer_start), at(perf.kv_transfer_end));
                        disagg.transfer_bytes = perf.kv_cache_size;
                    }
                    record.server = Some(ServerTimes {
                        arrival_s: at(perf.arrival),
                        first_scheduled_s: at(perf.first_scheduled),
                        first_token_s: at(perf.first_token),
                        last_token_s: at(perf.last_token),
                        first_iter: perf.first_iter,
                        last_iter: perf.last_iter,
                    });
                }
                finish_record(&mut record, &done, done.perf.map(|p| p.speculative), clock);
            }
            Err(e) => record.fail(clock.now_s(), e.to_string()),
        }
    }
    record
}
