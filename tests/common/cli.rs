//! The `trtllm` binary run as a command, for tests of its output files.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

/// Runs `trtllm <args>` to the end, whatever its exit status.
pub fn trtllm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trtllm")).args(args).output().expect("run trtllm")
}

/// A command's stderr, as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `trtllm bench <args>` to the end, whatever its exit status.
pub fn run_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trtllm")).arg("bench").args(args).output().unwrap()
}

/// One small point (`c2_in16_out8`) on `engine` into `out`: 2 users, 4 requests of 16 prompt and 8 output tokens,
/// with `extra` arguments; fails the test unless it succeeds.
pub fn small_bench(engine: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["--engine-dir", engine.to_str().unwrap(), "--concurrency", "2", "--input-len", "16"];
    args.extend(["--output-len", "8", "--num-prompts", "4", "--output-dir", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    bench(&args)
}

/// Runs `trtllm bench` on `engine` over `count` token-id prompts (written to `dir/prompts.jsonl`):
/// prompt `i` has `prompt_len(i)` ids spread over a 30,000-token vocabulary and asks for
/// `output_len(i)` tokens; `users` users send each prompt once, with no warmup, with `extra`
/// arguments. Returns the command's output and its output directory (`dir/bench`).
pub fn bench_token_prompts(
    dir: &Path,
    engine: &Path,
    (count, users): (u32, u32),
    prompt_len: impl Fn(u32) -> u32,
    output_len: impl Fn(u32) -> u32,
    extra: &[&str],
) -> (Output, std::path::PathBuf) {
    let prompts = dir.join("prompts.jsonl");
    let lines: String = (0..count)
        .map(|i| {
            let ids: Vec<u32> = (0..prompt_len(i)).map(|t| 1 + (t * 31 + i * 7919) % 30000).collect();
            format!("{}\n", serde_json::json!({"prompt_token_ids": ids, "output_len": output_len(i)}))
        })
        .collect();
    std::fs::write(&prompts, lines).unwrap();
    let out = dir.join("bench");
    let (count, users) = (count.to_string(), users.to_string());
    let mut args = vec!["--engine-dir", engine.to_str().unwrap(), "--dataset", "jsonl"];
    args.extend(["--dataset-path", prompts.to_str().unwrap(), "--concurrency", &users, "--num-prompts", &count]);
    args.extend(["--warmup", "0", "--output-dir", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    (run_bench(&args), out)
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
