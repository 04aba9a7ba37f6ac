//! A request the executor refuses at enqueue (here a prompt over max_input_len) is recorded with
//! its error and its user goes on with the next request: in real time, and on the virtual clock
//! (follow-ups sent ahead and requests sent one by one alike), where the refused request ends at
//! its arrival and the next one arrives a client latency later.

use std::sync::Arc;
use std::time::Duration;

use trtllm::bench::*;
use trtllm::sim::{ClockMode, SimulatedEngine};

const MAX_INPUT_LEN: usize = 256;
const CLIENT_LATENCY: Duration = Duration::from_millis(1);
/// How much later each further user reacts than the one before (the runner's client stagger).
const STAGGER_S: f64 = 10e-6;

/// Four prompts, two over the engine's max_input_len. Prompts are drawn without replacement,
/// so every four requests hold two refused ones, wherever the seeded order puts them.
fn workload() -> Workload {
    let prompts: Arc<[SampledPrompt]> = [100_u32, 400, 120, 500]
        .iter()
        .enumerate()
        .map(|(i, &len)| SampledPrompt {
            token_ids: (1..=len).map(|t| t % 900 + 1 + i as u32).collect(),
            output_len: None,
        })
        .collect();
    Workload {
        source: PromptSource::Dataset(prompts),
        output_len: Some(6),
        fallback_output_len: 6,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 3,
        guide: None,
        lengths: Default::default(),
    }
}

fn engine(clock: ClockMode) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let engine = SimulatedEngine::builder().iteration_ms(2.0).max_input_len(MAX_INPUT_LEN).clock(clock);
    engine.build().write_to(dir.path()).unwrap();
    dir
}

fn options() -> VirtualRunOptions {
    VirtualRunOptions { client_latency: CLIENT_LATENCY, ..VirtualRunOptions::default() }
}

/// Every over-long prompt failed with an error and every other one succeeded.
fn assert_refused_exactly_the_long_prompts(records: &[RequestRecord]) {
    for r in records {
        let long = r.prompt_tokens as usize > MAX_INPUT_LEN;
        assert_eq!(r.error.is_some(), long, "request {} ({} prompt tokens): {:?}", r.index, r.prompt_tokens, r.error);
    }
}

/// Closed-loop timing on the virtual clock, user `u` sending requests `u`, `u + users`, ...:
/// each request arrives a client latency (plus the user's stagger) after the one before ended,
/// and a refused request ends at its arrival.
fn assert_users_go_on(records: &[RequestRecord], users: usize) {
    for u in 0..users {
        let mine: Vec<&RequestRecord> = records.iter().filter(|r| r.index as usize % users == u).collect();
        assert!(mine.len() >= 2, "user {u} sent {} requests", mine.len());
        let delay = CLIENT_LATENCY.as_secs_f64() + STAGGER_S * u as f64;
        for pair in mine.windows(2) {
            let (before, next) = (pair[0], pair[1]);
            let ended = before.end_s.unwrap();
            assert!(
                (next.send_s - (ended + delay)).abs() < 1e-6,
                "user {u}: request {} arrived at {} s, request {} ended at {ended} s",
                next.index,
                next.send_s,
                before.index
            );
        }
        for r in mine.iter().filter(|r| r.error.is_some()) {
            assert_eq!(r.end_s, Some(r.send_s), "refused request {} ends at its arrival", r.index);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_is_recorded_and_its_user_goes_on() {
    let plan = LoadPlan::closed(2, 8);

    let virtual_dir = engine(ClockMode::Virtual);
    let (run, _) = run_virtual_point_with(virtual_dir.path(), &workload(), 0, &plan, &options(), |_| {}).await.unwrap();
    assert_eq!(run.records.len(), 8, "every request of both users has a record");
    assert_refused_exactly_the_long_prompts(&run.records);
    assert_eq!(run.records.iter().filter(|r| r.error.is_some()).count(), 4);
    assert_users_go_on(&run.records, 2);

    let real_dir = engine(ClockMode::Real);
    let executor = trtllm::AsyncExecutor::load(real_dir.path(), trtllm::ExecutorConfig::default()).await.unwrap();
    let target = BenchTarget::InProcess(executor.clone());
    let real = run_point(&target, &workload(), 0, &plan, &RunClock::start(), |_| {}).await.unwrap();
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
    assert_eq!(real.records.len(), 8);
    assert_refused_exactly_the_long_prompts(&real.records);
    assert_eq!(real.records.iter().filter(|r| r.error.is_some()).count(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_of_a_timed_run_go_on_after_a_refusal() {
    // Sent one by one: each user decides after every request whether the next still fits.
    let plan = LoadPlan { duration: Some(Duration::from_millis(300)), ..LoadPlan::closed(2, 0) };
    let dir = engine(ClockMode::Virtual);
    let (run, _) = run_virtual_point_with(dir.path(), &workload(), 0, &plan, &options(), |_| {}).await.unwrap();
    assert_refused_exactly_the_long_prompts(&run.records);
    let refused = run.records.iter().filter(|r| r.error.is_some()).count();
    assert!(refused >= 4, "{refused} of {} requests refused", run.records.len());
    assert!(run.records.len() >= 12, "{} requests in 300 ms of 2 ms iterations", run.records.len());
    assert_users_go_on(&run.records, 2);
}
