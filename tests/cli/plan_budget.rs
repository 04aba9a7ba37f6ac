//! `trtllm plan --gpus N`: aggregated workers against disaggregated prefill and decode pools on a GPU
//! budget, the verdict confirmed on the virtual clock.

use std::path::Path;
use std::process::Output;

use super::plan::{json, text, trtllm};

/// Llama-3.1-8B on H100s, one TP and engine shape, 16 requests per point.
fn plan_budget(dir: &Path, gpus: &str, input_len: &str, output_len: &str, slo: &str) -> Output {
    plan_budget_with(dir, gpus, input_len, output_len, slo, &[])
}

/// [`plan_budget`] with `extra` flags.
fn plan_budget_with(dir: &Path, gpus: &str, input_len: &str, output_len: &str, slo: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "plan",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--gpus",
        gpus,
        "--slo",
        slo,
        "--input-len",
        input_len,
        "--output-len",
        output_len,
        "--num-prompts",
        "16",
        "--tp",
        "1",
        "--no-fp8",
        "--max-batch-size",
        "64",
        "--max-num-tokens",
        "8192",
        "--scheduler-policy",
        "guaranteed-no-evict",
        "--quiet",
        "--output-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    trtllm(&args)
}

/// The architecture `summary.json` recommends, and its confirmed goodput per GPU.
fn recommended(dir: &Path) -> (String, f64, serde_json::Value) {
    let summary = json(&dir.join("summary.json"));
    let architecture = summary["recommendation"]["architecture"].as_str().unwrap_or_default().to_string();
    let goodput = summary["recommendation_confirmed"]["point"]["tokens_per_s_per_gpu"].as_f64().unwrap_or(f64::NAN);
    (architecture, goodput, summary)
}

#[test]
fn long_prompts_with_a_tight_tpot_plan_disaggregated() {
    let dir = tempfile::tempdir().unwrap();
    let out = plan_budget(dir.path(), "2", "4000", "64", "ttft:p95:1000,tpot:p95:12");
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let (architecture, goodput, summary) = recommended(dir.path());
    assert_eq!(architecture, "disaggregated", "{}", text(&out.stdout));
    // Both architectures were run on the virtual clock, and the aggregated one lost there.
    let other = summary["best_other_confirmed"]["point"]["tokens_per_s_per_gpu"].as_f64().unwrap();
    assert_eq!(summary["best_other"]["architecture"], "aggregated");
    assert!(goodput > other, "{goodput} vs {other}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("disaggregated wins"), "{stdout}");
    // Each role's commands and the bench that measures the whole.
    assert!(stdout.contains("--disagg-role context") && stdout.contains("--disagg-role generation"), "{stdout}");
    assert!(stdout.contains("bench: trtllm bench --disagg 1p1d"), "{stdout}");
    // Both architectures in the chart and the summary, marked.
    let archs: Vec<&str> =
        summary["points"].as_array().unwrap().iter().filter_map(|p| p["architecture"].as_str()).collect();
    assert!(archs.contains(&"aggregated") && archs.contains(&"disaggregated"), "{archs:?}");
    let svg = std::fs::read_to_string(dir.path().join("pareto.svg")).unwrap();
    assert!(svg.contains("disaggregated deployment") && svg.contains("aggregated worker"));
}

#[test]
fn short_prompts_with_a_loose_tpot_plan_aggregated() {
    let dir = tempfile::tempdir().unwrap();
    let out = plan_budget(dir.path(), "2", "256", "64", "ttft:p95:1000,tpot:p95:100");
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let (architecture, _, summary) = recommended(dir.path());
    assert_eq!(architecture, "aggregated", "{}", text(&out.stdout));
    assert_eq!(summary["best_other"]["architecture"], "disaggregated");
    assert!(text(&out.stdout).contains("aggregated wins"));
}

#[test]
fn a_budget_of_one_gpu_plans_aggregated_only() {
    let dir = tempfile::tempdir().unwrap();
    let out = plan_budget(dir.path(), "1", "4000", "64", "ttft:p95:1000,tpot:p95:12");
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let (architecture, _, summary) = recommended(dir.path());
    assert_eq!(architecture, "aggregated");
    let deployments = summary["deployments"].as_array().unwrap();
    assert!(!deployments.is_empty());
    assert!(deployments.iter().all(|d| d["architecture"] == "aggregated"), "{deployments:#?}");
    assert!(summary["best_other"].is_null());
    assert!(summary["verdict"].as_str().unwrap().contains("cannot be split"), "{summary:#}");
    assert!(!dir.path().join("prefill").exists(), "no prefill worker was searched");
}

#[test]
fn the_printed_goodput_is_the_confirming_runs() {
    let dir = tempfile::tempdir().unwrap();
    let first = plan_budget(dir.path(), "2", "4000", "64", "ttft:p95:1000,tpot:p95:12");
    assert!(first.status.success(), "{}", text(&first.stderr));
    let (_, goodput, summary) = recommended(dir.path());
    let line = |out: &Output| {
        text(&out.stdout).lines().find(|l| l.starts_with("recommended:")).map(str::to_string).unwrap_or_default()
    };
    let printed = line(&first);
    assert!(printed.contains(&format!(": {goodput:.1} output tokens/s per GPU")), "{printed}\n{goodput}");
    assert!(printed.contains("on the virtual clock"), "{printed}");
    // The run measured what it printed: its steady-state requests met every SLO.
    let point = &summary["recommendation_confirmed"]["point"];
    assert_eq!(point["violations"].as_array().map(Vec::len), Some(0), "{point:#}");
    assert!(point["completed"].as_u64().unwrap() > 0);
    // The confirming runs resume from the results directory: the re-run reads both back and
    // prints the same goodput.
    let again = plan_budget(dir.path(), "2", "4000", "64", "ttft:p95:1000,tpot:p95:12");
    assert!(again.status.success(), "{}", text(&again.stderr));
    let (_, resumed_goodput, resumed) = recommended(dir.path());
    assert_eq!(resumed_goodput, goodput);
    assert_eq!(resumed["configurations"]["confirmations_resumed"], 2, "{resumed:#}");
    assert!(line(&again).contains(&format!(": {goodput:.1} output tokens/s per GPU")), "{}", line(&again));
    // A run of another study (here a looser TPOT) does not reuse them.
    let other = plan_budget(dir.path(), "2", "4000", "64", "ttft:p95:1000,tpot:p95:20");
    assert!(other.status.success(), "{}", text(&other.stderr));
    assert_eq!(json(&dir.path().join("summary.json"))["configurations"]["confirmations_resumed"], 0);
}

#[test]
fn the_estimate_stays_within_ten_percent_of_the_confirming_runs() {
    // Short prompts with a loose TPOT (both architectures, about a hundred users each), and long
    // prompts with a tight one (the aggregated workers): each estimated, then run on the virtual
    // clock at the estimate's users.
    let checked: [(&str, &str, &[&str]); 2] = [
        ("256", "ttft:p95:1000,tpot:p95:100", &["aggregated", "disaggregated"]),
        ("4000", "ttft:p95:1000,tpot:p95:12", &["aggregated"]),
    ];
    for (input_len, slo, architectures) in checked {
        let dir = tempfile::tempdir().unwrap();
        let out = plan_budget(dir.path(), "2", input_len, "64", slo);
        assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
        let summary = json(&dir.path().join("summary.json"));
        for key in ["recommendation", "best_other"] {
            let architecture = summary[key]["architecture"].as_str().unwrap().to_string();
            if !architectures.contains(&architecture.as_str()) {
                continue;
            }
            let c = &summary[format!("{key}_confirmed")];
            let (measured, estimated) = (
                c["point"]["tokens_per_s_per_gpu"].as_f64().unwrap(),
                c["estimate_tokens_per_s_per_gpu"].as_f64().unwrap(),
            );
            let what = format!("{input_len}-token prompts, {architecture}");
            assert!(c["tries"] == 1, "{what}: the estimate's users missed an SLO: {c:#}");
            let ratio = estimated / measured;
            assert!((0.9..=1.1).contains(&ratio), "{what}: estimate / run {ratio:.3}: {c:#}");
        }
    }
}

#[test]
fn a_confirming_run_past_its_time_limit_stops_with_an_error_naming_the_deployment() {
    let dir = tempfile::tempdir().unwrap();
    let out = plan_budget_with(dir.path(), "2", "256", "64", "ttft:p95:1000,tpot:p95:100", &["--confirm-limit", "0"]);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("confirming 2 × tp1 bf16") || stderr.contains("confirming 1p(tp1"), "{stderr}");
    assert!(stderr.contains("wall-clock limit of 0.0 s") && stderr.contains("raise --confirm-limit"), "{stderr}");
    assert!(stderr.contains("--estimate-only"), "{stderr}");
}
