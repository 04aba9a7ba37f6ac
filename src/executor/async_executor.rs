//! The cloneable async front of an [`Executor`].

use std::sync::Arc;
use std::time::Duration;

use super::kv_events::KvEventStream;
use super::stream::GenerationStream;
use super::sync_executor::{Executor, ShutdownMode};
use crate::error::{Error, Result};
use crate::types::config::ExecutorConfig;
use crate::types::request::GenerationRequest;

/// A cloneable async front of an [`Executor`]; the executor shuts down when the last clone drops.
///
/// That implicit shutdown blocks the dropping thread until in-flight requests have been cancelled
/// (an iteration or two). In async code, end with [`AsyncExecutor::shutdown`] instead, which does
/// the blocking part off the runtime's worker threads.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use futures::StreamExt;
/// use trtllm::{AsyncExecutor, ExecutorConfig, GenerationRequest, StreamEvent};
/// let dir = tempfile::tempdir()?;
/// trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
/// let executor = AsyncExecutor::load(dir.path(), ExecutorConfig::default()).await?;
/// let mut stream = executor.enqueue(GenerationRequest::new(vec![5, 6, 7], 4))?;
/// let mut received = 0;
/// while let Some(event) = stream.next().await {
///     match event? {
///         StreamEvent::Chunk(chunk) => received += chunk.token_ids.len(),
///         StreamEvent::Final(done) => println!("{} tokens, {:?}", done.completion_tokens, done.finish_reason),
///     }
/// }
/// assert_eq!(received, 4);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct AsyncExecutor {
    executor: Arc<Executor>,
}

impl AsyncExecutor {
    /// Loads an engine on a blocking thread (loading a real engine takes seconds).
    pub async fn load(engine_dir: impl AsRef<std::path::Path>, config: ExecutorConfig) -> Result<Self> {
        let dir = engine_dir.as_ref().to_path_buf();
        let executor = tokio::task::spawn_blocking(move || Executor::load(dir, config))
            .await
            .map_err(|e| Error::Internal(format!("loading task failed: {e}")))??;
        Ok(AsyncExecutor { executor: Arc::new(executor) })
    }

    /// Wraps an executor that is already loaded.
    pub fn new(executor: Executor) -> Self {
        AsyncExecutor { executor: Arc::new(executor) }
    }

    /// Enqueues a request and returns its stream (see [`Executor::enqueue`]). Enqueueing does not
    /// wait for the executor.
    pub fn enqueue(&self, request: GenerationRequest) -> Result<GenerationStream> {
        self.executor.enqueue(request)
    }

    /// Enqueues every request in one executor call and returns their streams in order; all or
    /// nothing (see [`Executor::enqueue_many`]).
    pub fn enqueue_many(&self, requests: Vec<GenerationRequest>) -> Result<Vec<GenerationStream>> {
        self.executor.enqueue_many(requests)
    }

    /// Shuts down on a blocking thread; see [`Executor::shutdown`].
    pub async fn shutdown(&self, mode: ShutdownMode) -> Result<()> {
        let executor = self.executor.clone();
        tokio::task::spawn_blocking(move || executor.shutdown(mode))
            .await
            .map_err(|e| Error::Internal(format!("shutdown task failed: {e}")))?
    }

    /// Waits (on a blocking thread) until nothing is in flight, for at most `timeout`.
    pub async fn wait_idle(&self, timeout: Duration) -> bool {
        let executor = self.executor.clone();
        tokio::task::spawn_blocking(move || executor.wait_idle(timeout)).await.unwrap_or(false)
    }

    /// The underlying executor (stats, engine config, cancel by id).
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// Every KV-cache event from now on, as an async stream; see [`KvEventStream`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use futures::StreamExt;
    /// use trtllm::{AsyncExecutor, ExecutorConfig, GenerationRequest, KvCacheEventData};
    /// let dir = tempfile::tempdir()?;
    /// trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
    /// let config = ExecutorConfig::builder().kv_cache_event_buffer_max_size(1024).build()?;
    /// let executor = AsyncExecutor::load(dir.path(), config).await?;
    /// let mut events = executor.subscribe_kv_events()?;
    /// let prompt: Vec<u32> = (1..=65).collect();
    /// executor.enqueue(GenerationRequest::new(prompt, 1))?.collect_final().await?;
    /// // The prompt's full blocks become reusable once its context is computed.
    /// while let Some(event) = events.next().await {
    ///     if let KvCacheEventData::Stored { blocks, .. } = &event?.data {
    ///         assert_eq!(blocks.len(), 2);
    ///         break;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn subscribe_kv_events(&self) -> Result<KvEventStream> {
        self.executor.subscribe_kv_events()
    }
}
