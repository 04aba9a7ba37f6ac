//! End-to-end through the real bridge and the simulated executor: token streams and stop conditions.

use crate::common;

use std::time::Duration;

use common::sim::{drain, engine_dir, executor};
use futures::StreamExt;
use trtllm::{AsyncExecutor, Executor, FinishReason, GenerationRequest, SamplingParams, StreamEvent};

#[test]
fn streams_n_tokens_in_order_with_one_terminal_item() {
    let (_dir, executor) = executor();
    let out = drain(executor.enqueue(GenerationRequest::new(vec![1, 2, 3, 4], 24)).unwrap());
    assert_eq!(out.after_terminal, 0);
    let done = out.done();
    assert_eq!(done.finish_reason, FinishReason::Length);
    assert_eq!(out.tokens().len(), 24);
    assert_eq!(done.token_ids(), out.tokens().as_slice(), "final carries exactly the streamed tokens");
    assert_eq!(done.completion_tokens, 24);
    assert_eq!(done.prompt_tokens, 4);
    // Running counts go 1, 2, 3, ... and receive times never go backwards.
    for (i, chunk) in out.chunks.iter().enumerate() {
        assert_eq!(chunk.completion_tokens as usize, i + 1);
        assert_eq!(chunk.prompt_tokens, 4);
    }
    assert!(out.chunks.windows(2).all(|w| w[0].received_at <= w[1].received_at));
    assert!(done.ttft().is_some() && done.tpot().is_some());
}

#[test]
fn the_same_request_gives_the_same_tokens() {
    let (_dir, executor) = executor();
    let a = drain(executor.enqueue(GenerationRequest::new(vec![9, 8, 7], 16)).unwrap());
    let b = drain(executor.enqueue(GenerationRequest::new(vec![9, 8, 7], 16)).unwrap());
    let c = drain(executor.enqueue(GenerationRequest::new(vec![9, 8, 6], 16)).unwrap());
    assert_eq!(a.tokens(), b.tokens());
    assert_ne!(a.tokens(), c.tokens(), "a different prompt gives different tokens");
    assert!(a.tokens().iter().all(|&t| t < 1000), "tokens are inside the vocabulary");
}

#[test]
fn non_streaming_gives_one_final_with_every_token() {
    let (_dir, executor) = executor();
    let streamed = drain(executor.enqueue(GenerationRequest::new(vec![3, 1, 4, 1, 5], 12)).unwrap());
    let request = GenerationRequest::new(vec![3, 1, 4, 1, 5], 12).with_streaming(false);
    let out = drain(executor.enqueue(request).unwrap());
    assert!(out.chunks.is_empty(), "no chunks for a non-streaming request");
    let done = out.done();
    assert_eq!(done.finish_reason, FinishReason::Length);
    assert_eq!(done.token_ids(), streamed.tokens().as_slice(), "same tokens, prompt excluded");
}

#[test]
fn end_id_stops_early_and_is_not_in_the_output() {
    let (_dir, executor) = executor();
    let prompt = vec![11, 12, 13];
    let free = drain(executor.enqueue(GenerationRequest::new(prompt.clone(), 20)).unwrap()).tokens();
    let end_id = free[5];
    let first = free.iter().position(|&t| t == end_id).unwrap();
    let out = drain(executor.enqueue(GenerationRequest::new(prompt.clone(), 20).with_end_id(end_id)).unwrap());
    assert_eq!(out.done().finish_reason, FinishReason::EndId);
    assert_eq!(out.tokens(), free[..first].to_vec());
    // End id -1 never stops early.
    let out = drain(executor.enqueue(GenerationRequest::new(prompt, 20).with_end_id(None)).unwrap());
    assert_eq!(out.done().finish_reason, FinishReason::Length);
    assert_eq!(out.tokens().len(), 20);
}

#[test]
fn min_tokens_holds_off_the_end_id() {
    let (_dir, executor) = executor();
    let prompt = vec![21, 22, 23];
    let free = drain(executor.enqueue(GenerationRequest::new(prompt.clone(), 30)).unwrap()).tokens();
    let end_id = free[1];
    let request =
        GenerationRequest::new(prompt, 30).with_end_id(end_id).with_sampling(SamplingParams::default().min_tokens(10));
    let out = drain(executor.enqueue(request).unwrap());
    assert!(out.tokens().len() >= 10, "stopped after {} tokens despite min_tokens 10", out.tokens().len());
}

#[test]
fn stop_words_stop_and_are_included() {
    let (_dir, executor) = executor();
    let prompt = vec![31, 32, 33, 34];
    let free = drain(executor.enqueue(GenerationRequest::new(prompt.clone(), 20)).unwrap()).tokens();
    let stop = vec![free[6], free[7]];
    let request = GenerationRequest::new(prompt, 20).with_stop_words(vec![vec![999, 998], stop.clone()]);
    let out = drain(executor.enqueue(request).unwrap());
    assert_eq!(out.done().finish_reason, FinishReason::StopWords);
    let tokens = out.tokens();
    assert!(tokens.ends_with(&stop), "output {tokens:?} ends with the stop word {stop:?}");
    assert!(tokens.len() <= 8);
}

#[test]
fn max_tokens_one_gives_one_token() {
    let (_dir, executor) = executor();
    let out = drain(executor.enqueue(GenerationRequest::new(vec![5], 1)).unwrap());
    assert_eq!(out.tokens().len(), 1);
    assert_eq!(out.done().finish_reason, FinishReason::Length);
    assert_eq!(out.done().tpot(), None, "TPOT is undefined for one token");
}

#[test]
fn allotted_time_times_out() {
    let dir = engine_dir(|b| b.iteration_ms(5.0));
    let executor = Executor::load(dir.path(), common::sim::config().build().unwrap()).unwrap();
    let request = GenerationRequest::new(vec![1, 2], 400).with_allotted_time(Duration::from_millis(60));
    let out = drain(executor.enqueue(request).unwrap());
    let done = out.done();
    assert_eq!(done.finish_reason, FinishReason::TimedOut);
    assert!(out.tokens().len() < 400);
    assert!(done.e2e_latency() >= Duration::from_millis(60));
    assert!(done.e2e_latency() < Duration::from_secs(2));
}

#[test]
fn multiple_return_sequences_each_finish() {
    let (_dir, executor) = executor();
    let sampling = SamplingParams::default().num_return_sequences(3);
    let out = drain(executor.enqueue(GenerationRequest::new(vec![4, 4, 4], 6).with_sampling(sampling)).unwrap());
    let done = out.done();
    assert_eq!(done.sequences.len(), 3);
    for (i, seq) in done.sequences.iter().enumerate() {
        assert_eq!(seq.index as usize, i);
        assert_eq!(seq.token_ids.len(), 6);
        assert_eq!(seq.finish_reason, FinishReason::Length);
        let streamed: Vec<u32> = out
            .chunks
            .iter()
            .filter(|c| c.sequence_index as usize == i)
            .flat_map(|c| c.token_ids.iter().copied())
            .collect();
        assert_eq!(streamed, seq.token_ids);
    }
    assert_eq!(done.completion_tokens, 18);
}

#[test]
fn log_probs_when_asked() {
    let (_dir, executor) = executor();
    let out = drain(executor.enqueue(GenerationRequest::new(vec![8, 9], 5).with_log_probs(true)).unwrap());
    let seq = &out.done().sequences[0];
    let log_probs = seq.log_probs.as_ref().expect("log probs");
    assert_eq!(log_probs.len(), 5);
    assert!(log_probs.iter().all(|&lp| lp <= 0.0));
    assert!(out.chunks.iter().all(|c| { c.log_probs.as_ref().is_some_and(|l| l.len() == c.token_ids.len()) }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_stream_yields_chunks_then_final() {
    let dir = engine_dir(|b| b);
    let executor = AsyncExecutor::load(dir.path(), common::sim::config().build().unwrap()).await.unwrap();
    let mut stream = executor.enqueue(GenerationRequest::new(vec![7, 7, 7], 10)).unwrap();
    let mut tokens = Vec::new();
    let mut finals = 0;
    while let Some(item) = stream.next().await {
        match item.unwrap() {
            StreamEvent::Chunk(c) => tokens.extend(c.token_ids),
            StreamEvent::Final(done) => {
                finals += 1;
                assert_eq!(done.token_ids(), tokens.as_slice());
            }
        }
    }
    assert_eq!(finals, 1);
    assert_eq!(tokens.len(), 10);
    assert!(stream.next().await.is_none(), "nothing after the terminal item");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_concurrent_streams_complete_with_the_right_counts() {
    let dir = engine_dir(|b| b.max_batch_size(256).max_num_tokens(8192));
    let executor = AsyncExecutor::load(dir.path(), common::sim::config().build().unwrap()).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..500u32 {
        let max_tokens = 1 + i % 17;
        let stream = executor.enqueue(GenerationRequest::new(vec![1 + i % 900, 2, 3], max_tokens)).unwrap();
        tasks.push(tokio::spawn(async move {
            let mut stream = stream;
            let mut count = 0u32;
            let mut terminal = 0;
            let mut final_count = 0;
            while let Some(item) = stream.next().await {
                match item.expect("no errors") {
                    StreamEvent::Chunk(c) => count += c.token_ids.len() as u32,
                    StreamEvent::Final(done) => {
                        terminal += 1;
                        final_count = done.completion_tokens;
                    }
                }
            }
            (max_tokens, count, final_count, terminal)
        }));
    }
    for task in tasks {
        let (expected, streamed, final_count, terminal) = task.await.unwrap();
        assert_eq!(terminal, 1);
        assert_eq!(streamed, expected);
        assert_eq!(final_count, expected);
    }
    assert_eq!(executor.executor().in_flight(), 0, "no routing entry leaked");
}

#[test]
fn beam_search_returns_every_beam_in_full_once() {
    let dir = engine_dir(|b| b.max_beam_width(2));
    let config = common::sim::config().max_beam_width(2).build().unwrap();
    let executor = Executor::load(dir.path(), config).unwrap();
    let request = |streaming: bool| {
        GenerationRequest::new(vec![4, 5, 6], 10)
            .with_streaming(streaming)
            .with_sampling(SamplingParams::default().beam_width(2))
    };
    let whole = drain(executor.enqueue(request(false)).unwrap());
    let done = whole.done();
    assert_eq!(done.sequences.len(), 2, "one sequence per beam");
    for beam in &done.sequences {
        assert_eq!(beam.token_ids.len(), 10, "beam {} is whole", beam.index);
        assert_eq!(beam.finish_reason, FinishReason::Length);
    }
    assert_eq!(done.completion_tokens, 20);

    // Streaming beams are rewritten until the end: each beam arrives once, in full, and
    // never duplicated by cumulative responses.
    let streamed = drain(executor.enqueue(request(true)).unwrap());
    let mut indices: Vec<u32> = streamed.chunks.iter().map(|c| c.sequence_index).collect();
    indices.sort();
    assert_eq!(indices, [0, 1]);
    for chunk in &streamed.chunks {
        let beam = &streamed.done().sequences[chunk.sequence_index as usize];
        assert_eq!(chunk.token_ids, beam.token_ids);
        assert_eq!(chunk.completion_tokens, 10);
    }
    assert_eq!(streamed.done().sequences, done.sequences, "streaming and not give the same beams");

    // A beam width the executor was not configured for is refused before enqueueing.
    let (_dir, narrow) = common::sim::executor();
    let wide = engine_dir(|b| b.max_beam_width(4));
    let narrow_on_wide = Executor::load(wide.path(), common::sim::config().build().unwrap()).unwrap();
    for executor in [&narrow, &narrow_on_wide] {
        assert!(matches!(
            executor.enqueue(request(false)),
            Err(trtllm::Error::InvalidRequest(trtllm::InvalidRequest::BeamWidth { requested: 2, max: 1 }))
        ));
    }
}

#[test]
fn enqueue_many_streams_every_request_in_order() {
    let (_dir, executor) = executor();
    let requests = (0..8u32).map(|i| GenerationRequest::new(vec![1, 2, 3 + i], 4 + i)).collect();
    let streams = executor.enqueue_many(requests).unwrap();
    assert_eq!(streams.len(), 8);
    for (i, stream) in streams.into_iter().enumerate() {
        let drained = drain(stream);
        assert_eq!(drained.tokens().len(), 4 + i, "request {i}");
        assert_eq!(drained.done().finish_reason, FinishReason::Length);
    }
    assert!(executor.wait_idle(Duration::from_secs(10)));
}

#[test]
fn enqueue_many_is_all_or_nothing_and_names_the_bad_request() {
    let (_dir, executor) = executor();
    let mut requests: Vec<_> = (0..3).map(|_| GenerationRequest::new(vec![1, 2, 3], 4)).collect();
    requests.push(GenerationRequest::new(Vec::new(), 4));
    match executor.enqueue_many(requests) {
        Err(trtllm::Error::InvalidBatchRequest { index: 3, reason: trtllm::InvalidRequest::EmptyPrompt }) => {}
        other => panic!("expected the empty prompt at position 3 to be refused, got {other:?}"),
    }
    assert_eq!(executor.in_flight(), 0, "nothing of the refused batch was enqueued");
    assert!(executor.enqueue_many(Vec::new()).unwrap().is_empty());
    // The executor is unaffected.
    let drained = drain(executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 4)).unwrap());
    assert_eq!(drained.tokens().len(), 4);
}
