//! `trtllm bench --disagg XpYd` in process and `--prefill-target`/`--decode-target` over gRPC:
//! the TTFT split in the result files, the tokens checked against aggregated runs, the pools.

use crate::common;

use common::cli::{bench, read_json};
use common::server::spawn_serve;
use serde_json::Value;

fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// The split's four means add up to the mean TTFT when every request has a split.
fn check_split(summary: &Value, requests: u64) {
    let section = &summary["disaggregation"];
    assert_eq!(section["requests"], requests, "{section}");
    assert_eq!(section["requests_with_split"], requests, "{section}");
    let split = &section["ttft_split"];
    let parts: f64 = ["prefill", "transfer_wait", "transfer", "first_decode"]
        .iter()
        .map(|p| num(split, &format!("mean_{p}_ms")))
        .sum();
    let ttft = num(summary, "mean_ttft_ms");
    assert!((parts - ttft).abs() < 1e-6 * ttft.max(1.0), "split {parts} ms, TTFT {ttft} ms");
    assert!(num(split, "mean_transfer_ms") > 0.0 && num(split, "mean_prefill_ms") > 0.0, "{split}");
    assert!(num(section, "mean_transfer_bytes_per_rank") > 0.0, "{section}");
}

fn rows(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn in_process_1p1d_writes_the_split_and_keeps_the_greedy_tokens() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let mut args = vec!["--disagg", "1p1d", "--kv-link", "ib-400", "--concurrency", "2", "--input-len", "256"];
    args.extend(["--output-len", "8", "--num-prompts", "6", "--warmup", "1", "--output-dir", dir, "--quiet"]);
    bench(&args);
    let summary = read_json(&out.path().join("c2_in256_out8.json"));
    assert_eq!(summary["completed"], 6);
    check_split(&summary, 6);
    let section = &summary["disaggregation"];
    let check = &section["token_check"];
    assert!(check["checked"].as_u64().unwrap() > 0, "{check}");
    assert_eq!(check["matched"], check["checked"], "disaggregated tokens differ from aggregated ones: {check}");
    assert_eq!(section["pools"]["shape"], "1p1d");
    assert_eq!(section["pools"]["prefill"][0]["requests"], 7, "warmup included: {section}");
    // The prediction covers the disaggregated run: each part predicted beside measured.
    let predicted = &summary["prediction"]["disaggregated"];
    assert!(num(&predicted["transfer"], "predicted_ms") > 0.0, "{predicted}");
    assert!(num(&predicted["ttft"], "measured_ms") > 0.0, "{predicted}");
    assert_eq!(summary["engine"]["disaggregation"]["kv_link"]["bandwidth_gb_s"], 50.0);
    // Every request row says where its legs ran and what its transfer moved.
    let requests = rows(&out.path().join("c2_in256_out8.requests.jsonl"));
    assert_eq!(requests.len(), 7);
    for row in &requests {
        let d = &row["disagg"];
        assert_eq!((d["prefill_worker"].as_u64(), d["decode_worker"].as_u64()), (Some(0), Some(0)), "{row}");
        assert!(num(d, "transfer_end_s") >= num(d, "transfer_start_s"), "{row}");
        assert!(num(d, "transfer_start_s") >= num(d, "prefill_end_s") - 1e-3, "{row}");
        assert!(d["transfer_bytes"].as_u64().unwrap() > 0, "{row}");
    }
    check_csv_split(&out.path().join("c2_in256_out8.requests.csv"), 7);
}

/// `<stem>.requests.csv` carries each request's TTFT split and transfer bytes: the four parts
/// add up to its TTFT.
fn check_csv_split(path: &std::path::Path, requests: usize) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|c| c == name).unwrap_or_else(|| panic!("no column {name}"));
    let parts = ["disagg_prefill_ms", "disagg_transfer_wait_ms", "disagg_transfer_ms", "disagg_first_decode_ms"];
    let (ttft, bytes) = (col("ttft_ms"), col("disagg_transfer_bytes"));
    let mut seen = 0;
    for row in reader.records() {
        let row = row.unwrap();
        let num = |i: usize| row[i].parse::<f64>().unwrap_or_else(|_| panic!("column {} is {:?}", &header[i], &row[i]));
        let sum: f64 = parts.iter().map(|p| num(col(p))).sum();
        assert!((sum - num(ttft)).abs() < 1e-6 * num(ttft).max(1.0), "split {sum} ms, TTFT {} ms", num(ttft));
        assert!(num(col("disagg_transfer_ms")) > 0.0 && num(col("disagg_prefill_ms")) > 0.0, "{row:?}");
        assert!(row[bytes].parse::<u64>().unwrap() > 0, "{row:?}");
        seen += 1;
    }
    assert_eq!(seen, requests);
}

#[test]
fn over_grpc_requests_spread_over_the_prefill_pool() {
    let (c0, a0) = spawn_serve(&["--disagg-role", "context", "--kv-transfer-timeout-ms", "2000"]);
    let (c1, a1) = spawn_serve(&["--disagg-role", "context", "--kv-transfer-timeout-ms", "2000"]);
    let (g, ag) = spawn_serve(&["--disagg-role", "generation"]);
    let mut children = [c0, c1, g];
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().to_str().unwrap();
    let result = std::panic::catch_unwind(|| {
        let mut args = vec!["--prefill-target", &a0, "--prefill-target", &a1, "--decode-target", &ag];
        args.extend(["--concurrency", "2", "--input-len", "128", "--output-len", "6", "--num-prompts", "8"]);
        args.extend(["--warmup", "0", "--output-dir", dir, "--quiet"]);
        bench(&args);
        let summary = read_json(&out.path().join("c2_in128_out6.json"));
        assert_eq!(summary["completed"], 8);
        check_split(&summary, 8);
        let pools = &summary["disaggregation"]["pools"];
        assert_eq!(pools["shape"], "2p1d");
        for worker in pools["prefill"].as_array().unwrap() {
            assert!(worker["requests"].as_u64().unwrap() > 0, "a prefill worker got nothing: {pools}");
        }
        assert_eq!(pools["decode"][0]["requests"], 8);
        let workers = summary["engine"]["disaggregation"]["workers"].as_array().unwrap().clone();
        let modes: Vec<&str> = workers.iter().filter_map(|w| w["mode"].as_str()).collect();
        assert_eq!(modes, ["prefill", "prefill", "decode"]);
    });
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
