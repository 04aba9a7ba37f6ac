//! `trtllm bench --metrics-url`: a real `trtllm serve`'s and the real smg gateway's Prometheus
//! endpoints scraped before, during and after a point, their counters' deltas matching the
//! requests the bench sent.

use std::process::Command;

use crate::common;
use common::cli::read_json;
use common::gateway::{Gateway, smg_executable};
use common::server::{TestServer, free_port_addr};
use serde_json::Value;

async fn bench(target: String, metrics: Vec<String>, out: std::path::PathBuf) -> Value {
    let output = tokio::task::spawn_blocking({
        let out = out.clone();
        move || {
            Command::new(env!("CARGO_BIN_EXE_trtllm"))
                .args(["bench", "--target", &target, "--metrics-url", &metrics.join(","), "--metrics-interval", "0.2"])
                .args(["--concurrency", "2", "--input-len", "32", "--output-len", "48", "--num-prompts", "12"])
                .args(["--warmup", "1", "--quiet", "--output-dir", out.to_str().unwrap()])
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary = read_json(&out.join("c2_in32_out48.json"));
    summary["server_metrics"].clone()
}

/// The delta of the first counter whose series starts with `prefix`.
fn delta(endpoint: &Value, prefix: &str) -> f64 {
    let counters = endpoint["counters"].as_object().unwrap();
    counters
        .iter()
        .find(|(k, _)| k.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} in {:#}", endpoint["counters"]))
        .1["delta"]
        .as_f64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_workers_and_the_gateways_counters_count_the_benchs_requests() {
    let metrics_addr = free_port_addr();
    let options = trtllm::server::ServeOptions { metrics_addr: Some(metrics_addr), ..Default::default() };
    let worker = TestServer::builder().iteration_ms(2.0).options(options).start().await;
    let worker_metrics = format!("http://{metrics_addr}/metrics");
    let dir = tempfile::tempdir().unwrap();

    let section = bench(format!("grpc://{}", worker.addr), vec![worker_metrics.clone()], dir.path().join("grpc")).await;
    let endpoint = &section["endpoints"][0];
    assert_eq!(endpoint["url"], worker_metrics.as_str());
    assert!(endpoint["errors"].as_array().unwrap().is_empty(), "{endpoint:#}");
    assert!(endpoint["scrapes"].as_u64().unwrap() >= 3, "before, during and after: {endpoint:#}");
    // 12 measured requests and 1 warmup, each 32 prompt and 48 output tokens.
    assert_eq!(delta(endpoint, "trtllm_requests_total"), 13.0, "{:#}", endpoint["counters"]);
    assert_eq!(delta(endpoint, "trtllm_time_to_first_token_seconds_count"), 13.0);
    assert_eq!(delta(endpoint, "nv_llm_output_token_len_sum"), 13.0 * 48.0);
    let rows = std::fs::read_to_string(dir.path().join("grpc").join("c2_in32_out48.server_metrics.jsonl")).unwrap();
    assert!(rows.lines().count() >= 1, "the gauge series during the point");

    // Through the real gateway: its own endpoint and the worker's, scraped side by side.
    let Some(smg) = smg_executable() else { return };
    let tokenizer = worker.dir.path().join("tokenizer");
    let gateway = Gateway::start(&smg, &[worker.addr], "round_robin", &tokenizer).await;
    let urls = vec![gateway.metrics_url.clone(), worker_metrics];
    let section = bench(format!("{}/v1", gateway.base), urls, dir.path().join("http")).await;
    let (smg_end, worker_end) = (&section["endpoints"][0], &section["endpoints"][1]);
    assert!(smg_end["errors"].as_array().unwrap().is_empty(), "{smg_end:#}");
    assert_eq!(delta(worker_end, "trtllm_requests_total"), 13.0, "the worker served each request once");
    let counters = smg_end["counters"].as_object().unwrap();
    assert!(
        counters.iter().any(|(k, v)| k.contains("request") && v["delta"].as_f64() == Some(13.0)),
        "a gateway request counter moved by 13: {:#}",
        smg_end["counters"]
    );
}

#[test]
fn an_unreachable_endpoint_is_recorded_not_fatal() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0));
    let out = tempfile::tempdir().unwrap();
    let url = format!("http://{}/metrics", free_port_addr());
    common::cli::small_bench(engine.path(), out.path(), &["--metrics-url", &url, "--quiet"]);
    let section = &read_json(&out.path().join("c2_in16_out8.json"))["server_metrics"];
    let errors = section["endpoints"][0]["errors"].as_array().unwrap();
    assert!(errors.len() >= 2 && errors[0].as_str().unwrap().contains("scraping"), "{section:#}");
}
