//! `trtllm bench --lora-adapters` end to end: the summary's `lora` section classes every request
//! as a device-cache hit or miss by replaying the cache from the requests' perf metrics, and the
//! replay agrees with the simulator's own counters.

use std::process::Command;

use serde_json::Value;

#[test]
fn device_cache_hits_and_misses_are_replayed_in_agreement_with_the_simulator() {
    let engine_dir = tempfile::tempdir().unwrap();
    let engine = trtllm::sim::SimulatedEngine { iteration_ms: Some(1.0), ..trtllm::builtin::builtin_engine() };
    trtllm::builtin::write_engine(&engine, engine_dir.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "--engine-dir", engine_dir.path().to_str().unwrap(), "--concurrency", "8"])
        .args(["--input-len", "64", "--output-len", "16", "--num-prompts", "40", "--warmup", "4"])
        // Eight rank-16 adapters; a device cache for about two of them.
        .args(["--lora-adapters", "8", "--lora-rank", "16", "--lora-zipf", "1.0"])
        .args(["--lora-device-cache-percent", "0.0002", "--output-dir", out.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("c8_in64_out16.json")).unwrap()).unwrap();
    assert_eq!((summary["completed"].as_u64(), summary["failed"].as_u64()), (Some(40), Some(0)));

    let lora = &summary["lora"];
    let by_device = &lora["by_device_cache"];
    let slots = by_device["device_cache_adapters"].as_u64().unwrap();
    assert!((1..8).contains(&slots), "a cache smaller than the working set: {by_device}");
    // Every measured request is classed, each class with its latencies.
    let (hit, miss) = (&by_device["hit"], &by_device["miss"]);
    assert_eq!(hit["requests"].as_u64().unwrap() + miss["requests"].as_u64().unwrap(), 40, "{by_device}");
    for class in [hit, miss] {
        assert!(class["requests"].as_u64().unwrap() > 0, "{by_device}");
        assert!(class["mean_ttft_ms"].as_f64().unwrap() > 0.0 && class["mean_tpot_ms"].as_f64().unwrap() > 0.0);
    }
    // The replay (warmup included) reproduces the simulator's own counters exactly.
    let counters = &lora["device_cache"];
    for key in ["hits", "misses", "evictions"] {
        assert_eq!(by_device["replayed"][key], counters[key], "{key}: {lora}");
    }
    assert!(counters["evictions"].as_u64().unwrap() > 0, "{lora}");
}

#[test]
fn adapters_on_the_virtual_clock_never_go_by_task_id_before_the_executor_has_them() {
    // Scheduled arrivals reach the executor in arrival order, not in the order they were
    // enqueued: a request naming an adapter by task id must not overtake the one bringing the
    // weights ("LoRA task N not found in cache").
    let engine_dir = tempfile::tempdir().unwrap();
    let engine =
        trtllm::sim::SimulatedEngine { clock: trtllm::sim::ClockMode::Virtual, ..trtllm::builtin::builtin_engine() };
    trtllm::builtin::write_engine(&engine, engine_dir.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "--engine-dir", engine_dir.path().to_str().unwrap(), "--concurrency", "8"])
        .args(["--input-len", "128", "--output-len", "32", "--num-prompts", "64", "--warmup", "0"])
        .args(["--lora-adapters", "8", "--lora-rank", "16", "--output-dir", out.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("c8_in128_out32.json")).unwrap()).unwrap();
    assert_eq!((summary["completed"].as_u64(), summary["failed"].as_u64()), (Some(64), Some(0)), "{summary}");
    // Every adapter went with its weights at least once, and later requests by task id.
    let lora = &summary["lora"];
    assert!(lora["sent_by_task_id"]["requests"].as_u64().unwrap() > 0, "{lora}");
}
