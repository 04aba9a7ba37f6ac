//! `trtllm bench --target a,b`: one workload through several layers, and the `https://` target.

use crate::common;

use std::process::Command;
use std::sync::atomic::Ordering;

use common::cli::read_json;
use common::openai::TlsOpenAi;

const WORKLOAD: [&str; 10] =
    ["--concurrency", "2", "--input-len", "16", "--output-len", "8", "--num-prompts", "4", "--warmup", "1"];

fn csv_rows(path: &std::path::Path) -> Vec<Vec<String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_owned).collect();
    let mut rows = vec![header];
    rows.extend(reader.records().map(|r| r.unwrap().iter().map(str::to_owned).collect()));
    rows
}

fn field<'a>(rows: &'a [Vec<String>], row: usize, column: &str) -> &'a str {
    let i = rows[0].iter().position(|c| c == column).unwrap_or_else(|| panic!("no column {column}"));
    &rows[row][i]
}

#[test]
fn a_target_list_runs_one_workload_per_layer_and_tables_what_each_adds() {
    let engine = common::sim::engine_dir(|b| b);
    let scratch = tempfile::tempdir().unwrap();
    let mock = TlsOpenAi::start(scratch.path());
    let out = scratch.path().join("results");
    let targets = format!("inprocess,{}", mock.url());
    let run = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "--target", &targets, "--engine-dir", engine.path().to_str().unwrap()])
        .args(["--output-dir", out.to_str().unwrap()])
        .args(WORKLOAD)
        .env("SSL_CERT_FILE", &mock.ca_file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&run.stderr));

    // Each layer ran the whole workload into its own directory, warmup included.
    let https_dir = format!("https-127.0.0.1-{}-v1", mock.addr.port());
    for dir in ["inprocess", https_dir.as_str()] {
        let summary = read_json(&out.join(dir).join("c2_in16_out8.json"));
        assert_eq!(summary["completed"], 4, "{dir}");
        assert_eq!(summary["total_output_tokens"], 32, "{dir}");
    }
    assert_eq!(mock.completions.load(Ordering::SeqCst), 5, "4 measured + 1 warmup over HTTPS");

    // One row per layer, the in-process baseline first; what a layer adds is its figure minus
    // the baseline's; executor stamps exist in process, not through an OpenAI endpoint.
    let rows = csv_rows(&out.join("layers.csv"));
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!((field(&rows, 1, "layer"), field(&rows, 2, "layer")), ("inprocess", mock.url().as_str()));
    for row in [1, 2] {
        assert_eq!(field(&rows, row, "point"), "c2_in16_out8");
        assert_eq!(field(&rows, row, "completed"), "4");
        assert_eq!(field(&rows, row, "failed"), "0");
    }
    let num = |row: usize, column: &str| field(&rows, row, column).parse::<f64>().unwrap();
    assert!(num(1, "p50_after_executor_ms") >= 0.0);
    assert_eq!(field(&rows, 2, "p50_after_executor_ms"), "");
    assert_eq!(field(&rows, 2, "added_p50_after_executor_ms"), "");
    for metric in ["p50_ttft_ms", "p99_ttft_ms", "p50_itl_ms", "p99_itl_ms"] {
        let added = num(2, &format!("added_{metric}"));
        assert!((added - (num(2, metric) - num(1, metric))).abs() < 1e-6, "{metric}");
        assert_eq!(num(1, &format!("added_{metric}")), 0.0, "{metric}");
    }
    // The same table on the console and in layers.md.
    let markdown = std::fs::read_to_string(out.join("layers.md")).unwrap();
    assert!(markdown.contains(&format!("| {} | 4 | 0 |", mock.url())), "{markdown}");
    assert!(stdout.contains(&markdown), "{stdout}");
    assert_eq!(read_json(&out.join("layers.json"))[0]["layers"].as_array().unwrap().len(), 2);
}

#[test]
fn an_https_target_with_an_untrusted_certificate_fails_with_the_reason() {
    let scratch = tempfile::tempdir().unwrap();
    let mock = TlsOpenAi::start(scratch.path());
    // Trust another CA only: the mock's certificate cannot be verified.
    let other_ca = scratch.path().join("other-ca.pem");
    common::openai::write_ca(&other_ca);
    let run = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["bench", "--target", &mock.url(), "--output-dir"])
        .arg(scratch.path().join("results"))
        .args(WORKLOAD)
        .env("SSL_CERT_FILE", &other_ca)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(stderr.contains(&format!("connecting to {}", mock.url())), "{stderr}");
    assert!(stderr.contains("certificate"), "the reason is shown: {stderr}");
    assert_eq!(mock.completions.load(Ordering::SeqCst), 0);
}

#[test]
fn a_target_list_needs_distinct_targets() {
    let out = common::cli::run_bench(&["--target", "inprocess,inprocess", "--num-prompts", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("appears twice"));
}
