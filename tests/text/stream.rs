//! Text on top of executor streams: deltas per chunk and at the end, full-decode equality, stop
//! strings (in text, as special tokens, non-streaming), and every eos id ending the text.

use crate::common;

use std::time::Instant;

use futures::StreamExt;
use serde_json::json;
use trtllm::text::Tokenizer;
use trtllm::text::{TextEvent, TextOptions, TextRequest, TextStream};
use trtllm::{AsyncExecutor, ExecutorConfig, FinalOutput, FinishReason, GenerationRequest, SamplingParams};

use common::text::{engine_with_tokenizer, word_level_tokenizer};

#[derive(Debug)]
struct Run {
    deltas: Vec<String>,
    chunk_tokens: Vec<Vec<u32>>,
    last_chunk_at: Option<Instant>,
    output: FinalOutput,
    text: String,
    final_delta: String,
    matched: Option<String>,
}

impl Run {
    /// What a client that prints every chunk's text and then the final delta has shown.
    fn shown(&self) -> String {
        format!("{}{}", self.deltas.concat(), self.final_delta)
    }

    fn delivered_tokens(&self) -> usize {
        self.chunk_tokens.iter().map(Vec::len).sum()
    }
}

/// The built-in simulated engine (1 ms iterations) and its shipped tokenizer.
async fn setup() -> (tempfile::TempDir, AsyncExecutor, Tokenizer) {
    let dir = tempfile::tempdir().unwrap();
    let engine = trtllm::sim::SimulatedEngine { iteration_ms: Some(1.0), ..trtllm::builtin::builtin_engine() };
    trtllm::builtin::write_engine(&engine, dir.path()).unwrap();
    load(dir).await
}

/// An engine over the 13-token word-level tokenizer, configured with `files`.
async fn words_setup(files: &[(&str, String)]) -> (tempfile::TempDir, AsyncExecutor, Tokenizer) {
    load(engine_with_tokenizer(&word_level_tokenizer(), files)).await
}

/// Llama-3 style: `<|im_end|>` (2) as the configured eos token, and more eos ids (3 and 0) in
/// generation_config.json.
async fn several_eos_setup() -> (tempfile::TempDir, AsyncExecutor, Tokenizer) {
    words_setup(&[
        ("tokenizer_config.json", json!({"eos_token": "<|im_end|>"}).to_string()),
        ("generation_config.json", json!({"eos_token_id": [2, 3, 0]}).to_string()),
    ])
    .await
}

async fn load(dir: tempfile::TempDir) -> (tempfile::TempDir, AsyncExecutor, Tokenizer) {
    let executor = AsyncExecutor::load(dir.path(), ExecutorConfig::default()).await.unwrap();
    let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap();
    (dir, executor, tokenizer)
}

async fn collect(mut stream: TextStream) -> Run {
    let (mut deltas, mut chunk_tokens, mut last_chunk_at, mut last) = (Vec::new(), Vec::new(), None, None);
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            TextEvent::Chunk { chunk, text } => {
                assert_eq!(
                    chunk.completion_tokens as usize,
                    chunk_tokens.iter().map(Vec::len).sum::<usize>() + chunk.token_ids.len()
                );
                deltas.push(text);
                last_chunk_at = Some(chunk.received_at);
                chunk_tokens.push(chunk.token_ids);
            }
            TextEvent::Final { output, texts, deltas, matched_stops } => {
                last = Some((*output, texts[0].clone(), deltas[0].clone(), matched_stops[0].clone()))
            }
        }
    }
    let (output, text, final_delta, matched) = last.expect("a final");
    Run { deltas, chunk_tokens, last_chunk_at, output, text, final_delta, matched }
}

async fn run_request(
    executor: &AsyncExecutor,
    tokenizer: &Tokenizer,
    request: GenerationRequest,
    options: TextOptions,
) -> Run {
    collect(TextStream::generate(executor, request, tokenizer, options).unwrap()).await
}

/// 40 tokens after "Text streams", never stopping at an eos id.
async fn run(executor: &AsyncExecutor, tokenizer: &Tokenizer, stops: &[&str], include: bool) -> Run {
    let prompt = tokenizer.encode("Text streams", false).unwrap();
    let options = TextOptions::new().stop_strings(stops.iter().copied()).include_stop_string(include).ignore_eos(true);
    run_request(executor, tokenizer, GenerationRequest::new(prompt, 40), options).await
}

/// A request of `max_tokens` after "red cat sat" with sampling seed `seed`.
fn words_request(tokenizer: &Tokenizer, seed: u64, max_tokens: u32) -> GenerationRequest {
    GenerationRequest::new(tokenizer.encode("red cat sat", false).unwrap(), max_tokens)
        .with_sampling(SamplingParams::default().seed(seed))
}

/// The first sampling seed whose generated ids (eos ignored) satisfy `wanted`, with those ids.
async fn find_seed(
    executor: &AsyncExecutor,
    tokenizer: &Tokenizer,
    wanted: impl Fn(&[u32]) -> bool,
) -> (u64, Vec<u32>) {
    for seed in 0..200 {
        let ids =
            run_request(executor, tokenizer, words_request(tokenizer, seed, 40), TextOptions::new().ignore_eos(true))
                .await
                .output
                .token_ids()
                .to_vec();
        if wanted(&ids) {
            return (seed, ids);
        }
    }
    panic!("no seed in 0..200 generates the ids wanted");
}

#[tokio::test]
async fn deltas_add_up_to_a_full_decode() {
    let (_dir, executor, tokenizer) = setup().await;
    let run = run(&executor, &tokenizer, &[], false).await;
    assert_eq!(run.output.finish_reason, FinishReason::Length);
    assert_eq!(run.output.token_ids().len(), 40);
    assert_eq!(run.output.completion_tokens, 40);
    assert_eq!(run.text, tokenizer.decode(run.output.token_ids(), true).unwrap());
    assert_eq!(run.shown(), run.text, "chunks then the final delta");
}

#[tokio::test]
async fn text_held_back_at_the_end_arrives_as_the_final_delta() {
    let (_dir, executor, tokenizer) = setup().await;
    let full = run(&executor, &tokenizer, &[], false).await;
    // A stop string that starts with the text's last two characters but never completes: the
    // stream holds those characters back until it ends.
    let tail: String = {
        let chars: Vec<char> = full.text.chars().collect();
        chars[chars.len() - 2..].iter().collect()
    };
    let stop = format!("{tail}\u{7}\u{7}");
    assert!(!full.text.contains(&stop));
    let held = run(&executor, &tokenizer, &[stop.as_str()], false).await;
    assert_eq!(held.matched, None);
    assert_eq!(held.text, full.text);
    assert!(held.final_delta.ends_with(&tail), "{:?}", held.final_delta);
    assert!(!held.deltas.concat().ends_with(&tail));
    assert_eq!(held.shown(), full.text);
}

/// A stop string made of the two characters either side of a chunk boundary of `full`.
fn stop_across_a_chunk_boundary(full: &Run) -> String {
    let mut offset = 0;
    for delta in &full.deltas[..full.deltas.len() - 1] {
        offset += delta.len();
        let left: Vec<char> = full.text[..offset].chars().rev().take(2).collect();
        let right: String = full.text[offset..].chars().take(2).collect();
        if offset > 8 && left.len() == 2 && right.chars().count() == 2 {
            return format!("{}{}{right}", left[1], left[0]);
        }
    }
    panic!("no chunk boundary with text on both sides");
}

#[tokio::test]
async fn a_stop_string_across_chunks_ends_the_stream_and_the_request() {
    let (_dir, executor, tokenizer) = setup().await;
    let full = run(&executor, &tokenizer, &[], false).await;
    let stop = stop_across_a_chunk_boundary(&full);
    let cut = full.text.find(&stop).unwrap();
    let stopped = run(&executor, &tokenizer, &[stop.as_str()], false).await;
    assert_eq!(stopped.matched.as_deref(), Some(stop.as_str()));
    assert_eq!(stopped.output.finish_reason, FinishReason::StopWords);
    assert_eq!(stopped.text, full.text[..cut]);
    assert_eq!(stopped.shown(), stopped.text);
    assert_eq!(stopped.deltas.concat(), stopped.text, "nothing past the stop string was shown");
    // Tokens: up to and including the one that completed the stop, counted consistently.
    let delivered = stopped.delivered_tokens();
    assert_eq!(stopped.output.token_ids(), &full.output.token_ids()[..delivered]);
    assert_eq!(stopped.output.completion_tokens as usize, delivered);
    let through_stop = tokenizer.decode(&full.output.token_ids()[..delivered], true).unwrap();
    let before_stop = tokenizer.decode(&full.output.token_ids()[..delivered - 1], true).unwrap();
    assert!(through_stop.contains(&stop) && !before_stop.contains(&stop));
    assert!(delivered < 40);
    // TPOT covers the tokens counted: the request ended, for its user, with the stop's chunk.
    assert_eq!(Some(stopped.output.finished_at), stopped.last_chunk_at);
    assert_eq!(executor.executor().in_flight(), 0, "the request was cancelled in the executor");

    let included = run(&executor, &tokenizer, &[stop.as_str()], true).await;
    assert_eq!(included.text, full.text[..cut + stop.len()]);
    assert_eq!(included.shown(), included.text);
}

#[tokio::test]
async fn a_non_streaming_request_stops_early_and_is_cut_at_the_stop() {
    let (_dir, executor, tokenizer) = setup().await;
    let full = run(&executor, &tokenizer, &[], false).await;
    let stop = stop_across_a_chunk_boundary(&full);
    let cut = full.text.find(&stop).unwrap();
    let streamed = run(&executor, &tokenizer, &[stop.as_str()], false).await;

    let prompt = tokenizer.encode("Text streams", false).unwrap();
    let request = GenerationRequest::new(prompt, 40).with_streaming(false);
    let options = TextOptions::new().stop_strings([stop.clone()]).ignore_eos(true);
    let stopped = run_request(&executor, &tokenizer, request, options).await;
    assert!(stopped.deltas.is_empty(), "a non-streaming request gets no chunks");
    assert_eq!(stopped.final_delta, full.text[..cut]);
    assert_eq!(stopped.text, full.text[..cut]);
    assert_eq!(stopped.matched.as_deref(), Some(stop.as_str()));
    assert_eq!(stopped.output.finish_reason, FinishReason::StopWords);
    assert_eq!(stopped.output.token_ids(), streamed.output.token_ids());
    assert_eq!(stopped.output.completion_tokens as usize, streamed.output.token_ids().len());
    assert!(
        stopped.output.decoding_iterations < 40,
        "the executor stopped early ({} iterations)",
        stopped.output.decoding_iterations
    );
}

#[tokio::test]
async fn token_aligned_stop_strings_reach_the_executor_as_stop_words() {
    let (_dir, executor, tokenizer) = setup().await;
    let full = run(&executor, &tokenizer, &[], false).await;
    let ids = full.output.token_ids();
    // A token whose text encodes back to exactly that token and first appears there.
    let (position, stop) = (5..ids.len())
        .find_map(|i| {
            let text = tokenizer.decode(&ids[i..=i], true).ok()?;
            let before = tokenizer.decode(&ids[..i], true).ok()?;
            let aligned = tokenizer.encode(&text, false).ok()? == [ids[i]];
            (aligned && text.trim().len() > 1 && !before.contains(&text) && !text.contains('\u{FFFD}'))
                .then_some((i, text))
        })
        .expect("a token-aligned token in the output");

    // The executor itself stops on it, without any text matching.
    let prompt = tokenizer.encode("Text streams", false).unwrap();
    let options = TextOptions::new().stop_strings([stop.clone()]).ignore_eos(true);
    let (request, _plan) =
        TextRequest::new(GenerationRequest::new(prompt, 40), &tokenizer, options).unwrap().into_parts();
    assert!(request.stop_words().contains(&vec![ids[position]]));
    let done = executor.enqueue(request).unwrap().collect_final().await.unwrap();
    assert_eq!(done.finish_reason, FinishReason::StopWords);
    assert_eq!(done.token_ids(), &ids[..=position]);

    let stopped = run(&executor, &tokenizer, &[stop.as_str()], false).await;
    assert_eq!(stopped.matched.as_deref(), Some(stop.as_str()));
    assert_eq!(stopped.output.token_ids(), &ids[..=position]);
    assert_eq!(stopped.shown(), full.text[..full.text.find(&stop).unwrap()]);
}

#[tokio::test]
async fn every_eos_id_ends_the_text_like_the_end_id() {
    let (_dir, executor, tokenizer) = several_eos_setup().await;
    assert_eq!(tokenizer.eos_token_ids(), [2, 3, 0]);
    for other_eos in [3, 0] {
        // Generated ids whose first eos id is `other_eos`, not the end id 2.
        let (seed, ids) = find_seed(&executor, &tokenizer, |ids| {
            ids.iter().position(|id| [0, 2, 3].contains(id)).is_some_and(|p| p >= 2 && ids[p] == other_eos)
        })
        .await;
        let end = ids.iter().position(|id| [0, 2, 3].contains(id)).unwrap();
        for skip_special in [true, false] {
            let options = TextOptions::new().skip_special_tokens(skip_special);
            let ended = run_request(&executor, &tokenizer, words_request(&tokenizer, seed, 40), options).await;
            assert_eq!(ended.output.finish_reason, FinishReason::EndId);
            assert_eq!(ended.output.token_ids(), &ids[..end], "the eos id is left out");
            assert_eq!(ended.output.completion_tokens as usize, end);
            assert_eq!(ended.matched, None);
            assert_eq!(ended.text, tokenizer.decode(&ids[..end], skip_special).unwrap());
            let eos_text = tokenizer.id_to_token(other_eos).unwrap();
            assert!(!ended.text.contains(&eos_text), "{:?}", ended.text);
            assert_eq!(ended.shown(), ended.text);
        }
        assert_eq!(executor.executor().in_flight(), 0);
    }
}

#[tokio::test]
async fn an_eos_id_besides_the_end_id_waits_for_min_tokens() {
    let (_dir, executor, tokenizer) = several_eos_setup().await;
    let is_eos = |id: &u32| [0, 2, 3].contains(id);
    // Generated ids whose first eos id is not the end id (2), and a later one that is not
    // either: with min_tokens just past the first, the text must run on to the second.
    let (seed, ids) = find_seed(&executor, &tokenizer, |ids| {
        let Some(first) = ids.iter().position(is_eos) else {
            return false;
        };
        let next = ids[first + 1..].iter().position(is_eos).map(|p| first + 1 + p);
        first >= 1 && ids[first] != 2 && next.is_some_and(|n| ids[n] != 2)
    })
    .await;
    let first = ids.iter().position(is_eos).unwrap();
    let next = first + 1 + ids[first + 1..].iter().position(is_eos).unwrap();
    for streaming in [true, false] {
        let request = words_request(&tokenizer, seed, 40)
            .with_streaming(streaming)
            .with_sampling(SamplingParams::default().seed(seed).min_tokens(first as u32 + 1));
        let ended = run_request(&executor, &tokenizer, request, TextOptions::new()).await;
        assert_eq!(ended.output.finish_reason, FinishReason::EndId);
        assert_eq!(
            ended.output.token_ids(),
            &ids[..next],
            "the eos id within min_tokens is an ordinary (special) token; the next one ends it"
        );
        assert_eq!(ended.text, tokenizer.decode(&ids[..next], true).unwrap());
        assert_eq!(ended.deltas.is_empty(), !streaming);
    }
    assert_eq!(executor.executor().in_flight(), 0);

    // Without min_tokens the first one ends it, as before.
    let ended = run_request(&executor, &tokenizer, words_request(&tokenizer, seed, 40), TextOptions::new()).await;
    assert_eq!(ended.output.token_ids(), &ids[..first]);
}

#[tokio::test]
async fn a_special_token_stop_string_matches_on_its_id() {
    let (_dir, executor, tokenizer) = words_setup(&[]).await;
    let im_start = tokenizer.token_to_id("<|im_start|>").unwrap();
    let (seed, ids) =
        find_seed(&executor, &tokenizer, |ids| ids.iter().position(|&id| id == im_start).is_some_and(|p| p >= 3)).await;
    let at = ids.iter().position(|&id| id == im_start).unwrap();

    // The executor stops on it by itself.
    let options = TextOptions::new().stop_strings(["<|im_start|>"]).ignore_eos(true);
    let (request, _) =
        TextRequest::new(words_request(&tokenizer, seed, 40), &tokenizer, options.clone()).unwrap().into_parts();
    let done = executor.enqueue(request).unwrap().collect_final().await.unwrap();
    assert_eq!(done.finish_reason, FinishReason::StopWords);
    assert_eq!(done.token_ids(), &ids[..=at]);

    for (include, skip_special) in [(false, true), (true, true), (false, false)] {
        let options = options.clone().include_stop_string(include).skip_special_tokens(skip_special);
        let stopped = run_request(&executor, &tokenizer, words_request(&tokenizer, seed, 40), options).await;
        assert_eq!(stopped.matched.as_deref(), Some("<|im_start|>"));
        assert_eq!(stopped.output.finish_reason, FinishReason::StopWords);
        assert_eq!(stopped.output.token_ids(), &ids[..=at]);
        let before = tokenizer.decode(&ids[..at], skip_special).unwrap();
        let expected = if include { format!("{before}<|im_start|>") } else { before };
        assert_eq!(stopped.text, expected);
        assert_eq!(stopped.shown(), stopped.text);
    }
}

#[tokio::test]
async fn special_tokens_show_only_when_not_skipped() {
    let (_dir, executor, tokenizer) = words_setup(&[]).await;
    let (seed, ids) = find_seed(&executor, &tokenizer, |ids| ids.contains(&1)).await;
    for skip_special in [true, false] {
        let options = TextOptions::new().ignore_eos(true).skip_special_tokens(skip_special);
        let run = run_request(&executor, &tokenizer, words_request(&tokenizer, seed, 40), options).await;
        assert_eq!(run.output.token_ids(), ids);
        assert_eq!(run.text, tokenizer.decode(&ids, skip_special).unwrap());
        assert_eq!(run.text.contains("<|im_start|>"), !skip_special);
        assert_eq!(run.shown(), run.text);
    }
}

#[tokio::test]
async fn an_empty_stop_string_is_an_invalid_request() {
    let (_dir, _executor, tokenizer) = setup().await;
    let options = TextOptions::new().stop_strings(["ok", ""]);
    let err = TextRequest::new(GenerationRequest::new(vec![5], 4), &tokenizer, options).unwrap_err();
    assert!(matches!(err, trtllm::Error::InvalidRequest(_)), "{err:?}");
    assert!(err.to_string().contains("stop"), "{err}");
}

#[tokio::test]
async fn only_short_stop_strings_become_executor_stop_words() {
    let (_dir, _executor, tokenizer) = setup().await;
    let short = "hello world".to_string();
    let long = "hello world ".repeat(TextRequest::TOKEN_STOP_MAX_BYTES / 8);
    for stop in [&short, &long] {
        let ids = tokenizer.encode(stop, false).unwrap();
        assert_eq!(tokenizer.decode(&ids, false).unwrap(), *stop, "both are token-aligned");
    }
    let options = TextOptions::new().stop_strings([short.clone(), long.clone()]).ignore_eos(true);
    let (request, plan) =
        TextRequest::prepare(GenerationRequest::new(vec![5], 4), &tokenizer, options).await.unwrap().into_parts();
    // The long one is not encoded (the costly part of the setup); the text still matches it.
    assert_eq!(request.stop_words(), [tokenizer.encode(&short, false).unwrap()]);
    assert!(plan.has_stop_strings() && plan.needs_text_stream());
}
