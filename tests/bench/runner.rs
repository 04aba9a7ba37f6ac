//! The benchmark runner against an in-process simulated executor: token counts from the
//! executor, sane latencies and executor-side figures, non-streaming, prefix reuse, open loop.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use trtllm::AsyncExecutor;
use trtllm::bench::*;

/// Built-in-engine-shaped simulated executor at `iteration_ms`, with quick stats polling.
async fn executor(iteration_ms: f64) -> (tempfile::TempDir, AsyncExecutor) {
    let dir = common::sim::engine_dir(|b| b.iteration_ms(iteration_ms));
    let config = common::sim::config().build().unwrap();
    let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
    (dir, executor)
}

fn random(input_len: usize, output_len: u32, shared_prefix: usize) -> Workload {
    Workload {
        source: PromptSource::Random { vocab_size: 1000, input_len, shared_prefix },
        output_len: Some(output_len),
        fallback_output_len: output_len,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 11,
        guide: None,
        lengths: Default::default(),
    }
}

fn summary(run: &PointRun, max_concurrency: Option<u64>) -> Value {
    Summary::builder(RunInfo { max_concurrency, ..RunInfo::default() })
        .kv(run.iterations.as_ref().unwrap().kv_summary())
        .build(&run.records)
        .unwrap()
        .to_json()
}

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} is not a number: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_totals_match_the_executors_own_counts() {
    let (_dir, executor) = executor(1.0).await;
    let target = BenchTarget::InProcess(executor.clone());
    // Prompts with their own output lengths 3..=10, so the total is not a configured constant.
    let prompts: Arc<[SampledPrompt]> =
        (0..8u32).map(|i| SampledPrompt { token_ids: (1..=12 + i).collect(), output_len: Some(3 + i) }).collect();
    let workload = Workload { source: PromptSource::Dataset(prompts), output_len: None, ..random(0, 0, 0) };
    let plan = LoadPlan { warmup: 2, ..LoadPlan::closed(4, 16) };
    let run = run_point(&target, &workload, 0, &plan, &RunClock::start(), |_| {}).await.unwrap();
    let json = summary(&run, Some(4));
    let measured: Vec<&RequestRecord> = run.records.iter().filter(|r| r.is_measured()).collect();
    assert_eq!(measured.len(), 16);
    assert_eq!(json["completed"], 16);

    // The executor's own count: every scheduled request produced one token per iteration
    // (its first when its prompt completed, then one per generation step).
    let log = run.iterations.as_ref().unwrap();
    assert_eq!(log.lagged, 0);
    let executor_tokens: i64 = log
        .iterations
        .iter()
        .filter_map(|s| s.inflight_batching)
        .map(|b| i64::from(b.num_context_requests + b.num_gen_requests))
        .sum();
    let total = json["total_output_tokens"].as_i64().unwrap();
    assert_eq!(total, executor_tokens, "summary total vs executor iterations");
    let streamed: u64 = measured.iter().map(|r| r.chunk_tokens()).sum();
    assert_eq!(total as u64, streamed, "summary total vs tokens streamed");
    // Each request got its prompt's own length, so nothing mismatched.
    assert_eq!(json["output_len_mismatches"], 0);
    assert!(measured.iter().all(|r| r.output_tokens == r.prompt_tokens - 9));
    assert_eq!(json["total_input_tokens"].as_u64().unwrap(), measured.iter().map(|r| r.prompt_tokens).sum::<u64>());
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_run_has_sane_latencies_and_executor_figures() {
    let iteration_ms = 4.0;
    let (_dir, executor) = executor(iteration_ms).await;
    let target = BenchTarget::InProcess(executor.clone());
    let (clock, anchor) = (RunClock::start(), WallAnchor::now());
    let plan = LoadPlan { warmup: 1, ..LoadPlan::closed(2, 6) };
    let run = run_point(&target, &random(24, 12, 0), 0, &plan, &clock, |_| {}).await.unwrap();
    let ends = run.iterations.as_ref().unwrap().end_times_s(&clock, &anchor);
    let json = Summary::builder(RunInfo { max_concurrency: Some(2), ..RunInfo::default() })
        .iteration_end_times(ends)
        .build(&run.records)
        .unwrap()
        .to_json();

    // TPOT and ITL: the simulator sleeps each iteration, so no token comes faster than that
    // (a lower bound only; an upper bound would depend on the machine's load).
    assert!(num(&json, "mean_tpot_ms") >= 0.9 * iteration_ms, "{}", json["mean_tpot_ms"]);
    assert!(num(&json, "median_itl_ms") >= 0.9 * iteration_ms);
    // One token per response: per-token ITL is the per-response ITL, and its mean is the TPOT.
    assert!((num(&json, "mean_itl_per_token_ms") - num(&json, "mean_itl_ms")).abs() < 1e-9);
    assert!((num(&json, "mean_itl_per_token_ms") - num(&json, "mean_tpot_ms")).abs() < 1e-6);
    assert!(num(&json, "p99_ttft_ms") >= num(&json, "p50_ttft_ms"));
    assert!(num(&json, "mean_e2el_ms") > num(&json, "mean_ttft_ms"));

    let server = &json["server"];
    assert_eq!(server["requests"], 6);
    assert!(num(server, "mean_queue_ms") >= 0.0);
    assert!(num(server, "mean_prefill_ms") >= 0.9 * iteration_ms);
    assert!(num(server, "mean_tpot_ms") >= 0.9 * iteration_ms);
    for r in run.records.iter().filter(|r| r.is_measured()) {
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!((r.output_tokens, r.cached_tokens), (12, 0));
        let (ttft, server_ttft) = (r.ttft_s().unwrap(), r.server_ttft_s().unwrap());
        assert!(server_ttft <= ttft, "the executor's TTFT is part of the client's");
        assert!(r.server_prefill_s().unwrap() <= server_ttft);
        // The runner sees a token after the executor stamped it, on the same monotonic clock.
        assert!(r.ttft_measurement_error_s().unwrap() >= 0.0);
        assert!(r.runner_scheduling_delays_s().all(|d| d >= 0.0));
    }
    let calibration = &json["calibration"];
    assert_eq!(calibration["requests"], 6);
    assert_eq!(calibration["itl_requests"], 6, "every response matched to its iteration");
    assert!(num(calibration, "p99_ttft_error_ms") <= num(&json, "p99_ttft_ms"));
    assert!(calibration.get("p50_runner_scheduling_delay_ms").is_some());
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_streaming_requests_have_one_response_and_no_first_token() {
    let (_dir, executor) = executor(1.0).await;
    let target = BenchTarget::InProcess(executor.clone());
    let workload = Workload { streaming: false, ..random(16, 8, 0) };
    let run = run_point(&target, &workload, 0, &LoadPlan::closed(2, 4), &RunClock::start(), |_| {}).await.unwrap();
    for r in &run.records {
        assert!(!r.streaming && r.chunks.is_empty() && r.first_token_s.is_none());
        assert_eq!(r.output_tokens, 8);
        assert!(r.e2el_s().unwrap() > 0.0 && r.output_tokens_per_s().unwrap() > 0.0);
    }
    let json = summary(&run, Some(2));
    assert_eq!(json["streaming"], false);
    assert!(json.get("mean_ttft_ms").is_none() && json.get("mean_tpot_ms").is_none());
    assert!(num(&json, "mean_e2el_ms") > 0.0);
    assert!(num(&json, "mean_request_output_tok_s") > 0.0);
    assert_eq!(json["total_output_tokens"], 32);
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cold_points_send_new_prompts_and_warm_ones_a_shared_prefix() {
    // The prompts themselves: cold streams differ from the first block on, per point and per
    // phase; warm streams share exactly the prefix.
    let cold = random(64, 4, 0);
    let first_block = |w: &Workload, point, phase| w.sampler(point, phase).next_prompt().token_ids[..32].to_vec();
    let a = first_block(&cold, 0, WorkloadPhase::Measure);
    assert_ne!(a, first_block(&cold, 1, WorkloadPhase::Measure));
    assert_ne!(a, first_block(&cold, 0, WorkloadPhase::Warmup));
    let warm = random(64, 4, 32);
    assert_eq!(first_block(&warm, 0, WorkloadPhase::Warmup), first_block(&warm, 3, WorkloadPhase::Measure));

    // And what the executor reports: a cold point after another reuses nothing in its measured
    // phase; cached tokens never exceed the shared prefix and match the reused blocks.
    let (_dir, executor) = executor(1.0).await;
    let target = BenchTarget::InProcess(executor.clone());
    let plan = LoadPlan { warmup: 2, ..LoadPlan::closed(2, 6) };
    let clock = RunClock::start();
    for point in 0..2 {
        let run = run_point(&target, &cold, point, &plan, &clock, |_| {}).await.unwrap();
        let json = summary(&run, Some(2));
        assert_eq!(json["total_cached_tokens"], 0, "point {point}");
        assert_eq!(json["kv"]["reused_blocks"], 0, "point {point}");
        assert_eq!(json["kv"]["counted_from"], "start of the measured phase");
    }
    let run = run_point(&target, &warm, 2, &plan, &clock, |_| {}).await.unwrap();
    let json = summary(&run, Some(2));
    let reused = json["kv"]["reused_blocks"].as_i64().unwrap();
    let cached = json["total_cached_tokens"].as_i64().unwrap();
    assert!(cached <= 6 * 32, "at most the shared prefix per request");
    assert!(cached <= reused * 32, "cached tokens come from reused blocks");
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_records_schedules_dispatch_delays_and_its_cap() {
    let (_dir, executor) = executor(1.0).await;
    let target = BenchTarget::InProcess(executor.clone());
    let (rate, n) = (100.0, 30);
    let plan = LoadPlan {
        load: Load::Open { rate, burstiness: 1.0, max_concurrency: Some(2) },
        num_prompts: n,
        warmup: 0,
        ramp_up: None,
        duration: None,
        user_start: UserStart::Auto,
        stop_when_saturated: false,
    };
    let run = run_point(&target, &random(16, 8, 0), 0, &plan, &RunClock::start(), |_| {}).await.unwrap();
    assert_eq!(run.records.len(), n);
    let mut scheduled: Vec<f64> = run.records.iter().map(|r| r.scheduled_send_s.unwrap()).collect();
    scheduled.sort_by(f64::total_cmp);
    // The schedule is rescaled so that the last arrival is n / rate after the start.
    let span = scheduled[n - 1] - scheduled[0];
    assert!(span > 0.0 && span <= n as f64 / rate + 1e-6, "{span}");
    for r in &run.records {
        // Sent no earlier than scheduled; waiting for one of the 2 slots is client queue time.
        assert!(r.dispatch_delay_s().unwrap() >= 0.0);
        assert!(r.dispatch_delay_s().unwrap() + 1e-9 >= r.client_queue_s);
    }
    let json = Summary::builder(RunInfo { request_rate: rate, max_concurrency: Some(2), ..RunInfo::default() })
        .build(&run.records)
        .unwrap()
        .to_json();
    assert_eq!(json["request_rate"], rate);
    assert!(json["max_concurrent_requests"].as_u64().unwrap() <= 2);
    assert!(json.get("p99_dispatch_delay_ms").is_some());
    assert!(num(&json, "inflight_input_tokens") <= 2.0 * 16.0 + 1e-9);
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramp_up_then_duration_feeds_a_time_series() {
    let (_dir, executor) = executor(2.0).await;
    let target = BenchTarget::InProcess(executor.clone());
    let plan = LoadPlan {
        ramp_up: Some(Duration::from_millis(300)),
        duration: Some(Duration::from_millis(400)),
        ..LoadPlan::closed(3, 0)
    };
    let (clock, anchor) = (RunClock::start(), WallAnchor::now());
    let run = run_point(&target, &random(16, 8, 0), 0, &plan, &clock, |_| {}).await.unwrap();
    let ramp: Vec<&RequestRecord> = run.records.iter().filter(|r| r.phase == Phase::RampUp).collect();
    assert!(!ramp.is_empty() && run.records.iter().any(|r| r.is_measured()));
    let first_measured = run.records.iter().filter(|r| r.is_measured()).map(|r| r.send_s).fold(f64::INFINITY, f64::min);
    assert!(ramp.iter().all(|r| r.send_s <= first_measured));
    let mut samples = time_series(&run.records, 0.1).unwrap();
    let log = run.iterations.as_ref().unwrap();
    fill_kv_utilization(&mut samples, &log.kv_points(&clock, &anchor));
    assert!(samples.len() >= 5);
    assert!(samples.iter().any(|s| s.kv_utilization.is_some()), "KV use from iteration stats");
    let json = Summary::builder(RunInfo::default()).build(&run.records).unwrap().to_json();
    assert_eq!(json["ramp_up_requests"], ramp.len());
    assert_eq!(json["warmup_requests"], 0);
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
}
