//! The draft-target loop in Rust ([`SpeculativeExecutor`]) against ground truth: the target
//! engine's own output for the same request.

use crate::common;

use std::time::Duration;

use common::sim::{config, engine_dir};
use futures::StreamExt;
use tempfile::TempDir;
use trtllm::sim::SimulatedSpeculation;
use trtllm::speculative::{DraftLength, SpeculativeDecodingMode, SpeculativeExecutor};
use trtllm::{AsyncExecutor, FinalOutput, FinishReason, GenerationRequest, StreamEvent, TokenChunk};

struct Pair {
    _dirs: (TempDir, TempDir),
    draft: AsyncExecutor,
    target: AsyncExecutor,
}

async fn pair(agreement: f64, iteration_ms: f64) -> Pair {
    let target_dir = engine_dir(|b| {
        b.iteration_ms(iteration_ms).speculation(SimulatedSpeculation::new(
            SpeculativeDecodingMode::DraftTokensExternal,
            8,
            0.7,
        ))
    });
    let draft_dir =
        engine_dir(|b| b.iteration_ms(iteration_ms).speculation(SimulatedSpeculation::draft_model(agreement)));
    let target = AsyncExecutor::load(target_dir.path(), config().build().unwrap()).await.unwrap();
    let draft = AsyncExecutor::load(draft_dir.path(), config().build().unwrap()).await.unwrap();
    Pair { _dirs: (target_dir, draft_dir), draft, target }
}

async fn truth(target: &AsyncExecutor, request: GenerationRequest) -> Vec<u32> {
    target.enqueue(request).unwrap().collect_final().await.unwrap().token_ids().to_vec()
}

async fn run(spec: &SpeculativeExecutor, request: GenerationRequest) -> (Vec<TokenChunk>, FinalOutput) {
    let mut stream = spec.enqueue(request).unwrap();
    let mut chunks = Vec::new();
    let mut done = None;
    while let Some(item) = stream.next().await {
        assert!(done.is_none(), "nothing follows the terminal item");
        match item.unwrap() {
            StreamEvent::Chunk(c) => chunks.push(c),
            StreamEvent::Final(f) => done = Some(f),
        }
    }
    (chunks, done.expect("exactly one terminal item"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_streams_exactly_what_the_target_generates_alone() {
    for agreement in [1.0, 0.7, 0.0] {
        let p = pair(agreement, 1.0).await;
        let request = GenerationRequest::new(vec![3, 1, 4, 1, 5], 40);
        let expected = truth(&p.target, request.clone()).await;
        for length in [DraftLength::fixed(4), DraftLength::adaptive(2, 1, 6)] {
            let spec = SpeculativeExecutor::new(p.draft.clone(), p.target.clone(), length).unwrap();
            let (chunks, done) = run(&spec, request.clone()).await;
            let streamed: Vec<u32> = chunks.iter().flat_map(|c| c.token_ids.clone()).collect();
            assert_eq!(streamed, expected, "agreement {agreement}, {length:?}");
            assert_eq!(done.token_ids(), expected.as_slice());
            assert_eq!(done.finish_reason, FinishReason::Length);
            let s = done.speculative.expect("acceptance counts");
            // Each round: the accepted drafts plus the target's own token.
            assert_eq!(done.completion_tokens, done.decoding_iterations + s.accepted_draft_tokens);
            assert_eq!(done.decoding_iterations as usize, chunks.len());
            if agreement == 1.0 && !length.adaptive {
                assert!(chunks[..chunks.len() - 1].iter().all(|c| c.token_ids.len() == 5), "k + 1 per round");
            }
            if agreement == 0.0 {
                assert_eq!(s.accepted_draft_tokens, 0);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_ids_and_max_tokens_cut_a_round_exactly() {
    let p = pair(1.0, 1.0).await;
    let spec = SpeculativeExecutor::new(p.draft.clone(), p.target.clone(), DraftLength::fixed(4)).unwrap();
    let prompt = vec![8, 8, 9];
    let free = truth(&p.target, GenerationRequest::new(prompt.clone(), 30)).await;
    let end_id = free[6];
    let first = free.iter().position(|&t| t == end_id).unwrap();
    let (_, done) = run(&spec, GenerationRequest::new(prompt.clone(), 30).with_end_id(end_id)).await;
    assert_eq!(done.finish_reason, FinishReason::EndId);
    assert_eq!(done.token_ids(), &free[..first]);

    for max_tokens in [1, 2, 6, 7] {
        let (chunks, done) = run(&spec, GenerationRequest::new(prompt.clone(), max_tokens)).await;
        assert_eq!(done.token_ids(), &free[..max_tokens as usize]);
        assert_eq!(chunks.iter().map(|c| c.token_ids.len()).sum::<usize>(), max_tokens as usize);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_cancels_both_sides() {
    let p = pair(0.7, 5.0).await;
    let spec = SpeculativeExecutor::new(p.draft.clone(), p.target.clone(), DraftLength::fixed(3)).unwrap();
    let mut stream = spec.enqueue(GenerationRequest::new(vec![1, 2, 3], 400)).unwrap();
    assert!(matches!(stream.next().await, Some(Ok(StreamEvent::Chunk(_)))));
    drop(stream);
    // Whatever round was in flight is cancelled on both executors.
    assert!(p.draft.wait_idle(Duration::from_secs(2)).await, "draft executor idle");
    assert!(p.target.wait_idle(Duration::from_secs(2)).await, "target executor idle");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_draft_lengths_and_requests_are_refused() {
    let p = pair(1.0, 1.0).await;
    assert!(SpeculativeExecutor::new(p.draft.clone(), p.target.clone(), DraftLength::fixed(0)).is_err());
    assert!(SpeculativeExecutor::new(p.draft.clone(), p.target.clone(), DraftLength::adaptive(5, 1, 3)).is_err());
    let spec = SpeculativeExecutor::new(p.draft.clone(), p.target.clone(), DraftLength::fixed(2)).unwrap();
    assert!(spec.enqueue(GenerationRequest::new(vec![], 4)).is_err(), "an empty prompt");
}
