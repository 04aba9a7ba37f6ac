//! `trtllm bench --saturate` on a virtual-clock engine: the rate rises until a point misses the
//! SLOs or over-saturates, then bisects; `saturation.json` names the highest rate within them.

use crate::common;

use common::cli::{bench, read_json};
use trtllm::sim::ClockMode;

#[test]
fn the_saturation_sweep_finds_the_highest_rate_within_the_slos() {
    // Two requests at a time, 5 ms per iteration, 10 output tokens: about 35 requests/s at most.
    let engine = common::sim::engine_dir(|b| b.iteration_ms(5.0).max_batch_size(2).clock(ClockMode::Virtual));
    let out = tempfile::tempdir().unwrap();
    let output = bench(&[
        "--engine-dir",
        engine.path().to_str().unwrap(),
        "--saturate",
        "--slo",
        "ttft:500",
        "--request-rate",
        "4",
        "--input-len",
        "16",
        "--output-len",
        "10",
        "--saturate-seconds",
        "8",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let doc = read_json(&out.path().join("saturation.json"));
    let points = doc["points"].as_array().unwrap();
    let best = doc["highest_rate_within_slos"].as_f64().expect("a rate within the SLOs");
    assert!((8.0..=40.0).contains(&best), "{best}: {stdout}");
    assert!(points.iter().any(|p| !p["meets_slos"].as_bool().unwrap()), "the sweep went past the capacity");
    assert!(
        points.iter().any(|p| p["over_saturated_after_s"].is_number()),
        "a point past capacity is flagged over-saturated: {stdout}"
    );
    // Every rate that held is below every rate that did not.
    let held = points.iter().filter(|p| p["meets_slos"] == true).map(|p| p["request_rate"].as_f64().unwrap());
    let missed = points.iter().filter(|p| p["meets_slos"] == false).map(|p| p["request_rate"].as_f64().unwrap());
    assert!(held.fold(0.0, f64::max) < missed.fold(f64::INFINITY, f64::min));
    assert!(stdout.contains("highest rate within SLOs"), "{stdout}");
    assert_eq!(
        doc["goodput_at_highest_rate"],
        points.iter().find(|p| p["request_rate"] == best).unwrap()["request_goodput"]
    );
}
