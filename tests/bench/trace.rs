//! Trace replay: a small Mooncake-style trace (tests/bench/data/trace_small.jsonl, 32-token
//! blocks) read, its prompts sharing the blocks its hash ids share (so the KV cache hits), and
//! its requests sent at its timestamps, time-scaled, in real time and on the virtual clock, and
//! under `--max-concurrency` never more than the cap in flight.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use trtllm::bench::{
    BenchTarget, Load, LoadPlan, PromptSource, RequestRecord, RunClock, Trace, TraceError, TraceOptions, TraceRecord,
    TraceReplay, Workload, run_point, run_virtual_point,
};
use trtllm::sim::{ClockMode, SimulatedEngine};
use trtllm::{AsyncExecutor, ExecutorConfig, ShutdownMode};

/// The engine's KV block: the trace's blocks are whole KV blocks.
const BLOCK: usize = 32;

fn trace() -> Trace {
    Trace::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/bench/data/trace_small.jsonl")).unwrap()
}

fn replay(time_scale: f64) -> TraceReplay {
    trace().replay(&TraceOptions { block_size: BLOCK, vocab_size: 1000, time_scale, seed: 3 }).unwrap()
}

fn workload(replay: TraceReplay) -> Workload {
    Workload {
        source: PromptSource::Trace(Arc::new(replay)),
        output_len: None,
        fallback_output_len: 16,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 3,
        guide: None,
        lengths: Default::default(),
    }
}

/// Every request of the trace, no warmup (the load's rate is only a label for a trace).
fn plan(requests: usize) -> LoadPlan {
    LoadPlan { load: Load::Open { rate: 1.0, burstiness: 1.0, max_concurrency: None }, ..LoadPlan::closed(1, requests) }
}

fn by_index(mut records: Vec<RequestRecord>) -> Vec<RequestRecord> {
    records.sort_by_key(|r| r.index);
    records
}

#[test]
fn the_test_trace_parses_in_order() {
    let trace = trace();
    assert_eq!(trace.records.len(), 10);
    assert!(trace.records.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
    assert_eq!(trace.records[1].hash_ids, [1, 2, 4]);
    let replay = replay(1.0);
    assert_eq!(replay.prompts[1].token_ids.len(), 96);
    assert_eq!(replay.prompts[1].output_len, Some(6));
    assert_eq!(replay.prompts[0].token_ids[..2 * BLOCK], replay.prompts[1].token_ids[..2 * BLOCK]);
    assert_eq!(replay.prompts[2].token_ids, replay.prompts[9].token_ids[..70], "hash ids 10, 11, 12 again");
}

fn write(lines: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(&mut file, lines.as_bytes()).unwrap();
    file
}

#[test]
fn lines_are_sorted_by_timestamp_and_hash_ids_are_optional() {
    let file = write(concat!(
        r#"{"timestamp": 30, "input_length": 10, "output_length": 2, "hash_ids": [7]}"#,
        "\n\n",
        r#"{"timestamp": 0, "input_length": 3, "output_length": 1}"#,
        "\n"
    ));
    let trace = Trace::load(file.path()).unwrap();
    assert_eq!(trace.records.len(), 2);
    assert_eq!(trace.records[0].timestamp, 0.0);
    assert!(trace.records[0].hash_ids.is_empty());
    assert_eq!(trace.records[1].hash_ids, [7]);
}

#[test]
fn bad_traces_are_refused_naming_the_line() {
    let file = write("{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1}\n{\"timestamp\": 1}\n");
    let error = Trace::load(file.path()).unwrap_err().to_string();
    assert!(error.contains("line 2"), "{error}");
    let file = write("{\"timestamp\": -5, \"input_length\": 3, \"output_length\": 1}\n");
    assert!(Trace::load(file.path()).unwrap_err().to_string().contains("timestamp"));
    let file = write("{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1}\n");
    assert!(Trace::load(file.path()).is_err());
    assert!(matches!(Trace::load(write("\n").path()), Err(TraceError::Empty(_))));
    assert!(matches!(Trace::load(std::path::Path::new("/nonexistent/trace.jsonl")), Err(TraceError::Io { .. })));
}

#[test]
fn blocks_follow_hash_ids_and_tails_are_private() {
    let record = |input_length, hash_ids: &[u64]| TraceRecord {
        timestamp: 0.0,
        input_length,
        output_length: 1,
        hash_ids: hash_ids.to_vec(),
    };
    let trace = Trace { records: vec![record(20, &[5, 6]), record(20, &[5, 6]), record(12, &[9, 5])] };
    let options = TraceOptions { block_size: 8, vocab_size: 50_000, time_scale: 1.0, seed: 1 };
    let replay = trace.replay(&options).unwrap();
    let p: Vec<&Vec<u32>> = replay.prompts.iter().map(|p| &p.token_ids).collect();
    assert_eq!(p[0][..16], p[1][..16], "the same two blocks");
    assert_ne!(p[0][16..], p[1][16..], "tokens past the hashed blocks are each request's own");
    assert_eq!(p[2][8..12], p[0][..4], "block 5 is the same wherever it sits");
    assert_ne!(p[2][..8], p[0][..8]);
    assert!(p.iter().all(|t| t.iter().all(|&id| (1..50_000).contains(&id))));
    let other_seed = trace.replay(&TraceOptions { seed: 2, ..options }).unwrap();
    assert_ne!(other_seed.prompts[0].token_ids, *p[0]);
    assert!(trace.replay(&TraceOptions { block_size: 0, ..options }).is_err());
    assert!(trace.replay(&TraceOptions { time_scale: f64::NAN, ..options }).is_err());
}

#[test]
fn a_plan_replays_a_prefix_or_a_window_of_the_trace() {
    let replay = replay(1.0);
    assert_eq!(replay.arrivals_s(&plan(3)), [0.0, 0.15, 0.3]);
    let window = LoadPlan { duration: Some(Duration::from_millis(500)), ..plan(0) };
    assert_eq!(replay.arrivals_s(&window).len(), 4, "arrivals at 0, 150, 300 and 450 ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn virtual_replay_arrives_at_the_trace_times_and_reuses_shared_blocks() {
    let dir = tempfile::tempdir().unwrap();
    SimulatedEngine::builder().vocab_size(1000).clock(ClockMode::Virtual).build().write_to(dir.path()).unwrap();
    let scale = 2.0;
    let replay = replay(scale);
    let offsets = replay.offsets_s.clone();
    let (run, _) = run_virtual_point(dir.path(), &workload(replay), 0, &plan(10), |_| {}).await.unwrap();
    let records = by_index(run.records);
    assert_eq!(records.len(), 10);
    assert!(records.iter().all(|r| r.is_success()), "{:?}", records.iter().find(|r| !r.is_success()));
    for (record, offset) in records.iter().zip(offsets.iter()) {
        assert!(
            (record.send_s - offset).abs() < 1e-6,
            "request {} arrived at {} s, not {offset} s",
            record.index,
            record.send_s
        );
    }
    assert_eq!(records.iter().map(|r| r.output_tokens).collect::<Vec<_>>(), [4, 6, 3, 5, 4, 4, 2, 8, 3, 4]);
    // Request 1 shares hash ids 1 and 2 (two KV blocks) with request 0; request 6's are new.
    assert!(records[1].cached_tokens >= 2 * BLOCK as u64, "cached {}", records[1].cached_tokens);
    assert!(records[9].cached_tokens >= 2 * BLOCK as u64, "hash ids 10, 11, 12 seen before");
    assert_eq!(records[6].cached_tokens, 0);
    let cached: u64 = records.iter().map(|r| r.cached_tokens).sum();
    let prompt: u64 = records.iter().map(|r| r.prompt_tokens).sum();
    assert!(cached > 0 && cached < prompt, "KV hit rate {cached}/{prompt}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_time_replay_sends_at_the_scaled_trace_times() {
    let dir = tempfile::tempdir().unwrap();
    SimulatedEngine::builder().vocab_size(1000).iteration_ms(1.0).build().write_to(dir.path()).unwrap();
    let config = ExecutorConfig::builder().stats_poll_interval(Duration::from_millis(20)).build().unwrap();
    let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
    let target = BenchTarget::InProcess(executor.clone());
    // 150 ms gaps replayed at 0.3: 45 ms apart.
    let replay = replay(0.3);
    let offsets = replay.offsets_s.clone();
    let run = run_point(&target, &workload(replay), 0, &plan(10), &RunClock::start(), |_| {}).await.unwrap();
    executor.shutdown(ShutdownMode::Cancel).await.unwrap();
    let records = by_index(run.records);
    assert_eq!(records.len(), 10);
    assert!(records.iter().all(|r| r.is_success()));
    let due: Vec<f64> = records.iter().map(|r| r.scheduled_send_s.unwrap()).collect();
    for (i, offset) in offsets.iter().enumerate() {
        assert!((due[i] - due[0] - offset).abs() < 1e-6, "request {i} due at {} s", due[i] - due[0]);
    }
    // Never early; late only by the host's wake-up (a loose bound: a shared, loaded machine).
    let mut late: Vec<f64> = records.iter().map(|r| r.send_s - r.scheduled_send_s.unwrap()).collect();
    assert!(late.iter().all(|&l| l > -1e-3), "{late:?}");
    late.sort_by(f64::total_cmp);
    assert!(late[late.len() / 2] < 0.010, "median lateness {:.1} ms", late[late.len() / 2] * 1e3);
    assert!(records[1].cached_tokens >= 2 * BLOCK as u64, "cached {}", records[1].cached_tokens);
}

/// Six requests 2 ms apart, 10 output tokens each: at 2 ms per iteration each one takes at least
/// 22 ms, so under a cap of 2 the third and later ones must wait for a slot.
fn crowded_trace() -> TraceReplay {
    let records = (0..6)
        .map(|i| TraceRecord { timestamp: 2.0 * i as f64, input_length: 40, output_length: 10, hash_ids: vec![] })
        .collect();
    let options = TraceOptions { block_size: BLOCK, vocab_size: 1000, time_scale: 1.0, seed: 5 };
    Trace { records }.replay(&options).unwrap()
}

fn capped(cap: Option<usize>) -> LoadPlan {
    LoadPlan { load: Load::Open { rate: 1.0, burstiness: 1.0, max_concurrency: cap }, ..plan(6) }
}

/// The most requests in flight at once: at each send, those sent by then and not yet ended.
fn max_in_flight(records: &[RequestRecord]) -> usize {
    records
        .iter()
        .map(|r| records.iter().filter(|o| o.send_s <= r.send_s && o.end_s.is_some_and(|e| e > r.send_s)).count())
        .max()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_real_time_replay_waits_for_a_slot() {
    let dir = tempfile::tempdir().unwrap();
    // Requests of about 50 ms against arrivals 2 ms apart: a third request waits about 45 ms for a
    // slot, far more than a loaded host can make its send timer late.
    SimulatedEngine::builder().vocab_size(1000).iteration_ms(5.0).build().write_to(dir.path()).unwrap();
    let config = ExecutorConfig::builder().stats_poll_interval(Duration::from_millis(20)).build().unwrap();
    let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
    let target = BenchTarget::InProcess(executor.clone());
    let run = |cap| {
        let (target, workload) = (target.clone(), workload(crowded_trace()));
        async move {
            by_index(run_point(&target, &workload, 0, &capped(cap), &RunClock::start(), |_| {}).await.unwrap().records)
        }
    };
    let free = run(None).await;
    let records = run(Some(2)).await;
    executor.shutdown(ShutdownMode::Cancel).await.unwrap();
    assert!(free.iter().chain(&records).all(|r| r.is_success()));
    assert!(max_in_flight(&free) > 2, "without a cap the trace overlaps: {}", max_in_flight(&free));
    assert_eq!(max_in_flight(&records), 2, "never more than the cap in flight, and the cap is reached");
    for r in &records[2..] {
        // Sent when a slot freed, stamped then: the wait is the dispatch delay and the queue time.
        let delay = r.dispatch_delay_s().unwrap();
        assert!(delay > 0.010, "request {} waited only {:.1} ms", r.index, delay * 1e3);
        assert!((r.client_queue_s - delay).abs() < 0.010, "queue {} s, delay {delay} s", r.client_queue_s);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_virtual_replay_arrives_as_slots_free() {
    let dir = tempfile::tempdir().unwrap();
    let engine = SimulatedEngine::builder().vocab_size(1000).iteration_ms(2.0).clock(ClockMode::Virtual);
    engine.build().write_to(dir.path()).unwrap();
    let run = |cap| {
        let (dir, workload) = (dir.path().to_owned(), workload(crowded_trace()));
        async move { by_index(run_virtual_point(&dir, &workload, 0, &capped(cap), |_| {}).await.unwrap().0.records) }
    };
    let free = run(None).await;
    let records = run(Some(2)).await;
    assert!(free.iter().chain(&records).all(|r| r.is_success()));
    assert!(max_in_flight(&free) > 2, "without a cap the trace overlaps: {}", max_in_flight(&free));
    assert_eq!(max_in_flight(&records), 2);
    let latency = trtllm::bench::IN_PROCESS_CLIENT_LATENCY.as_secs_f64();
    for r in &records[2..] {
        let due = r.scheduled_send_s.unwrap();
        assert!(r.send_s > due + 0.010, "request {} arrived at {} s, due {due} s", r.index, r.send_s);
        assert!((r.client_queue_s - (r.send_s - due)).abs() < 1e-9);
        // It arrives one client latency after the request whose slot it took ended.
        let freed_by = records.iter().filter_map(|o| o.end_s).any(|e| (r.send_s - e - latency).abs() < 1e-6);
        assert!(freed_by, "request {} at {} s follows no request's end", r.index, r.send_s);
    }
    // First come, first served: the waiting requests go in trace order.
    assert!(records.windows(2).all(|w| w[0].send_s <= w[1].send_s));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_frees_its_slot_under_a_cap() {
    // Requests 1 to 3 are longer than the engine takes: refused at once, they must not keep
    // their slots (else the rest of the trace is never sent).
    let records = (0..8)
        .map(|i| TraceRecord {
            timestamp: 2.0 * i as f64,
            input_length: if (1..=3).contains(&i) { 200 } else { 40 },
            output_length: 10,
            hash_ids: vec![],
        })
        .collect();
    let options = TraceOptions { block_size: BLOCK, vocab_size: 1000, time_scale: 1.0, seed: 5 };
    let replay = Trace { records }.replay(&options).unwrap();
    let plan = LoadPlan { load: Load::Open { rate: 1.0, burstiness: 1.0, max_concurrency: Some(2) }, ..plan(8) };
    let check = |records: Vec<RequestRecord>, clock: &str| {
        assert_eq!(records.len(), 8, "{clock}: every request of the trace has a record");
        let failed: Vec<u64> = records.iter().filter(|r| !r.is_success()).map(|r| r.index).collect();
        assert_eq!(failed, [1, 2, 3], "{clock}");
        assert_eq!(max_in_flight(&records), 2, "{clock}");
    };
    let dir = tempfile::tempdir().unwrap();
    let engine = SimulatedEngine::builder().vocab_size(1000).iteration_ms(2.0).max_input_len(128);
    engine.clone().clock(ClockMode::Virtual).build().write_to(dir.path()).unwrap();
    let (run, _) = run_virtual_point(dir.path(), &workload(replay.clone()), 0, &plan, |_| {}).await.unwrap();
    check(by_index(run.records), "virtual");

    let dir = tempfile::tempdir().unwrap();
    engine.build().write_to(dir.path()).unwrap();
    let executor = AsyncExecutor::load(dir.path(), ExecutorConfig::default()).await.unwrap();
    let target = BenchTarget::InProcess(executor.clone());
    let run = run_point(&target, &workload(replay), 0, &plan, &RunClock::start(), |_| {}).await.unwrap();
    executor.shutdown(ShutdownMode::Cancel).await.unwrap();
    check(by_index(run.records), "real time");
}
