//! The stream contract: chunks in order, exactly one terminal item, finish reasons, the prompt left
//! out of the output, streaming and not, several sequences and beams.
//!
//! Upstream: `Request::setStreaming`, `OutputConfig::excludeInputFromOutput` and `Result::isFinal`
//! as documented in cpp/include/tensorrt_llm/executor/executor.h (v1.1.0, v1.2.0); the shim always
//! sets excludeInputFromOutput, so output ids never repeat the prompt.

use std::collections::BTreeMap;

use crate::common::sim::drain;
use crate::harness::{MAX_TEST_BEAMS, executor, skip, target};
use trtllm::{FinishReason, SamplingParams};

#[test]
fn a_streamed_request_yields_ordered_chunks_and_one_final_with_every_token() {
    let t = target();
    let prompt = t.unique_prompt(1, 12);
    let out = drain(executor().enqueue(t.request(prompt.clone(), 16)).unwrap());
    assert_eq!(out.after_terminal, 0, "nothing follows the terminal item");
    let done = out.done();
    assert_eq!(done.finish_reason, FinishReason::Length);
    assert_eq!(out.tokens().len(), 16);
    assert_eq!(done.token_ids(), out.tokens().as_slice(), "the final repeats exactly the streamed tokens");
    assert_eq!((done.prompt_tokens, done.completion_tokens), (12, 16));
    assert!(!done.token_ids().starts_with(&prompt), "excludeInputFromOutput: the prompt is not echoed");
    let mut previous = 0;
    for chunk in &out.chunks {
        assert!(!chunk.token_ids.is_empty(), "no empty chunks");
        assert_eq!(chunk.completion_tokens as usize, previous + chunk.token_ids.len(), "running counts add up");
        previous = chunk.completion_tokens as usize;
    }
    assert!(out.chunks.windows(2).all(|w| w[0].received_at <= w[1].received_at));
    assert!(done.ttft().is_some(), "a streamed request has a first-token time");
}

#[test]
fn streaming_and_not_give_the_same_greedy_tokens() {
    let t = target();
    let prompt = t.unique_prompt(2, 9);
    let streamed = drain(executor().enqueue(t.request(prompt.clone(), 12)).unwrap());
    let once = drain(executor().enqueue(t.request(prompt, 12).with_streaming(false)).unwrap());
    assert!(once.chunks.is_empty(), "a non-streaming request yields no chunks");
    assert_eq!(once.after_terminal, 0);
    assert_eq!(once.done().token_ids(), streamed.tokens().as_slice(), "greedy decoding is deterministic");
    assert_eq!(once.done().finish_reason, FinishReason::Length);
}

#[test]
fn the_end_id_ends_a_sequence_early_and_is_left_out() {
    let t = target();
    let prompt = t.unique_prompt(3, 10);
    let free = drain(executor().enqueue(t.request(prompt.clone(), 24)).unwrap()).tokens();
    let end_id = free[4];
    let first = free.iter().position(|&id| id == end_id).unwrap();
    let out = drain(executor().enqueue(t.request(prompt, 24).with_end_id(end_id)).unwrap());
    assert_eq!(out.done().finish_reason, FinishReason::EndId);
    assert_eq!(out.tokens(), free[..first], "tokens up to, not including, the end id");
}

#[test]
fn stop_words_end_a_sequence_and_are_kept() {
    let t = target();
    let prompt = t.unique_prompt(4, 10);
    let free = drain(executor().enqueue(t.request(prompt.clone(), 24)).unwrap()).tokens();
    let stop = free[5..7].to_vec();
    let out = drain(executor().enqueue(t.request(prompt, 24).with_stop_words(vec![stop.clone()])).unwrap());
    assert_eq!(out.done().finish_reason, FinishReason::StopWords);
    assert!(out.tokens().ends_with(&stop) && out.tokens().len() <= 7, "{:?} ends with {stop:?}", out.tokens());
}

#[test]
fn several_return_sequences_each_stream_and_finish() {
    let t = target();
    let sampling = SamplingParams::default().num_return_sequences(3).temperature(1.0).top_k(50).seed(7);
    let request = t.request(t.unique_prompt(5, 8), 6).with_sampling(sampling);
    let out = drain(executor().enqueue(request).unwrap());
    let done = out.done();
    assert_eq!(done.sequences.len(), 3);
    let mut streamed: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for chunk in &out.chunks {
        streamed.entry(chunk.sequence_index).or_default().extend(&chunk.token_ids);
    }
    for (i, sequence) in done.sequences.iter().enumerate() {
        assert_eq!(sequence.index as usize, i);
        assert_eq!(sequence.token_ids.len(), 6);
        assert_eq!(sequence.finish_reason, FinishReason::Length);
        assert_eq!(streamed.get(&sequence.index), Some(&sequence.token_ids), "sequence {i}'s chunks add up");
    }
    assert_eq!(done.completion_tokens, 18);
}

#[test]
fn beam_search_returns_the_beams_asked_for() {
    let t = target();
    if t.engine.max_beam_width() < 2 {
        return skip("beam_search_returns_the_beams_asked_for", "the engine was built with max_beam_width 1");
    }
    let beams = (t.engine.max_beam_width() as u32).min(MAX_TEST_BEAMS);
    let sampling = SamplingParams::default().beam_width(beams).num_return_sequences(2);
    // Beams are reordered until the end, so only the final is compared (upstream streams beam
    // search as whole-sequence replacements: executor.h, OutputConfig / Result::outputTokenIds).
    let request = t.request(t.unique_prompt(6, 8), 8).with_sampling(sampling).with_streaming(false);
    let out = drain(executor().enqueue(request).unwrap());
    assert_eq!(out.after_terminal, 0);
    let done = out.done();
    assert_eq!(done.sequences.len(), 2, "num_return_sequences of the {beams} beams");
    for sequence in &done.sequences {
        assert_eq!(sequence.token_ids.len(), 8);
        assert!(sequence.token_ids.iter().all(|&id| (id as usize) < t.engine.vocab_size()));
    }
}

#[test]
fn concurrent_requests_each_get_exactly_their_own_terminal_item() {
    let t = target();
    let streams: Vec<_> = (0..8)
        .map(|i| executor().enqueue(t.request(t.unique_prompt(100 + i, 5 + i as usize), 4 + i as u32)).unwrap())
        .collect();
    let ids: std::collections::HashSet<trtllm::RequestId> = streams.iter().map(|s| s.request_id()).collect();
    assert_eq!(ids.len(), 8, "request ids are unique");
    for (i, stream) in streams.into_iter().enumerate() {
        let out = drain(stream);
        assert_eq!(out.after_terminal, 0);
        assert_eq!(out.done().completion_tokens, 4 + i as u32);
        assert_eq!(out.done().prompt_tokens, 5 + i as u32);
    }
}
