//! `trtllm generate` end to end on the built-in simulated engine and its shipped tokenizer.

use crate::common;

use common::cli::trtllm;

use serde_json::{Value, json};
use trtllm::text::Tokenizer;

fn shipped_tokenizer() -> Tokenizer {
    Tokenizer::from_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/sim-tokenizer")).expect("shipped tokenizer")
}

fn json_run(args: &[&str]) -> Value {
    let mut all = vec!["generate", "--json"];
    all.extend_from_slice(args);
    let out = trtllm(&all);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("stdout is one JSON object")
}

#[test]
fn the_shipped_tokenizer_matches_the_builtin_vocabulary() {
    assert_eq!(shipped_tokenizer().vocab_size(), trtllm::builtin::BUILTIN_VOCAB_SIZE);
}

#[test]
fn streams_text_and_prints_a_summary() {
    let out = trtllm(&["generate", "The executor", "--max-tokens", "24", "--ignore-eos"]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("built-in simulated engine"), "{stderr}");
    let summary = stderr.lines().last().unwrap();
    let prompt = shipped_tokenizer().encode("The executor", true).unwrap();
    assert!(
        summary.contains(&format!("prompt tokens {},", prompt.len()))
            && summary.contains("completion tokens 24")
            && summary.contains("finish reason length"),
        "{summary}"
    );
    assert!(summary.contains("TTFT") && summary.contains("TPOT"), "{summary}");
}

#[test]
fn a_simulated_engine_says_its_text_is_random_tokens() {
    for extra in [&[][..], &["--json"]] {
        let mut args = vec!["generate", "The executor", "--max-tokens", "8"];
        args.extend_from_slice(extra);
        let out = trtllm(&args);
        assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("is a simulated engine: its text is random tokens of its vocabulary")
                && stderr.contains("not a model's answer"),
            "{extra:?}: {stderr}"
        );
    }
}

/// The text `trtllm generate` prints on stdout (without the newline it ends with).
fn printed_text(args: &[&str]) -> String {
    let mut all = vec!["generate"];
    all.extend_from_slice(args);
    let out = trtllm(&all);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 on stdout");
    stdout.strip_suffix('\n').expect("a final newline").to_string()
}

fn token_ids(doc: &Value) -> Vec<u32> {
    doc["token_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect()
}

#[test]
fn printed_text_is_the_json_text_and_a_full_decode() {
    let args = ["The executor streams", "--max-tokens", "30", "--ignore-eos"];
    let doc = json_run(&args);
    let text = doc["text"].as_str().unwrap().to_string();
    assert_eq!(printed_text(&args), text);
    assert_eq!(text, shipped_tokenizer().decode(&token_ids(&doc), true).unwrap());

    // A stop string that starts with the text's last two characters but never completes: the
    // stream holds them back to the end, and they must still be printed.
    let chars: Vec<char> = text.chars().collect();
    let tail: String = chars[chars.len() - 2..].iter().collect();
    let stop = format!("{tail}\u{7}\u{7}");
    let mut held_args = args.to_vec();
    held_args.extend(["--stop", stop.as_str()]);
    let held = json_run(&held_args);
    assert_eq!(held["text"], text.as_str());
    assert_eq!(held["matched_stop"], Value::Null);
    assert_eq!(printed_text(&held_args), text);
}

#[test]
fn json_text_is_the_decode_of_the_executor_tokens() {
    let doc = json_run(&["The executor streams tokens", "--max-tokens", "30", "--ignore-eos"]);
    let ids: Vec<u32> = doc["token_ids"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as u32).collect();
    assert_eq!(ids.len(), 30);
    assert_eq!(doc["completion_tokens"], 30);
    assert_eq!(doc["finish_reason"], "length");
    let tokenizer = shipped_tokenizer();
    assert_eq!(doc["text"].as_str().unwrap(), tokenizer.decode(&ids, true).unwrap());
    let prompt = tokenizer.encode("The executor streams tokens", true).unwrap();
    assert_eq!(doc["prompt_tokens"].as_u64().unwrap() as usize, prompt.len());
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
    let args = ["Stop strings", "--max-tokens", "40", "--ignore-eos", "--stop", &stop];
    let stopped = json_run(&args);
    assert_eq!(stopped["finish_reason"], "stop");
    assert_eq!(stopped["matched_stop"], stop.as_str());
    assert_eq!(stopped["text"].as_str().unwrap(), &text[..cut]);
    assert_eq!(printed_text(&args), &text[..cut]);
    // The counts cover the tokens up to and including the one that completed the stop.
    let ids = token_ids(&stopped);
    assert_eq!(stopped["completion_tokens"], ids.len());
    assert_eq!(ids[..], token_ids(&full)[..ids.len()]);
    assert!(shipped_tokenizer().decode(&ids, true).unwrap().contains(&stop));
    let included = json_run(&["Stop strings", "--max-tokens", "40", "--ignore-eos", "--stop", &stop, "--include-stop"]);
    assert_eq!(included["text"].as_str().unwrap(), &text[..cut + stop.len()]);
}

#[test]
fn chat_messages_go_through_the_chat_template() {
    let messages = r#"[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]"#;
    let doc = json_run(&["--messages", messages, "--max-tokens", "4"]);
    let tokenizer = shipped_tokenizer();
    let rendered = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(doc["prompt_tokens"].as_u64().unwrap() as usize, tokenizer.encode(rendered, false).unwrap().len());
}

#[test]
fn an_engine_without_a_tokenizer_is_a_clear_error() {
    let dir = common::sim::engine_dir(|b| b);
    let out = trtllm(&["generate", "hi", "--engine-dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("names no tokenizer") && stderr.contains("--tokenizer"), "{stderr}");
}

#[test]
fn bad_arguments_exit_with_code_2() {
    assert_eq!(trtllm(&["generate", "hi", "--max-tokens", "many"]).status.code(), Some(2));
    assert_eq!(trtllm(&["generate", "hi", "--no-such-flag"]).status.code(), Some(2));
}

#[test]
fn sampling_flags_reach_the_executor() {
    let args = |seed: &'static str| ["Seeds", "--max-tokens", "16", "--ignore-eos", "--seed", seed];
    let one = token_ids(&json_run(&args("1")));
    assert_eq!(one, token_ids(&json_run(&args("1"))), "same seed, same tokens");
    assert_ne!(one, token_ids(&json_run(&args("2"))), "another seed, other tokens");

    // Out-of-range values reach the executor's request validation, which names the parameter.
    for (arg, field) in
        [("--temperature=-1", "temperature"), ("--temperature=NaN", "temperature"), ("--top-p=1.5", "top_p")]
    {
        let out = trtllm(&["generate", "hi", arg]);
        assert_eq!(out.status.code(), Some(1), "{arg}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(field), "{stderr}");
    }
    let out = trtllm(&["generate", "hi", "--top-k=-3"]);
    assert_eq!(out.status.code(), Some(2), "top-k takes a count");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--top-k"));
}

/// An engine over the word-level test tokenizer (eos `<|im_end|>` only), and a second tokenizer
/// directory of the same vocabulary whose generation_config.json lists more eos ids.
fn words_engine_and_multi_eos_tokenizer() -> (tempfile::TempDir, tempfile::TempDir) {
    let words = common::text::word_level_tokenizer();
    let config = ("tokenizer_config.json", json!({"eos_token": "<|im_end|>"}).to_string());
    let engine = common::text::engine_with_tokenizer(&words, std::slice::from_ref(&config));
    let multi_eos = common::text::write_tokenizer_dir(
        &words,
        &[config, ("generation_config.json", json!({"eos_token_id": [2, 3, 0]}).to_string())],
    );
    (engine, multi_eos)
}

#[test]
fn every_eos_id_of_a_tokenizer_given_with_the_tokenizer_flag_stops_generation() {
    let (engine, multi_eos) = words_engine_and_multi_eos_tokenizer();
    let engine_dir = engine.path().to_str().unwrap();
    let tokenizer_dir = multi_eos.path().to_str().unwrap();
    let words = Tokenizer::from_dir(multi_eos.path()).unwrap();
    let eos = [0, 2, 3];
    // A seed whose output meets an eos id other than the end id (2) first.
    let (seed, ids) = (0..50)
        .map(|seed| {
            let seed = seed.to_string();
            let doc = json_run(&[
                "red cat",
                "--engine-dir",
                engine_dir,
                "--max-tokens",
                "40",
                "--ignore-eos",
                "--seed",
                &seed,
            ]);
            (seed, token_ids(&doc))
        })
        .find(|(_, ids)| ids.iter().position(|id| eos.contains(id)).is_some_and(|p| p >= 2 && ids[p] != 2))
        .expect("a seed that meets another eos id first");
    let end = ids.iter().position(|id| eos.contains(id)).unwrap();

    // The engine's own tokenizer knows only <|im_end|>: generation runs past the other eos ids.
    let own = json_run(&["red cat", "--engine-dir", engine_dir, "--max-tokens", "40", "--seed", &seed]);
    assert!(token_ids(&own).len() > end);

    let args =
        ["red cat", "--engine-dir", engine_dir, "--tokenizer", tokenizer_dir, "--max-tokens", "40", "--seed", &seed];
    let doc = json_run(&args);
    assert_eq!(doc["finish_reason"], "stop");
    assert_eq!(token_ids(&doc), ids[..end], "stops before the eos id");
    assert_eq!(doc["completion_tokens"], end);
    let text = words.decode(&ids[..end], true).unwrap();
    assert_eq!(doc["text"], text.as_str());
    assert_eq!(printed_text(&args), text);
    let shown = json_run(&[&args[..], &["--no-skip-special-tokens"]].concat());
    let eos_text = words.id_to_token(ids[end]).unwrap();
    assert!(!shown["text"].as_str().unwrap().contains(&eos_text), "{shown}");
}

#[test]
fn special_tokens_are_printed_only_when_asked() {
    let (engine, _) = words_engine_and_multi_eos_tokenizer();
    let engine_dir = engine.path().to_str().unwrap();
    let run = |seed: &str, keep: bool| {
        let mut args =
            vec!["red cat", "--engine-dir", engine_dir, "--max-tokens", "40", "--ignore-eos", "--seed", seed];
        if keep {
            args.push("--no-skip-special-tokens");
        }
        json_run(&args)
    };
    let seed = (0..50)
        .map(|seed| seed.to_string())
        .find(|seed| token_ids(&run(seed, false)).contains(&1))
        .expect("a seed whose output has <|im_start|>");
    let skipped = run(&seed, false);
    let kept = run(&seed, true);
    assert_eq!(token_ids(&skipped), token_ids(&kept));
    assert!(!skipped["text"].as_str().unwrap().contains("<|im_start|>"));
    assert!(kept["text"].as_str().unwrap().contains("<|im_start|>"));
}

#[test]
fn the_tokenizer_directory_named_in_config_json_is_used() {
    let dir = tempfile::tempdir().unwrap();
    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path()).unwrap();
    // Move the tokenizer where only config.json's `tokenizer_dir` points.
    std::fs::rename(dir.path().join("tokenizer"), dir.path().join("vocab-files")).unwrap();
    let engine_dir = dir.path().to_str().unwrap();
    let out = trtllm(&["generate", "hi", "--engine-dir", engine_dir]);
    assert_eq!(out.status.code(), Some(1), "no tokenizer found before naming it");

    let config_path = dir.path().join("config.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    config["tokenizer_dir"] = "vocab-files".into();
    std::fs::write(&config_path, config.to_string()).unwrap();
    let doc = json_run(&["The executor", "--engine-dir", engine_dir, "--max-tokens", "8", "--ignore-eos"]);
    let tokenizer = shipped_tokenizer();
    assert_eq!(doc["prompt_tokens"].as_u64().unwrap() as usize, tokenizer.encode("The executor", true).unwrap().len());
    assert_eq!(doc["text"], tokenizer.decode(&token_ids(&doc), true).unwrap().as_str());
}
