//! Seeded generations driven by the matcher alone, each output checked by an independent oracle
//! (serde_json + jsonschema, regex full match, a hand-written expression parser, tag structure).

use std::sync::OnceLock;

use serde_json::{Value, json};
use tokenizers::models::TrainerWrapper;
use tokenizers::models::bpe::{BPE, BpeTrainerBuilder};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{AddedToken, Tokenizer};

use super::*;
use crate::types::guided::GuideType;

const SEEDS: u64 = 24;
const MAX_TOKENS: usize = 256;
const EOS: u32 = 0;

/// A byte-level BPE (ids 0–2 special) trained on JSON-ish text, words, numbers and punctuation.
fn tokenizer() -> &'static Tokenizer {
    static TRAINED: OnceLock<Tokenizer> = OnceLock::new();
    TRAINED.get_or_init(|| {
        let words = ["name", "age", "city", "true", "false", "null", "Seattle", "the", "tool", "function", "weather"];
        let mut corpus = Vec::new();
        for i in 0..400usize {
            let w = words[i % words.len()];
            let v = words[(i * 7 + 3) % words.len()];
            corpus.push(format!(
                "{{\"{w}\": \"{v} {i}\", \"{v}\": [{i}, {}]}} <function={w}>({i} + {}) * 2</function>",
                i * 3,
                i % 9
            ));
            corpus.push(format!("{w}@{v}.com {i}-{:04} yes no maybe, ok! 你好 🦀", i * 13 % 10_000));
        }
        let mut tokenizer = Tokenizer::new(BPE::default());
        tokenizer.with_pre_tokenizer(Some(ByteLevel::default().add_prefix_space(false)));
        tokenizer.with_decoder(Some(ByteLevel::default()));
        let mut trainer: TrainerWrapper = BpeTrainerBuilder::new()
            .vocab_size(800)
            .min_frequency(2)
            .show_progress(false)
            .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
            .special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>"].map(|t| AddedToken::from(t, true)).to_vec())
            .build()
            .into();
        tokenizer.train(&mut trainer, corpus.iter()).expect("training the test tokenizer");
        tokenizer
    })
}

fn encoded_vocab(tokenizer: &Tokenizer) -> Vec<String> {
    (0..tokenizer.get_vocab_size(true) as u32).map(|id| tokenizer.id_to_token(id).expect("dense ids")).collect()
}

fn factory() -> &'static GrammarMatcherFactory {
    static FACTORY: OnceLock<GrammarMatcherFactory> = OnceLock::new();
    FACTORY.get_or_init(|| {
        let tokenizer = tokenizer();
        let json = tokenizer.to_string(false).expect("tokenizer json");
        GrammarMatcherFactory::new(&encoded_vocab(tokenizer), Some(&json), &[EOS]).expect("factory")
    })
}

/// Runs one seeded generation; returns the decoded text (stop id excluded) and whether it ended on
/// the stop id. Checks on the way that a stop id is allowed only where the grammar accepts.
fn generate(guide_type: GuideType, guide: Option<&str>, seed: u64) -> (String, bool) {
    let mut matcher = factory().matcher(guide_type, guide).expect("guide compiles");
    let mut ids = Vec::new();
    while ids.len() < MAX_TOKENS {
        let accepting = matcher.is_accepting();
        assert_eq!(matcher.is_allowed(EOS).unwrap(), accepting, "stop allowed exactly where accepting");
        let token = matcher.choose_token(seed).expect("a token");
        assert!(matcher.is_allowed(token).unwrap());
        matcher.consume(token).expect("consume");
        if token == EOS {
            assert!(matcher.is_finished());
            let text = tokenizer().decode(&ids, false).expect("decode");
            return (text, true);
        }
        ids.push(token);
    }
    (tokenizer().decode(&ids, false).expect("decode"), false)
}

/// `SEEDS` generations; all must end on the stop id.
fn outputs(guide_type: GuideType, guide: Option<&str>) -> Vec<String> {
    (0..SEEDS)
        .map(|seed| {
            let (text, finished) = generate(guide_type, guide, seed);
            assert!(finished, "seed {seed}: no stop within {MAX_TOKENS} tokens: {text:?}");
            text
        })
        .collect()
}

#[test]
fn json_outputs_are_json_objects() {
    for text in outputs(GuideType::Json, None) {
        let value: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(value.is_object(), "{text:?}");
    }
}

const PERSON_SCHEMA: &str = r#"{
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 12},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "city": {"enum": ["Seattle", "Paris", "Tokyo"]},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{1,5}$"}, "maxItems": 3},
        "admin": {"type": "boolean"}
    },
    "required": ["name", "age", "city"],
    "additionalProperties": false
}"#;

#[test]
fn json_schema_outputs_validate() {
    let schema: Value = serde_json::from_str(PERSON_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let texts = outputs(GuideType::JsonSchema, Some(PERSON_SCHEMA));
    for text in &texts {
        let value: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert!(validator.is_valid(&value), "{text:?} does not validate");
    }
    let distinct: std::collections::HashSet<_> = texts.iter().collect();
    assert!(distinct.len() > SEEDS as usize / 2, "seeds should give different outputs: {texts:?}");
}

#[test]
fn regex_outputs_match_in_full() {
    for pattern in [r"[a-z]{2,8}@[a-z]{3,6}\.(com|org)", r"\d{3}-\d{4}", r"(yes|no)(, maybe)*!?", r"[0-9a-f]+"] {
        let oracle = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
        for text in outputs(GuideType::Regex, Some(pattern)) {
            assert!(oracle.is_match(&text), "{text:?} does not match {pattern}");
        }
    }
}

const ARITHMETIC_GBNF: &str = r#"
# integer arithmetic
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")"
number ::= [1-9] [0-9]{0,3}
"#;

/// Recursive-descent check of [`ARITHMETIC_GBNF`]'s language.
fn parses_as_arithmetic(text: &str) -> bool {
    fn expr(s: &[u8], i: &mut usize, depth: usize) -> bool {
        if depth > 64 || !term(s, i, depth) {
            return false;
        }
        while *i < s.len() && (s[*i] == b'+' || s[*i] == b'-') {
            *i += 1;
            if !term(s, i, depth) {
                return false;
            }
        }
        true
    }
    fn term(s: &[u8], i: &mut usize, depth: usize) -> bool {
        if !factor(s, i, depth) {
            return false;
        }
        while *i < s.len() && (s[*i] == b'*' || s[*i] == b'/') {
            *i += 1;
            if !factor(s, i, depth) {
                return false;
            }
        }
        true
    }
    fn factor(s: &[u8], i: &mut usize, depth: usize) -> bool {
        if *i < s.len() && s[*i] == b'(' {
            *i += 1;
            if !expr(s, i, depth + 1) || *i >= s.len() || s[*i] != b')' {
                return false;
            }
            *i += 1;
            return true;
        }
        let start = *i;
        if *i >= s.len() || !(b'1'..=b'9').contains(&s[*i]) {
            return false;
        }
        *i += 1;
        while *i < s.len() && s[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start <= 4
    }
    let mut i = 0;
    expr(text.as_bytes(), &mut i, 0) && i == text.len()
}

#[test]
fn gbnf_outputs_derive_from_the_grammar() {
    for text in outputs(GuideType::EbnfGrammar, Some(ARITHMETIC_GBNF)) {
        assert!(parses_as_arithmetic(&text), "{text:?} is not derived from the grammar");
    }
    assert!(parses_as_arithmetic("(12+3)*4") && !parses_as_arithmetic("(12+3") && !parses_as_arithmetic("012"));
}

#[test]
fn lark_grammar_text_is_accepted_as_is() {
    let lark = "start: \"[\" ITEM (\", \" ITEM)* \"]\"\nITEM: /[a-z]{1,6}/\n";
    let oracle = regex::Regex::new(r"^\[[a-z]{1,6}(, [a-z]{1,6})*\]$").unwrap();
    for text in outputs(GuideType::EbnfGrammar, Some(lark)) {
        assert!(oracle.is_match(&text), "{text:?}");
    }
}

const WEATHER_PARAMS: &str = r#"{"type": "object", "properties": {"city": {"type": "string", "maxLength": 10}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}, "required": ["city", "days"], "additionalProperties": false}"#;

/// Splits `text` at every `trigger`; each segment after one must be `rest_of_begin JSON end` with
/// the JSON valid against its tool's schema. Returns the number of tags.
fn check_tags(text: &str, trigger: &str, tools: &[(&str, &str)], end: &str) -> usize {
    let mut count = 0;
    let mut rest = text;
    while let Some(at) = rest.find(trigger) {
        let after = &rest[at + trigger.len()..];
        let (name, schema) = tools
            .iter()
            .find(|(name, _)| after.starts_with(&format!("{name}>")))
            .unwrap_or_else(|| panic!("{text:?}: unknown tool after trigger"));
        let body = &after[name.len() + 1..];
        let close = body.find(end).unwrap_or_else(|| panic!("{text:?}: tag not closed"));
        let value: Value = serde_json::from_str(&body[..close]).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        let schema: Value = serde_json::from_str(schema).unwrap();
        assert!(jsonschema::is_valid(&schema, &value), "{text:?}: arguments do not validate");
        count += 1;
        rest = &body[close + end.len()..];
    }
    count
}

#[test]
fn legacy_structural_tag_outputs_follow_the_tags() {
    let tag = json!({
        "structures": [{"begin": "<function=get_weather>", "schema": serde_json::from_str::<Value>(WEATHER_PARAMS).unwrap(), "end": "</function>"}],
        "triggers": ["<function="],
    })
    .to_string();
    for text in outputs(GuideType::StructuralTag, Some(&tag)) {
        check_tags(&text, "<function=", &[("get_weather", WEATHER_PARAMS)], "</function>");
    }
}

#[test]
fn triggered_tags_with_at_least_one_always_call_a_tool() {
    let schema: Value = serde_json::from_str(WEATHER_PARAMS).unwrap();
    let tag = json!({
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": ["<function="],
            "tags": [
                {"begin": "<function=get_weather>", "content": {"type": "json_schema", "json_schema": schema}, "end": "</function>"},
                {"begin": "<function=ping>", "content": {"type": "json_schema", "json_schema": {"type": "object", "properties": {}, "additionalProperties": false}}, "end": "</function>"},
            ],
            "at_least_one": true,
        }
    })
    .to_string();
    let tools = [("get_weather", WEATHER_PARAMS), ("ping", r#"{"type": "object", "maxProperties": 0}"#)];
    for text in outputs(GuideType::StructuralTag, Some(&tag)) {
        assert!(text.starts_with("<function="), "{text:?} must start with a tool call");
        assert!(check_tags(&text, "<function=", &tools, "</function>") >= 1);
    }
}

fn composed_tag(think: Value) -> String {
    json!({"format": {"type": "sequence", "elements": [
        {"type": "tag", "begin": "<think>", "content": think, "end": "</think>"},
        {"type": "or", "elements": [{"type": "const_string", "value": "yes"}, {"type": "regex", "pattern": "[0-9]{1,3}"}]},
        {"type": "tags_with_separator", "separator": ",", "at_least_one": true,
         "tags": [{"type": "tag", "begin": "<a>", "content": {"type": "grammar", "grammar": "root ::= [xy]+"}, "end": "</a>"}]},
    ]}})
    .to_string()
}

#[test]
fn composed_structural_tag_formats_compile_and_hold() {
    let oracle = regex::Regex::new(r"^(?s)<think>.*?</think>(yes|[0-9]{1,3})<a>[xy]+</a>(,<a>[xy]+</a>)*$").unwrap();
    let bounded = composed_tag(json!({"type": "regex", "pattern": "[a-z ]{0,12}"}));
    for text in outputs(GuideType::StructuralTag, Some(&bounded)) {
        assert!(oracle.is_match(&text), "{text:?}");
    }
    // Free text inside a tag ends only where the random text happens to spell the end tag, so these
    // may run to the token limit; what was generated must still be a prefix of the format.
    let free = composed_tag(json!({"type": "any_text"}));
    for seed in 0..SEEDS {
        let (text, finished) = generate(GuideType::StructuralTag, Some(&free), seed);
        if finished {
            assert!(oracle.is_match(&text), "{text:?}");
            assert_eq!(text.matches("</think>").count(), 1, "{text:?}");
        } else {
            assert!(text.starts_with("<think>"), "{text:?}");
        }
    }
}

#[test]
fn same_seed_same_tokens() {
    let a = generate(GuideType::JsonSchema, Some(PERSON_SCHEMA), 7);
    let b = generate(GuideType::JsonSchema, Some(PERSON_SCHEMA), 7);
    assert_eq!(a, b);
}

#[test]
fn stop_only_where_the_grammar_accepts_and_masks_stay_in_the_vocabulary() {
    let mut matcher = factory().matcher(GuideType::Regex, Some("ab+")).unwrap();
    let vocab = matcher.vocab_size();
    assert_eq!(vocab, tokenizer().get_vocab_size(true));
    assert!(!matcher.is_accepting() && !matcher.is_allowed(EOS).unwrap());
    let mut words = vec![u32::MAX; vocab.div_ceil(32) + 4];
    matcher.fill_mask(&mut words).unwrap();
    assert!(words[vocab.div_ceil(32)..].iter().all(|&w| w == 0), "no id beyond the vocabulary");
    let allowed = matcher.allowed_tokens().unwrap();
    assert!(allowed.iter().all(|&t| (t as usize) < vocab && tokenizer().id_to_token(t).unwrap().starts_with('a')));
    let b = tokenizer().token_to_id("b").unwrap();
    assert_eq!(matcher.consume(b), Err(GuidedError::TokenNotAllowed(b)));
    matcher.consume(tokenizer().token_to_id("a").unwrap()).unwrap();
    matcher.consume(b).unwrap();
    assert!(matcher.is_accepting() && matcher.is_allowed(EOS).unwrap());
    matcher.consume(EOS).unwrap();
    assert!(matcher.is_finished() && matcher.is_stopped());
    assert!(matcher.allowed_tokens().unwrap().is_empty());
}

#[test]
fn special_tokens_are_never_text() {
    let mut matcher = factory().matcher(GuideType::Regex, Some("(?s:.{0,40})")).unwrap();
    let allowed = matcher.allowed_tokens().unwrap();
    for special in [1, 2] {
        assert!(!allowed.contains(&special), "special token {special} allowed as text");
    }
}

#[test]
fn malformed_guides_name_the_problem() {
    use crate::error::InvalidGuide as G;
    let missing = |r: &G| matches!(r, G::Missing);
    let schema = |r: &G| matches!(r, G::Schema(_));
    let regex = |r: &G| matches!(r, G::Regex(_));
    let grammar = |r: &G| matches!(r, G::Grammar(_));
    let tag = |r: &G| matches!(r, G::StructuralTag(_));
    type Case<'a> = (GuideType, Option<&'a str>, fn(&G) -> bool, &'a str);
    let cases: [Case; 10] = [
        (GuideType::JsonSchema, Some("{type: object}"), schema, ""),
        (GuideType::JsonSchema, Some("[1, 2]"), schema, "a schema is a JSON object or boolean"),
        (GuideType::JsonSchema, None, missing, ""),
        (GuideType::Regex, Some(""), missing, ""),
        (GuideType::Regex, Some("(ab"), regex, ""),
        (GuideType::EbnfGrammar, Some("   "), missing, ""),
        (GuideType::EbnfGrammar, Some("root ::= foo"), grammar, "rule `foo` is used but not defined"),
        (GuideType::EbnfGrammar, Some("expr ::= \"a\""), grammar, "the grammar has no `root` rule"),
        (
            GuideType::StructuralTag,
            Some(r#"{"structures": [{"begin": "<x>", "schema": {}, "end": "</x>"}], "triggers": ["<f="]}"#),
            tag,
            "starts with none of the triggers",
        ),
        (
            GuideType::StructuralTag,
            Some(r#"{"type": "structural_tag", "format": {"type": "qwen_xml_parameter"}}"#),
            tag,
            "format type `qwen_xml_parameter` is not supported",
        ),
    ];
    for (guide_type, guide, expected, detail) in cases {
        let err = validate_guide(guide_type, guide).expect_err("a malformed guide");
        let GuidedError::Guide { guide_type: named, reason } = &err else { panic!("{guide:?}: {err:?}") };
        assert_eq!(*named, guide_type);
        assert!(expected(reason), "{guide:?}: {reason:?}");
        // The converter's own detail, which names the rule or trigger at fault.
        assert!(reason.to_string().contains(detail), "{guide:?}: {reason} (expected {detail:?})");
        assert!(factory().matcher(guide_type, guide).is_err());
    }
    // Well-formed JSON the engine still cannot satisfy is refused at compile time.
    let unsatisfiable = r#"{"type": "integer", "minimum": 5, "maximum": 1}"#;
    assert!(matches!(
        factory().matcher(GuideType::JsonSchema, Some(unsatisfiable)),
        Err(GuidedError::Guide { reason: G::Compile(_), .. })
    ));
}

#[test]
fn factory_checks_its_configuration() {
    let vocab = encoded_vocab(tokenizer());
    let json = tokenizer().to_string(false).unwrap();
    assert_eq!(GrammarMatcherFactory::new(&vocab, Some(&json), &[]).unwrap_err(), GuidedError::NoStopTokens);
    assert!(matches!(
        GrammarMatcherFactory::new(&vocab, Some(&json), &[vocab.len() as u32]),
        Err(GuidedError::StopTokenOutOfRange { .. })
    ));
    assert!(matches!(GrammarMatcherFactory::new(&[], Some(&json), &[0]), Err(GuidedError::Vocabulary(_))));
    assert!(matches!(GrammarMatcherFactory::new(&vocab, Some("not json"), &[0]), Err(GuidedError::TokenizerJson(_))));
    // Without tokenizer.json the byte-level kind is recognised from `Ġ` tokens.
    let guessed = GrammarMatcherFactory::new(&vocab, None, &[EOS]).unwrap();
    let mut matcher = guessed.matcher(GuideType::Regex, Some(" [a-z]+")).unwrap();
    assert!(!matcher.allowed_tokens().unwrap().is_empty());
}

#[test]
fn sentencepiece_byte_fallback_vocabularies_decode_spaces_and_bytes() {
    let vocab: Vec<String> =
        ["<unk>", "<s>", "</s>", "▁hello", "▁world", "!", "<0x0A>", "<0x41>"].iter().map(|s| s.to_string()).collect();
    let tokenizer_json = json!({
        "added_tokens": [
            {"id": 0, "content": "<unk>", "special": true},
            {"id": 1, "content": "<s>", "special": true},
            {"id": 2, "content": "</s>", "special": true},
        ],
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
        ]},
    })
    .to_string();
    let factory = GrammarMatcherFactory::new(&vocab, Some(&tokenizer_json), &[2]).unwrap();
    let mut matcher = factory.matcher(GuideType::Regex, Some(" hello world\nA!")).unwrap();
    for token in [3, 4, 6, 7, 5] {
        assert_eq!(matcher.allowed_tokens().unwrap(), vec![token]);
        matcher.consume(token).unwrap();
    }
    assert_eq!(matcher.allowed_tokens().unwrap(), vec![2]);
}

/// Grammar compile time and mask cost (printed with `--nocapture`; a figure, not an assertion).
#[test]
fn figures_compile_and_mask_cost() {
    let started = std::time::Instant::now();
    let mut matcher = factory().matcher(GuideType::JsonSchema, Some(PERSON_SCHEMA)).unwrap();
    let compile = started.elapsed();
    let mut steps = 0u32;
    let started = std::time::Instant::now();
    while !matcher.is_finished() && steps < 200 {
        let token = matcher.choose_token(3).unwrap();
        matcher.consume(token).unwrap();
        steps += 1;
    }
    let per_token = started.elapsed() / steps.max(1);
    println!(
        "schema compile {:?}; mask + choice + consume {:?}/token over {steps} tokens ({} token vocabulary)",
        compile,
        per_token,
        factory().vocab_size()
    );
}

/// Seeded generation with `matcher`, to compare runs token by token.
fn tokens_of(mut matcher: GrammarMatcher, seed: u64) -> Vec<u32> {
    let mut ids = Vec::new();
    while !matcher.is_finished() && ids.len() < MAX_TOKENS {
        let token = matcher.choose_token(seed).unwrap();
        matcher.consume(token).unwrap();
        ids.push(token);
    }
    ids
}

#[test]
fn a_repeated_guide_reuses_its_compiled_grammar_and_decodes_the_same() {
    let cached = factory().clone().with_grammar_cache(4);
    let uncached = factory().clone().with_grammar_cache(0);
    for seed in 0..6 {
        let first = tokens_of(cached.matcher(GuideType::JsonSchema, Some(PERSON_SCHEMA)).unwrap(), seed);
        // A later copy from the cache starts in the initial state, whatever the earlier ones consumed.
        let again = tokens_of(cached.matcher(GuideType::JsonSchema, Some(PERSON_SCHEMA)).unwrap(), seed);
        let fresh = tokens_of(uncached.matcher(GuideType::JsonSchema, Some(PERSON_SCHEMA)).unwrap(), seed);
        assert_eq!(first, again, "seed {seed}");
        assert_eq!(first, fresh, "seed {seed}");
    }
    assert_eq!(cached.cached_grammars(), 1, "one guide, compiled once");
    assert_eq!(uncached.cached_grammars(), 0);
}

#[test]
fn the_grammar_cache_is_bounded_and_keys_on_type_and_text() {
    let cached = factory().clone().with_grammar_cache(2);
    for regex in ["a+", "b+", "c+", "a+"] {
        cached.matcher(GuideType::Regex, Some(regex)).unwrap();
        assert!(cached.cached_grammars() <= 2);
    }
    assert_eq!(cached.cached_grammars(), 2);
    // The same text under another guide type is another grammar, and a failed compile is not kept.
    cached.matcher(GuideType::Regex, Some("[0-9]")).unwrap();
    assert!(cached.matcher(GuideType::JsonSchema, Some("[0-9]")).is_err());
    assert_eq!(cached.cached_grammars(), 2);
}

#[test]
fn factories_for_one_vocabulary_share_their_compiled_grammars() {
    let tokenizer = tokenizer();
    let json = tokenizer.to_string(false).expect("tokenizer json");
    let vocab = encoded_vocab(tokenizer);
    // The executor's pre-enqueue check and the simulator's admission each get a factory.
    let checker = GrammarMatcherFactory::shared(&vocab, Some(&json), &[EOS]).expect("factory");
    let runtime = GrammarMatcherFactory::shared(&vocab, Some(&json), &[EOS]).expect("factory");
    let other_stops = GrammarMatcherFactory::shared(&vocab, Some(&json), &[EOS, 0]).expect("factory");
    let schema = r#"{"type": "object", "properties": {"shared": {"type": "boolean"}}}"#;
    checker.matcher(GuideType::JsonSchema, Some(schema)).expect("compiles");
    assert_eq!(runtime.cached_grammars(), 1, "the runtime factory sees the grammar compiled before enqueue");
    assert_eq!(other_stops.cached_grammars(), 0, "other stop ids make another factory");
    drop((checker, runtime));
    let fresh = GrammarMatcherFactory::shared(&vocab, Some(&json), &[EOS]).expect("factory");
    assert_eq!(fresh.cached_grammars(), 0, "once every clone is gone, a new factory starts empty");
}
