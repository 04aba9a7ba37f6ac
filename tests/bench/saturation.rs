//! Over-saturation: an open-loop point the target cannot keep up with is flagged from its
//! growing backlog and stops sending early; one it keeps up with is not.

use crate::common;

use std::time::Duration;

use trtllm::AsyncExecutor;
use trtllm::bench::*;

fn workload() -> Workload {
    Workload {
        source: PromptSource::Random { vocab_size: 1000, input_len: 16, shared_prefix: 0 },
        output_len: Some(10),
        fallback_output_len: 10,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 2,
        guide: None,
        lengths: Default::default(),
    }
}

fn open(rate: f64, num_prompts: usize) -> LoadPlan {
    LoadPlan {
        load: Load::Open { rate, burstiness: 1.0, max_concurrency: None },
        stop_when_saturated: true,
        ..LoadPlan::closed(1, num_prompts)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_saturated_point_stops_sending_early() {
    // Two requests at a time, 5 ms per iteration, 10 tokens each: about 35 requests/s at most.
    let dir = common::sim::engine_dir(|b| b.iteration_ms(5.0).max_batch_size(2));
    let config = common::sim::config().build().unwrap();
    let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
    let target = BenchTarget::InProcess(executor.clone());

    let run = run_point(&target, &workload(), 0, &open(200.0, 1000), &RunClock::start(), |_| {}).await.unwrap();
    let flagged = run.over_saturated_s.expect("200 requests/s on a 35/s engine is over-saturated");
    assert!(flagged < 3.0, "flagged after {flagged} s");
    let sent = run.records.len();
    assert!(sent < 700, "stopped early: {sent} of 1000 sent");
    assert!(run.records.iter().all(|r| r.is_success()), "requests already sent still finish");
    let last_send = run.records.iter().map(|r| r.send_s).fold(0.0, f64::max);
    assert!(last_send < 1000.0 / 200.0 * 0.7, "no request after the stop: last at {last_send} s");

    let calm = run_point(&target, &workload(), 1, &open(10.0, 20), &RunClock::start(), |_| {}).await.unwrap();
    assert_eq!(calm.over_saturated_s, None);
    assert_eq!(calm.records.len(), 20);
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1)).await;
}
