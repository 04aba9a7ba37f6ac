//! Guided decoding through the simulated executor: every guide type, seeded requests checked by
//! independent checkers (serde_json + jsonschema, regex full match, a small parser, tag structure),
//! streaming and not, n > 1; and the errors a client gets for a malformed guide or a missing config.

use std::collections::BTreeMap;

use serde_json::Value;
use trtllm::guided::GuidedDecodingParams;
use trtllm::sim::ClockMode;
use trtllm::text::Tokenizer;
use trtllm::{Error, Executor, FinishReason, GenerationRequest, InvalidRequest, SamplingParams};

use crate::common;

const EOS: u32 = 0;
const MAX_TOKENS: u32 = 200;
const SEEDS: u64 = 20;

fn tokenizer() -> Tokenizer {
    Tokenizer::from_tokenizer(common::text::byte_level_bpe()).with_eos_token_ids([EOS])
}

/// A guided executor whose engine vocabulary is the tokenizer's (zero-latency iterations).
fn guided_executor(tokenizer: &Tokenizer) -> (tempfile::TempDir, Executor) {
    let vocab = tokenizer.vocab_size();
    let dir = common::sim::engine_dir(|b| b.vocab_size(vocab).max_seq_len(1024).clock(ClockMode::Virtual));
    let config = common::sim::config().guided_decoding_from_tokenizer(tokenizer).build().expect("config");
    let executor = Executor::load(dir.path(), config).expect("load");
    (dir, executor)
}

/// One sequence's decoded text and how it ended.
struct Output {
    text: String,
    finish: FinishReason,
}

/// Runs `guide` with seeds 0..SEEDS, half streaming, every other request with n = 2; returns every
/// sequence's output. Streamed chunks must add up to the final tokens.
fn run(executor: &Executor, tokenizer: &Tokenizer, guide: &GuidedDecodingParams) -> Vec<Output> {
    let prompt = tokenizer.encode("Answer:", false).expect("encode");
    let mut outputs = Vec::new();
    for seed in 0..SEEDS {
        let n = if seed % 2 == 0 { 1 } else { 2 };
        let streaming = seed % 4 < 2;
        let request = GenerationRequest::new(prompt.clone(), MAX_TOKENS)
            .with_streaming(streaming)
            .with_end_id(EOS)
            .with_sampling(SamplingParams::default().seed(seed).num_return_sequences(n))
            .with_guided_decoding(guide.clone());
        let drained = common::sim::drain(executor.enqueue(request).expect("enqueue"));
        assert_eq!(drained.after_terminal, 0);
        let done = drained.done();
        assert_eq!(done.sequences.len(), n as usize, "seed {seed}: one output per sequence");
        let mut streamed: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for chunk in &drained.chunks {
            streamed.entry(chunk.sequence_index).or_default().extend(&chunk.token_ids);
        }
        for sequence in &done.sequences {
            if streaming {
                assert_eq!(streamed.get(&sequence.index).cloned().unwrap_or_default(), sequence.token_ids);
            }
            assert!(!sequence.token_ids.contains(&EOS), "the stop id is not part of the output");
            let text = tokenizer.decode(&sequence.token_ids, false).expect("decode");
            outputs.push(Output { text, finish: sequence.finish_reason });
        }
    }
    outputs
}

/// Every output that ended on the end id passes `check`; at most a few hit max tokens instead.
fn check_all(outputs: &[Output], check: impl Fn(&str) -> Result<(), String>) {
    let complete: Vec<&Output> = outputs.iter().filter(|o| o.finish == FinishReason::EndId).collect();
    assert!(
        complete.len() * 10 >= outputs.len() * 8,
        "most sequences end where the grammar accepts: {} of {}",
        complete.len(),
        outputs.len()
    );
    for output in outputs {
        assert!(matches!(output.finish, FinishReason::EndId | FinishReason::Length), "{:?}", output.finish);
    }
    for output in complete {
        if let Err(why) = check(&output.text) {
            panic!("output {:?} does not conform: {why}", output.text);
        }
    }
}

const SCHEMA: &str = r#"{
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3}
    },
    "required": ["name", "age"],
    "additionalProperties": false
}"#;

#[test]
fn json_schema_outputs_validate_against_the_schema() {
    let tokenizer = tokenizer();
    let (_dir, executor) = guided_executor(&tokenizer);
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let outputs = run(&executor, &tokenizer, &GuidedDecodingParams::json_schema(SCHEMA));
    check_all(&outputs, |text| {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        validator.validate(&value).map_err(|e| e.to_string())
    });
}

#[test]
fn json_outputs_are_json_objects() {
    let tokenizer = tokenizer();
    let (_dir, executor) = guided_executor(&tokenizer);
    let outputs = run(&executor, &tokenizer, &GuidedDecodingParams::json());
    check_all(&outputs, |text| match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(_)) => Ok(()),
        Ok(other) => Err(format!("not an object: {other}")),
        Err(e) => Err(e.to_string()),
    });
}

#[test]
fn regex_outputs_match_in_full() {
    let tokenizer = tokenizer();
    let (_dir, executor) = guided_executor(&tokenizer);
    let pattern = r"[a-z]{2,8}@[a-z]{2,6}\.(com|org) [0-9]{1,4}";
    let full = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
    let outputs = run(&executor, &tokenizer, &GuidedDecodingParams::regex(pattern));
    check_all(&outputs, |text| if full.is_match(text) { Ok(()) } else { Err("no full match".into()) });
}

/// expr := term (("+" | "-") term)*; term := factor ("*" factor)*; factor := [0-9]+ | "(" expr ")"
fn parses_as_arithmetic(text: &str) -> bool {
    fn expr(s: &[u8], i: &mut usize) -> bool {
        if !term(s, i) {
            return false;
        }
        while *i < s.len() && (s[*i] == b'+' || s[*i] == b'-') {
            *i += 1;
            if !term(s, i) {
                return false;
            }
        }
        true
    }
    fn term(s: &[u8], i: &mut usize) -> bool {
        if !factor(s, i) {
            return false;
        }
        while *i < s.len() && s[*i] == b'*' {
            *i += 1;
            if !factor(s, i) {
                return false;
            }
        }
        true
    }
    fn factor(s: &[u8], i: &mut usize) -> bool {
        if *i < s.len() && s[*i] == b'(' {
            *i += 1;
            if !expr(s, i) || *i >= s.len() || s[*i] != b')' {
                return false;
            }
            *i += 1;
            return true;
        }
        let start = *i;
        while *i < s.len() && s[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > start
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    expr(bytes, &mut i) && i == bytes.len()
}

#[test]
fn grammar_outputs_derive_from_the_grammar() {
    let tokenizer = tokenizer();
    let (_dir, executor) = guided_executor(&tokenizer);
    let grammar = r#"root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor ("*" factor)*
factor ::= [0-9]+ | "(" expr ")"
"#;
    let outputs = run(&executor, &tokenizer, &GuidedDecodingParams::ebnf_grammar(grammar));
    check_all(&outputs, |text| if parses_as_arithmetic(text) { Ok(()) } else { Err("does not parse".into()) });
}

#[test]
fn structural_tag_outputs_follow_their_tags() {
    let tokenizer = tokenizer();
    let (_dir, executor) = guided_executor(&tokenizer);
    let tag = r#"{"structures": [{"begin": "<function=weather>", "schema": {"type": "object",
        "properties": {"city": {"type": "string", "maxLength": 10}}, "required": ["city"],
        "additionalProperties": false}, "end": "</function>"}], "triggers": ["<function="]}"#;
    let outputs = run(&executor, &tokenizer, &GuidedDecodingParams::structural_tag(tag));
    check_all(&outputs, |text| {
        // Every tagged segment holds JSON with a string "city"; text outside tags never opens a tag.
        let mut rest = text;
        while let Some(start) = rest.find("<function=") {
            let after = &rest[start..];
            let body = after.strip_prefix("<function=weather>").ok_or("unknown tag")?;
            let end = body.find("</function>").ok_or("unclosed tag")?;
            let value: Value = serde_json::from_str(&body[..end]).map_err(|e| e.to_string())?;
            if !value.get("city").is_some_and(Value::is_string) || value.as_object().map(|o| o.len()) != Some(1) {
                return Err(format!("bad arguments {value}"));
            }
            rest = &body[end + "</function>".len()..];
        }
        Ok(())
    });
}

#[test]
fn the_same_seed_gives_the_same_guided_output() {
    let tokenizer = tokenizer();
    let (_dir, executor) = guided_executor(&tokenizer);
    let request = || {
        GenerationRequest::new(vec![5, 6, 7], 64)
            .with_streaming(false)
            .with_sampling(SamplingParams::default().seed(42))
            .with_guided_decoding(GuidedDecodingParams::json_schema(SCHEMA))
    };
    let first = common::sim::drain(executor.enqueue(request()).unwrap()).done().sequences[0].token_ids.clone();
    let second = common::sim::drain(executor.enqueue(request()).unwrap()).done().sequences[0].token_ids.clone();
    assert_eq!(first, second);
    assert!(!first.is_empty());
}

#[test]
fn malformed_guides_are_refused_before_enqueue_naming_the_field() {
    let tokenizer = tokenizer();
    let (_dir, executor) = guided_executor(&tokenizer);
    let cases = [
        (GuidedDecodingParams::json_schema("{type: object}"), "json_schema"),
        (GuidedDecodingParams::regex(""), "regex"),
        (GuidedDecodingParams::regex("(unclosed"), "regex"),
        (GuidedDecodingParams::ebnf_grammar("  "), "ebnf_grammar"),
        (GuidedDecodingParams::structural_tag("[1, 2]"), "structural_tag"),
    ];
    for (guide, field) in cases {
        let request = GenerationRequest::new(vec![5, 6], 8).with_guided_decoding(guide.clone());
        match executor.enqueue(request) {
            Err(Error::InvalidRequest(InvalidRequest::Guide { field: got, .. })) => assert_eq!(got, field),
            other => panic!("{guide:?}: expected an invalid-guide error, got {other:?}"),
        }
    }
    // Guides that pass the light checks but that the grammar engine cannot compile are refused at
    // enqueue too (compiled there), as the request's error: never an executor failure.
    for (guide, field) in [
        (GuidedDecodingParams::ebnf_grammar("root ::= undefined_rule"), "ebnf_grammar"),
        (
            GuidedDecodingParams::json_schema(r##"{"type": "object", "properties": {"a": {"$ref": "#/nope"}}}"##),
            "json_schema",
        ),
    ] {
        let request = GenerationRequest::new(vec![5, 6], 8).with_guided_decoding(guide.clone());
        let err = executor.enqueue(request).expect_err("refused before enqueue");
        assert!(
            matches!(&err, Error::InvalidRequest(InvalidRequest::Guide { field: got, .. }) if *got == field),
            "{err:?}"
        );
        assert_eq!(err.kind(), trtllm::ErrorKind::InvalidRequest);
        assert!(!err.to_string().contains("Encountered"), "{err}");
    }
    assert_eq!(executor.in_flight(), 0, "nothing was enqueued");
    assert!(executor.health().is_empty());
    // The executor still serves other requests.
    let ok = GenerationRequest::new(vec![5, 6], 8).with_guided_decoding(GuidedDecodingParams::json());
    assert!(common::sim::drain(executor.enqueue(ok).unwrap()).terminal.is_ok());
}

#[test]
fn a_guided_request_without_a_guided_config_is_refused() {
    let (_dir, executor) = common::sim::executor();
    let request = GenerationRequest::new(vec![5, 6], 8).with_guided_decoding(GuidedDecodingParams::json());
    let err = executor.enqueue(request).expect_err("no guided decoding config");
    assert!(matches!(err, Error::GuidedDecodingDisabled), "{err:?}");
    assert!(err.to_string().contains("guided_decoding"));
}

#[test]
fn guided_requests_need_beam_width_one() {
    let tokenizer = tokenizer();
    let vocab = tokenizer.vocab_size();
    let dir = common::sim::engine_dir(|b| b.vocab_size(vocab).max_beam_width(2));
    let config = common::sim::config().max_beam_width(2).guided_decoding_from_tokenizer(&tokenizer).build().unwrap();
    let executor = Executor::load(dir.path(), config).expect("load");
    let request = GenerationRequest::new(vec![5, 6], 8)
        .with_sampling(SamplingParams::default().beam_width(2))
        .with_guided_decoding(GuidedDecodingParams::json());
    assert!(matches!(executor.enqueue(request), Err(Error::InvalidRequest(InvalidRequest::Guide { .. }))));
}

#[test]
fn max_tokens_cuts_a_guided_sequence_with_length() {
    let tokenizer = tokenizer();
    let (_dir, executor) = guided_executor(&tokenizer);
    // A schema whose shortest conforming output is far longer than two tokens.
    let schema = r#"{"type": "object", "properties": {"a_long_property_name": {"type": "string", "minLength": 40}},
        "required": ["a_long_property_name"]}"#;
    let request = GenerationRequest::new(vec![5, 6], 2)
        .with_streaming(false)
        .with_guided_decoding(GuidedDecodingParams::json_schema(schema));
    let drained = common::sim::drain(executor.enqueue(request).unwrap());
    let done = drained.done();
    assert_eq!(done.sequences[0].finish_reason, FinishReason::Length);
    assert_eq!(done.sequences[0].token_ids.len(), 2);
}
