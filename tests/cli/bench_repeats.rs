//! `trtllm bench --repeats N` on a seeded virtual-clock engine: each headline figure's spread and
//! confidence interval, reproducible, and `bench compare` telling a real difference from noise.

use crate::common;

use common::cli::{bench, read_json};
use serde_json::Value;
use trtllm::sim::ClockMode;

fn repeated(engine: &std::path::Path, rate: &str, out: &std::path::Path) -> Value {
    let args = [
        "--engine-dir",
        engine.to_str().unwrap(),
        "--request-rate",
        rate,
        "--input-len",
        "64",
        "--output-len",
        "16",
        "--num-prompts",
        "40",
        "--repeats",
        "4",
        "--seed",
        "3",
        "--output-dir",
        out.to_str().unwrap(),
    ];
    let output = bench(&args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(&format!("repeats r{rate}_in64_out16 (4 runs)")), "{stdout}");
    read_json(&out.join(format!("r{rate}_in64_out16.json")))
}

#[test]
fn repeats_report_a_seeded_confidence_interval_and_compare_tells_noise() {
    let engine = common::sim::engine_dir(|b| b.iteration_ms(4.0).clock(ClockMode::Virtual));
    let (a, again, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = repeated(engine.path(), "50", a.path());
    let ttft = &first["repeats"]["figures"]["mean_ttft_ms"];
    let values: Vec<f64> = ttft["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(values.len(), 4);
    assert_eq!(values[0], first["mean_ttft_ms"].as_f64().unwrap(), "the first run is the point's own summary");
    assert!(values.windows(2).any(|w| w[0] != w[1]), "each repeat draws its own Poisson arrivals: {values:?}");
    let mean = values.iter().sum::<f64>() / 4.0;
    let std = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
    assert!((ttft["mean"].as_f64().unwrap() - mean).abs() < 1e-9);
    assert!((ttft["std"].as_f64().unwrap() - std).abs() < 1e-9);
    assert!((ttft["cv"].as_f64().unwrap() - std / mean).abs() < 1e-9);
    // Student's t with 3 degrees of freedom.
    let half = 3.182 * std / 2.0;
    assert!((ttft["ci95_low"].as_f64().unwrap() - (mean - half)).abs() < 1e-9);
    assert!((ttft["ci95_high"].as_f64().unwrap() - (mean + half)).abs() < 1e-9);
    for r in 2..=4 {
        let path = a.path().join(format!("r50_in64_out16.rep{r}.json"));
        assert_eq!(read_json(&path)["mean_ttft_ms"].as_f64().unwrap(), values[r - 1]);
    }
    // Seeded: the same command gives the same runs.
    let second = repeated(engine.path(), "50", again.path());
    assert_eq!(second["repeats"]["figures"]["mean_ttft_ms"], first["repeats"]["figures"]["mean_ttft_ms"]);

    // Four times the rate: the throughput difference is far beyond the runs' noise; the same
    // point again is within it.
    let faster = repeated(engine.path(), "200", b.path());
    assert!(faster["repeats"]["figures"]["request_throughput"]["mean"].as_f64() > Some(100.0));
    let compare = |x: &std::path::Path, y: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_trtllm"))
            .args(["bench", "compare", "--allow-different-workloads", x.to_str().unwrap(), y.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let line =
        |text: &str, key: &str| text.lines().find(|l| l.starts_with(key) && l.contains("noise")).unwrap().to_owned();
    let text = compare(&a.path().join("r50_in64_out16.json"), &b.path().join("r200_in64_out16.json"));
    assert!(line(&text, "request_throughput").contains("beyond noise"), "{text}");
    let text = compare(&a.path().join("r50_in64_out16.json"), &again.path().join("r50_in64_out16.json"));
    assert!(line(&text, "mean_ttft_ms").contains("noise"), "{text}");
    assert!(!line(&text, "mean_ttft_ms").contains("beyond"), "{text}");
}
