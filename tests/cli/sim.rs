//! `trtllm sim build` and `trtllm sim presets`: engine directories from presets, and clear errors.

use std::process::Command;

use crate::common::cli::{bench_token_prompts, stderr, trtllm};

#[test]
fn build_writes_an_engine_directory_the_executor_loads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("llama70b");
    let output = trtllm(&[
        "sim",
        "build",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--tp",
        "4",
        "--max-batch-size",
        "256",
        "--max-input-len",
        "8192",
        "--max-seq-len",
        "16384",
        "--max-num-tokens",
        "4096",
        "--dtype",
        "fp8",
        "--kv-cache-dtype",
        "fp8",
        "--clock",
        "virtual",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("4 x NVIDIA H100 SXM 80GB"), "{stdout}");
    assert!(stdout.contains("bandwidth bound"), "{stdout}");

    let engine = trtllm::EngineConfig::from_dir(&out).unwrap();
    assert_eq!((engine.tp_size(), engine.max_batch_size(), engine.max_input_len()), (4, 256, 8192));
    assert_eq!((engine.max_seq_len(), engine.max_num_tokens()), (16384, 4096));
    let simulation: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("simulation.json")).unwrap()).unwrap();
    assert_eq!(simulation["gpu"], "h100-sxm");
    assert_eq!(simulation["clock"], "virtual");
    let executor = trtllm::Executor::load(&out, Default::default()).expect("the simulator loads it");
    executor.shutdown(trtllm::ShutdownMode::Cancel).unwrap();
}

#[test]
fn build_refuses_what_the_hardware_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("engine");
    let out = out.to_str().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (&["--model", "llama-3.1-70b", "--gpu", "h100-sxm"], "does not fit"),
        (&["--model", "qwen2.5-7b", "--gpu", "a100-sxm-80gb", "--dtype", "fp8"], "FP8 tensor cores"),
        (&["--model", "qwen2.5-7b", "--gpu", "rtx-a6000", "--kv-cache-dtype", "fp8"], "Ampere"),
        (&["--model", "qwen-7b", "--gpu", "rtx-a6000"], "unknown model preset \"qwen-7b\""),
        (&["--model", "qwen2.5-7b", "--gpu", "a6000"], "known: rtx-a6000"),
    ];
    for (args, message) in cases {
        let mut full = vec!["sim", "build", "--output", out];
        full.extend_from_slice(args);
        let output = trtllm(&full);
        assert!(!output.status.success(), "{args:?} succeeded");
        assert!(stderr(&output).contains(message), "{args:?}: {}", stderr(&output));
        assert!(!dir.path().join("engine").exists(), "{args:?} wrote files");
    }
    let output = trtllm(&["sim", "build", "--model", "qwen2.5-7b", "--gpu", "rtx-a6000", "--tp", "3", "--output", out]);
    assert!(stderr(&output).contains("divide the 28 attention heads"), "{}", stderr(&output));
}

#[test]
fn presets_lists_models_and_gpus_with_their_figures() {
    let output = trtllm(&["sim", "presets"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for id in ["tinyllama-1.1b", "qwen2.5-7b", "llama-3.1-8b", "llama-3.1-70b", "rtx-a6000", "l40s", "h200"] {
        assert!(text.contains(id), "{id} missing from:\n{text}");
    }
    let output = trtllm(&["sim", "presets", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["gpus"][3]["id"], "h100-sxm");
    assert_eq!(json["gpus"][3]["fp8_tflops"], 1979.0);
    assert_eq!(json["models"][1]["shape"]["intermediate_size"], 18944);
    assert_eq!(json["models"][2]["eos_token_ids"], serde_json::json!([128001, 128008, 128009]));
}

#[test]
fn build_speculative_writes_the_mode_draft_length_and_acceptance() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("medusa");
    let args = ["sim", "build", "--model", "tinyllama-1.1b", "--gpu", "h100-sxm", "--speculative", "medusa"];
    let output =
        trtllm(&[&args[..], &["--draft-len", "3", "--acceptance", "0.6", "--output", out.to_str().unwrap()]].concat());
    assert!(output.status.success(), "{}", stderr(&output));
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["build_config"]["speculative_decoding_mode"], "medusa");
    assert_eq!(config["build_config"]["max_draft_len"], 3);
    assert_eq!(config["pretrained_config"]["num_medusa_heads"], 3);
    let sim: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("simulation.json")).unwrap()).unwrap();
    assert_eq!(sim["speculative"]["acceptance"], serde_json::json!([0.6]));
    trtllm::Executor::load(&out, trtllm::ExecutorConfig::default()).expect("the speculative engine loads");

    let bad = trtllm(&[&args[..], &["--acceptance", "1.5", "--output", out.to_str().unwrap()]].concat());
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("probability"), "{}", stderr(&bad));
}

#[test]
fn a_reader_that_goes_away_ends_the_command_quietly() {
    use std::process::Stdio;
    // `trtllm sim presets | true`: the reader is gone before the command writes its first line.
    let mut child = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["sim", "presets"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run trtllm");
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let err = stderr(&output);
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("Broken pipe"), "{err}");
}

#[test]
fn predict_prints_the_parts_and_calibrate_writes_a_file_build_applies() {
    let dir = tempfile::tempdir().unwrap();
    let engine = dir.path().join("engine");
    let built =
        trtllm(&["sim", "build", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--output", engine.to_str().unwrap()]);
    assert!(built.status.success(), "{}", stderr(&built));

    let predicted = trtllm(&[
        "sim",
        "predict",
        "--engine-dir",
        engine.to_str().unwrap(),
        "--decode",
        "256:1024",
        "--prefill",
        "512",
        "--json",
    ]);
    assert!(predicted.status.success(), "{}", stderr(&predicted));
    let json: serde_json::Value = serde_json::from_slice(&predicted.stdout).unwrap();
    let time = &json["time"];
    let parts: f64 =
        ["gemm_ms", "decode_attention_ms", "context_attention_ms", "memory_passes_ms", "logits_ms", "overhead_ms"]
            .iter()
            .map(|k| time[k].as_f64().unwrap())
            .sum();
    assert!((parts - time["total_ms"].as_f64().unwrap()).abs() < 1e-9, "{time}");
    assert!(time["decode_attention_ms"].as_f64().unwrap() > 5.0, "256 x 1k tokens of KV: {time}");
    let no_batch = trtllm(&["sim", "predict", "--engine-dir", engine.to_str().unwrap()]);
    assert!(!no_batch.status.success() && stderr(&no_batch).contains("--decode"), "{}", stderr(&no_batch));

    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/src/sim/calibration/");
    let calibration = dir.path().join("h100.json");
    let calibrated = trtllm(&[
        "sim",
        "calibrate",
        "--kernel-table",
        &format!("{data}h100_roofline.json"),
        &format!("{data}h100_knee.json"),
        "--output",
        calibration.to_str().unwrap(),
    ]);
    assert!(calibrated.status.success(), "{}", stderr(&calibrated));
    let printed = String::from_utf8_lossy(&calibrated.stdout);
    assert!(printed.contains("held-out error: median"), "{printed}");
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&calibration).unwrap()).unwrap();
    let mfu = file["figures"]["mfu"].as_f64().unwrap();

    let rebuilt = dir.path().join("calibrated");
    let output = trtllm(&[
        "sim",
        "build",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--calibration",
        calibration.to_str().unwrap(),
        "--output",
        rebuilt.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let sim: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rebuilt.join("simulation.json")).unwrap()).unwrap();
    assert_eq!(sim["gpu_overrides"]["mfu"].as_f64().unwrap(), mfu);
    let wrong_gpu = trtllm(&[
        "sim",
        "build",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h200",
        "--calibration",
        calibration.to_str().unwrap(),
        "--output",
        rebuilt.to_str().unwrap(),
    ]);
    assert!(stderr(&wrong_gpu).contains("calibrates the h100-sxm preset"), "{}", stderr(&wrong_gpu));
}

/// Builds a Llama-3.1-8B H100 engine (`engine_args` add precision and parallelism) whose GPU has the
/// `hidden` figures, runs `trtllm bench` on it, calibrates from the bench's files alone, and checks that the
/// hidden figures come back and the held-out iterations are predicted.
fn bench_round_trip(engine_args: &[&str], hidden: &[(&str, f64)]) {
    let dir = tempfile::tempdir().unwrap();
    let engine = dir.path().join("engine");
    let mut build: Vec<String> = ["sim", "build", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--clock", "virtual"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    build.extend(["--max-input-len", "2048", "--max-seq-len", "2560", "--max-batch-size", "64"].map(String::from));
    build.extend(engine_args.iter().map(|s| s.to_string()));
    for (figure, value) in hidden {
        build.extend(["--gpu-override".to_string(), format!("{figure}={value}")]);
    }
    build.extend(["--output".to_string(), engine.display().to_string()]);
    let built = trtllm(&build.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(built.status.success(), "{}", stderr(&built));

    // Varied prompts and outputs, so that the iterations mix prefill, short and long decode, and batch sizes.
    let (prompt_len, output_len) = (|i| 64 + (i * 977) % 1400, |i| 24 + (i * 53) % 160);
    let (bench, out) = bench_token_prompts(dir.path(), &engine, (96, 24), prompt_len, output_len, &["--save-detailed"]);
    assert!(bench.status.success(), "{}", stderr(&bench));
    let stem = std::fs::read_dir(&out)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".iters.jsonl").map(str::to_owned))
        .next()
        .expect("the bench wrote an iterations file");
    let stem = out.join(stem);

    // Calibrate from the files alone: the preset's figures, the engine's config.json for the model.
    let calibration = dir.path().join("fitted.json");
    let fitted = trtllm(&[
        "sim",
        "calibrate",
        "--gpu",
        "h100-sxm",
        "--engine-dir",
        engine.to_str().unwrap(),
        "--bench",
        stem.to_str().unwrap(),
        "--output",
        calibration.to_str().unwrap(),
        "--json",
    ]);
    assert!(fitted.status.success(), "{}", stderr(&fitted));
    let fit: serde_json::Value = serde_json::from_slice(&fitted.stdout).unwrap();
    println!("{fit:#}");
    // Iterations with chunked prompts are dropped (the files do not say how a prompt was split); most remain.
    let iterations = std::fs::read_to_string(format!("{}.iters.jsonl", stem.display())).unwrap().lines().count();
    let used = fit["measurements"].as_u64().unwrap() as usize;
    println!("{used} of {iterations} iterations explained by the requests file");
    assert!(used * 10 >= iterations * 6, "{used} of {iterations}");
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&calibration).unwrap()).unwrap();
    for &(figure, truth) in hidden {
        let value = file["figures"][figure].as_f64().unwrap();
        let error = value / truth - 1.0;
        println!("{figure}: hidden {truth}, recovered {value:.4} ({:+.2}%)", error * 100.0);
        assert!(error.abs() < 0.03, "{figure}: hidden {truth}, recovered {value}");
    }
    let held_out = file["held_out_error"].as_array().unwrap();
    let (median, worst) = (held_out[0].as_f64().unwrap(), held_out[2].as_f64().unwrap());
    println!("held-out iterations: median {:.3}%, worst {:.3}%", median * 100.0, worst * 100.0);
    assert!(median < 0.005 && worst < 0.02, "held-out median {median}, worst {worst}");
}

#[test]
fn calibrate_recovers_hidden_figures_from_a_real_bench_run() {
    // Engines whose GPU has figures the preset does not: what a user's own engine would be.
    bench_round_trip(
        &[],
        &[
            ("bandwidth_efficiency", 0.72),
            ("mfu", 0.52),
            ("decode_attention_efficiency", 0.80),
            ("iteration_overhead_ms", 1.3),
        ],
    );
    // FP8 weights and KV cache over two GPUs: the FP8 GEMM rate is fitted, with the all-reduces in every iteration.
    bench_round_trip(
        &["--dtype", "fp8", "--kv-cache-dtype", "fp8", "--tp", "2"],
        &[
            ("bandwidth_efficiency", 0.80),
            ("fp8_gemm_efficiency", 0.50),
            ("decode_attention_efficiency", 0.85),
            ("iteration_overhead_ms", 0.9),
        ],
    );
}

/// `sim build --kv-link` writes the link into simulation.json, and a disaggregated bench on that engine
/// (without a --kv-link of its own) times its transfers over that link; a bad efficiency is refused.
#[test]
fn build_records_the_kv_link_a_disaggregated_bench_then_crosses() {
    let dir = tempfile::tempdir().unwrap();
    let engine = dir.path().join("engine");
    let engine_arg = engine.to_str().unwrap();
    let mut args = vec!["sim", "build", "--model", "tinyllama-1.1b", "--gpu", "rtx-a6000"];
    args.extend(["--kv-link", "eth-100", "--kv-link-efficiency", "0.5", "--output", engine_arg]);
    let output = trtllm(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let simulation = crate::common::cli::read_json(&engine.join("simulation.json"));
    assert_eq!(simulation["kv_transfer"], serde_json::json!({"link": "eth-100", "efficiency": 0.5}));

    let out = dir.path().join("bench");
    let mut bench = vec!["--engine-dir", engine_arg, "--disagg", "1p1d", "--concurrency", "1", "--input-len", "64"];
    bench.extend(["--output-len", "4", "--num-prompts", "2", "--warmup", "0", "--quiet"]);
    bench.extend(["--output-dir", out.to_str().unwrap()]);
    crate::common::cli::bench(&bench);
    let summary = crate::common::cli::read_json(&out.join("c1_in64_out4.json"));
    let link = &summary["engine"]["disaggregation"]["kv_link"];
    assert_eq!((link["bandwidth_gb_s"].as_f64(), link["efficiency"].as_f64()), (Some(12.5), Some(0.5)), "{link}");

    let bad = dir.path().join("bad");
    let mut args = vec!["sim", "build", "--model", "tinyllama-1.1b", "--gpu", "rtx-a6000", "--kv-link-efficiency"];
    args.extend(["1.5", "--output", bad.to_str().unwrap()]);
    let refused = trtllm(&args);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("efficiency 1.5"), "{}", stderr(&refused));
    assert!(!bad.exists(), "a refused build writes nothing");
}
