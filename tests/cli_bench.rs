//! `trtllm bench` end to end on a fast simulated engine: files, vLLM keys, executor token counts.

mod common;

use std::process::Command;

use serde_json::Value;

const VLLM_KEYS: &[&str] = &[
    "date",
    "endpoint_type",
    "backend",
    "label",
    "model_id",
    "tokenizer_id",
    "num_prompts",
    "max_model_len",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "duration",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "input_throughput",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "failed_requests",
    "mean_ttft_ms",
    "median_ttft_ms",
    "std_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "median_tpot_ms",
    "std_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "median_itl_ms",
    "std_itl_ms",
    "p99_itl_ms",
    "mean_e2el_ms",
    "median_e2el_ms",
    "std_e2el_ms",
    "p99_e2el_ms",
];

#[test]
fn a_small_sweep_writes_every_file_with_executor_counts() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0));
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args([
            "bench",
            "--engine-dir",
            engine.path().to_str().unwrap(),
            "--concurrency",
            "1,4",
        ])
        .args([
            "--input-len",
            "16",
            "--output-len",
            "8",
            "--num-prompts",
            "8",
            "--warmup",
            "2",
        ])
        .args([
            "--slo",
            "ttft:1000,tpot:100",
            "--output-dir",
            out.path().to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let table = String::from_utf8_lossy(&status.stdout);
    assert!(table.contains("c=1") && table.contains("c=4"), "{table}");

    for concurrency in [1, 4] {
        let stem = out.path().join(format!("c{concurrency}_in16_out8"));
        let summary: Value =
            serde_json::from_str(&std::fs::read_to_string(stem.with_extension("json")).unwrap())
                .unwrap();
        for key in VLLM_KEYS {
            assert!(summary.get(key).is_some(), "summary lacks {key}");
        }
        assert_eq!(summary["completed"], 8);
        assert_eq!(summary["failed"], 0);
        assert_eq!(summary["total_input_tokens"], 8 * 16);
        assert_eq!(
            summary["total_output_tokens"],
            8 * 8,
            "the executor's counts, warmup excluded"
        );
        assert_eq!(summary["max_concurrency"], concurrency);
        assert!(summary["mean_ttft_ms"].as_f64().unwrap() > 0.0);
        assert!(
            summary["p99_ttft_ms"].as_f64().unwrap() >= summary["median_ttft_ms"].as_f64().unwrap()
        );
        assert!(summary["request_goodput"].as_f64().unwrap() > 0.0);
        assert!(summary["iter"]["count"].as_u64().unwrap() >= 8);
        assert!(summary["kv"]["max_num_blocks"].as_u64().unwrap() > 0);
        assert_eq!(summary["engine"]["config"]["model_name"], "test-model");

        let requests =
            std::fs::read_to_string(format!("{}.requests.jsonl", stem.display())).unwrap();
        let rows: Vec<Value> = requests
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 10, "8 measured + 2 warmup");
        assert_eq!(rows.iter().filter(|r| r["phase"] == "warmup").count(), 2);
        assert!(
            rows.iter()
                .all(|r| r["output_tokens"] == 8 && r["prompt_tokens"] == 16)
        );
        let csv = std::fs::read_to_string(format!("{}.requests.csv", stem.display())).unwrap();
        assert_eq!(csv.lines().count(), 11);
        let iters = std::fs::read_to_string(format!("{}.iters.jsonl", stem.display())).unwrap();
        assert!(iters.lines().count() >= 8);
    }
    let sweep = std::fs::read_to_string(out.path().join("sweep.csv")).unwrap();
    assert_eq!(sweep.lines().count(), 3);
    for svg in ["ttft_vs_inflight_tokens.svg", "latency_vs_throughput.svg"] {
        let text = std::fs::read_to_string(out.path().join(svg)).unwrap();
        assert!(text.starts_with("<svg") || text.contains("<svg"), "{svg}");
        assert!(
            text.contains("<polyline") || text.contains("<path"),
            "{svg} has a series"
        );
    }

    let compare = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "compare"])
        .arg(out.path().join("c1_in16_out8.json"))
        .arg(out.path().join("c4_in16_out8.json"))
        .output()
        .unwrap();
    assert!(compare.status.success());
    assert!(String::from_utf8_lossy(&compare.stdout).contains("ttft"));
}

#[test]
fn bad_bench_arguments_exit_with_code_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "--concurrency", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_target_gives_the_same_token_counts() {
    let server =
        common::server::TestServer::start(1.0, trtllm::server::ServeOptions::default()).await;
    let out = tempfile::tempdir().unwrap();
    let target = format!("grpc://{}", server.addr);
    let args = [
        "--concurrency",
        "4",
        "--input-len",
        "16",
        "--output-len",
        "8",
        "--num-prompts",
        "8",
        "--warmup",
        "1",
    ];
    let grpc = tokio::task::spawn_blocking({
        let dir = out.path().join("grpc");
        move || {
            Command::new(env!("CARGO_BIN_EXE_trtllm"))
                .args([
                    "bench",
                    "--target",
                    &target,
                    "--output-dir",
                    dir.to_str().unwrap(),
                ])
                .args(args)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(
        grpc.status.success(),
        "{}",
        String::from_utf8_lossy(&grpc.stderr)
    );
    let local = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args([
            "bench",
            "--engine-dir",
            server.dir.path().to_str().unwrap(),
            "--output-dir",
        ])
        .arg(out.path().join("local"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        local.status.success(),
        "{}",
        String::from_utf8_lossy(&local.stderr)
    );
    let read = |sub: &str| -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(out.path().join(sub).join("c4_in16_out8.json")).unwrap(),
        )
        .unwrap()
    };
    let (grpc, local) = (read("grpc"), read("local"));
    for key in [
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
    ] {
        assert_eq!(grpc[key], local[key], "{key}");
    }
    assert_eq!(grpc["total_output_tokens"], 64);
    assert!(
        grpc["server"]["mean_ttft_ms"].as_f64().unwrap() > 0.0,
        "server times come through the protocol"
    );
    assert_eq!(
        grpc["metadata"]["target"],
        format!("grpc://{}", server.addr)
    );
}
