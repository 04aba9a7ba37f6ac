//! `trtllm bench --input-dist/--output-dist`: lengths drawn per request within their bounds,
//! the same draws for the same seed in process, over gRPC, through the gateway and on the
//! virtual clock, and the drawn distribution in the summary.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::cli::read_json;
use common::gateway::{Gateway, smg_executable};
use serde_json::Value;
use trtllm::sim::ClockMode;

/// Normal prompt lengths in 48..=112 around 80, uniform output lengths in 4..=12.
const SPREAD: &[&str] = &[
    "--input-len",
    "80",
    "--input-dist",
    "normal",
    "--input-stddev",
    "20",
    "--input-min",
    "48",
    "--input-max",
    "112",
    "--output-len",
    "8",
    "--output-dist",
    "uniform",
    "--output-min",
    "4",
    "--output-max",
    "12",
    "--num-prompts",
    "40",
    "--warmup",
    "1",
    "--concurrency",
    "4",
    "--seed",
    "9",
    "--quiet",
];

async fn bench(target: &[&str], out: &Path) -> (Value, Vec<Value>) {
    let mut args: Vec<String> = ["bench"].iter().chain(target).chain(SPREAD).map(|s| s.to_string()).collect();
    args.extend(["--output-dir".into(), out.to_str().unwrap().into()]);
    let output =
        tokio::task::spawn_blocking(move || Command::new(env!("CARGO_BIN_EXE_trtllm")).args(&args).output().unwrap())
            .await
            .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("lengths c4_in80_out8: input normal(mean 80, sd 20, 48..=112) drew"), "{stdout}");
    let rows = std::fs::read_to_string(out.join("c4_in80_out8.requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["phase"] == "measure")
        .collect();
    (read_json(&out.join("c4_in80_out8.json")), rows)
}

/// (index, prompt tokens, output tokens asked) of each measured request, in index order.
fn lengths(rows: &[Value]) -> Vec<(u64, u64, u64)> {
    let mut v: Vec<(u64, u64, u64)> = rows
        .iter()
        .map(|r| {
            let n = |k: &str| r[k].as_u64().unwrap_or_else(|| panic!("{k} in {r}"));
            (n("index"), n("prompt_tokens"), n("expected_output_tokens"))
        })
        .collect();
    v.sort_unstable();
    v
}

fn assert_spread(summary: &Value, rows: &[Value]) {
    assert_eq!(summary["completed"], 40, "{summary:#}");
    for r in rows {
        let (prompt, asked, got) = (
            r["prompt_tokens"].as_u64().unwrap(),
            r["expected_output_tokens"].as_u64().unwrap(),
            r["output_tokens"].as_u64().unwrap(),
        );
        assert!((48..=112).contains(&prompt), "prompt {prompt} outside its bounds");
        assert!((4..=12).contains(&asked), "output {asked} outside its bounds");
        assert_eq!(got, asked, "a fixed output length per request (ignore_eos)");
    }
    let distinct =
        |k: &str| rows.iter().map(|r| r[k].as_u64().unwrap()).collect::<std::collections::BTreeSet<_>>().len();
    assert!(distinct("prompt_tokens") > 10 && distinct("expected_output_tokens") > 4, "lengths vary");
    let section = &summary["workload"]["length_distribution"];
    assert_eq!(section["input"]["asked"]["shape"], "normal", "{section:#}");
    assert_eq!(section["input"]["asked"]["stddev"], 20.0);
    assert_eq!(section["output"]["asked"]["shape"], "uniform");
    assert_eq!(section["input"]["drawn"]["count"], 40);
    let mean = section["input"]["drawn"]["mean"].as_f64().unwrap();
    let total = summary["total_input_tokens"].as_f64().unwrap();
    assert!((mean - total / 40.0).abs() < 1e-9, "drawn mean is of the prompts sent");
    assert!((mean - 80.0).abs() < 12.0, "mean {mean} near 80");
    let sd = section["input"]["drawn"]["std"].as_f64().unwrap();
    assert!((10.0..30.0).contains(&sd), "stddev {sd} near 20");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drawn_lengths_reach_every_target_alike() {
    let dir = tempfile::tempdir().unwrap();
    let server = common::server::TestServer::start(1.0, trtllm::server::ServeOptions::default()).await;
    let engine = server.dir.path().to_str().unwrap().to_owned();
    let (local, local_rows) = bench(&["--engine-dir", &engine], &dir.path().join("local")).await;
    assert_spread(&local, &local_rows);
    let again = bench(&["--engine-dir", &engine], &dir.path().join("again")).await.1;
    assert_eq!(lengths(&local_rows), lengths(&again), "the same seed draws the same lengths");

    let grpc_target = format!("grpc://{}", server.addr);
    let (grpc, grpc_rows) = bench(&["--target", &grpc_target], &dir.path().join("grpc")).await;
    assert_spread(&grpc, &grpc_rows);
    assert_eq!(lengths(&grpc_rows), lengths(&local_rows), "over gRPC, the same requests");

    let virt = common::sim::engine_dir(|b| b.iteration_ms(2.0).clock(ClockMode::Virtual));
    let (planned, planned_rows) =
        bench(&["--engine-dir", virt.path().to_str().unwrap()], &dir.path().join("virtual")).await;
    assert_spread(&planned, &planned_rows);
    assert_eq!(lengths(&planned_rows), lengths(&local_rows), "on the virtual clock, the same requests");

    // Over HTTP (the real gateway): prompts are text whose token count, the chat template
    // included, is the drawn length.
    let Some(smg) = smg_executable() else { return };
    let tokenizer = server.dir.path().join("tokenizer");
    let gateway = Gateway::start(&smg, &[server.addr], "round_robin", &tokenizer).await;
    let http_target = format!("{}/v1", gateway.base);
    let (http, http_rows) = bench(&["--target", &http_target], &dir.path().join("http")).await;
    assert_spread(&http, &http_rows);
    assert_eq!(lengths(&http_rows), lengths(&local_rows), "through the gateway, the same lengths");
}

#[test]
fn length_options_are_refused_where_they_do_not_apply() {
    let refused = |extra: &[&str], why: &str| {
        let out = common::cli::run_bench(extra);
        assert!(!out.status.success(), "{extra:?} should fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(why), "{extra:?}: {stderr}");
    };
    refused(&["--input-len", "64", "--input-dist", "normal"], "needs a standard deviation");
    refused(
        &["--input-len", "64", "--input-dist", "uniform", "--input-min", "80", "--input-max", "70"],
        "min 80 is above max 70",
    );
    refused(&["--input-dist", "gamma"], "unknown length distribution");
    refused(
        &["--input-len", "64", "--input-dist", "normal", "--input-stddev", "8", "--turns", "2"],
        "single-turn random prompts",
    );
}
