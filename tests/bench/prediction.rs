//! `trtllm bench` on simulated GPUs: the timing model's prediction beside the measurement, and
//! planning runs on the virtual clock reported in simulated time.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::cli::{bench, read_json, run_bench};
use serde_json::Value;
use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine, SimulatedEngineBuilder};

fn num(v: &Value, pointer: &str) -> f64 {
    v.pointer(pointer).and_then(Value::as_f64).unwrap_or_else(|| panic!("{pointer} missing in {v:#}"))
}

/// Llama-3.1-8B's shape on a simulated H100.
fn llama_h100() -> SimulatedEngineBuilder {
    SimulatedEngine::builder().model(ModelPreset::by_id("llama-3.1-8b").unwrap()).gpu("h100-sxm").max_batch_size(64)
}

fn write(engine: SimulatedEngine) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    engine.write_to(dir.path()).unwrap();
    dir
}

fn sweep(engine_dir: &Path, out: &Path, concurrency: &str) -> Output {
    bench(&[
        "--engine-dir",
        engine_dir.to_str().unwrap(),
        "--concurrency",
        concurrency,
        "--input-len",
        "512",
        "--output-len",
        "32",
        "--num-prompts",
        "6",
        "--warmup",
        "2",
        "--output-dir",
        out.to_str().unwrap(),
    ])
}

#[test]
fn the_prediction_sits_beside_the_measurement_with_ratios() {
    let engine = write(llama_h100().clock(ClockMode::Virtual).build());
    let out = tempfile::tempdir().unwrap();
    let output = sweep(engine.path(), out.path(), "1,4");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("prediction c1_in512_out32: TTFT"), "{stdout}");

    for stem in ["c1_in512_out32", "c4_in512_out32"] {
        let summary = read_json(&out.path().join(format!("{stem}.json")));
        let p = &summary["prediction"];
        assert_eq!(p["gpu"], "h100-sxm");
        assert_eq!((p["prompt_tokens"].as_u64(), p["output_tokens"].as_u64()), (Some(512), Some(32)));
        // Measured figures are the executor's, as the server section reports them.
        assert_eq!(num(p, "/measured/ttft_ms"), num(&summary, "/server/mean_ttft_ms"));
        assert_eq!(num(p, "/measured/tpot_ms"), num(&summary, "/server/mean_tpot_ms"));
        // Ratios are measured / predicted.
        for (ratio, measured, predicted) in [
            ("/ratio/ttft", "/measured/ttft_ms", "/single_stream/ttft_ms"),
            ("/ratio/prefill", "/measured/prefill_ms", "/single_stream/prefill_ms"),
            ("/ratio/tpot", "/measured/tpot_ms", "/single_stream/tpot_ms"),
        ] {
            let expected = num(p, measured) / num(p, predicted);
            assert!((num(p, ratio) - expected).abs() < 1e-9 * expected, "{ratio} in {p:#}");
        }
    }

    let one = read_json(&out.path().join("c1_in512_out32.json"));
    // One stream alone on the executor is what the model describes: generous tolerance.
    for ratio in ["/prediction/ratio/ttft", "/prediction/ratio/tpot"] {
        assert!((num(&one, ratio) - 1.0).abs() < 0.05, "{ratio} = {}", num(&one, ratio));
    }
    assert!(one["prediction"].get("batch").is_none(), "no batch figure at concurrency 1");

    let four = read_json(&out.path().join("c4_in512_out32.json"));
    let batch = &four["prediction"]["batch"];
    assert_eq!(batch["concurrency"], 4);
    // Four streams share one pass over the weights: a step costs more than one stream's, far
    // less than four.
    let step = num(batch, "/decode_step_ms");
    let single = num(&four, "/prediction/single_stream/tpot_ms");
    assert!(step > single && step < 2.0 * single, "{step} vs {single}");
}

#[test]
fn no_prediction_without_a_timing_model() {
    // A fixed iteration time replaces the GPU model: nothing to predict, and no zeros either.
    let engine = write(llama_h100().iteration_ms(1.0).build());
    let out = tempfile::tempdir().unwrap();
    let output = sweep(engine.path(), out.path(), "2");
    let summary = read_json(&out.path().join("c2_in512_out32.json"));
    assert!(summary.get("prediction").is_none(), "{:#}", summary["prediction"]);
    assert!(!String::from_utf8_lossy(&output.stdout).contains("prediction"));
    assert_eq!(summary["clock"]["kind"], "wall");
    assert!(summary.get("calibration").is_some(), "real time keeps the runner's own error");
}

#[test]
fn a_virtual_clock_run_reports_simulated_time_and_matches_the_model_at_one_stream() {
    let engine = llama_h100().clock(ClockMode::Virtual).build();
    let model = engine.perf_model().unwrap();
    let dir = write(engine.clone());
    let out = tempfile::tempdir().unwrap();
    sweep(dir.path(), out.path(), "1");
    let summary = read_json(&out.path().join("c1_in512_out32.json"));

    let clock = &summary["clock"];
    assert_eq!(clock["kind"], "virtual");
    assert_eq!(clock["itl_unmapped_requests"], 0);
    assert!(summary.get("calibration").is_none(), "client and executor times are one figure here");

    // The headline TTFT is the executor's simulated TTFT, and it is what the model says.
    let predicted_ttft = model.ttft_ms(512, engine.limits.max_num_tokens, engine.limits.tokens_per_block);
    let ttft = num(&summary, "/mean_ttft_ms");
    assert!((ttft / predicted_ttft - 1.0).abs() < 0.05, "TTFT {ttft} ms vs predicted {predicted_ttft} ms");
    let single = model.single_stream(512, 32, engine.limits.max_num_tokens, engine.limits.tokens_per_block);
    let tpot = num(&summary, "/mean_tpot_ms");
    assert!((tpot / single.tpot_ms - 1.0).abs() < 0.05, "TPOT {tpot} ms vs predicted {} ms", single.tpot_ms);
    // Per-token ITL comes from the iterations that produced the tokens: one decode step each.
    let itl = num(&summary, "/median_itl_ms");
    assert!((itl / model.decode_step_ms(512 + 16) - 1.0).abs() < 0.05, "ITL {itl} ms");

    // Duration and rates are in simulated time too: six requests one after another.
    let e2el = num(&summary, "/mean_e2el_ms");
    let duration_ms = num(&summary, "/duration") * 1e3;
    assert!((duration_ms / (6.0 * e2el) - 1.0).abs() < 0.05, "duration {duration_ms} ms for 6 x {e2el} ms");
    let rate = num(&summary, "/request_throughput");
    assert!((rate * duration_ms / 1e3 - 6.0).abs() < 1e-6);
}

#[test]
fn a_virtual_clock_run_fills_the_batch_with_the_concurrency() {
    let engine = write(llama_h100().clock(ClockMode::Virtual).build());
    let out = tempfile::tempdir().unwrap();
    bench(&[
        "--engine-dir",
        engine.path().to_str().unwrap(),
        "--concurrency",
        "16",
        "--input-len",
        "256",
        "--output-len",
        "64",
        "--output-dir",
        out.path().to_str().unwrap(),
    ]);
    let summary = read_json(&out.path().join("c16_in256_out64.json"));
    // Sixteen closed-loop users on an engine with room for 64: never more than 16 in the batch.
    assert_eq!(summary["iter"]["max_active_requests"], 16.0);
    assert_eq!(summary["completed"], 32);
    // The iteration figures cover the measured window, not the 16 warmup requests before it:
    // they start at the iteration that scheduled the first measured request.
    let jsonl = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(out.path().join(name))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let first_measured = jsonl("c16_in256_out64.requests.jsonl")
        .iter()
        .filter(|r| r["phase"] == "measure")
        .map(|r| r["server"]["first_iter"].as_u64().unwrap())
        .min()
        .unwrap();
    let iterations = jsonl("c16_in256_out64.iters.jsonl");
    assert!(first_measured > 0);
    assert!(
        iterations.iter().all(|i| i["iter"].as_u64().unwrap() >= first_measured),
        "iterations before {first_measured} reported"
    );
    let passes = iterations.iter().filter(|i| i["num_active_requests"].as_i64().unwrap() > 0).count();
    assert_eq!(summary["iter"]["count"], passes);
    // The 32 measured prompts' blocks, none reused, and none of the warmup's.
    let block = summary["kv"]["tokens_per_block"].as_u64().unwrap();
    assert_eq!(summary["kv"]["missed_blocks"], 32 * 256 / block);
    // Sixteen requests share every decode step: each token takes longer than alone, and the
    // executor serves far more than one stream's tokens per simulated second.
    let tpot = num(&summary, "/mean_tpot_ms");
    let single = num(&summary, "/prediction/single_stream/tpot_ms");
    assert!(tpot > single, "{tpot} vs {single}");
    assert!(num(&summary, "/output_throughput") > 4.0 * 1e3 / single);
}

#[test]
fn a_virtual_clock_point_gives_the_same_figures_every_run() {
    // A planning answer that changed from run to run would be no answer: every request is queued
    // in one call, so the simulated executor starts from the same state each time.
    let engine = write(llama_h100().clock(ClockMode::Virtual).build());
    let figures = || {
        let out = tempfile::tempdir().unwrap();
        bench(&[
            "--engine-dir",
            engine.path().to_str().unwrap(),
            "--concurrency",
            "8",
            "--input-len",
            "256",
            "--output-len",
            "32",
            "--num-prompts",
            "24",
            "--warmup",
            "8",
            "--output-dir",
            out.path().to_str().unwrap(),
        ]);
        let summary = read_json(&out.path().join("c8_in256_out32.json"));
        ["/mean_ttft_ms", "/p99_ttft_ms", "/mean_tpot_ms", "/p99_itl_ms", "/duration", "/output_throughput"]
            .map(|pointer| num(&summary, pointer))
    };
    // Equal to the nanosecond: the executor's stamps are whole nanoseconds on a clock that
    // starts at a different instant each run, so only float rounding may differ.
    let (first, second) = (figures(), figures());
    for (a, b) in first.iter().zip(&second) {
        assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{first:?} vs {second:?}");
    }
}

#[test]
fn every_load_shape_runs_on_the_virtual_clock() {
    let engine = write(llama_h100().clock(ClockMode::Virtual).build());
    let dir = engine.path().to_str().unwrap();
    let shapes = [
        &["--request-rate", "4", "--num-prompts", "8"][..],
        &["--request-rate", "20", "--max-concurrency", "2", "--num-prompts", "8"],
        &["--concurrency", "2", "--duration", "3"],
        &["--concurrency", "4", "--ramp-up", "1", "--duration", "2"],
    ];
    for extra in shapes {
        let out = tempfile::tempdir().unwrap();
        let mut args = vec!["--engine-dir", dir, "--input-len", "64", "--output-len", "4", "--warmup", "0"];
        args.extend_from_slice(extra);
        args.extend(["--output-dir", out.path().to_str().unwrap()]);
        let output = run_bench(&args);
        assert!(output.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&output.stderr));
        let summary = std::fs::read_dir(out.path())
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "json") && !p.to_string_lossy().contains("sweep"))
            .map(|p| read_json(&p))
            .unwrap_or_else(|| panic!("{extra:?}: no summary"));
        assert_eq!(summary["clock"]["kind"], "virtual", "{extra:?}");
        assert!(num(&summary, "/completed") >= 2.0, "{extra:?}: {summary:#}");
        if extra.contains(&"--duration") {
            // Users stop sending at ramp-up + duration in simulated time (in-flight ones finish).
            let duration = num(&summary, "/duration");
            assert!(duration > 1.5 && duration < 4.0, "{extra:?}: duration {duration}");
        }
    }
}
