//! Simulated engines and executors for tests.
#![allow(dead_code)]

use std::time::Duration;

use tempfile::TempDir;
use trtllm::sim::{SimFaults, SimulatedEngine, SimulatedEngineBuilder};
use trtllm::{Executor, ExecutorConfig, ExecutorConfigBuilder, FinalOutput, GenerationStream, StreamEvent};

/// A fast simulated engine (1 ms iterations) with small limits, adjusted by `tune`.
pub fn engine_dir(tune: impl FnOnce(SimulatedEngineBuilder) -> SimulatedEngineBuilder) -> TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let builder = SimulatedEngine::builder()
        .model_name("test-model")
        .vocab_size(1000)
        .max_input_len(128)
        .max_seq_len(512)
        .max_batch_size(64)
        .max_num_tokens(2048)
        .iteration_ms(1.0)
        .time_scale(1.0);
    tune(builder).build().write_to(dir.path()).expect("write engine");
    dir
}

/// Test executor settings: quick stats polling.
pub fn config() -> ExecutorConfigBuilder {
    ExecutorConfig::builder().stats_poll_interval(Duration::from_millis(10))
}

/// An executor on a default fast engine.
pub fn executor() -> (TempDir, Executor) {
    let dir = engine_dir(|b| b);
    let executor = Executor::load(dir.path(), config().build().unwrap()).expect("load");
    (dir, executor)
}

/// An executor on an engine with the given faults.
pub fn executor_with_faults(faults: SimFaults) -> (TempDir, Executor) {
    let dir = engine_dir(|b| b.faults(faults));
    let executor = Executor::load(dir.path(), config().build().unwrap()).expect("load");
    (dir, executor)
}

/// Everything a stream yielded: the chunks, and the terminal item.
#[derive(Debug)]
pub struct Drained {
    pub chunks: Vec<trtllm::TokenChunk>,
    pub terminal: Result<FinalOutput, trtllm::Error>,
    /// Items yielded after the terminal one (must be zero).
    pub after_terminal: usize,
}

impl Drained {
    pub fn tokens(&self) -> Vec<u32> {
        self.chunks.iter().flat_map(|c| c.token_ids.iter().copied()).collect()
    }

    pub fn done(&self) -> &FinalOutput {
        self.terminal.as_ref().expect("a final output")
    }
}

/// Reads a stream to its end with the blocking API, checking the one-terminal-item contract.
pub fn drain(stream: GenerationStream) -> Drained {
    let mut chunks = Vec::new();
    let mut terminal = None;
    let mut after_terminal = 0;
    for item in stream.blocking_iter() {
        if terminal.is_some() {
            after_terminal += 1;
            continue;
        }
        match item {
            Ok(StreamEvent::Chunk(chunk)) => chunks.push(chunk),
            Ok(StreamEvent::Final(done)) => terminal = Some(Ok(done)),
            Err(e) => terminal = Some(Err(e)),
        }
    }
    Drained { chunks, terminal: terminal.expect("stream ended without a terminal item"), after_terminal }
}

/// Waits up to `timeout` for `condition`, checking every millisecond.
pub fn eventually(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    condition()
}

/// The async form of [`eventually`]: awaits `condition` every millisecond for up to `timeout`.
pub async fn eventually_async<F, Fut>(timeout: Duration, mut condition: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    eventually_some(timeout, Duration::from_millis(1), || {
        let check = condition();
        async move { check.await.then_some(()) }
    })
    .await
    .is_some()
}

/// Awaits `attempt` every `every` until it gives a value, for up to `timeout`; the value, or
/// `None` when it never came.
pub async fn eventually_some<T, F, Fut>(timeout: Duration, every: Duration, mut attempt: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = attempt().await {
            return Some(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(every).await;
    }
}
