//! Integration tests of `trtllm::text` with tokenizers trained inside the tests.

use crate::common;

use std::sync::LazyLock;

use proptest::prelude::*;
use serde_json::json;
use trtllm::text::{ChatMessage, ChatTemplate, StopMatcher, StopStep, TextError, Tokenizer, token_stop_sequences};

use common::text::{MIXED_TEXT, SplitMix, byte_fallback_bpe, byte_level_bpe, mixed_line, write_tokenizer_dir};

static BYTE_LEVEL: LazyLock<Tokenizer> = LazyLock::new(|| Tokenizer::from_tokenizer(byte_level_bpe()));
static BYTE_FALLBACK: LazyLock<Tokenizer> = LazyLock::new(|| Tokenizer::from_tokenizer(byte_fallback_bpe()));

/// A Llama-3-style template: header tokens around the role, `<|eot_id|>` after each turn.
const LLAMA3_STYLE: &str = r#"{{ bos_token }}
{%- for message in messages %}
    {%- if message['role'] not in ['system', 'user', 'assistant'] %}
        {{- raise_exception('Unsupported role: ' ~ message['role']) }}
    {%- endif %}
    {{- '<|start_header_id|>' ~ message['role'] ~ '<|end_header_id|>\n\n' ~ message['content'] | trim ~ '<|eot_id|>' }}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"#;

/// A ChatML (Qwen-style) template that relies on trim_blocks/lstrip_blocks for its layout and
/// inserts a default system prompt.
const CHATML_STYLE: &str = "{% for message in messages %}
    {% if loop.first and message.role != 'system' %}
<|im_start|>system
You are a helpful assistant.<|im_end|>
    {% endif %}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endfor %}
{% if add_generation_prompt %}
<|im_start|>assistant
{% endif %}
";

fn ok<T>(result: Result<T, TextError>) -> T {
    result.unwrap_or_else(|err| panic!("unexpected error: {err}"))
}

/// Streams `ids` through an incremental decoder in chunks of the given sizes (cycled) and
/// returns the deltas, the last being `finish()`'s tail.
fn stream_deltas(tokenizer: &Tokenizer, ids: &[u32], chunk_sizes: &[usize], skip_special: bool) -> Vec<String> {
    let mut decoder = tokenizer.incremental_decoder(skip_special);
    let mut deltas = Vec::new();
    let mut rest = ids;
    let mut sizes = chunk_sizes.iter().copied().cycle();
    while !rest.is_empty() {
        let n = sizes.next().unwrap_or(1).clamp(1, rest.len());
        let (chunk, tail) = rest.split_at(n);
        deltas.push(ok(decoder.push(chunk)));
        rest = tail;
    }
    deltas.push(decoder.finish());
    deltas
}

// ---------------------------------------------------------------- loading from a directory

#[test]
fn from_dir_reads_chatml_style_configuration() {
    let dir = write_tokenizer_dir(
        &byte_level_bpe(),
        &[
            (
                "tokenizer_config.json",
                json!({
                    "bos_token": null,
                    "eos_token": "<|im_end|>",
                    "pad_token": {"content": "<|endoftext|>", "lstrip": false, "special": true},
                    "add_bos_token": false,
                    "chat_template": CHATML_STYLE,
                })
                .to_string(),
            ),
            ("generation_config.json", json!({"eos_token_id": [2, 0], "do_sample": true}).to_string()),
        ],
    );
    let tokenizer = ok(Tokenizer::from_dir(dir.path()));

    assert_eq!(tokenizer.bos_token(), None);
    assert_eq!(tokenizer.eos_token(), Some("<|im_end|>"));
    assert_eq!(tokenizer.pad_token(), Some("<|endoftext|>"));
    assert_eq!(tokenizer.add_bos_token(), Some(false));
    // <|im_end|> is id 2 (from the config) and generation_config adds <|endoftext|> (id 0).
    assert_eq!(tokenizer.eos_token_ids(), &[2, 0]);
    let names: Vec<_> = tokenizer.files().iter().filter_map(|p| p.file_name()?.to_str()).collect();
    assert_eq!(names, ["tokenizer.json", "tokenizer_config.json", "generation_config.json"]);
    let template = tokenizer.chat_template().unwrap_or_else(|| panic!("chat template not loaded"));
    assert!(ok(template.render(&[ChatMessage::user("Hi")], true)).ends_with("<|im_start|>assistant\n"));
    assert_eq!(ok(tokenizer.decode(&ok(tokenizer.encode(MIXED_TEXT, true)), false)), MIXED_TEXT);
}

#[test]
fn from_dir_reads_llama_style_configuration() {
    let dir = write_tokenizer_dir(
        &byte_fallback_bpe(),
        &[
            (
                "tokenizer_config.json",
                json!({
                    "bos_token": {"content": "<s>", "lstrip": false, "normalized": false},
                    "eos_token": {"content": "</s>"},
                    "unk_token": "<unk>",
                    "add_bos_token": true,
                    "chat_template": [
                        {"name": "tool_use", "template": "tools are not supported"},
                        {"name": "default", "template": LLAMA3_STYLE},
                    ],
                })
                .to_string(),
            ),
            ("generation_config.json", json!({"eos_token_id": 2}).to_string()),
        ],
    );
    let tokenizer = ok(Tokenizer::from_dir(dir.path()));

    assert_eq!(tokenizer.bos_token(), Some("<s>"));
    assert_eq!(tokenizer.bos_token_id(), Some(1));
    assert_eq!(tokenizer.unk_token(), Some("<unk>"));
    assert_eq!(tokenizer.eos_token_ids(), &[2]);
    let template = tokenizer.chat_template().unwrap_or_else(|| panic!("default chat template not chosen"));
    assert_eq!(template.bos_token(), Some("<s>"));
    assert!(ok(template.render(&[ChatMessage::user("x")], false)).starts_with("<s><|start_header_id|>user"));

    let with_bos = ok(tokenizer.encode("hello", true));
    assert_eq!(with_bos.first(), Some(&1));
    assert_eq!(ok(tokenizer.encode("hello", false)), with_bos[1..]);
}

/// A template that branches the way tool-aware templates do and uses every special token.
const TOOLS_AND_SPECIALS: &str = "{% if tools is not none %}[tools]{% else %}[no tools]{% endif %}\
{% if documents is none %}[no documents]{% endif %}\
{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token }}|{{ sep_token is defined }}|\
{{ additional_special_tokens | join(',') }}\
{% for m in messages %}{{ m.content }}{% endfor %}";

#[test]
fn chat_templates_see_none_tools_and_every_configured_special_token() {
    let dir = write_tokenizer_dir(
        &byte_level_bpe(),
        &[
            ("special_tokens_map.json", json!({"unk_token": "<|unk-old|>", "pad_token": "<|pad-old|>"}).to_string()),
            (
                "tokenizer_config.json",
                json!({
                    "bos_token": "<|im_start|>",
                    "eos_token": {"content": "<|im_end|>", "special": true},
                    "pad_token": {"content": "<|endoftext|>", "special": true},
                    "additional_special_tokens": ["<|im_start|>", {"content": "<|im_end|>"}],
                    "chat_template": TOOLS_AND_SPECIALS,
                })
                .to_string(),
            ),
        ],
    );
    let tokenizer = ok(Tokenizer::from_dir(dir.path()));
    assert_eq!(tokenizer.additional_special_tokens(), ["<|im_start|>", "<|im_end|>"]);
    let template = tokenizer.chat_template().unwrap_or_else(|| panic!("chat template not loaded"));
    assert_eq!(template.special_token("unk_token"), Some("<|unk-old|>"));
    // tools/documents are none (not undefined); pad comes from tokenizer_config.json, unk from
    // special_tokens_map.json; sep_token is not configured, so it is undefined.
    assert_eq!(
        ok(template.render(&[ChatMessage::user("hi")], true)),
        "[no tools][no documents]<|im_start|>|<|im_end|>|<|endoftext|>|<|unk-old|>|False|\
         <|im_start|>,<|im_end|>hi"
    );
}

#[test]
fn chat_template_files_override_the_config_template() {
    let config = ("tokenizer_config.json", json!({"chat_template": "from config"}).to_string());
    let json_file = ("chat_template.json", json!({"chat_template": "from json"}).to_string());
    let jinja_file = ("chat_template.jinja", "from jinja\n".to_owned());
    let render = |files: &[(&str, String)]| {
        let dir = write_tokenizer_dir(&byte_level_bpe(), files);
        let tokenizer = ok(Tokenizer::from_dir(dir.path()));
        let template = tokenizer.chat_template().unwrap_or_else(|| panic!("no chat template"));
        ok(template.render(&[], false))
    };
    assert_eq!(render(std::slice::from_ref(&config)), "from config");
    assert_eq!(render(&[config.clone(), json_file.clone()]), "from json");
    // The single trailing newline of a template file is dropped, as Jinja does by default.
    assert_eq!(render(&[config, json_file, jinja_file]), "from jinja");
}

#[test]
fn broken_chat_template_is_reported_without_failing_the_load() {
    let dir = write_tokenizer_dir(
        &byte_level_bpe(),
        &[("tokenizer_config.json", json!({"chat_template": "{% for m in messages %}"}).to_string())],
    );
    let tokenizer = ok(Tokenizer::from_dir(dir.path()));
    assert!(tokenizer.chat_template().is_none());
    assert!(matches!(tokenizer.chat_template_error(), Some(TextError::TemplateSyntax(_))));
}

#[test]
fn from_dir_rejects_missing_and_malformed_files() {
    let empty = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
    assert!(matches!(Tokenizer::from_dir(empty.path()), Err(TextError::MissingTokenizerJson { .. })));

    let bad_generation = write_tokenizer_dir(
        &byte_level_bpe(),
        &[("generation_config.json", json!({"eos_token_id": "two"}).to_string())],
    );
    let err = Tokenizer::from_dir(bad_generation.path()).err();
    assert!(
        matches!(&err, Some(TextError::Config { path, .. }) if path.ends_with("generation_config.json")),
        "{err:?}"
    );

    let bad_json = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
    common::text::write_tokenizer_files(
        bad_json.path(),
        &byte_level_bpe(),
        &[("tokenizer_config.json", "{not json".to_owned())],
    );
    assert!(matches!(Tokenizer::from_dir(bad_json.path()), Err(TextError::Config { .. })));

    let bad_tokenizer = tempfile::tempdir().unwrap_or_else(|err| panic!("{err}"));
    if let Err(err) = std::fs::write(bad_tokenizer.path().join("tokenizer.json"), "{}") {
        panic!("{err}");
    }
    assert!(matches!(Tokenizer::from_dir(bad_tokenizer.path()), Err(TextError::TokenizerLoad { .. })));
}

// ---------------------------------------------------------------- incremental decoding

#[test]
fn byte_fallback_tokenizer_spells_cjk_and_emoji_with_byte_tokens() {
    let ids = ok(BYTE_FALLBACK.encode("你好 🦀", false));
    let tokens: Vec<String> = ids.iter().filter_map(|&id| BYTE_FALLBACK.id_to_token(id)).collect();
    // 你 = E4 BD A0, 🦀 = F0 9F A6 80
    for byte_token in ["<0xE4>", "<0xBD>", "<0xA0>", "<0xF0>", "<0x9F>", "<0xA6>", "<0x80>"] {
        assert!(tokens.iter().any(|t| t == byte_token), "{byte_token} not in {tokens:?}");
    }
    assert_eq!(ok(BYTE_FALLBACK.decode(&ids, true)), "你好 🦀");
}

#[test]
fn streaming_mixed_text_matches_full_decode_for_both_tokenizers() {
    for tokenizer in [&*BYTE_LEVEL, &*BYTE_FALLBACK] {
        let ids = ok(tokenizer.encode(MIXED_TEXT, false));
        let full = ok(tokenizer.decode(&ids, true));
        let deltas = stream_deltas(tokenizer, &ids, &[1], true);
        assert_eq!(deltas.concat(), full, "{tokenizer:?}");
        assert!(deltas.iter().all(|d| !d.contains('\u{FFFD}')), "a delta split a character: {deltas:?}");
        // Multi-byte characters span several tokens, so some pushes must have held text back.
        assert!(deltas[..deltas.len() - 1].iter().any(String::is_empty));
    }
}

#[test]
fn leading_metaspace_is_dropped_only_at_the_start_of_the_stream() {
    let ids = ok(BYTE_FALLBACK.encode("hello world", false));
    let deltas = stream_deltas(&BYTE_FALLBACK, &ids, &[1], true);
    assert_eq!(deltas.concat(), "hello world");
    let first_text = deltas.iter().find(|d| !d.is_empty());
    assert!(first_text.is_some_and(|d| d.starts_with('h')), "{deltas:?}");
    // The space before "world" comes from its `▁` and must survive mid-stream.
    assert!(deltas.iter().any(|d| d.starts_with(' ')), "{deltas:?}");
}

#[test]
fn special_tokens_are_kept_or_skipped_as_asked() {
    let im_end = BYTE_LEVEL.token_to_id("<|im_end|>").unwrap_or_else(|| panic!("<|im_end|> missing"));
    let mut ids = ok(BYTE_LEVEL.encode("done 🎉", false));
    ids.push(im_end);
    assert_eq!(stream_deltas(&BYTE_LEVEL, &ids, &[1], true).concat(), "done 🎉");
    assert_eq!(stream_deltas(&BYTE_LEVEL, &ids, &[1], false).concat(), "done 🎉<|im_end|>");
}

#[test]
fn finish_flushes_an_incomplete_character_lossily() {
    // The byte-fallback tokenizer spells the crab with four byte tokens; drop the last one so
    // the stream ends mid-character.
    let ids = ok(BYTE_FALLBACK.encode("ok 🦀", false));
    let cut = &ids[..ids.len() - 1];
    let full = ok(BYTE_FALLBACK.decode(cut, true));
    assert_eq!(full, "ok \u{FFFD}\u{FFFD}\u{FFFD}");
    let deltas = stream_deltas(&BYTE_FALLBACK, cut, &[1], true);
    assert_eq!(deltas[..deltas.len() - 1].concat(), "ok ");
    assert_eq!(deltas.concat(), full);
}

#[test]
fn invalid_byte_fallback_run_keeps_streaming() {
    let id = |token: &str| BYTE_FALLBACK.token_to_id(token).unwrap_or_else(|| panic!("{token} missing"));
    let the = ok(BYTE_FALLBACK.encode(" the", false));
    // "中" (E4 B8 AD), then a lone E4 that never completes, then an ordinary word.
    let mut ids = vec![id("<0xE4>"), id("<0xB8>"), id("<0xAD>"), id("<0xE4>")];
    ids.extend(&the);
    let deltas = stream_deltas(&BYTE_FALLBACK, &ids, &[1], true);
    // `decode` turns the whole 4-byte run into U+FFFD; the stream already sent "中" and
    // continues with one U+FFFD for the lone byte.
    assert_eq!(deltas[2], "中");
    assert_eq!(deltas.concat(), "中\u{FFFD} the");
}

#[test]
fn decoder_is_owned_and_can_move_to_another_thread() {
    let ids = ok(BYTE_LEVEL.encode(MIXED_TEXT, false));
    let mut decoder = BYTE_LEVEL.incremental_decoder(true);
    let text = std::thread::spawn(move || {
        let mut text = ok(decoder.push(&ids));
        text.push_str(&decoder.finish());
        text
    })
    .join()
    .unwrap_or_else(|_| panic!("decoder thread panicked"));
    assert_eq!(text, MIXED_TEXT);
}

#[test]
fn many_interleaved_streams_stay_independent() {
    let mut rng = SplitMix::new(3);
    let texts: Vec<String> = (0..16).map(|_| mixed_line(&mut rng, 12)).collect();
    let ids: Vec<Vec<u32>> = texts.iter().map(|t| ok(BYTE_LEVEL.encode(t, false))).collect();
    let mut decoders: Vec<_> = texts.iter().map(|_| BYTE_LEVEL.incremental_decoder(true)).collect();
    let mut outputs = vec![String::new(); texts.len()];
    let longest = ids.iter().map(Vec::len).max().unwrap_or(0);
    for step in 0..longest {
        for (stream, decoder) in decoders.iter_mut().enumerate() {
            if let Some(&id) = ids[stream].get(step) {
                outputs[stream].push_str(&ok(decoder.push(&[id])));
            }
        }
    }
    for (stream, decoder) in decoders.iter_mut().enumerate() {
        outputs[stream].push_str(&decoder.finish());
        assert_eq!(outputs[stream], ok(BYTE_LEVEL.decode(&ids[stream], true)));
    }
}

/// Random text of ASCII words, spaces, CJK runs, emoji (with modifiers and ZWJ) and newlines.
fn mixed_text_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "[a-z]{1,8}",
            "[ ]{1,3}",
            "[\u{4E00}-\u{4E80}]{1,4}",
            prop::sample::select(vec!["🦀", "👋🏽", "👨‍👩‍👧", "🇯🇵", "é", "\n", "😀🎉"]).prop_map(str::to_owned),
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn byte_level_stream_equals_decode_for_random_ids(
        ids in prop::collection::vec(0u32..1_010, 0..64),
        chunks in prop::collection::vec(1usize..5, 1..4),
        skip_special in any::<bool>(),
    ) {
        // Ids up to 1,010 include the three special tokens and a few unknown ids past the vocabulary.
        let full = ok(BYTE_LEVEL.decode(&ids, skip_special));
        let streamed = stream_deltas(&BYTE_LEVEL, &ids, &chunks, skip_special).concat();
        prop_assert_eq!(streamed, full);
    }

    #[test]
    fn stream_equals_decode_for_random_text(
        text in mixed_text_strategy(),
        chunks in prop::collection::vec(1usize..5, 1..4),
    ) {
        for tokenizer in [&*BYTE_LEVEL, &*BYTE_FALLBACK] {
            let ids = ok(tokenizer.encode(&text, true));
            let full = ok(tokenizer.decode(&ids, true));
            let deltas = stream_deltas(tokenizer, &ids, &chunks, true);
            prop_assert!(deltas.iter().all(|d| !d.contains('\u{FFFD}')), "{:?}", deltas);
            prop_assert_eq!(deltas.concat(), full);
        }
    }

    #[test]
    fn byte_fallback_stream_never_fails_on_random_ids(
        ids in prop::collection::vec(0u32..(BYTE_FALLBACK.vocab_size() as u32 + 3), 0..48),
        chunks in prop::collection::vec(1usize..5, 1..4),
    ) {
        let full = ok(BYTE_FALLBACK.decode(&ids, true));
        let streamed = stream_deltas(&BYTE_FALLBACK, &ids, &chunks, true).concat();
        // Only an invalid byte run (which decodes to U+FFFD) may make the stream differ.
        if !full.contains('\u{FFFD}') {
            prop_assert_eq!(streamed, full);
        }
    }
}

// ---------------------------------------------------------------- chat templates

#[test]
fn llama3_style_template_renders_exactly() {
    let template = ok(ChatTemplate::new(LLAMA3_STYLE, Some("<|begin_of_text|>"), Some("<|eot_id|>")));
    let conversation = [
        ChatMessage::system("You are terse."),
        ChatMessage::user("  What is 2+2?\n"),
        ChatMessage::assistant("4"),
        ChatMessage::user("And 3+3?"),
    ];
    let without_prompt = "<|begin_of_text|>\
        <|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>\
        <|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>\
        <|start_header_id|>assistant<|end_header_id|>\n\n4<|eot_id|>\
        <|start_header_id|>user<|end_header_id|>\n\nAnd 3+3?<|eot_id|>";
    assert_eq!(ok(template.render(&conversation, false)), without_prompt);
    assert_eq!(
        ok(template.render(&conversation, true)),
        format!("{without_prompt}<|start_header_id|>assistant<|end_header_id|>\n\n")
    );
}

#[test]
fn chatml_style_template_renders_exactly() {
    let template = ok(ChatTemplate::new(CHATML_STYLE, None, Some("<|im_end|>")));
    let conversation = [ChatMessage::user("Hi <b>there</b> & 'you'")];
    let without_prompt = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n\
                          <|im_start|>user\nHi <b>there</b> & 'you'<|im_end|>\n";
    assert_eq!(ok(template.render(&conversation, false)), without_prompt);
    assert_eq!(ok(template.render(&conversation, true)), format!("{without_prompt}<|im_start|>assistant\n"));

    // With its own system message, no default one is inserted.
    let with_system = [ChatMessage::system("Be kind."), ChatMessage::user("Hi")];
    assert_eq!(
        ok(template.render(&with_system, true)),
        "<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
}

#[test]
fn raise_exception_surfaces_the_template_message() {
    let template = ok(ChatTemplate::new(LLAMA3_STYLE, Some("<s>"), None));
    let err = template.render(&[ChatMessage::new("tool", "{}")], true).err();
    match err {
        Some(TextError::TemplateRaised(message)) => assert_eq!(message, "Unsupported role: tool"),
        other => panic!("expected TemplateRaised, got {other:?}"),
    }
    let shown = TextError::TemplateRaised("Unsupported role: tool".into()).to_string();
    assert!(shown.contains("Unsupported role: tool"), "{shown}");
}

#[test]
fn messages_deserialized_from_openai_json_render() {
    let messages: Vec<ChatMessage> = serde_json::from_value(json!([
        {"role": "user", "content": [{"type": "text", "text": "line one"}, {"type": "text", "text": "line two"}]},
    ]))
    .unwrap_or_else(|err| panic!("{err}"));
    let template = ok(ChatTemplate::new(CHATML_STYLE, None, None));
    assert!(ok(template.render(&messages, false)).contains("<|im_start|>user\nline one\nline two<|im_end|>"));
}

// ---------------------------------------------------------------- stop strings

/// Pushes `chunks` through `matcher`; returns the text sent on and the matched stop string.
fn run_matcher(matcher: &mut StopMatcher, chunks: &[&str]) -> (String, Option<String>) {
    let mut out = String::new();
    for chunk in chunks {
        match matcher.push(chunk) {
            StopStep::Continue(text) => out.push_str(&text),
            StopStep::Stop { text, stop_string, .. } => {
                out.push_str(&text);
                return (out, Some(stop_string));
            }
            other => panic!("unexpected step {other:?}"),
        }
    }
    out.push_str(&matcher.finish());
    (out, None)
}

fn matcher(stops: &[&str], include: bool) -> StopMatcher {
    ok(StopMatcher::builder().stop_strings(stops.iter().copied()).include_stop_string(include).build())
}

#[test]
fn stop_string_split_across_two_and_three_chunks() {
    let mut m = matcher(&["###"], false);
    assert_eq!(m.push("answer #"), StopStep::Continue("answer ".into()));
    assert_eq!(m.push("## tail"), StopStep::Stop { text: String::new(), index: 0, stop_string: "###".into() });

    let mut m = matcher(&["<|stop|>"], false);
    assert_eq!(run_matcher(&mut m, &["x<|", "sto", "p|>y"]), ("x".to_owned(), Some("<|stop|>".to_owned())));
}

#[test]
fn stop_string_is_excluded_or_included_as_configured() {
    assert_eq!(
        run_matcher(&mut matcher(&["END"], false), &["abcE", "NDxyz"]),
        ("abc".to_owned(), Some("END".to_owned()))
    );
    assert_eq!(
        run_matcher(&mut matcher(&["END"], true), &["abcE", "NDxyz"]),
        ("abcEND".to_owned(), Some("END".to_owned()))
    );
}

#[test]
fn overlapping_stop_strings_stop_at_the_first_to_complete() {
    // "bc" completes before "abcd" could.
    let mut m = matcher(&["abcd", "bc"], true);
    assert_eq!(m.push("xabcd"), StopStep::Stop { text: "xabc".into(), index: 1, stop_string: "bc".into() });
    // Both end at the same place: the longer one wins.
    assert_eq!(
        run_matcher(&mut matcher(&["cd", "abcd"], false), &["xab", "cd"]),
        ("x".to_owned(), Some("abcd".to_owned()))
    );
}

#[test]
fn diverging_partial_match_is_released_without_stopping() {
    let mut m = matcher(&["STOP"], false);
    assert_eq!(m.push("go ST"), StopStep::Continue("go ".into()));
    assert_eq!(m.push("O"), StopStep::Continue(String::new()));
    assert_eq!(m.push("P!"), StopStep::Stop { text: String::new(), index: 0, stop_string: "STOP".into() });

    let mut m = matcher(&["STOP"], false);
    assert_eq!(m.push("go STO"), StopStep::Continue("go ".into()));
    assert_eq!(m.push("RM"), StopStep::Continue("STORM".into()));
    assert!(!m.is_stopped());
    assert_eq!(m.push("ST"), StopStep::Continue(String::new()));
    assert_eq!(m.finish(), "ST");
}

#[test]
fn multibyte_characters_are_never_split() {
    let mut m = matcher(&["🦀🦀"], false);
    let step = m.push("蟹🦀");
    // The crab could start the stop string, so it is held whole; the CJK character goes on.
    assert_eq!(step, StopStep::Continue("蟹".into()));
    assert_eq!(m.push("🐙"), StopStep::Continue("🦀🐙".into()));
    let (out, stop) = run_matcher(&mut matcher(&["終わり"], false), &["これで終", "わり。"]);
    assert_eq!((out.as_str(), stop.as_deref()), ("これで", Some("終わり")));
}

#[test]
fn token_aligned_stop_strings_become_executor_stop_words() {
    let split = ok(token_stop_sequences(&BYTE_LEVEL, &["<|im_end|>", "\n\n", "User:"]));
    assert_eq!(split.token_sequences[0], vec![2]); // the special token's own id
    assert_eq!(split.token_sequences.len(), 3);
    for (ids, stop) in split.token_sequences.iter().zip(["<|im_end|>", "\n\n", "User:"]) {
        assert_eq!(ok(BYTE_LEVEL.decode(ids, false)), stop);
    }
    assert!(split.text_only.is_empty());

    // The Metaspace tokenizer cannot encode a leading space (it becomes the word marker that
    // decoding strips at the start), so " world" can only be matched in text.
    let split = ok(token_stop_sequences(&BYTE_FALLBACK, &[" world", "world"]));
    assert_eq!(split.text_only, vec![" world".to_owned()]);
    assert_eq!(split.token_sequences, vec![ok(BYTE_FALLBACK.encode("world", false))]);
}

#[test]
fn decoder_and_stop_matcher_together_cut_the_stream() {
    let ids = ok(BYTE_LEVEL.encode("Sure! 你好 🦀\n\nUser: next question", false));
    let mut decoder = BYTE_LEVEL.incremental_decoder(true);
    let mut stop = matcher(&["\n\nUser:"], false);
    let mut out = String::new();
    let mut stopped = None;
    for &id in &ids {
        let step = stop.push(&ok(decoder.push(&[id])));
        out.push_str(step.text());
        if let StopStep::Stop { stop_string, .. } = step {
            stopped = Some(stop_string);
            break;
        }
    }
    assert_eq!(out, "Sure! 你好 🦀");
    assert_eq!(stopped.as_deref(), Some("\n\nUser:"));
}

/// What a stream that sees `text` should send: up to the first-ending stop string
/// (longest on a tie), found by brute force over every character boundary.
fn expected_stop(text: &str, stops: &[String], include: bool) -> (String, Option<String>) {
    let mut ends: Vec<usize> = text.char_indices().map(|(i, c)| i + c.len_utf8()).collect();
    ends.sort_unstable();
    for end in ends {
        let seen = &text[..end];
        if let Some(stop) = stops.iter().filter(|s| seen.ends_with(s.as_str())).max_by_key(|s| s.len()) {
            let cut = if include { end } else { end - stop.len() };
            return (text[..cut].to_owned(), Some(stop.clone()));
        }
    }
    (text.to_owned(), None)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn stop_matching_does_not_depend_on_chunking(
        text in "[ab蟹🦀 ]{0,24}",
        stops in prop::collection::vec("[ab蟹🦀 ]{1,4}", 1..4),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        include in any::<bool>(),
    ) {
        let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let mut cut_points: Vec<usize> = cuts
            .iter()
            .filter(|_| !boundaries.is_empty())
            .map(|i| boundaries[i.index(boundaries.len())])
            .collect();
        cut_points.sort_unstable();
        cut_points.dedup();
        let mut chunks = Vec::new();
        let mut start = 0;
        for cut in cut_points.into_iter().chain([text.len()]) {
            chunks.push(&text[start..cut]);
            start = cut;
        }
        let mut m = ok(StopMatcher::builder().stop_strings(stops.clone()).include_stop_string(include).build());
        prop_assert_eq!(run_matcher(&mut m, &chunks), expected_stop(&text, &stops, include));
    }
}
