//! `trtllm bench` on how the load fell: closed-loop users spread out by default (lockstep only
//! when asked, and then said), the steady window beside the whole run, TTFT and cache hits by
//! session turn, and the prediction under load from the simulator's run of the same workload.

use crate::common;

use common::cli::{bench, read_json};
use serde_json::Value;

/// The built-in engine (timed by the GPU model, so a prediction applies) at one concurrency,
/// `output_len` tokens per request.
fn run(output_len: &str, extra: &[&str]) -> (Value, String) {
    let engine = tempfile::tempdir().unwrap();
    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), engine.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut args = vec![
        "--engine-dir",
        engine.path().to_str().unwrap(),
        "--concurrency",
        "8",
        "--output-len",
        output_len,
        "--output-dir",
        out.path().to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = bench(&args);
    let name = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with("c8_") && n.ends_with(".json") && !n.contains(".rep"))
        .unwrap();
    (read_json(&out.path().join(name)), String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn users_start_spread_out_unless_asked_and_lockstep_is_reported() {
    // Spread over one request cycle, the users' sends do not come in waves (a busy host may
    // still bunch a few). Requests of 64 tokens put the users' starts several iterations apart,
    // more than a loaded host delays a send.
    let (spread, _) = run("64", &["--input-len", "64", "--num-prompts", "48"]);
    assert!(!spread["arrivals"]["reading"].as_str().unwrap().starts_with("lockstep"), "{}", spread["arrivals"]);
    assert!(spread["arrivals"]["sent_together_share"].as_f64() < Some(0.5), "{}", spread["arrivals"]);
    assert!(spread["workload"]["user_start"].as_str().unwrap().starts_with("spread"));
    let (together, stdout) = run("64", &["--input-len", "64", "--num-prompts", "48", "--users-start-together"]);
    assert!(together["arrivals"]["reading"].as_str().unwrap().starts_with("lockstep"), "{}", together["arrivals"]);
    assert!(stdout.contains("(lockstep); figures depend on it"), "{stdout}");
    assert!(spread["arrivals"]["sent_together_share"].as_f64() < together["arrivals"]["sent_together_share"].as_f64());
    for summary in [&spread, &together] {
        let steady = &summary["steady_state"];
        assert_eq!(steady["in_flight_level"], 8, "{steady}");
        assert!(
            steady["requests"].as_u64().unwrap() > 0 && steady["requests"].as_u64() < summary["completed"].as_u64()
        );
        assert!(steady["start_s"].as_f64() < steady["end_s"].as_f64());
    }
}

#[test]
fn sessions_report_ttft_and_cache_hits_by_turn_and_a_like_for_like_prediction() {
    let (summary, stdout) =
        run("16", &["--turns", "3", "--input-len", "128", "--turn-input-len", "32", "--num-prompts", "48"]);
    let turns = summary["sessions"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3);
    assert_eq!(turns[0]["cache_hit_rate"], 0.0);
    assert!(turns[2]["cache_hit_rate"].as_f64().unwrap() > 0.5, "{}", turns[2]);
    assert!(turns[2]["mean_prompt_tokens"].as_f64().unwrap() == 128.0 + 2.0 * (16.0 + 32.0));
    assert!(stdout.contains("turn 3:"), "{stdout}");
    // The prediction is the simulator's own virtual-clock run of the same load: decode figures agree.
    let tpot = &summary["prediction"]["under_load"]["figures"]["mean_tpot_ms"];
    assert!((0.8..1.25).contains(&tpot["ratio"].as_f64().unwrap()), "{tpot}");
    assert!(stdout.contains("virtual-clock run of the same load"), "{stdout}");
}

#[test]
fn sharegpt_conversations_replay_turn_by_turn_through_the_chat_template() {
    let words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma";
    let turn = |i: usize| format!("{words} question {i} {words}");
    let conversation = |n: usize| {
        let mut turns = Vec::new();
        for i in 0..3 {
            turns.push(serde_json::json!({"from": "human", "value": turn(n * 10 + i)}));
            turns.push(serde_json::json!({"from": "gpt", "value": "a short reply of a few words"}));
        }
        serde_json::json!({ "conversations": turns })
    };
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("sharegpt.json");
    std::fs::write(&path, serde_json::to_string(&(0..4).map(conversation).collect::<Vec<_>>()).unwrap()).unwrap();
    let engine = tempfile::tempdir().unwrap();
    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), engine.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    bench(&[
        "--engine-dir",
        engine.path().to_str().unwrap(),
        "--dataset",
        "sharegpt",
        "--dataset-path",
        path.to_str().unwrap(),
        "--turns",
        "3",
        "--chat-template",
        "--concurrency",
        "2",
        "--num-prompts",
        "12",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    let summary = read_json(&out.path().join("c2_sharegpt_outds.json"));
    let turns = summary["sessions"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{:#}", summary["sessions"]);
    let prompt = |t: &Value| t["mean_prompt_tokens"].as_f64().unwrap();
    assert!(prompt(&turns[1]) > prompt(&turns[0]) && prompt(&turns[2]) > prompt(&turns[1]));
    assert!(turns[2]["cache_hit_rate"].as_f64().unwrap() > 0.3, "{}", turns[2]);
    // Each turn asks for its reference reply's length.
    let rows = std::fs::read_to_string(out.path().join("c2_sharegpt_outds.requests.jsonl")).unwrap();
    let first: Value = serde_json::from_str(rows.lines().find(|l| l.contains("\"measure\"")).unwrap()).unwrap();
    assert!(first["expected_output_tokens"].as_u64().unwrap() < 20, "{first}");
}

/// An open-loop run on the virtual clock schedules every arrival ahead of time; the iteration
/// statistics count as queued only the requests that have arrived. At 2 requests/s of 8-token
/// requests (each done in tens of milliseconds) nothing ever waits, so the queue stays empty
/// (counting the arrivals still to come, it held up to the whole schedule).
#[test]
fn scheduled_arrivals_still_to_come_are_not_queued() {
    let engine = tempfile::tempdir().unwrap();
    let virtual_clock =
        trtllm::sim::SimulatedEngine { clock: trtllm::sim::ClockMode::Virtual, ..trtllm::builtin::builtin_engine() };
    trtllm::builtin::write_engine(&virtual_clock, engine.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut args = vec!["--engine-dir", engine.path().to_str().unwrap(), "--request-rate", "2", "--seed", "1"];
    args.extend(["--input-len", "32", "--output-len", "8", "--num-prompts", "10", "--warmup", "0", "--quiet"]);
    args.extend(["--output-dir", out.path().to_str().unwrap()]);
    bench(&args);
    let summary = read_json(&out.path().join("r2_in32_out8.json"));
    assert_eq!(summary["completed"], 10);
    let iter = &summary["iter"];
    assert_eq!(iter["max_queued_requests"], 0.0, "{iter}");
    assert_eq!(iter["max_active_requests"], 1.0, "{iter}");
}
