//! Planning runs on the virtual clock are reproducible: the same engine, workload and seed give
//! the same records and iteration log, whatever the host was doing while they ran.

use trtllm::bench::*;
use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine, SimulatedEngineBuilder};

fn workload() -> Workload {
    Workload {
        source: PromptSource::Random { vocab_size: 1000, input_len: 200, shared_prefix: 0 },
        output_len: Some(24),
        fallback_output_len: 24,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 5,
        guide: None,
        lengths: Default::default(),
    }
}

/// A virtual-clock engine directory: Llama-3.1-8B on an H100, with `limits` applied.
fn llama_8b_on_h100(limits: impl FnOnce(SimulatedEngineBuilder) -> SimulatedEngineBuilder) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let engine = SimulatedEngine::builder().model(ModelPreset::by_id("llama-3.1-8b").unwrap()).gpu("h100-sxm");
    limits(engine).clock(ClockMode::Virtual).build().write_to(dir.path()).unwrap();
    dir
}

/// Records and iteration log of one closed-loop planning point, as JSON (iteration timestamps,
/// which are wall-clock readings, left out).
async fn closed_loop(dir: &std::path::Path) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let plan = LoadPlan { warmup: 12, ..LoadPlan::closed(12, 60) };
    let (run, clock) = run_virtual_point(dir, &workload(), 0, &plan, |_| {}).await.unwrap();
    assert_eq!(clock.itl_unmapped_requests, 0);
    let records = run.records.iter().map(|r| serde_json::to_value(r).unwrap()).collect();
    let iterations = run
        .iterations
        .unwrap()
        .iterations
        .iter()
        .map(|s| {
            let mut v = serde_json::to_value(s).unwrap();
            v.as_object_mut().unwrap().remove("timestamp");
            v
        })
        .collect();
    (records, iterations)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_planning_point_gives_the_same_figures_every_run() {
    let dir = llama_8b_on_h100(|engine| engine.max_batch_size(16));
    let (records, iterations) = closed_loop(dir.path()).await;
    assert_eq!(records.len(), 72);
    // Requests queue behind the running batch: the count the executor reports must not depend
    // on when the runner got round to sending them.
    assert!(iterations.iter().any(|v| v["num_queued_requests"].as_i64().unwrap() > 0));
    for _ in 0..2 {
        let (again, again_iterations) = closed_loop(dir.path()).await;
        assert_eq!(again, records);
        assert_eq!(again_iterations, iterations);
    }
}

/// Records of one open-loop planning point under a concurrency cap, as JSON.
async fn capped_open_loop(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let load = Load::Open { rate: 80.0, burstiness: 1.0, max_concurrency: Some(16) };
    let plan = LoadPlan { load, ..LoadPlan::closed(1, 160) };
    let workload = Workload { output_len: Some(64), fallback_output_len: 64, ..workload() };
    let (run, _) = run_virtual_point(dir, &workload, 0, &plan, |_| {}).await.unwrap();
    run.records.iter().map(|r| serde_json::to_value(r).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_capped_open_loop_planning_point_gives_the_same_figures_every_run() {
    // Requests come faster than slots free: many wait for one, and which waiting
    // request a freed slot goes to must not depend on the order the runner's tasks wake in.
    let dir = llama_8b_on_h100(|engine| engine);
    let records = capped_open_loop(dir.path()).await;
    assert_eq!(records.len(), 160);
    let queued = records.iter().filter(|r| r["client_queue_s"].as_f64().unwrap() > 0.0).count();
    assert!(queued > 80, "only {queued} requests waited for a slot");
    for run in 0..2 {
        let again = capped_open_loop(dir.path()).await;
        let first_difference = again.iter().zip(&records).position(|(a, b)| a != b);
        assert_eq!(first_difference, None, "run {}: records differ", run + 2);
    }
}

/// A virtual-clock point's iteration statistics cover every forward pass, even when the reader
/// is starved: one user, ten requests of 512 output tokens on an engine that prefills a prompt
/// in one iteration, so the simulator runs exactly 10 × 512 forward passes (more than the stats
/// broadcast holds), while a task keeps the runtime's only worker busy for 150 ms at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_virtual_clock_point_loses_no_iteration_statistics() {
    let dir = llama_8b_on_h100(|engine| engine.max_num_tokens(8192));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let hog = tokio::spawn({
        let stop = stop.clone();
        async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(150));
                tokio::task::yield_now().await;
            }
        }
    });
    let workload = Workload { output_len: Some(512), fallback_output_len: 512, ..workload() };
    let plan = LoadPlan { warmup: 0, ..LoadPlan::closed(1, 10) };
    let (run, clock) = run_virtual_point(dir.path(), &workload, 0, &plan, |_| {}).await.unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    hog.await.unwrap();
    let log = run.iterations.unwrap();
    assert_eq!((log.lagged, log.missing_iterations()), (0, 0));
    let passes: Vec<u64> = log.iterations.iter().filter(|s| s.num_active_requests > 0).map(|s| s.iter).collect();
    assert_eq!(passes, (0..10 * 512).collect::<Vec<u64>>(), "one entry per forward pass, numbered from 0");
    assert_eq!(clock.itl_unmapped_requests, 0);
    assert!(run.records.iter().all(|r| r.output_tokens == 512 && r.itl_s().len() == 511));
}

/// `trtllm bench`'s live view follows a virtual-clock point while it runs: the executor's
/// requests in flight, then every measured request in simulated time, TTFT as the result has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_view_follows_a_virtual_clock_point_in_simulated_time() {
    let dir = llama_8b_on_h100(|engine| engine.max_num_tokens(8192));
    let live = std::sync::Arc::new(LiveStats::default());
    live.start_point("virtual c8", Some(96));
    let watching = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let watcher = std::thread::spawn({
        let (live, watching) = (live.clone(), watching.clone());
        move || {
            let mut most_in_flight = 0;
            while watching.load(std::sync::atomic::Ordering::Relaxed) {
                most_in_flight = most_in_flight.max(live.snapshot().in_flight);
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            most_in_flight
        }
    });
    // Long enough in wall time (about 12,000 executor round trips) for the watcher to look in.
    let workload = Workload { output_len: Some(1000), fallback_output_len: 1000, ..workload() };
    let plan = LoadPlan { warmup: 8, ..LoadPlan::closed(8, 96) };
    let options = VirtualRunOptions { live: Some(live.clone()), ..Default::default() };
    let (run, _) = run_virtual_point_with(dir.path(), &workload, 0, &plan, &options, |_| {}).await.unwrap();
    watching.store(false, std::sync::atomic::Ordering::Relaxed);
    let most_in_flight = watcher.join().unwrap();
    assert!((1..=8).contains(&most_in_flight), "the executor's active requests while it ran: {most_in_flight}");

    let seen = live.snapshot();
    let measured: Vec<&RequestRecord> = run.records.iter().filter(|r| r.phase == Phase::Measure).collect();
    assert_eq!((seen.done, seen.failed, seen.total), (96, 0, Some(96)), "warmup left out");
    assert!(seen.virtual_clock);
    // Simulated seconds since the point (warmup included) started: at least the measured span.
    let span = measured.iter().filter_map(|r| r.e2el_s().map(|e| r.send_s + e)).fold(0.0, f64::max)
        - measured.iter().map(|r| r.send_s).fold(f64::INFINITY, f64::min);
    assert!(
        seen.elapsed_s >= span && seen.elapsed_s < 2.0 * span,
        "{} s simulated vs {span} s measured",
        seen.elapsed_s
    );
    let mut ttft: Vec<f64> = measured.iter().filter_map(|r| r.ttft_s()).collect();
    ttft.sort_by(f64::total_cmp);
    let exact_p50_ms = ttft[ttft.len().div_ceil(2) - 1] * 1e3;
    let [p50, _, _] = seen.ttft_ms.unwrap();
    assert!((p50 / exact_p50_ms - 1.0).abs() < 0.03, "live TTFT p50 {p50} ms, result {exact_p50_ms} ms");
    let tokens: u64 = measured.iter().map(|r| r.output_tokens).sum();
    assert_eq!(tokens, 96 * 1000);
    assert!((seen.output_tok_s - tokens as f64 / seen.elapsed_s).abs() < 1e-6 * seen.output_tok_s);
}
