//! Speculative decoding through the bridge and the simulated executor: lossless token streams,
//! multi-token chunks, acceptance counts, cuts inside an accepted run, draft-target verification
//! and the mode checks at load.

use crate::common;

use common::sim::{config, drain, engine_dir};
use trtllm::sim::SimulatedSpeculation;
use trtllm::speculative::{DecodingConfig, DecodingMode, DraftTokens, SpeculativeDecodingMode};
use trtllm::{Executor, FinalOutput, FinishReason, GenerationRequest};

fn speculative_executor(
    mode: SpeculativeDecodingMode,
    draft_len: usize,
    acceptance: f64,
) -> (tempfile::TempDir, Executor) {
    let dir = engine_dir(|b| b.speculation(SimulatedSpeculation::new(mode, draft_len, acceptance)));
    let executor = Executor::load(dir.path(), config().build().unwrap()).expect("load a speculative engine");
    (dir, executor)
}

fn plain_tokens(prompt: &[u32], max_tokens: u32) -> Vec<u32> {
    let dir = engine_dir(|b| b);
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    drain(executor.enqueue(GenerationRequest::new(prompt.to_vec(), max_tokens)).unwrap()).tokens()
}

const PROBABILISTIC: [(SpeculativeDecodingMode, usize); 3] = [
    (SpeculativeDecodingMode::Medusa, 4),
    (SpeculativeDecodingMode::Eagle, 5),
    (SpeculativeDecodingMode::LookaheadDecoding, SimulatedSpeculation::LOOKAHEAD_DEFAULT_DRAFT_TOKENS),
];

fn spec(done: &FinalOutput) -> trtllm::speculative::SpeculativeMetrics {
    done.perf.expect("perf metrics are on by default").speculative
}

#[test]
fn every_mode_streams_the_plain_tokens_in_fewer_steps() {
    let prompt = [5, 6, 7, 8];
    let plain = plain_tokens(&prompt, 64);
    for (mode, draft_len) in PROBABILISTIC {
        let (_dir, executor) = speculative_executor(mode, draft_len, 0.7);
        let out = drain(executor.enqueue(GenerationRequest::new(prompt.to_vec(), 64)).unwrap());
        assert_eq!(out.after_terminal, 0);
        let done = out.done();
        assert_eq!(out.tokens(), plain, "{mode:?}: greedy speculation is lossless");
        assert_eq!(done.token_ids(), plain.as_slice());
        assert_eq!(done.finish_reason, FinishReason::Length);
        let s = spec(done);
        // Every step emits its accepted drafts plus one token.
        assert_eq!(done.completion_tokens, done.decoding_iterations + s.accepted_draft_tokens, "{mode:?}");
        assert!(done.decoding_iterations < 64, "{mode:?}: {} steps", done.decoding_iterations);
        assert!(out.chunks.iter().any(|c| c.token_ids.len() > 1), "{mode:?}: multi-token chunks");
        assert!(s.draft_tokens >= s.accepted_draft_tokens && s.accepted_draft_tokens > 0);
        let rate = s.accepted_draft_tokens as f32 / s.draft_tokens as f32;
        assert!((s.acceptance_rate - rate).abs() < 1e-6);
        let mean = done.completion_tokens as f32 / done.decoding_iterations as f32;
        assert!((done.avg_decoded_tokens_per_iter - mean).abs() < 1e-4);
        // Running counts add up chunk by chunk.
        let mut total = 0;
        for chunk in &out.chunks {
            total += chunk.token_ids.len() as u32;
            assert_eq!(chunk.completion_tokens, total);
        }
    }
}

#[test]
fn acceptance_one_fills_every_step_and_zero_gives_one_token_per_step() {
    let (_dir, executor) = speculative_executor(SpeculativeDecodingMode::Medusa, 4, 1.0);
    let out = drain(executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 21)).unwrap());
    let sizes: Vec<usize> = out.chunks.iter().map(|c| c.token_ids.len()).collect();
    // The context step samples one token; every verification step then emits 4 drafts + 1.
    assert_eq!(sizes, vec![1, 5, 5, 5, 5]);
    assert_eq!(spec(out.done()).accepted_draft_tokens, 16);

    let (_dir, executor) = speculative_executor(SpeculativeDecodingMode::Medusa, 4, 0.0);
    let out = drain(executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 12)).unwrap());
    assert!(out.chunks.iter().all(|c| c.token_ids.len() == 1));
    let s = spec(out.done());
    assert_eq!((s.accepted_draft_tokens, out.done().decoding_iterations), (0, 12));
    assert!(s.draft_tokens > 0, "drafts were proposed and all rejected");
}

#[test]
fn max_tokens_is_never_exceeded_inside_an_accepted_run() {
    let (_dir, executor) = speculative_executor(SpeculativeDecodingMode::Eagle, 6, 1.0);
    for max_tokens in [1, 2, 7, 9, 23] {
        let out = drain(executor.enqueue(GenerationRequest::new(vec![4, 4, 4], max_tokens)).unwrap());
        assert_eq!(out.tokens().len(), max_tokens as usize);
        assert_eq!(out.done().finish_reason, FinishReason::Length);
    }
}

#[test]
fn end_id_and_stop_words_cut_an_accepted_run_exactly_there() {
    let prompt = [21, 22, 23];
    let plain = plain_tokens(&prompt, 40);
    let (_dir, executor) = speculative_executor(SpeculativeDecodingMode::Medusa, 4, 1.0);

    let end_id = plain[7];
    let first = plain.iter().position(|&t| t == end_id).unwrap();
    let request = GenerationRequest::new(prompt.to_vec(), 40).with_end_id(end_id);
    let out = drain(executor.enqueue(request).unwrap());
    assert_eq!(out.done().finish_reason, FinishReason::EndId);
    assert_eq!(out.tokens(), plain[..first].to_vec(), "the end id and everything after it are dropped");

    let stop = vec![plain[8], plain[9]];
    let request = GenerationRequest::new(prompt.to_vec(), 40).with_stop_words(vec![stop]);
    let out = drain(executor.enqueue(request).unwrap());
    assert_eq!(out.done().finish_reason, FinishReason::StopWords);
    let tokens = out.tokens();
    assert!(tokens.len() <= 10 && tokens.ends_with(&[plain[8], plain[9]]) && plain.starts_with(&tokens));
}

#[test]
fn cancelling_in_the_middle_of_speculation_ends_with_one_cancelled_final() {
    let dir = engine_dir(|b| {
        b.iteration_ms(5.0).speculation(SimulatedSpeculation::new(SpeculativeDecodingMode::Medusa, 4, 0.8))
    });
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let mut stream = executor.enqueue(GenerationRequest::new(vec![9, 9], 400)).unwrap();
    let first = stream.blocking_next().expect("a first item").expect("not an error");
    assert!(matches!(first, trtllm::StreamEvent::Chunk(_)));
    executor.cancel(stream.request_id()).unwrap();
    let out = drain(stream);
    assert_eq!(out.after_terminal, 0);
    assert_eq!(out.done().finish_reason, FinishReason::Cancelled);
    assert!(out.tokens().len() < 399);
}

#[test]
fn draft_target_accepts_exactly_the_drafts_the_target_agrees_with() {
    let prompt = [31, 32, 33, 34];
    let (_dir, executor) = speculative_executor(SpeculativeDecodingMode::DraftTokensExternal, 8, 0.7);
    // Ground truth: what the target generates without drafts.
    let plain = drain(executor.enqueue(GenerationRequest::new(prompt.to_vec(), 8)).unwrap()).tokens();
    // Drafts 0 and 1 are right, draft 2 is wrong: the target keeps 2 drafts and adds its own token.
    let wrong = (plain[2] + 1) % 1000;
    let drafts = vec![plain[0], plain[1], wrong, plain[3]];
    let request = GenerationRequest::new(prompt.to_vec(), 8)
        .with_draft_tokens(DraftTokens { tokens: drafts, acceptance_threshold: None });
    let out = drain(executor.enqueue(request).unwrap());
    assert_eq!(out.tokens(), plain, "verification never changes what the target generates");
    assert_eq!(out.chunks[0].token_ids, plain[..3].to_vec(), "accepted prefix + one token in the first step");
    let s = spec(out.done());
    assert_eq!((s.accepted_draft_tokens, s.draft_tokens), (2, 4));

    // All drafts right: one step yields them all plus one.
    let request = GenerationRequest::new(prompt.to_vec(), 5)
        .with_draft_tokens(DraftTokens { tokens: plain[..4].to_vec(), acceptance_threshold: None });
    let out = drain(executor.enqueue(request).unwrap());
    assert_eq!(out.chunks.len(), 1);
    assert_eq!(out.tokens(), plain[..5].to_vec());
    assert_eq!(out.done().decoding_iterations, 1);
}

#[test]
fn a_decoding_mode_the_engine_was_not_built_for_fails_at_load() {
    let dir = engine_dir(|b| b.speculation(SimulatedSpeculation::new(SpeculativeDecodingMode::Medusa, 4, 0.7)));
    let eagle = config().decoding(DecodingConfig::mode(DecodingMode::Eagle)).build().unwrap();
    let err = Executor::load(dir.path(), eagle).expect_err("Eagle on a Medusa engine");
    let message = err.to_string();
    assert!(message.contains("eagle") && message.contains("medusa"), "{message}");

    let plain = engine_dir(|b| b);
    let medusa = config().decoding(DecodingConfig::mode(DecodingMode::Medusa)).build().unwrap();
    let err = Executor::load(plain.path(), medusa).expect_err("Medusa on a plain engine");
    assert!(err.to_string().contains("speculative_decoding_mode none"), "{err}");

    let same = config().decoding(DecodingConfig::mode(DecodingMode::Medusa)).build().unwrap();
    Executor::load(dir.path(), same).expect("the engine's own mode loads");
}

#[test]
fn draft_tokens_on_an_engine_without_draft_target_are_refused() {
    let dir = engine_dir(|b| b);
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let request = GenerationRequest::new(vec![1, 2], 4)
        .with_draft_tokens(DraftTokens { tokens: vec![3, 4], acceptance_threshold: None });
    let out = drain(executor.enqueue(request).unwrap());
    let err = out.terminal.expect_err("refused");
    assert!(err.to_string().contains("draft_tokens_external"), "{err}");
}

#[test]
fn lookahead_serves_at_most_eight_requests_at_once() {
    let (_dir, executor) = speculative_executor(
        SpeculativeDecodingMode::LookaheadDecoding,
        SimulatedSpeculation::LOOKAHEAD_DEFAULT_DRAFT_TOKENS,
        1.0,
    );
    let requests = (0..16).map(|i| GenerationRequest::new(vec![i + 1, 2, 3], 40)).collect();
    let outs: Vec<_> = executor.enqueue_many(requests).unwrap().into_iter().map(drain).collect();
    let mut per_step: Vec<f32> = outs.iter().map(|o| o.done().avg_decoded_tokens_per_iter).collect();
    per_step.sort_by(|a, b| b.partial_cmp(a).unwrap());
    // Eight requests speculate from their first step (n-gram 3: 2 drafts + 1 per step); the other
    // eight decode one token per step until a lookahead slot frees up.
    assert!(per_step[7] > 2.5, "{per_step:?}");
    assert!(per_step[8] < 2.0, "{per_step:?}");
}
