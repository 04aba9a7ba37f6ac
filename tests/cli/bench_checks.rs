//! `trtllm bench` checks before the work: options before the engine loads, the workload against
//! the engine's limits before the first request; failed requests by reason on the console and in
//! the exit code, within a `--max-failed` budget; `--slo` judged on the console.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::cli::{read_json, run_bench, stderr};
use trtllm::sim::SimFaults;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn options_alone_are_refused_before_an_engine_loads() {
    // The engine directory does not exist: each option's error comes first, as it would before
    // minutes of loading a real engine.
    let refused = |extra: &[&str], why: &str| {
        let mut args = vec!["--engine-dir", "/nonexistent/engine"];
        args.extend_from_slice(extra);
        let out = run_bench(&args);
        assert!(!out.status.success(), "{extra:?}");
        let text = stderr(&out);
        assert!(text.contains(why) && !text.contains("/nonexistent/engine"), "{extra:?}: {text}");
    };
    refused(&["--concurrency", "0"], "--concurrency must be at least 1");
    refused(&["--output-len", "0"], "--output-len must be at least 1");
    refused(&["--duration", "0"], "--duration must be a positive number of seconds");
    refused(&["--input-len", "64", "--input-dist", "normal"], "needs a standard deviation");
    refused(&["--slo", "tpot:p9:50"], "SLO percentile \"p9\" is not pN with N from 50 to 99.99");
    refused(&["--slo", "speed:50"], "the metrics are ttft, tpot, itl, e2el");
    refused(&["--saturate", "--slo", "ttft:500", "--input-len", "64,128"], "one --input-len and one --output-len");
    refused(&["--max-failed", "120%"], "neither a count of requests");
}

fn lengths_bench(engine: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["--engine-dir", engine.to_str().unwrap(), "--concurrency", "4", "--num-prompts", "16"];
    args.extend(["--warmup", "1", "--quiet", "--output-dir", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    run_bench(&args)
}

/// Prompt lengths of the measured requests, from `<stem>.requests.jsonl`.
fn prompt_lengths(path: &Path) -> Vec<u64> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["phase"] == "measure")
        .map(|r| r["prompt_tokens"].as_u64().unwrap())
        .collect()
}

#[test]
fn a_length_distribution_beyond_the_engines_limits_is_refused_before_sending_or_clipped() {
    // max_input_len 128, max_seq_len 512.
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0));
    let dir = tempfile::tempdir().unwrap();
    let drawn = ["--input-len", "64", "--input-dist", "lognormal", "--input-stddev", "48", "--input-max", "256"];
    let mut args = drawn.to_vec();
    args.extend(["--output-len", "8"]);

    let refused_dir = dir.path().join("refused");
    let refused = lengths_bench(engine.path(), &refused_dir, &args);
    assert_eq!(refused.status.code(), Some(1), "{}", stdout(&refused));
    let text = stderr(&refused);
    assert!(
        text.contains("reach 256 tokens, beyond the engine's max_input_len 128")
            && text.contains("Lower --input-max to 128")
            && text.contains("--clip-lengths"),
        "{text}"
    );
    assert!(!refused_dir.exists(), "nothing was sent or written");

    // The same workload clipped: every prompt within the limit, and the console says so.
    let clipped_dir = dir.path().join("clipped");
    args.push("--clip-lengths");
    let clipped = lengths_bench(engine.path(), &clipped_dir, &args);
    assert!(clipped.status.success(), "{}", stderr(&clipped));
    assert!(
        stdout(&clipped).contains("clipped c4_in64_out8 to the engine's limits: prompts up to 128 tokens"),
        "{}",
        stdout(&clipped)
    );
    let lengths = prompt_lengths(&clipped_dir.join("c4_in64_out8.requests.jsonl"));
    assert_eq!(lengths.len(), 16);
    assert!(lengths.iter().all(|&n| n <= 128), "{lengths:?}");
    assert_eq!(read_json(&clipped_dir.join("c4_in64_out8.json"))["failed"], 0);

    // Prompt and output beyond max_seq_len: outputs would be cut short, so it is refused too.
    let long = lengths_bench(engine.path(), &dir.path().join("long"), &["--input-len", "100", "--output-len", "450"]);
    assert_eq!(long.status.code(), Some(1));
    let text = stderr(&long);
    assert!(
        text.contains("reach 550 tokens, beyond the engine's max_seq_len 512") && text.contains("--output-len to 412"),
        "{text}"
    );
}

/// Eight 20-token prompts of a 1000-token vocabulary, every fourth holding token 7.
fn prompts_with_token_7(dir: &Path) -> std::path::PathBuf {
    let lines: String = (0..8u32)
        .map(|i| {
            let mut ids: Vec<u32> = (0..20u32).map(|t| 10 + (t * 31 + i * 97) % 900).collect();
            if i % 4 == 0 {
                ids[3] = 7;
            }
            format!("{}\n", serde_json::json!({"prompt_token_ids": ids, "output_len": 8}))
        })
        .collect();
    let path = dir.join("prompts.jsonl");
    std::fs::write(&path, lines).unwrap();
    path
}

#[test]
fn failed_requests_are_listed_by_reason_and_fail_the_run_beyond_the_budget() {
    let faults = SimFaults { fail_prompt_token: Some(7), ..Default::default() };
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0).faults(faults));
    let dir = tempfile::tempdir().unwrap();
    let prompts = prompts_with_token_7(dir.path());
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec!["--engine-dir", engine.path().to_str().unwrap(), "--dataset", "jsonl"];
        args.extend(["--dataset-path", prompts.to_str().unwrap(), "--concurrency", "2", "--num-prompts", "8"]);
        args.extend(["--warmup", "0", "--quiet", "--output-dir", out.to_str().unwrap()]);
        args.extend_from_slice(extra);
        run_bench(&args)
    };
    let strict = run("strict", &[]);
    assert_eq!(strict.status.code(), Some(1), "any failure fails the run by default");
    let console = stdout(&strict);
    assert!(console.contains("failed c2_jsonl_outds: 2 of 8 requests, by reason:"), "{console}");
    assert!(console.contains("\n  2 x ") && console.contains("fail_prompt_token"), "{console}");
    assert!(stderr(&strict).contains("beyond --max-failed 0"), "{}", stderr(&strict));

    for (budget, ok) in [("2", true), ("25%", true), ("1", false), ("20%", false)] {
        let out = run(budget, &["--max-failed", budget]);
        assert_eq!(out.status.success(), ok, "--max-failed {budget}: {}", stderr(&out));
        assert!(stdout(&out).contains("failed c2_jsonl_outds: 2 of 8"), "listed whatever the budget");
    }
}

#[test]
fn an_slo_prints_goodput_attainment_and_each_percentile_on_the_console() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0));
    let out = tempfile::tempdir().unwrap();
    // The short form is the p95 of plan's grammar; a p99 limit no request can meet misses. (A
    // first token takes at least one 1 ms iteration; a TPOT can be 0 when a loaded host hands a
    // request's tokens over together.)
    let slo = ["--slo", "tpot:5000,ttft:p99:0.001"];
    let output = common::cli::small_bench(engine.path(), out.path(), &slo);
    let console = stdout(&output);
    let line = console.lines().find(|l| l.starts_with("slo c2_in16_out8")).unwrap_or_else(|| panic!("{console}"));
    assert!(line.contains("(tpot:p95:5000,ttft:p99:0.001)"), "{line}");
    assert!(line.contains("goodput 0.000 req/s, 0 of 4 requests (0.0%) within every limit"), "{line}");
    assert!(line.contains("tpot p95 ") && line.contains(" ms <= 5000 met"), "{line}");
    assert!(line.contains("ttft p99 ") && line.contains(" ms > 0.001 MISSED"), "{line}");
    let summary = read_json(&out.path().join("c2_in16_out8.json"));
    assert_eq!(summary["request_goodput"], 0.0);
}
