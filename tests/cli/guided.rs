//! `trtllm generate` with `--json-schema`, `--regex` and `--grammar` on the built-in engine.

use crate::common::cli::trtllm;

use serde_json::Value;

/// The generated text and finish reason of a `--json` run.
fn generate(args: &[&str]) -> (String, String) {
    let mut all = vec!["generate", "--json", "--max-tokens", "200"];
    all.extend_from_slice(args);
    let out = trtllm(&all);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    (doc["text"].as_str().unwrap().to_string(), doc["finish_reason"].as_str().unwrap().to_string())
}

#[test]
fn json_schema_flag_gives_conforming_json() {
    let dir = tempfile::tempdir().unwrap();
    let schema = r#"{"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
        "temp": {"type": "integer", "minimum": -40, "maximum": 50}}, "required": ["city", "temp"],
        "additionalProperties": false}"#;
    let path = dir.path().join("schema.json");
    std::fs::write(&path, schema).unwrap();
    let validator = jsonschema::validator_for(&serde_json::from_str(schema).unwrap()).unwrap();
    for seed in ["1", "2", "3"] {
        let (text, finish) = generate(&["Weather:", "--seed", seed, "--json-schema", path.to_str().unwrap()]);
        assert_eq!(finish, "stop", "{text}");
        let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(validator.is_valid(&value), "{value}");
    }
}

#[test]
fn regex_and_grammar_flags_constrain_the_text() {
    let (text, finish) = generate(&["Code:", "--regex", "[A-Z]{3}-[0-9]{3}"]);
    assert_eq!(finish, "stop");
    assert!(regex::Regex::new("^[A-Z]{3}-[0-9]{3}$").unwrap().is_match(&text), "{text:?}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("yes_no.gbnf");
    std::fs::write(&path, "root ::= answer (\" \" answer)*\nanswer ::= \"yes\" | \"no\"\n").unwrap();
    let (text, finish) = generate(&["Answer:", "--grammar", path.to_str().unwrap()]);
    assert_eq!(finish, "stop");
    assert!(!text.is_empty() && text.split(' ').all(|w| w == "yes" || w == "no"), "{text:?}");
}

#[test]
fn guide_flags_are_exclusive_and_checked() {
    let both = trtllm(&["generate", "x", "--regex", "a", "--grammar", "g.gbnf"]);
    assert_eq!(both.status.code(), Some(2), "two guides at once is a usage error");
    let bad = trtllm(&["generate", "x", "--regex", "(unclosed"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--regex"), "{}", String::from_utf8_lossy(&bad.stderr));
}
