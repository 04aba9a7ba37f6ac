//! `trtllm generate` end to end on the built-in simulated engine and its shipped tokenizer.

mod common;

use std::process::{Command, Output};

use serde_json::Value;
use trtllm::text::Tokenizer;

fn trtllm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(args)
        .output()
        .expect("run trtllm")
}

fn shipped_tokenizer() -> Tokenizer {
    Tokenizer::from_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/sim-tokenizer"))
        .expect("shipped tokenizer")
}

fn json_run(args: &[&str]) -> Value {
    let mut all = vec!["generate", "--json"];
    all.extend_from_slice(args);
    let out = trtllm(&all);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

#[test]
fn the_shipped_tokenizer_matches_the_builtin_vocabulary() {
    assert_eq!(
        shipped_tokenizer().vocab_size(),
        trtllm::builtin::BUILTIN_VOCAB_SIZE
    );
}

#[test]
fn streams_text_and_prints_a_summary() {
    let out = trtllm(&[
        "generate",
        "The executor",
        "--max-tokens",
        "24",
        "--ignore-eos",
    ]);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("built-in simulated engine"), "{stderr}");
    let summary = stderr.lines().last().unwrap();
    assert!(
        summary.contains("completion tokens 24") && summary.contains("finish reason length"),
        "{summary}"
    );
    assert!(
        summary.contains("TTFT") && summary.contains("TPOT"),
        "{summary}"
    );
    assert!(!out.stdout.is_empty());
}

#[test]
fn json_text_is_the_decode_of_the_executor_tokens() {
    let doc = json_run(&[
        "The executor streams tokens",
        "--max-tokens",
        "30",
        "--ignore-eos",
    ]);
    let ids: Vec<u32> = doc["token_ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap() as u32)
        .collect();
    assert_eq!(ids.len(), 30);
    assert_eq!(doc["completion_tokens"], 30);
    assert_eq!(doc["finish_reason"], "length");
    let tokenizer = shipped_tokenizer();
    assert_eq!(
        doc["text"].as_str().unwrap(),
        tokenizer.decode(&ids, true).unwrap()
    );
    let prompt = tokenizer
        .encode("The executor streams tokens", true)
        .unwrap();
    assert_eq!(
        doc["prompt_tokens"].as_u64().unwrap() as usize,
        prompt.len()
    );
    assert!(doc["ttft_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_stop_string_ends_the_text_before_it() {
    let full = json_run(&["Stop strings", "--max-tokens", "40", "--ignore-eos"]);
    let text = full["text"].as_str().unwrap().to_string();
    // A stop string from the middle of the text the same request produces.
    let chars: Vec<char> = text.chars().collect();
    let stop: String = chars[chars.len() / 2..chars.len() / 2 + 3].iter().collect();
    let cut = text.find(&stop).unwrap();
    let stopped = json_run(&[
        "Stop strings",
        "--max-tokens",
        "40",
        "--ignore-eos",
        "--stop",
        &stop,
    ]);
    assert_eq!(stopped["finish_reason"], "stop");
    assert_eq!(stopped["matched_stop"], stop.as_str());
    assert_eq!(stopped["text"].as_str().unwrap(), &text[..cut]);
    let included = json_run(&[
        "Stop strings",
        "--max-tokens",
        "40",
        "--ignore-eos",
        "--stop",
        &stop,
        "--include-stop",
    ]);
    assert_eq!(
        included["text"].as_str().unwrap(),
        &text[..cut + stop.len()]
    );
}

#[test]
fn chat_messages_go_through_the_chat_template() {
    let messages =
        r#"[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]"#;
    let doc = json_run(&["--messages", messages, "--max-tokens", "4"]);
    let tokenizer = shipped_tokenizer();
    let rendered = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(
        doc["prompt_tokens"].as_u64().unwrap() as usize,
        tokenizer.encode(rendered, false).unwrap().len()
    );
}

#[test]
fn an_engine_without_a_tokenizer_is_a_clear_error() {
    let dir = common::sim::engine_dir(|b| b);
    let out = trtllm(&[
        "generate",
        "hi",
        "--engine-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("names no tokenizer") && stderr.contains("--tokenizer"),
        "{stderr}"
    );
}

#[test]
fn bad_arguments_exit_with_code_2() {
    assert_eq!(
        trtllm(&["generate", "hi", "--max-tokens", "many"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        trtllm(&["generate", "hi", "--no-such-flag"]).status.code(),
        Some(2)
    );
}
