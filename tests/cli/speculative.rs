//! `trtllm bench --draft-engine-dir`: the workload through the draft-target loop end to end, and
//! the engines it refuses.

use crate::common;

use common::cli::{bench, read_json, run_bench};
use trtllm::sim::{ClockMode, SimulatedSpeculation};
use trtllm::speculative::SpeculativeDecodingMode;

fn engines(clock: ClockMode) -> (tempfile::TempDir, tempfile::TempDir) {
    let target = common::sim::engine_dir(|b| {
        b.iteration_ms(1.0).clock(clock).speculation(SimulatedSpeculation::new(
            SpeculativeDecodingMode::DraftTokensExternal,
            4,
            0.7,
        ))
    });
    let draft = common::sim::engine_dir(|b| {
        b.iteration_ms(0.5).clock(clock).speculation(SimulatedSpeculation::draft_model(0.8))
    });
    (target, draft)
}

#[test]
fn bench_runs_the_draft_target_loop_and_reports_its_rounds() {
    let (target, draft) = engines(ClockMode::Real);
    let out = tempfile::tempdir().unwrap();
    let (t, d, o) = (target.path().to_str().unwrap(), draft.path().to_str().unwrap(), out.path().to_str().unwrap());
    bench(&[
        "--engine-dir",
        t,
        "--draft-engine-dir",
        d,
        "--draft-len",
        "3",
        "--concurrency",
        "2",
        "--num-prompts",
        "4",
        "--warmup",
        "1",
        "--input-len",
        "16",
        "--output-len",
        "20",
        "--output-dir",
        o,
    ]);
    let summary = read_json(&out.path().join("c2_in16_out20.json"));
    assert_eq!(summary["completed"], 4);
    assert_eq!(summary["total_output_tokens"], 80);
    let spec = &summary["speculative"];
    let per_step = spec["tokens_per_step"].as_f64().expect("the loop's rounds");
    assert!(per_step > 1.0 && per_step <= 4.0, "3 drafts + 1 token per round at most: {spec}");
    let (accepted, drafted) = (spec["accepted_draft_tokens"].as_u64().unwrap(), spec["draft_tokens"].as_u64().unwrap());
    assert!(accepted > 0 && accepted < drafted, "agreement 0.8: some drafts accepted, not all: {spec}");
    assert!(summary["mean_tpot_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn bench_refuses_the_loop_on_a_virtual_clock_and_over_grpc() {
    let (target, draft) = engines(ClockMode::Virtual);
    let (t, d) = (target.path().to_str().unwrap(), draft.path().to_str().unwrap());
    let out = run_bench(&["--engine-dir", t, "--draft-engine-dir", d, "--concurrency", "1", "--num-prompts", "1"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("virtual clock cannot time together"), "{stderr}");

    let out = run_bench(&["--target", "grpc://127.0.0.1:1", "--draft-engine-dir", d]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--draft-engine-dir runs in process only"), "{stderr}");
}
