//! The `trtllm` binary run as a command, for tests of its output files.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `trtllm bench <args>` to the end, whatever its exit status.
pub fn run_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trtllm")).arg("bench").args(args).output().unwrap()
}

/// Runs `trtllm bench <args>`; fails the test (with its stderr) unless it succeeds.
pub fn bench(args: &[&str]) -> Output {
    let out = run_bench(args);
    assert!(out.status.success(), "bench {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Reads a JSON file the command wrote.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
