//! `trtllm plan`: a small configuration search end to end — result files, the SVG, the
//! recommendation, resuming, and the printed `trtllm sim build` command.

use std::path::Path;
use std::process::Output;

pub(super) use crate::common::cli::trtllm;

pub(super) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A small search: TinyLlama on an A6000, 2 batch sizes × 2 token budgets × chunking on/off,
/// 96-token prompts, 16 output tokens, 1, 4 and 16 users.
fn plan(dir: &Path, slo: &str) -> Output {
    trtllm(&[
        "plan",
        "--model",
        "tinyllama-1.1b",
        "--gpu",
        "rtx-a6000",
        "--slo",
        slo,
        "--input-len",
        "96",
        "--output-len",
        "16",
        "--concurrency",
        "1,4,16",
        "--num-prompts",
        "8",
        "--tp",
        "1",
        "--max-batch-size",
        "4,16",
        "--max-num-tokens",
        "64,512",
        "--chunked-context",
        "on,off",
        "--scheduler-policy",
        "guaranteed-no-evict",
        "--quiet",
        "--exhaustive",
        "--output-dir",
        dir.to_str().unwrap(),
    ])
}

pub(super) fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_small_search_recommends_a_configuration_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan");
    let first = plan(&out, "ttft:p95:2000,tpot:p95:200");
    assert!(first.status.success(), "{}\n{}", text(&first.stdout), text(&first.stderr));
    let stdout = text(&first.stdout);

    // 8 combinations; a 96-token prompt without chunking does not fit a 64-token budget: 2 pruned.
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["configurations"], 6, "{summary:#}");
    assert_eq!(summary["pruned"], 2);
    assert_eq!(summary["resumed"], 0);
    let configs: Vec<_> = std::fs::read_dir(out.join("configs")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(configs.len(), 6);
    for path in &configs {
        let result = json(path);
        assert_eq!(path.file_stem().unwrap().to_str().unwrap(), result["key"].as_str().unwrap());
        assert!(result["error"].is_null(), "{result:#}");
        let points = result["points"].as_array().unwrap();
        assert!(!points.is_empty());
        // Closed-loop loads above the engine's batch cap are not run.
        let cap = result["candidate"]["engine"]["max_batch_size"].as_u64().unwrap();
        assert!(points.iter().all(|p| p["load"].as_str().unwrap()[1..].parse::<u64>().unwrap() <= cap));
    }
    assert!(
        std::fs::read_dir(&out).unwrap().all(|e| !e.unwrap().file_name().to_string_lossy().starts_with("engine-")),
        "the per-configuration engines are removed"
    );

    // The recommendation meets the SLOs and has the best goodput per GPU of the ranking.
    let rec = &summary["recommendation"];
    let ranking = summary["ranking"].as_array().unwrap();
    assert_eq!(rec["key"], ranking[0]["key"]);
    let best = rec["goodput_tokens_per_s_per_gpu"].as_f64().unwrap();
    assert!(best > 0.0);
    assert!(ranking.iter().all(|r| r["goodput_tokens_per_s_per_gpu"].as_f64().unwrap() <= best));
    assert!(!summary["pareto_front"].as_array().unwrap().is_empty());
    let svg = std::fs::read_to_string(out.join("pareto.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("Pareto front") && svg.contains("recommended"), "{svg}");
    let build = rec["sim_build"].as_str().unwrap();
    assert!(stdout.contains(build) && stdout.contains(rec["serve"].as_str().unwrap()), "{stdout}");

    // The printed build command builds the recommended engine.
    let words: Vec<&str> = build.split_whitespace().collect();
    assert_eq!(words[..3], ["trtllm", "sim", "build"]);
    let built = trtllm(&words[1..]);
    assert!(built.status.success(), "{}", text(&built.stderr));
    let engine = trtllm::EngineConfig::from_dir(out.join("engine")).unwrap();
    let knobs = &rec["candidate"]["engine"];
    assert_eq!(engine.max_batch_size() as u64, knobs["max_batch_size"].as_u64().unwrap());
    assert_eq!(engine.max_num_tokens() as u64, knobs["max_num_tokens"].as_u64().unwrap());

    // A re-run resumes every configuration and reaches the same recommendation.
    let again = plan(&out, "ttft:p95:2000,tpot:p95:200");
    assert!(again.status.success(), "{}", text(&again.stderr));
    let resumed = json(&out.join("summary.json"));
    assert_eq!(resumed["resumed"], 6);
    assert_eq!(resumed["recommendation"], summary["recommendation"]);
    assert!(text(&again.stdout).contains("6 resumed"));

    // Other SLOs are another study: nothing is reused.
    let other = plan(&out, "ttft:p95:1500,tpot:p95:200");
    assert!(other.status.success(), "{}", text(&other.stderr));
    assert_eq!(json(&out.join("summary.json"))["resumed"], 0);
}

#[test]
fn impossible_slos_fail_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = plan(dir.path(), "ttft:p95:0.001");
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("no configuration meets the SLOs"), "{}", text(&out.stdout));
}

#[test]
fn bad_slos_and_knobs_are_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    for (slo, needle) in [
        ("ttft:95:500", "pN"),
        ("speed:p95:5", "unknown SLO metric \"speed\": the metrics are ttft, tpot, itl, e2el"),
        ("ttft:p95:-3", "milliseconds"),
        // A typo for p95 is refused, not read as the 9th percentile.
        ("ttft:p95:500,tpot:p9:50", "SLO percentile \"p9\" is not pN with N from 50 to 99.99"),
    ] {
        let out = plan(dir.path(), slo);
        assert_eq!(out.status.code(), Some(1), "{slo}");
        assert!(text(&out.stderr).contains(needle), "{slo}: {}", text(&out.stderr));
    }
    let out =
        trtllm(&["plan", "--model", "tinyllama-1.1b", "--gpu", "b300", "--slo", "ttft:p95:1", "--output-dir", "x"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("rtx-a6000"), "{}", text(&out.stderr));
    assert!(!Path::new("x").exists());
}

/// `trtllm plan` of TinyLlama on an A6000 under `slo`, 96-token prompts and 16 output tokens.
pub(super) fn tinyllama_96_16(slo: &str) -> Vec<&str> {
    vec![
        "plan",
        "--model",
        "tinyllama-1.1b",
        "--gpu",
        "rtx-a6000",
        "--slo",
        slo,
        "--input-len",
        "96",
        "--output-len",
        "16",
    ]
}

/// One configuration (TinyLlama on an A6000, batch 16, chunked context) at 1 and 16 users, with the
/// extra arguments given; returns the run's output directory's configuration result.
fn plan_one(dir: &Path, extra: &[&str]) -> (Output, serde_json::Value) {
    let mut args = tinyllama_96_16("ttft:p95:5000");
    args.extend([
        "--concurrency",
        "1,16",
        "--num-prompts",
        "16",
        "--tp",
        "1",
        "--max-batch-size",
        "16",
        "--max-num-tokens",
        "512,8192",
        "--chunked-context",
        "on",
        "--scheduler-policy",
        "guaranteed-no-evict",
        "--quiet",
        "--output-dir",
        dir.to_str().unwrap(),
    ]);
    args.extend_from_slice(extra);
    let out = trtllm(&args);
    let summary = if out.status.success() { json(&dir.join("summary.json")) } else { serde_json::Value::Null };
    (out, summary)
}

#[test]
fn a_calibration_file_prices_both_the_pruning_and_the_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (preset, preset_summary) = plan_one(&dir.path().join("preset"), &[]);
    assert!(preset.status.success(), "{}", text(&preset.stderr));
    assert_eq!(preset_summary["pruned"], 0, "{preset_summary:#}");

    // A slower GPU than the preset (weights stream at half the rate, twice the host overhead) with 3.2 GiB:
    // 2 GiB of weights and the runtime leave room for the 512-token budget's activations, not the 8,192's.
    let calibration = dir.path().join("slow.json");
    let figures = serde_json::json!({"gpu": "rtx-a6000", "source": "test",
        "figures": {"bandwidth_efficiency": 0.43, "iteration_overhead_ms": 1.0, "memory_gib": 3.2}});
    std::fs::write(&calibration, figures.to_string()).unwrap();
    let (slow, slow_summary) = plan_one(&dir.path().join("slow"), &["--calibration", calibration.to_str().unwrap()]);
    assert!(slow.status.success(), "{}", text(&slow.stderr));
    assert_eq!(slow_summary["pruned"], 1, "{slow_summary:#}");

    // The same configuration, run on both: every latency percentile is higher and the throughput lower.
    let key = slow_summary["recommendation"]["key"].as_str().unwrap().to_string();
    let point = |dir: &Path, load: &str| {
        let result = json(&dir.join("configs").join(format!("{key}.json")));
        result["points"].as_array().unwrap().iter().find(|p| p["load"] == load).unwrap().clone()
    };
    for load in ["c1", "c16"] {
        let fast = point(&dir.path().join("preset"), load);
        let slow = point(&dir.path().join("slow"), load);
        let (fast_tps, slow_tps) =
            (fast["tokens_per_s_per_gpu"].as_f64().unwrap(), slow["tokens_per_s_per_gpu"].as_f64().unwrap());
        println!("{load}: {fast_tps:.0} tokens/s/GPU on the preset, {slow_tps:.0} calibrated");
        assert!(slow_tps < 0.8 * fast_tps, "{load}: {slow_tps} vs {fast_tps}");
    }
    let build = slow_summary["recommendation"]["sim_build"].as_str().unwrap();
    assert!(build.contains("--gpu-override bandwidth_efficiency=0.43"), "{build}");

    // A calibration of another GPU is refused.
    let wrong_dir = dir.path().join("wrong");
    let wrong = trtllm(&[
        "plan",
        "--model",
        "tinyllama-1.1b",
        "--gpu",
        "h100-sxm",
        "--slo",
        "ttft:p95:5000",
        "--calibration",
        calibration.to_str().unwrap(),
        "--output-dir",
        wrong_dir.to_str().unwrap(),
    ]);
    assert!(!wrong.status.success());
    assert!(text(&wrong.stderr).contains("calibrates the rtx-a6000 preset, not h100-sxm"), "{}", text(&wrong.stderr));
}

/// The default search (every TP that divides TinyLlama's heads, users doubled until goodput
/// peaks) with and without `--exhaustive`: skipping configurations by their steady-state bound
/// changes neither the recommendation nor the five best, and does skip some.
#[test]
fn a_pruned_search_keeps_the_recommendation_and_the_five_best() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out_dir = dir.path().join(name);
        let mut args = tinyllama_96_16("ttft:p95:400,tpot:p95:12");
        args.extend([
            "--num-prompts",
            "8",
            "--max-batch-size",
            "4,16,64",
            "--max-num-tokens",
            "512",
            "--scheduler-policy",
            "guaranteed-no-evict",
            "--quiet",
            "--engine-dir",
            "engine",
            "--output-dir",
            out_dir.to_str().unwrap(),
        ]);
        args.extend_from_slice(extra);
        let out = trtllm(&args);
        assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
        assert!(out.stderr.is_empty(), "--quiet prints only the result: {}", text(&out.stderr));
        (json(&out_dir.join("summary.json")), text(&out.stdout))
    };
    let (full, _) = run("full", &["--exhaustive"]);
    let (pruned, stdout) = run("pruned", &[]);
    let top = |s: &serde_json::Value| -> Vec<(String, String)> {
        s["ranking"].as_array().unwrap()[..5]
            .iter()
            .map(|r| {
                (
                    r["key"].as_str().unwrap().to_owned(),
                    format!("{:.3}", r["goodput_tokens_per_s_per_gpu"].as_f64().unwrap()),
                )
            })
            .collect()
    };
    assert_eq!(full["bounded"], 0);
    assert_eq!(full["lost_statistics"], 0);
    assert_eq!(pruned["lost_statistics"], 0);
    let tps: std::collections::BTreeSet<u64> = full["ranking"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap()[2..3].parse().unwrap())
        .collect();
    assert_eq!(tps.into_iter().collect::<Vec<_>>(), [1, 2, 4, 8], "every TP that divides 32 heads is searched");
    assert!(pruned["bounded"].as_u64().unwrap() > 0, "nothing was skipped: {pruned:#}");
    // Every configuration of the space is counted once.
    let counts = &pruned["counts"];
    let count = |k: &str| counts[k].as_u64().unwrap();
    assert_eq!(count("space"), count("run") + count("bounded") + count("pruned_before"), "{counts:#}");
    assert_eq!(pruned["recommendation"], full["recommendation"]);
    assert_eq!(top(&pruned), top(&full));
    assert!(stdout.contains("by their bound"), "{stdout}");
}
