//! `trtllm plan` of a Mixture-of-Experts model: expert parallelism is a dimension of the search,
//! the recommended build command carries it, and a dense model refuses it.

use std::path::Path;
use std::process::Output;

use super::plan::{json, text, tinyllama_96_16, trtllm};

/// Mixtral 8x7B on two H100s, one engine shape, 64-token prompts and 32 output tokens at 1 and 8
/// users, with the extra arguments given.
fn plan_mixtral(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "plan",
        "--model",
        "mixtral-8x7b",
        "--gpu",
        "h100-sxm",
        "--slo",
        "ttft:p95:5000,tpot:p95:500",
        "--input-len",
        "64",
        "--output-len",
        "32",
        "--concurrency",
        "1,8",
        "--num-prompts",
        "8",
        "--tp",
        "2",
        "--no-fp8",
        "--max-batch-size",
        "16",
        "--max-num-tokens",
        "512",
        "--chunked-context",
        "on",
        "--scheduler-policy",
        "guaranteed-no-evict",
        "--quiet",
        "--exhaustive",
        "--output-dir",
        dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    trtllm(&args)
}

/// The expert-parallel size of each configuration result in `dir` (absent: 1).
fn eps(dir: &Path) -> Vec<u64> {
    let mut eps: Vec<u64> = std::fs::read_dir(dir.join("configs"))
        .unwrap()
        .map(|e| json(&e.unwrap().path())["candidate"]["engine"]["ep"].as_u64().unwrap_or(1))
        .collect();
    eps.sort_unstable();
    eps
}

#[test]
fn expert_parallelism_is_searched_and_the_recommendation_builds_with_it() {
    let dir = tempfile::tempdir().unwrap();
    // By default every ep that divides both tp 2 and the 8 experts: 1 and 2.
    let both = dir.path().join("both");
    let out = plan_mixtral(&both, &[]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(eps(&both), [1, 2]);
    let summary = json(&both.join("summary.json"));
    assert_eq!(summary["configurations"], 2, "{summary:#}");
    let labels: Vec<&str> =
        summary["ranking"].as_array().unwrap().iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert!(labels.iter().any(|l| l.starts_with("tp2 ep2 ")) && labels.iter().any(|l| l.starts_with("tp2 bf16")));
    assert!(text(&out.stdout).contains("tp2 ep2 "), "{}", text(&out.stdout));
    let rec = &summary["recommendation"];
    let ep = rec["candidate"]["engine"]["ep"].as_u64().unwrap_or(1);
    assert_eq!(rec["sim_build"].as_str().unwrap().contains("--moe-ep"), ep > 1, "{rec:#}");

    // Only ep 2: the recommended command carries it and builds an engine with the experts split.
    let ep2 = dir.path().join("ep2");
    let out = plan_mixtral(&ep2, &["--ep", "2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(eps(&ep2), [2]);
    let build = json(&ep2.join("summary.json"))["recommendation"]["sim_build"].as_str().unwrap().to_string();
    assert!(build.contains(" --tp 2 --moe-ep 2 "), "{build}");
    let words: Vec<&str> = build.split_whitespace().collect();
    let built = trtllm(&words[1..]);
    assert!(built.status.success(), "{}", text(&built.stderr));
    let config = json(&ep2.join("engine").join("config.json"));
    assert_eq!(config.pointer("/pretrained_config/mapping/moe_ep_size"), Some(&serde_json::json!(2)), "{config:#}");

    // Resuming keeps ep values apart: the ep 2 result is reused, the ep 1 one is not taken for it.
    let out = plan_mixtral(&ep2, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let resumed = json(&ep2.join("summary.json"));
    assert_eq!((resumed["configurations"].as_u64(), resumed["resumed"].as_u64()), (Some(2), Some(1)), "{resumed:#}");
    assert_eq!(eps(&ep2), [1, 2]);
}

#[test]
fn expert_parallelism_is_refused_for_a_dense_model_and_uneven_experts() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("dense");
    let mut args = tinyllama_96_16("ttft:p95:1000");
    args.extend(["--tp", "2", "--ep", "2", "--output-dir", out_dir.to_str().unwrap()]);
    let dense = trtllm(&args);
    assert_eq!(dense.status.code(), Some(2));
    assert!(text(&dense.stderr).contains("tinyllama-1.1b is a dense model"), "{}", text(&dense.stderr));
    assert!(!out_dir.exists(), "nothing is run");
    let uneven = plan_mixtral(&dir.path().join("uneven"), &["--ep", "3"]);
    assert_eq!(uneven.status.code(), Some(2));
    assert!(text(&uneven.stderr).contains("does not divide the 8 experts"), "{}", text(&uneven.stderr));
}
