//! Text on top of executor streams: deltas per chunk, full-decode equality, stop strings.

use futures::StreamExt;
use trtllm::text::Tokenizer;
use trtllm::{
    AsyncExecutor, ExecutorConfig, FinalOutput, FinishReason, GenerationRequest, TextEvent,
    TextStream,
};

struct Run {
    deltas: Vec<String>,
    chunk_tokens: Vec<Vec<u32>>,
    output: FinalOutput,
    text: String,
    matched: Option<String>,
}

async fn setup() -> (tempfile::TempDir, AsyncExecutor, Tokenizer) {
    let dir = tempfile::tempdir().unwrap();
    let engine = trtllm::sim::SimulatedEngine {
        iteration_ms: Some(1.0),
        ..trtllm::builtin::builtin_engine()
    };
    trtllm::builtin::write_engine(&engine, dir.path()).unwrap();
    let executor = AsyncExecutor::load(dir.path(), ExecutorConfig::default())
        .await
        .unwrap();
    let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap();
    (dir, executor, tokenizer)
}

async fn run(
    executor: &AsyncExecutor,
    tokenizer: &Tokenizer,
    stops: &[&str],
    include: bool,
) -> Run {
    let prompt = tokenizer.encode("Text streams", false).unwrap();
    let inner = executor
        .generate(GenerationRequest::new(prompt, 40).with_end_id(-1))
        .unwrap();
    let stops = stops.iter().map(|s| s.to_string()).collect();
    let mut stream = TextStream::new(inner, tokenizer.clone(), stops, include, true).unwrap();
    let (mut deltas, mut chunk_tokens, mut last) = (Vec::new(), Vec::new(), None);
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            TextEvent::Chunk { chunk, text } => {
                deltas.push(text);
                chunk_tokens.push(chunk.token_ids);
            }
            TextEvent::Final {
                output,
                texts,
                matched_stop,
            } => last = Some((*output, texts[0].clone(), matched_stop)),
        }
    }
    let (output, text, matched) = last.expect("a final");
    Run {
        deltas,
        chunk_tokens,
        output,
        text,
        matched,
    }
}

#[tokio::test]
async fn deltas_add_up_to_a_full_decode() {
    let (_dir, executor, tokenizer) = setup().await;
    let run = run(&executor, &tokenizer, &[], false).await;
    assert_eq!(run.output.finish_reason, FinishReason::Length);
    assert_eq!(run.output.token_ids().len(), 40);
    assert_eq!(
        run.text,
        tokenizer.decode(run.output.token_ids(), true).unwrap()
    );
    assert!(run.text.starts_with(&run.deltas.concat()));
}

#[tokio::test]
async fn a_stop_string_across_chunks_ends_the_stream_and_the_request() {
    let (_dir, executor, tokenizer) = setup().await;
    let full = run(&executor, &tokenizer, &[], false).await;
    // Find a chunk boundary with text on both sides, and a stop string straddling it.
    let mut offset = 0;
    let mut stop = None;
    for delta in &full.deltas[..full.deltas.len() - 1] {
        offset += delta.len();
        let left: String = full.text[..offset]
            .chars()
            .rev()
            .take(2)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let right: String = full.text[offset..].chars().take(2).collect();
        if offset > 8 && left.chars().count() == 2 && right.chars().count() == 2 {
            stop = Some(format!("{left}{right}"));
            break;
        }
    }
    let stop = stop.expect("a boundary with text on both sides");
    let cut = full.text.find(&stop).unwrap();
    let stopped = run(&executor, &tokenizer, &[stop.as_str()], false).await;
    assert_eq!(stopped.matched.as_deref(), Some(stop.as_str()));
    assert_eq!(stopped.output.finish_reason, FinishReason::StopWords);
    assert_eq!(stopped.text, full.text[..cut]);
    assert_eq!(
        stopped.deltas.concat(),
        stopped.text,
        "nothing past the stop string was shown"
    );
    let delivered: usize = stopped.chunk_tokens.iter().map(Vec::len).sum();
    assert_eq!(
        stopped.output.token_ids().len(),
        delivered,
        "token counts are the tokens delivered"
    );
    assert!(delivered < 40);
    assert_eq!(
        executor.executor().in_flight(),
        0,
        "the request was cancelled in the executor"
    );

    let included = run(&executor, &tokenizer, &[stop.as_str()], true).await;
    assert_eq!(included.text, full.text[..cut + stop.len()]);
}

#[tokio::test]
async fn an_empty_stop_string_is_an_invalid_request() {
    let (_dir, executor, tokenizer) = setup().await;
    let inner = executor
        .generate(GenerationRequest::new(vec![5], 4))
        .unwrap();
    let err = TextStream::new(inner, tokenizer, vec![String::new()], false, true).unwrap_err();
    assert!(matches!(err, trtllm::Error::InvalidRequest(_)), "{err:?}");
}
