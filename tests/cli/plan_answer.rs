//! `trtllm plan`'s console tells the whole answer: the latencies at the recommendation against
//! the SLOs, a precision note when FP8 wins (with the best BF16 beside it), a warning when the
//! best point is at the edge of the search, counts on stderr and stdout that reconcile, and
//! progress lines when stderr is not a terminal.

use super::plan::{json, text, trtllm};

#[test]
fn the_console_gives_the_latencies_the_precision_the_edge_and_counts_that_reconcile() {
    let dir = tempfile::tempdir().unwrap();
    // Llama-3.1-8B on an H100 (which has FP8): one batch size of 4, so the climb c1, c2, c4 ends at
    // the largest batch searched, within loose SLOs. The short SLO form is the p95.
    let out = trtllm(&[
        "plan",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--slo",
        "ttft:5000,tpot:p99:500",
        "--input-len",
        "96",
        "--output-len",
        "16",
        "--num-prompts",
        "8",
        "--tp",
        "1",
        "--max-batch-size",
        "4",
        "--max-num-tokens",
        "512",
        "--chunked-context",
        "on",
        "--scheduler-policy",
        "guaranteed-no-evict",
        "--output-dir",
        dir.path().join("plan").to_str().unwrap(),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Four configurations (FP8 weights and KV cache on and off), each line counting them alike.
    assert!(stderr.contains("4 configurations in the space: 4 to run, 0 pruned before running"), "{stderr}");
    assert!(
        stdout.contains(
            "4 configurations in the space: 4 run (0 resumed), 0 skipped by their bound, 0 pruned before running"
        ),
        "{stdout}"
    );
    // Progress lines, since stderr is a pipe here: the first and the last configuration.
    assert!(stderr.contains("plan: 1 of at most 4 configurations done"), "{stderr}");
    assert!(stderr.contains("plan: 4 of at most 4 configurations done"), "{stderr}");

    let rec = stdout.split("recommended: ").nth(1).unwrap_or_else(|| panic!("{stdout}"));
    let at = rec.lines().find(|l| l.trim_start().starts_with("at c")).unwrap_or_else(|| panic!("{rec}"));
    assert!(at.contains("ttft p95 ") && at.contains("ms (limit 5000)"), "{at}");
    assert!(at.contains("tpot p99 ") && at.contains("ms (limit 500)"), "{at}");
    assert!(rec.starts_with("tp1 fp8/"), "FP8 weights decode faster: {rec}");
    let precision = rec.lines().find(|l| l.trim_start().starts_with("precision: ")).unwrap_or_else(|| panic!("{rec}"));
    assert!(precision.contains("check accuracy before serving"), "{precision}");
    assert!(precision.contains("the best BF16 configuration is tp1 bf16/16bkv mbs4"), "{precision}");
    let warning = rec.lines().find(|l| l.trim_start().starts_with("warning: ")).unwrap_or_else(|| panic!("{rec}"));
    assert!(warning.contains("the best point, c4, is at the edge of the search"), "{warning}");
    assert!(warning.contains("--max-batch-size (e.g. 8)"), "{warning}");
}

/// A search where the bound starts the climbs of two- and four-GPU configurations at high loads,
/// which miss the SLOs there.
#[test]
fn climbs_started_high_are_unexplored_and_every_parallelism_runs_one_user() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("plan");
    let out = trtllm(&[
        "plan",
        "--model",
        "tinyllama-1.1b",
        "--gpu",
        "rtx-a6000",
        "--slo",
        "ttft:p95:400,tpot:p95:12",
        "--input-len",
        "96",
        "--output-len",
        "16",
        "--num-prompts",
        "8",
        "--max-batch-size",
        "4,16,64,256",
        "--max-num-tokens",
        "512,2048",
        "--scheduler-policy",
        "guaranteed-no-evict,max-utilization",
        "--quiet",
        "--output-dir",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let summary = json(&out_dir.join("summary.json"));
    let results: Vec<serde_json::Value> =
        std::fs::read_dir(out_dir.join("configs")).unwrap().map(|e| json(&e.unwrap().path())).collect();
    let loads = |r: &serde_json::Value| -> Vec<String> {
        r["points"].as_array().unwrap().iter().map(|p| p["load"].as_str().unwrap().to_owned()).collect()
    };
    // The front's low-latency end: one user on every parallelism run.
    let tps: std::collections::BTreeSet<u64> =
        results.iter().map(|r| r["candidate"]["engine"]["tp"].as_u64().unwrap()).collect();
    assert!(tps.len() > 1, "{tps:?}");
    for tp in tps {
        let group: Vec<&serde_json::Value> = results.iter().filter(|r| r["candidate"]["engine"]["tp"] == tp).collect();
        assert!(group.iter().any(|r| loads(r).contains(&"c1".to_owned())), "tp{tp}: no c1 point");
    }
    // A climb that started above one user and met the SLOs nowhere is unexplored, not ranked at 0.
    let unexplored = summary["unexplored"].as_array().unwrap();
    assert!(!unexplored.is_empty(), "{summary:#}");
    let unexplored_keys: Vec<&str> = unexplored.iter().map(|u| u["key"].as_str().unwrap()).collect();
    for r in &results {
        let key = r["key"].as_str().unwrap();
        let met = r["points"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["violations"].as_array().unwrap().is_empty() && p["failed"] == 0);
        assert_eq!(unexplored_keys.contains(&key), loads(r)[0] != "c1" && !met, "{key}: {:?}", loads(r));
    }
    assert!(unexplored[0]["reason"].as_str().unwrap().contains("its climb started at c"), "{unexplored:#?}");
    let ranking = summary["ranking"].as_array().unwrap();
    assert!(ranking.iter().all(|r| !unexplored_keys.contains(&r["key"].as_str().unwrap())));
    assert_eq!(ranking.len() + unexplored.len(), results.len());
    assert!(text(&out.stdout).contains(&format!("{} configurations unexplored, not ranked", unexplored.len())));
}
