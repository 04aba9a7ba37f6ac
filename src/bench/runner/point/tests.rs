//! The point runner against an in-process simulated executor.

use super::*;
use crate::bench::traffic::workload::PromptSource;

fn workload() -> Workload {
    Workload {
        source: PromptSource::Random { vocab_size: 1000, input_len: 8, shared_prefix: 0 },
        output_len: Some(3),
        fallback_output_len: 3,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 1,
        guide: None,
        lengths: Default::default(),
    }
}

async fn executor() -> (tempfile::TempDir, crate::AsyncExecutor) {
    let dir = tempfile::tempdir().unwrap();
    crate::sim::SimulatedEngine::builder().vocab_size(1000).iteration_ms(1.0).build().write_to(dir.path()).unwrap();
    let config = crate::ExecutorConfig::builder().stats_poll_interval(Duration::from_millis(10)).build().unwrap();
    let executor = crate::AsyncExecutor::load(dir.path(), config).await.unwrap();
    (dir, executor)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warmup_and_measure_are_indexed_in_one_sequence() {
    let (_dir, executor) = executor().await;
    let target = BenchTarget::InProcess(executor.clone());
    let plan = LoadPlan { warmup: 2, ..LoadPlan::closed(2, 3) };
    let run = run_point(&target, &workload(), 0, &plan, &RunClock::start(), |_| {}).await.unwrap();
    let mut indexes: Vec<u64> = run.records.iter().map(|r| r.index).collect();
    indexes.sort_unstable();
    assert_eq!(indexes, [0, 1, 2, 3, 4]);
    assert_eq!(run.records.iter().filter(|r| r.phase == Phase::Warmup).count(), 2);
    assert!(run.iterations.is_some_and(|log| !log.iterations.is_empty()));
    executor.shutdown(crate::ShutdownMode::Cancel).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_view_gets_the_kv_use_from_the_iteration_stats() {
    let (_dir, executor) = executor().await;
    let target = BenchTarget::InProcess(executor.clone());
    let live = Arc::new(LiveStats::default());
    live.start_point("c4", Some(8));
    assert_eq!(live.snapshot().kv_utilization, None, "unknown before the point runs");
    let plan = LoadPlan::closed(4, 8);
    let run = run_point_live(&target, &workload(), 0, &plan, &RunClock::start(), |_| {}, &live).await.unwrap();
    let log = run.iterations.expect("in process: iteration stats");
    let last = log.iterations.iter().rev().find_map(|s| s.kv_cache).expect("the simulator reports KV figures");
    // The view shows what the last iteration received reported: used blocks over capacity.
    assert_eq!(live.snapshot().kv_utilization, Some((last.utilization() * 1e6).floor() / 1e6));
    executor.shutdown(crate::ShutdownMode::Cancel).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_stop_sending_at_the_deadline() {
    let (_dir, executor) = executor().await;
    let target = BenchTarget::InProcess(executor.clone());
    let plan = LoadPlan {
        ramp_up: Some(Duration::from_millis(100)),
        duration: Some(Duration::from_millis(200)),
        ..LoadPlan::closed(3, 0)
    };
    let clock = RunClock::start();
    let run = run_point(&target, &workload(), 0, &plan, &clock, |_| {}).await.unwrap();
    assert!(run.records.iter().any(|r| r.phase == Phase::RampUp));
    assert!(run.records.iter().any(|r| r.phase == Phase::Measure));
    // Nothing is sent after ramp-up + duration (a loose bound: scheduling on a busy machine).
    assert!(run.records.iter().all(|r| r.send_s < 0.3 + 2.0), "{:?}", run.records.last());
    executor.shutdown(crate::ShutdownMode::Cancel).await.unwrap();
}

/// With one worker, tasks spawned from a task on it run last-spawned first (the runtime's LIFO
/// slot), as a busy worker can reorder them: the first wave still goes out one user at a time,
/// each at its own offset, not all at once by whichever requests took the slots first.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn each_users_first_request_waits_for_its_own_start_offset() {
    let (_dir, executor) = executor().await;
    let target = BenchTarget::InProcess(executor.clone());
    let clock = RunClock::start();
    let starts: Vec<Duration> = (0..4).map(|u| Duration::from_millis(50 * u)).collect();
    let sampler = workload().sampler(0, WorkloadPhase::Measure);
    let mut done = tokio::spawn(async move {
        let live = Arc::new(LiveStats::default());
        closed_loop(&target, &clock, sampler, Phase::Measure, 40, 4, Some(starts), &AtomicU64::new(0), &live)
    })
    .await
    .unwrap();
    let mut records = Vec::new();
    while let Some(record) = done.recv().await {
        records.push(record);
    }
    assert_eq!(records.len(), 40);
    // Users start 0, 50, 100 and 150 ms after the clock's origin at the earliest: before user k
    // can have started, at most k requests are in flight.
    for r in &records {
        let at = r.send_s;
        let in_flight = records.iter().filter(|o| o.send_s <= at && o.end_s.is_none_or(|end| end > at)).count();
        let started = ((at / 0.05).floor() as usize + 1).min(4);
        assert!(in_flight <= started, "{in_flight} in flight {at:.3} s in");
    }
    executor.shutdown(crate::ShutdownMode::Cancel).await.unwrap();
}
