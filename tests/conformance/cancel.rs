//! Cancellation, by call and by dropping the stream: the request ends with a `Cancelled` final (or
//! just goes away), the executor forgets it, and nothing else is disturbed.
//!
//! Upstream: `Executor::cancelRequest` ends the request with a final response whose finish reason
//! is `kCANCELLED` (cpp/include/tensorrt_llm/executor/types.h, `FinishReason`, v1.1.0/v1.2.0).

use std::time::{Duration, Instant};

use crate::common::sim::drain;
use crate::harness::{executor, target};
use trtllm::{FinishReason, RequestStage, StreamEvent};

/// Long enough that it is still running when cancelled, on any engine.
const LONG: u32 = 400;

fn long_request_after_first_chunk(tag: u64) -> trtllm::GenerationStream {
    let t = target();
    let max = LONG.min((t.engine.max_seq_len() - 16) as u32);
    let mut stream = executor().enqueue(t.request(t.unique_prompt(tag, 8), max)).unwrap();
    match stream.blocking_next() {
        Some(Ok(StreamEvent::Chunk(_))) => stream,
        other => panic!("expected a first chunk, got {other:?}"),
    }
}

#[test]
fn cancel_by_call_ends_the_stream_with_a_cancelled_final() {
    let stream = long_request_after_first_chunk(200);
    let id = stream.request_id();
    executor().cancel(id).unwrap();
    let out = drain(stream);
    assert_eq!(out.after_terminal, 0);
    let done = out.done();
    assert_eq!(done.finish_reason, FinishReason::Cancelled, "cancellation is a finish reason, not an error");
    assert!(done.completion_tokens < LONG);
    // Cancelling again, or an id never issued, is harmless.
    executor().cancel(id).unwrap();
    executor().cancel(trtllm::RequestId::new(u64::MAX - 7)).unwrap();
}

#[test]
fn dropping_a_stream_cancels_its_request() {
    let t = target();
    let before = executor().cancel_failures();
    let stream = long_request_after_first_chunk(201);
    let id = stream.request_id();
    drop(stream);
    // The executor stops working on it. Probe requests make the executor iterate; an iteration that
    // runs a probe without the dropped request still active shows it is gone.
    let mut stats = executor().subscribe_request_stats();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut tag = 1000;
    let gone = loop {
        let probe = executor().enqueue(t.request(t.unique_prompt(tag, 4), 3)).unwrap();
        let probe_id = probe.request_id();
        drain(probe);
        tag += 1;
        executor().refresh_stats();
        let mut gone = false;
        while let Ok(iteration) = stats.try_recv() {
            let probed = iteration.requests.iter().any(|r| r.id == probe_id);
            let alive = iteration.requests.iter().any(|r| r.id == id && r.stage != RequestStage::GenerationComplete);
            gone |= probed && !alive;
        }
        if gone || Instant::now() > deadline {
            break gone;
        }
    };
    assert!(gone, "the dropped request {id} is still active in the executor's request stats");
    assert_eq!(executor().cancel_failures(), before, "the cancel was accepted");
    // The executor keeps serving.
    let after = drain(executor().enqueue(t.request(t.unique_prompt(202, 4), 3)).unwrap());
    assert_eq!(after.done().finish_reason, FinishReason::Length);
}
