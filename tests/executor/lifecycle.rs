//! End-to-end through the bridge and the simulated executor: cancellation, errors, shutdown, stats.

use crate::common;

use std::time::{Duration, Instant};

use common::sim::{config, drain, engine_dir, eventually, executor, executor_with_faults};
use trtllm::sim::SimFaults;
use trtllm::{
    Error, Executor, FinishReason, GenerationRequest, InvalidRequest, SamplingParams, ShutdownMode, StreamEvent,
};

fn long_request(prompt: u32) -> GenerationRequest {
    GenerationRequest::new(vec![prompt, 2, 3], 400)
}

/// The executor's own view: no active and no queued requests in the latest iteration.
fn executor_idle(executor: &Executor) -> bool {
    executor.refresh_stats();
    executor.latest_iteration_stats().is_some_and(|s| s.num_active_requests == 0 && s.num_queued_requests == 0)
}

#[test]
fn cancel_by_call_ends_with_a_cancelled_final() {
    let dir = engine_dir(|b| b.iteration_ms(5.0));
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let mut stream = executor.enqueue(long_request(1)).unwrap();
    let mut seen = 0;
    while seen < 2 {
        if let Some(Ok(StreamEvent::Chunk(c))) = stream.blocking_next() {
            seen += c.token_ids.len();
        }
    }
    executor.cancel(stream.request_id()).unwrap();
    let out = drain(stream);
    let done = out.done();
    assert_eq!(done.finish_reason, FinishReason::Cancelled, "cancellation is a finish reason, not an error");
    assert!(done.completion_tokens < 400);
    assert_eq!(executor.in_flight(), 0);
    assert!(eventually(Duration::from_secs(2), || executor_idle(&executor)), "executor still shows the request");
}

#[test]
fn dropping_a_stream_cancels_the_request_in_the_executor() {
    let dir = engine_dir(|b| b.iteration_ms(5.0));
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let mut stream = executor.enqueue(long_request(2)).unwrap();
    assert!(matches!(stream.blocking_next(), Some(Ok(StreamEvent::Chunk(_)))));
    assert_eq!(executor.in_flight(), 1);
    drop(stream);
    assert_eq!(executor.in_flight(), 0, "the routing entry goes with the stream");
    // The cancel reaches the executor at once: it stops well before 400 tokens (2 s of iterations).
    assert!(eventually(Duration::from_millis(500), || executor_idle(&executor)), "executor still runs the request");
}

#[test]
fn cancelling_finished_or_unknown_ids_does_nothing() {
    let (_dir, executor) = executor();
    let out = drain(executor.enqueue(GenerationRequest::new(vec![1], 3)).unwrap());
    executor.cancel(out.done().request_id).unwrap();
    executor.cancel(trtllm::RequestId::new(987_654)).unwrap();
    let again = drain(executor.enqueue(GenerationRequest::new(vec![1], 3)).unwrap());
    assert_eq!(again.done().finish_reason, FinishReason::Length);
}

#[test]
fn invalid_requests_are_refused_with_the_limit_and_others_are_unaffected() {
    let (_dir, executor) = executor();
    let running = executor.enqueue(GenerationRequest::new(vec![1, 2], 30)).unwrap();
    let too_long = GenerationRequest::new(vec![1; 129], 4);
    match executor.enqueue(too_long) {
        Err(Error::InvalidRequest(InvalidRequest::PromptTooLong { len: 129, max: 128 })) => {}
        other => panic!("expected PromptTooLong, got {other:?}"),
    }
    let message = executor.enqueue(GenerationRequest::new(vec![1; 129], 4)).unwrap_err().to_string();
    assert!(message.contains("129") && message.contains("max_input_len of 128"), "{message}");
    assert!(matches!(
        executor.enqueue(GenerationRequest::new(vec![1; 100], 500)),
        Err(Error::InvalidRequest(InvalidRequest::SequenceTooLong { max_seq_len: 512, .. }))
    ));
    assert!(matches!(
        executor.enqueue(GenerationRequest::new(vec![], 4)),
        Err(Error::InvalidRequest(InvalidRequest::EmptyPrompt))
    ));
    assert!(matches!(
        executor.enqueue(GenerationRequest::new(vec![5, 1000], 4)),
        Err(Error::InvalidRequest(InvalidRequest::TokenOutOfVocab { token: 1000, position: 1, vocab_size: 1000 }))
    ));
    assert!(matches!(
        executor.enqueue(GenerationRequest::new(vec![5], 4).with_end_id(5000)),
        Err(Error::InvalidRequest(InvalidRequest::ParamTokenOutOfVocab { field: "end_id", .. }))
    ));
    assert!(matches!(
        executor.enqueue(GenerationRequest::new(vec![5], 4).with_sampling(SamplingParams::default().temperature(-1.0))),
        Err(Error::InvalidRequest(InvalidRequest::Parameter { field: "temperature", .. }))
    ));
    assert!(matches!(
        executor.enqueue(GenerationRequest::new(vec![5], 4).with_sampling(SamplingParams::default().beam_width(4))),
        Err(Error::InvalidRequest(InvalidRequest::BeamWidth { requested: 4, max: 1 }))
    ));
    let out = drain(running);
    assert_eq!(out.tokens().len(), 30, "the running request was not disturbed");
    assert_eq!(executor.in_flight(), 0);
}

#[test]
fn an_error_response_ends_only_that_stream() {
    let (_dir, executor) = executor_with_faults(SimFaults { fail_prompt_token: Some(13), ..Default::default() });
    let good = executor.enqueue(GenerationRequest::new(vec![1, 2], 20)).unwrap();
    let bad = executor.enqueue(GenerationRequest::new(vec![1, 13], 20)).unwrap();
    let bad = drain(bad);
    assert_eq!(bad.after_terminal, 0);
    match bad.terminal {
        Err(Error::RequestFailed(message)) => assert!(!message.is_empty()),
        other => panic!("expected a request failure, got {other:?}"),
    }
    assert_eq!(drain(good).tokens().len(), 20);
    assert_eq!(executor.in_flight(), 0);
}

#[test]
fn a_forward_failure_errors_every_active_request() {
    let (_dir, executor) = executor_with_faults(SimFaults { fail_all_from_iteration: Some(3), ..Default::default() });
    let streams: Vec<_> = (0..4).map(|i| executor.enqueue(long_request(10 + i)).unwrap()).collect();
    for stream in streams {
        let out = drain(stream);
        assert!(matches!(out.terminal, Err(Error::RequestFailed(_))), "{:?}", out.terminal);
    }
    assert_eq!(executor.in_flight(), 0);
}

#[test]
fn queue_full_is_an_error_and_the_queue_recovers() {
    let dir = engine_dir(|b| b.max_batch_size(1).iteration_ms(2.0));
    let cfg = config().max_queue_size(2).max_batch_size(1).build().unwrap();
    let executor = Executor::load(dir.path(), cfg).unwrap();
    let mut accepted = Vec::new();
    let mut rejected = None;
    for i in 0..10 {
        match executor.enqueue(GenerationRequest::new(vec![i + 1, 2], 50)) {
            Ok(stream) => accepted.push(stream),
            Err(e) => {
                rejected = Some(e);
                break;
            }
        }
    }
    match rejected {
        Some(Error::QueueFull(message)) => {
            assert!(message.contains("Maximum queue size of 2"), "{message}")
        }
        other => panic!("expected QueueFull, got {other:?}"),
    }
    for stream in accepted {
        assert_eq!(drain(stream).tokens().len(), 50);
    }
    assert_eq!(drain(executor.enqueue(GenerationRequest::new(vec![1], 2)).unwrap()).tokens().len(), 2);
}

#[test]
fn a_cpp_exception_in_the_shim_becomes_a_rust_error() {
    let (_dir, executor) = executor_with_faults(SimFaults {
        throw_in: Some("enqueueRequest".into()),
        throw_after_calls: 1,
        ..Default::default()
    });
    assert_eq!(drain(executor.enqueue(GenerationRequest::new(vec![1], 2)).unwrap()).tokens().len(), 2);
    match executor.enqueue(GenerationRequest::new(vec![1], 2)) {
        Err(Error::ExecutorFailed(message)) => assert!(message.contains("enqueueRequest"), "{message}"),
        other => panic!("expected an executor error, got {other:?}"),
    }
    assert_eq!(executor.in_flight(), 0, "a failed enqueue registers nothing");
}

#[test]
fn a_non_std_exception_becomes_a_rust_error_too() {
    let (_dir, executor) = executor_with_faults(SimFaults {
        throw_in: Some("enqueueRequest".into()),
        throw_non_std: true,
        ..Default::default()
    });
    match executor.enqueue(GenerationRequest::new(vec![1], 2)) {
        Err(Error::ExecutorFailed(message)) => {
            assert!(message.contains("unknown C++ exception"), "{message}")
        }
        other => panic!("expected an executor error, got {other:?}"),
    }
}

#[test]
fn a_throwing_constructor_is_a_load_error() {
    let dir = engine_dir(|b| b.faults(SimFaults { throw_in: Some("constructor".into()), ..Default::default() }));
    assert!(matches!(Executor::load(dir.path(), config().build().unwrap()), Err(Error::ExecutorFailed(_))));
}

#[test]
fn a_failing_response_thread_ends_every_stream_and_flips_health() {
    let (_dir, executor) = executor_with_faults(SimFaults {
        throw_in: Some("awaitResponses".into()),
        throw_after_calls: 20,
        ..Default::default()
    });
    let streams: Vec<_> = (0..3).map(|i| executor.enqueue(long_request(i + 1)).unwrap()).collect();
    for stream in streams {
        let out = drain(stream);
        assert!(
            matches!(out.terminal, Err(Error::ExecutorFailed(ref m)) if m.contains("awaitResponses")),
            "{:?}",
            out.terminal
        );
    }
    assert!(!executor.is_healthy());
    assert!(matches!(executor.enqueue(GenerationRequest::new(vec![1], 2)), Err(Error::ExecutorFailed(_))));
}

#[test]
fn a_slow_consumer_is_cancelled_instead_of_buffering_without_bound() {
    // 50 ms iterations: the stream that is read keeps up with its 4-chunk buffer even when a loaded
    // host stalls the reading thread for up to 200 ms (at 5 ms a 20 ms stall filled it too).
    let dir = engine_dir(|b| b.iteration_ms(50.0));
    let executor = Executor::load(dir.path(), config().stream_buffer(4).build().unwrap()).unwrap();
    let stream = executor.enqueue(GenerationRequest::new(vec![1, 2], 200)).unwrap();
    let other = executor.enqueue(GenerationRequest::new(vec![3, 4], 20)).unwrap();
    let other_out = drain(other);
    assert_eq!(other_out.tokens().len(), 20, "a read stream is unaffected");
    // Not reading `stream` is the slow consumer; wait until the executor is done with it.
    assert!(eventually(Duration::from_secs(5), || executor.in_flight() == 0));
    let out = drain(stream);
    assert!(out.chunks.len() <= 4, "at most the buffer was delivered");
    assert!(matches!(out.terminal, Err(Error::ConsumerTooSlow { capacity: 4 })), "{:?}", out.terminal);
    assert!(eventually(Duration::from_secs(1), || executor_idle(&executor)));
}

#[test]
fn shutdown_cancel_ends_every_in_flight_stream() {
    let dir = engine_dir(|b| b.iteration_ms(3.0));
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let streams: Vec<_> = (0..8).map(|i| executor.enqueue(long_request(i + 1)).unwrap()).collect();
    assert!(eventually(Duration::from_secs(5), || {
        executor.refresh_stats();
        executor.latest_iteration_stats().is_some_and(|s| s.num_active_requests == 8)
    }));
    let started = Instant::now();
    executor.shutdown(ShutdownMode::Cancel).unwrap();
    assert!(started.elapsed() < Duration::from_secs(2), "cancel mode does not wait for 400 tokens");
    for stream in streams {
        let out = drain(stream);
        assert_eq!(out.after_terminal, 0);
        match out.terminal {
            Ok(done) => assert_eq!(done.finish_reason, FinishReason::Cancelled),
            Err(e) => assert!(matches!(e, Error::ShutDown), "{e:?}"),
        }
    }
    assert!(matches!(executor.enqueue(GenerationRequest::new(vec![1], 2)), Err(Error::ShutDown)));
    executor.shutdown(ShutdownMode::Cancel).unwrap();
}

#[test]
fn shutdown_drain_lets_requests_finish() {
    let (_dir, executor) = executor();
    let streams: Vec<_> = (0..8).map(|i| executor.enqueue(GenerationRequest::new(vec![i + 1], 20)).unwrap()).collect();
    executor.shutdown(ShutdownMode::Drain { timeout: Duration::from_secs(10) }).unwrap();
    for stream in streams {
        let out = drain(stream);
        assert_eq!(out.done().finish_reason, FinishReason::Length);
        assert_eq!(out.tokens().len(), 20);
    }
}

#[test]
fn a_request_during_the_drain_is_told_the_executor_is_draining() {
    let dir = engine_dir(|b| b.iteration_ms(2.0));
    let executor = std::sync::Arc::new(Executor::load(dir.path(), config().build().unwrap()).unwrap());
    let stream = executor.enqueue(GenerationRequest::new(vec![1, 2], 100)).unwrap();
    let draining = executor.clone();
    let shutdown =
        std::thread::spawn(move || draining.shutdown(ShutdownMode::Drain { timeout: Duration::from_secs(10) }));
    assert!(eventually(Duration::from_secs(2), || !executor.can_enqueue()));
    let err = executor.enqueue(GenerationRequest::new(vec![1], 2)).expect_err("refused while draining");
    assert!(matches!(err, Error::Draining), "{err:?}");
    assert_eq!(err.kind(), trtllm::ErrorKind::Unavailable);
    assert_eq!(drain(stream).tokens().len(), 100, "the request in flight finishes");
    shutdown.join().unwrap().unwrap();
    assert!(matches!(executor.enqueue(GenerationRequest::new(vec![1], 2)), Err(Error::ShutDown)));
}

#[test]
fn shutdown_drain_cancels_what_outlives_the_grace_period() {
    let dir = engine_dir(|b| b.iteration_ms(5.0));
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let stream = executor.enqueue(long_request(1)).unwrap();
    executor.shutdown(ShutdownMode::Drain { timeout: Duration::from_millis(50) }).unwrap();
    let out = drain(stream);
    assert!(matches!(&out.terminal, Ok(done) if done.finish_reason == FinishReason::Cancelled), "{:?}", out.terminal);
}

#[test]
fn stats_show_the_work_done() {
    let (_dir, executor) = executor();
    let mut iterations = executor.subscribe_iteration_stats();
    let outs: Vec<_> =
        (0..5).map(|i| executor.enqueue(GenerationRequest::new(vec![i + 1, 2, 3, 4], 10)).unwrap()).collect();
    for out in outs {
        drain(out);
    }
    executor.refresh_stats();
    let mut seen = Vec::new();
    while let Ok(stats) = iterations.try_recv() {
        seen.push(stats);
    }
    assert!(seen.len() >= 10, "at least one iteration per generated token: {}", seen.len());
    assert!(seen.windows(2).all(|w| w[0].iter < w[1].iter), "iterations are ordered");
    let completed: i32 = seen.iter().map(|s| s.num_completed_requests).sum();
    assert_eq!(completed, 5);
    let ctx_tokens: i32 = seen.iter().filter_map(|s| s.inflight_batching).map(|b| b.num_ctx_tokens).sum();
    assert_eq!(ctx_tokens, 20, "every prompt token was prefilled once");
    let new_active: i32 = seen.iter().map(|s| s.num_new_active_requests).sum();
    assert_eq!(new_active, 5);
    let kv = executor.kv_cache_stats().expect("kv stats");
    assert!(kv.max_num_blocks > 0 && kv.tokens_per_block == 32);
    assert!(seen.iter().any(|s| s.kv_cache.is_some_and(|k| k.used_num_blocks > 0)));
}

#[test]
fn request_stats_are_reported_when_enabled() {
    let dir = engine_dir(|b| b);
    let executor = Executor::load(dir.path(), config().request_stats_max_iterations(100).build().unwrap()).unwrap();
    let mut stats = executor.subscribe_request_stats();
    let out = drain(executor.enqueue(GenerationRequest::new(vec![1, 2], 5)).unwrap());
    executor.refresh_stats();
    let id = out.done().request_id;
    let mut stages = Vec::new();
    while let Ok(it) = stats.try_recv() {
        stages.extend(it.requests.iter().filter(|r| r.id == id).map(|r| r.stage));
    }
    assert!(stages.contains(&trtllm::RequestStage::GenerationComplete), "{stages:?}");
}

#[test]
fn perf_metrics_are_on_the_same_clock_as_instant() {
    // The executor's clock is CLOCK_MONOTONIC, read directly and bracketed on both sides.
    for _ in 0..100 {
        let before = monotonic_ns();
        let executor_now = trtllm::executor_clock_now_ns();
        let after = monotonic_ns();
        assert!(before <= executor_now && executor_now <= after, "{before} <= {executor_now} <= {after}");
    }
    // And time points converted to Instant fall where the request's life says they must.
    let dir = engine_dir(|b| b.iteration_ms(5.0));
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let out = drain(executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 6)).unwrap());
    let done = out.done();
    let perf = done.perf.expect("perf metrics");
    let arrival = perf.arrival.unwrap();
    let first_token = perf.first_token.unwrap();
    let last_token = perf.last_token.unwrap();
    assert!(done.enqueued_at <= arrival, "arrival is after enqueue");
    assert!(arrival <= perf.first_scheduled.unwrap() && perf.first_scheduled.unwrap() <= first_token);
    assert!(first_token <= out.chunks[0].received_at, "the first token exists before it is received");
    assert!(last_token <= done.finished_at);
    assert!(first_token < last_token);
    // Five decode iterations of 5 ms separate the first and the last token.
    assert!(last_token - first_token >= Duration::from_millis(20));
    assert!(perf.first_iter.is_some() && perf.last_iter >= perf.first_iter);
    assert!(perf.ttft().unwrap() <= done.ttft().unwrap());
}

fn monotonic_ns() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec through a valid, exclusive pointer.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    assert_eq!(rc, 0);
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

#[test]
fn no_routing_entry_outlives_its_request() {
    let (_dir, executor) = executor();
    for i in 0..50 {
        let stream = executor.enqueue(GenerationRequest::new(vec![i + 1], 3)).unwrap();
        if i % 3 == 0 {
            drop(stream);
        } else {
            drain(stream);
        }
    }
    assert_eq!(executor.in_flight(), 0);
    assert!(eventually(Duration::from_secs(1), || executor_idle(&executor)));
}

#[test]
fn running_totals_count_completed_cancelled_and_failed_requests() {
    let (_dir, executor) = executor_with_faults(SimFaults { fail_prompt_token: Some(13), ..Default::default() });
    assert_eq!(executor.totals(), trtllm::RequestTotals::default());
    assert!(drain(executor.enqueue(GenerationRequest::new(vec![1, 2], 4)).unwrap()).terminal.is_ok());
    assert!(drain(executor.enqueue(GenerationRequest::new(vec![1, 13], 4)).unwrap()).terminal.is_err());
    let mut dropped = executor.enqueue(long_request(5)).unwrap();
    let _ = dropped.blocking_next();
    drop(dropped);
    let cancelled = executor.enqueue(long_request(6)).unwrap();
    executor.cancel(cancelled.request_id()).unwrap();
    assert!(drain(cancelled).terminal.is_ok());
    let totals = executor.totals();
    assert_eq!((totals.completed, totals.cancelled, totals.failed), (1, 2, 1), "{totals:?}");
}
