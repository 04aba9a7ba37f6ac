//! `trtllm doctor` on the simulated build: a correct report, and each broken input (missing engine,
//! version mismatch, wrong tokenizer) failing its check with what to do and a nonzero exit.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::harness::{skip, write_simulated_engine};

/// These tests feed the doctor simulated engine directories: they need the simulated build. On a
/// real build scripts/gpu-check.sh runs the doctor on the real engine instead.
fn real_build(test: &str) -> bool {
    let real = !trtllm::Backend::current().is_simulated();
    if real {
        skip(test, "the doctor's tests use simulated engines; on a real build run `trtllm doctor --engine-dir ...`");
    }
    real
}

fn doctor(args: &[&str], json: &Path) -> (Output, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .arg("doctor")
        .args(args)
        .arg("--json")
        .arg(json)
        .output()
        .expect("run trtllm doctor");
    let report = serde_json::from_str(&std::fs::read_to_string(json).expect("the JSON report")).expect("valid JSON");
    (out, report)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no {name} check"))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn doctor_reports_the_simulated_build_and_a_smoke_request() {
    if real_build("doctor_reports_the_simulated_build_and_a_smoke_request") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = doctor(&[], &dir.path().join("report.json"));
    assert!(out.status.success(), "{}\n{}", stdout(&out), String::from_utf8_lossy(&out.stderr));
    assert_eq!(report["ok"], true);
    let backend = check(&report, "backend");
    assert_eq!(backend["status"], "ok");
    assert_eq!(backend["facts"]["kind"], "simulated");
    assert_eq!(backend["facts"]["library_version"], trtllm::Backend::current().version);
    let engine = check(&report, "engine");
    assert_eq!(engine["status"], "ok");
    assert_eq!(engine["facts"]["dtype"], "bfloat16");
    assert!(engine["facts"]["tp_pp_cp"].as_str().unwrap().starts_with("1 x 1 x 1"));
    assert_eq!(check(&report, "tokenizer")["status"], "ok");
    let smoke = check(&report, "smoke test");
    assert_eq!(smoke["status"], "ok");
    assert!(smoke["facts"]["ttft_ms"].as_f64().unwrap() > 0.0);
    assert_eq!(smoke["facts"]["output_ids"].as_array().unwrap().len(), 8);
    let text = stdout(&out);
    assert!(
        text.contains("[ok  ] smoke test: 8 tokens, TTFT") && text.contains("doctor: every check passed"),
        "{text}"
    );
}

/// Runs the doctor on `engine_dir` (and `extra` args) and checks that `name` failed with a fix
/// mentioning `fix_mentions`, that the summary mentions `says`, and that the exit status is nonzero.
fn fails(engine_dir: &Path, extra: &[&str], name: &str, says: &str, fix_mentions: &str) -> Value {
    let json = engine_dir.with_extension("report.json");
    let mut args = vec!["--engine-dir", engine_dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    let (out, report) = doctor(&args, &json);
    let text = stdout(&out);
    assert!(!out.status.success(), "a broken {name} must exit nonzero:\n{text}");
    assert_eq!(report["ok"], false);
    let failed = check(&report, name);
    assert_eq!(failed["status"], "fail", "{failed}");
    assert!(failed["summary"].as_str().unwrap().contains(says), "{failed}");
    assert!(failed["fix"].as_str().unwrap().contains(fix_mentions), "{failed}");
    assert!(text.contains(&format!("[FAIL] {name}:")) && text.contains("fix: "), "{text}");
    report
}

#[test]
fn doctor_fails_a_missing_engine_and_skips_the_smoke_test() {
    if real_build("doctor_fails_a_missing_engine_and_skips_the_smoke_test") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let report = fails(&dir.path().join("nowhere"), &[], "engine", "has no config.json", "trtllm-build");
    assert_eq!(check(&report, "smoke test")["status"], "skipped");
}

#[test]
fn doctor_fails_an_engine_built_by_another_version() {
    if real_build("doctor_fails_an_engine_built_by_another_version") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_simulated_engine(dir.path(), |e| trtllm::sim::SimulatedEngine { version: "1.1.0".into(), ..e }).unwrap();
    fails(dir.path(), &[], "engine", "built by TensorRT-LLM 1.1.0", "rebuild the engine with trtllm-build");
}

#[test]
fn doctor_fails_a_tokenizer_that_does_not_fit_the_engine() {
    if real_build("doctor_fails_a_tokenizer_that_does_not_fit_the_engine") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_simulated_engine(dir.path(), |e| trtllm::sim::SimulatedEngine {
        shape: trtllm::sim::ModelShape { vocab_size: 1000, ..e.shape },
        lora: None,
        ..e
    })
    .unwrap();
    fails(dir.path(), &["--no-smoke"], "tokenizer", "wrong tokenizer for this engine", "tokenizer of the model");
    // And a directory without a tokenizer at all.
    let empty = tempfile::tempdir().unwrap();
    fails(
        dir.path(),
        &["--tokenizer", empty.path().to_str().unwrap(), "--no-smoke"],
        "tokenizer",
        "",
        "tokenizer.json",
    );
}
