//! `trtllm bench` GPU telemetry on a simulated engine in process: the timing model's
//! counterparts of NVML's figures sampled through the same interface, written as a time series,
//! averaged in the summary and plotted beside throughput.

use std::process::Command;

use crate::common;
use common::cli::read_json;

#[test]
fn a_simulated_run_writes_gpu_samples_averages_and_their_plot() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(2.0));
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "--engine-dir", engine.path().to_str().unwrap(), "--concurrency", "4"])
        .args(["--input-len", "64", "--output-len", "64", "--num-prompts", "96", "--gpu-sample-interval", "0.1"])
        .args(["--quiet", "--output-dir", out.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("gpu c4_in64_out64 (simulated, mean over the point): compute"), "{stdout}");

    let samples: Vec<serde_json::Value> = std::fs::read_to_string(out.path().join("c4_in64_out64.gpu.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(samples.len() >= 3, "{} samples", samples.len());
    // No sample without a period to measure over: the first comes one interval in, not at the start.
    assert!(samples[0]["t_s"].as_f64().unwrap() > 0.05, "{}", samples[0]);
    let busy = samples.iter().filter(|s| s["mem_util_pct"].as_f64().is_some_and(|u| u > 0.0)).count();
    assert!(busy >= 2, "the modelled memory traffic shows while requests run: {samples:?}");
    for s in &samples {
        let used = s["memory_used_bytes"].as_f64().unwrap();
        assert!(used > 0.0 && used < s["memory_total_bytes"].as_f64().unwrap(), "{s}");
        assert!(s["gpu_util_pct"].as_f64().unwrap() <= 100.0 && s["mem_util_pct"].as_f64().unwrap() <= 100.0);
    }

    let summary = read_json(&out.path().join("c4_in64_out64.json"));
    let telemetry = &summary["gpu_telemetry"];
    assert_eq!(telemetry["source"], "simulated");
    assert_eq!(telemetry["samples"], samples.len());
    let mean = telemetry["gpus"][0]["mean_mem_util_pct"].as_f64().unwrap();
    let by_hand = samples.iter().map(|s| s["mem_util_pct"].as_f64().unwrap()).sum::<f64>() / samples.len() as f64;
    assert!((mean - by_hand).abs() < 1e-9, "{mean} vs {by_hand}");

    let svg = std::fs::read_to_string(out.path().join("c4_in64_out64.gpu.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> =
        doc.descendants().filter(|n| n.has_tag_name("text")).filter_map(|n| n.text()).map(str::trim).collect();
    for panel in
        ["output tokens/s", "GPU compute utilization (%)", "memory-bandwidth utilization (%)", "memory in use (GiB)"]
    {
        assert!(texts.contains(&panel), "{panel} missing: {texts:?}");
    }
    assert!(!texts.contains(&"power (W)"), "the simulator models no power");
}

#[test]
fn off_means_no_samples() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(1.0));
    let out = tempfile::tempdir().unwrap();
    common::cli::small_bench(engine.path(), out.path(), &["--gpu-telemetry", "false"]);
    assert!(!out.path().join("c2_in16_out8.gpu.jsonl").exists());
    assert!(read_json(&out.path().join("c2_in16_out8.json")).get("gpu_telemetry").is_none());
}
