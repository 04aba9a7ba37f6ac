//! The front door: `Engine::builtin()` / `Engine::load(dir)` with the tokenizer from the engine
//! directory, text and chat prompts, guided decoding set up from the same tokenizer (and refused
//! when a hand-made config does not match it).

use futures::StreamExt;
use trtllm::guided::{GuidedDecodingConfig, GuidedDecodingParams};
use trtllm::text::TextEvent;
use trtllm::text::{ChatMessage, Tokenizer};
use trtllm::{Engine, ErrorKind, GenerateOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builtin_engine_streams_text_for_text_and_chat_prompts() {
    let engine = Engine::builtin().await.unwrap();
    let mut stream = engine.generate("Hello there", GenerateOptions::new().max_tokens(12).ignore_eos(true)).unwrap();
    let (mut streamed, mut last) = (String::new(), None);
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            TextEvent::Chunk { text, .. } => streamed.push_str(&text),
            TextEvent::Final { output, texts, deltas, .. } => {
                streamed.push_str(&deltas[0]);
                assert_eq!(streamed, texts[0], "chunks plus the final delta make the text");
                last = Some(output);
            }
        }
    }
    let output = last.expect("a final");
    assert_eq!(output.completion_tokens, 12);
    assert_eq!(engine.tokenizer().decode(output.token_ids(), true).unwrap(), streamed);

    let chat = vec![ChatMessage::system("Be brief."), ChatMessage::user("Hi!")];
    let done = engine.complete(chat, GenerateOptions::new().max_tokens(6).ignore_eos(true).n(2)).await.unwrap();
    assert_eq!(done.texts.len(), 2);
    assert_eq!(done.matched_stops, vec![None, None]);
    assert_eq!(done.text, done.texts[0]);
    engine.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guided_decoding_comes_from_the_same_tokenizer_and_bad_guides_are_the_requests_error() {
    let engine = Engine::builtin().await.unwrap();
    let schema = r#"{"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
        "additionalProperties": false}"#;
    let options = GenerateOptions::new().max_tokens(64).seed(3).guide(GuidedDecodingParams::json_schema(schema));
    let done = engine.complete("Answer in JSON:", options).await.unwrap();
    let value: serde_json::Value = serde_json::from_str(&done.text).expect("the guided text is JSON");
    assert!(value["ok"].is_boolean(), "{value}");

    let bad = GenerateOptions::new().guide(GuidedDecodingParams::json_schema(r##"{"$ref": "#/nope"}"##));
    let err = engine.generate("x", bad).expect_err("refused at enqueue");
    assert_eq!(err.kind(), ErrorKind::InvalidRequest, "{err}");
    assert!(engine.executor().executor().health().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_finds_the_tokenizer_in_the_engine_directory_and_checks_a_given_guided_config() {
    let dir = tempfile::tempdir().unwrap();
    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path()).unwrap();
    let engine = Engine::load(dir.path()).await.unwrap();
    assert_eq!(engine.tokenizer().vocab_size(), trtllm::builtin::BUILTIN_VOCAB_SIZE);
    drop(engine);

    let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap();
    let mut wrong = GuidedDecodingConfig::from_vocabulary(&tokenizer);
    wrong.encoded_vocab.swap(10, 11);
    let err = Engine::builder(dir.path())
        .config(|c| c.guided_decoding(wrong))
        .load()
        .await
        .expect_err("a guided vocabulary that is not the tokenizer's");
    assert!(err.to_string().contains("token 10"), "{err}");
    assert_eq!(err.kind(), ErrorKind::Configuration);

    let empty = tempfile::tempdir().unwrap();
    trtllm::sim::SimulatedEngine::builder().build().write_to(empty.path()).unwrap();
    let err = Engine::load(empty.path()).await.expect_err("no tokenizer");
    assert!(err.to_string().contains("no tokenizer"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_health_and_totals_serialize() {
    let engine = Engine::builtin().await.unwrap();
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let mut stream = engine.generate("Hi", GenerateOptions::new().max_tokens(4).ignore_eos(true).n(2)).unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(serde_json::to_value(event.unwrap()).unwrap());
    }
    let last = events.last().unwrap();
    assert_eq!(last["type"], "final", "{last}");
    assert_eq!(last["matched_stops"], serde_json::json!([null, null]), "one entry per sequence: {last}");
    let finished = last["output"]["finished_at"].as_f64().expect("a time in seconds");
    assert!(finished >= before && finished < before + 60.0, "Unix seconds: {finished} vs {before}");
    assert_eq!(last["output"]["completion_tokens"], 8, "{last}");
    assert_eq!(events[0]["type"], "chunk", "{}", events[0]);

    let totals = serde_json::to_value(engine.executor().executor().totals()).unwrap();
    assert_eq!(totals, serde_json::json!({"completed": 1, "cancelled": 0, "failed": 0}));
    let issue = trtllm::HealthIssue::EnqueueFailing("boom".into());
    assert_eq!(serde_json::to_value(&issue).unwrap(), serde_json::json!({"kind": "enqueue_failing", "detail": "boom"}));
}
