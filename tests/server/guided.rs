//! Guided decoding through the gRPC server: the protocol's `guided_decoding` field, driven by the
//! upstream Python stubs, with outputs checked here by independent checkers; FAILED_PRECONDITION
//! when the server has no guided decoding.

use std::collections::BTreeMap;
use std::ffi::OsStr;

use serde_json::{Value, json};
use trtllm::proto::trtllm as pb;
use trtllm::text::Tokenizer;

use crate::common;
use common::python::{python_script, python_with_smg_stubs, run_python};
use common::server::TestServer;

/// The built-in engine's tokenizer (the server's vocabulary).
fn builtin_tokenizer() -> Tokenizer {
    let dir = tempfile::tempdir().unwrap();
    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path()).unwrap();
    Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap()
}

const SCHEMA: &str = r#"{"type": "object", "properties": {"ok": {"type": "boolean"}, "n": {"type": "integer",
    "minimum": 0, "maximum": 99}}, "required": ["ok", "n"], "additionalProperties": false}"#;
const REGEX: &str = r"[a-z]{1,6}-[0-9]{2}";
const GRAMMAR: &str = "root ::= item (\",\" item)*\nitem ::= \"a\" | \"b\" | \"(\" root \")\"\n";
const TAG: &str = r#"{"structures": [{"begin": "<tool>", "schema": {"type": "object", "properties":
    {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false}, "end": "</tool>"}],
    "triggers": ["<tool>"]}"#;

/// item := "a" | "b" | "(" root ")"; root := item ("," item)*
fn parses_as_list(text: &str) -> bool {
    fn root(s: &[u8], i: &mut usize) -> bool {
        if !item(s, i) {
            return false;
        }
        while *i < s.len() && s[*i] == b',' {
            *i += 1;
            if !item(s, i) {
                return false;
            }
        }
        true
    }
    fn item(s: &[u8], i: &mut usize) -> bool {
        match s.get(*i) {
            Some(b'a' | b'b') => {
                *i += 1;
                true
            }
            Some(b'(') => {
                *i += 1;
                if !root(s, i) || s.get(*i) != Some(&b')') {
                    return false;
                }
                *i += 1;
                true
            }
            _ => false,
        }
    }
    let mut i = 0;
    root(text.as_bytes(), &mut i) && i == text.len()
}

fn conforms(case: &str, text: &str) -> Result<(), String> {
    match case {
        "json" => serde_json::from_str::<serde_json::Map<String, Value>>(text).map(|_| ()).map_err(|e| e.to_string()),
        "json_schema" => {
            let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
            let schema: Value = serde_json::from_str(SCHEMA).unwrap();
            jsonschema::validator_for(&schema).unwrap().validate(&value).map_err(|e| e.to_string())
        }
        "regex" => {
            let full = regex::Regex::new(&format!("^(?:{REGEX})$")).unwrap();
            if full.is_match(text) { Ok(()) } else { Err("no full match".into()) }
        }
        "ebnf_grammar" => {
            if parses_as_list(text) {
                Ok(())
            } else {
                Err("does not parse".into())
            }
        }
        "structural_tag" => {
            let mut rest = text;
            while let Some(start) = rest.find("<tool>") {
                let body = &rest[start + "<tool>".len()..];
                let end = body.find("</tool>").ok_or("unclosed tag")?;
                let value: Value = serde_json::from_str(&body[..end]).map_err(|e| e.to_string())?;
                if !value.get("x").is_some_and(Value::is_i64) {
                    return Err(format!("bad arguments {value}"));
                }
                rest = &body[end + "</tool>".len()..];
            }
            Ok(())
        }
        other => Err(format!("unknown case {other}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_guide_type_conforms_through_the_upstream_python_stubs() {
    let Some(python) = python_with_smg_stubs() else {
        return;
    };
    let tokenizer = builtin_tokenizer();
    let server =
        TestServer::builder().iteration_ms(0.2).config(|c| c.guided_decoding_from_tokenizer(&tokenizer)).start().await;
    let cases = json!([
        {"name": "json", "guide_type": "GUIDE_TYPE_JSON", "guide": ""},
        {"name": "json_schema", "guide_type": "GUIDE_TYPE_JSON_SCHEMA", "guide": SCHEMA},
        {"name": "regex", "guide_type": "GUIDE_TYPE_REGEX", "guide": REGEX},
        {"name": "ebnf_grammar", "guide_type": "GUIDE_TYPE_EBNF_GRAMMAR", "guide": GRAMMAR},
        {"name": "structural_tag", "guide_type": "GUIDE_TYPE_STRUCTURAL_TAG", "guide": TAG},
    ]);
    let cases_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(cases_file.path(), cases.to_string()).unwrap();
    let (addr, cases_path) = (server.addr.to_string(), cases_file.path().to_path_buf());
    let script = python_script("guided_client.py");
    let output =
        tokio::task::spawn_blocking(move || run_python(&python, &script, &[OsStr::new(&addr), cases_path.as_os_str()]))
            .await
            .unwrap()
            .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "guided client failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));

    let mut per_case: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for line in stdout.lines().filter(|l| l.starts_with('{')) {
        let out: Value = serde_json::from_str(line).unwrap();
        let case = out["case"].as_str().unwrap().to_string();
        let tokens: Vec<u32> = out["tokens"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap() as u32).collect();
        let entry = per_case.entry(case.clone()).or_default();
        entry.0 += 1;
        if out["finish"] == "stop" {
            entry.1 += 1;
            let text = tokenizer.decode(&tokens, false).unwrap();
            if let Err(why) = conforms(&case, &text) {
                panic!("{case} output {text:?} does not conform: {why}");
            }
        } else {
            assert_eq!(out["finish"], "length", "{line}");
        }
    }
    assert_eq!(per_case.len(), 5, "{per_case:?}");
    for (case, (total, complete)) in &per_case {
        assert!(*total >= 8 && complete * 10 >= total * 7, "{case}: {complete} of {total} complete");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_guided_decoding_answers_failed_precondition() {
    let server = TestServer::builder().iteration_ms(0.2).start().await;
    let mut client = server.client().await;
    let mut request = common::server::request("g", vec![5, 6, 7], 8, false);
    request.guided_decoding = Some(pb::GuidedDecodingParams {
        guide_type: pb::guided_decoding_params::GuideType::Json as i32,
        guide: String::new(),
    });
    let status = client.generate(request).await.expect_err("refused");
    assert_eq!(status.code(), tonic::Code::FailedPrecondition, "{status:?}");
    assert!(status.message().contains("guided_decoding"), "{}", status.message());
}
