//! Per-request streams with cancel-on-drop, and the async front of the executor.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::executor::{Executor, Inner, ShutdownMode};
use crate::output::{Accumulator, Routed, StreamEvent};
use crate::request::GenerationRequest;
use crate::router::EndCause;

/// The responses of one request: [`StreamEvent::Chunk`]s, then exactly one terminal item, either
/// [`StreamEvent::Final`] or an `Err`. Nothing follows the terminal item.
///
/// Cancellation is a finish reason, not an error: a cancelled request ends with a final whose
/// reason is [`FinishReason::Cancelled`](crate::FinishReason::Cancelled). Dropping the stream before
/// its terminal item cancels the request in the executor at once.
///
/// Responses wait in a bounded buffer (`ExecutorConfig::stream_buffer`); a consumer that lets it
/// fill has its request cancelled and receives [`Error::ConsumerTooSlow`].
#[derive(Debug)]
pub struct GenerationStream {
    inner: Arc<Inner>,
    id: u64,
    rx: mpsc::Receiver<Routed>,
    end: Arc<OnceLock<EndCause>>,
    accumulator: Accumulator,
    pending: VecDeque<StreamEvent>,
    scratch: Vec<StreamEvent>,
    terminated: bool,
}

impl GenerationStream {
    pub(crate) fn new(
        inner: Arc<Inner>,
        id: u64,
        rx: mpsc::Receiver<Routed>,
        end: Arc<OnceLock<EndCause>>,
        accumulator: Accumulator,
    ) -> Self {
        GenerationStream {
            inner,
            id,
            rx,
            end,
            accumulator,
            pending: VecDeque::new(),
            scratch: Vec::new(),
            terminated: false,
        }
    }

    /// The executor's id for this request.
    pub fn request_id(&self) -> u64 {
        self.id
    }

    /// Asks the executor to cancel this request; the stream then ends with a `Cancelled` final.
    pub fn cancel(&self) {
        if !self.terminated {
            self.inner.cancel_quietly(self.id);
        }
    }

    /// When the request was handed to the executor (the start of client-side TTFT).
    pub fn enqueued_at(&self) -> std::time::Instant {
        self.accumulator.enqueued_at()
    }

    /// Sequences the request produces (`num_return_sequences`, or 1).
    pub fn num_sequences(&self) -> usize {
        self.accumulator.num_sequences()
    }

    /// Whether the terminal item has been yielded.
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Turns one received response (or the channel's end) into items.
    fn absorb(&mut self, routed: Option<Routed>) -> Option<Result<StreamEvent>> {
        match routed {
            Some(routed) if routed.item.is_error => {
                self.terminated = true;
                Some(Err(Error::from_executor(&routed.item.error_message)))
            }
            Some(routed) => {
                self.accumulator.apply(routed, &self.inner.clock, &mut self.scratch);
                self.pending.extend(self.scratch.drain(..));
                None
            }
            None => {
                self.terminated = true;
                Some(Err(match self.end.get() {
                    Some(EndCause::Overflow(capacity)) => Error::ConsumerTooSlow { capacity: *capacity },
                    Some(EndCause::ShutDown) => Error::ShutDown,
                    Some(EndCause::Fatal(message)) => Error::Executor(message.clone()),
                    None => Error::StreamEnded,
                }))
            }
        }
    }

    fn next_pending(&mut self) -> Option<Result<StreamEvent>> {
        let event = self.pending.pop_front()?;
        if matches!(event, StreamEvent::Final(_)) {
            self.terminated = true;
            self.pending.clear();
        }
        Some(Ok(event))
    }

    /// Blocks for the next item; `None` after the terminal item. Must not be called from an async
    /// runtime thread (use the `Stream` implementation there).
    pub fn blocking_next(&mut self) -> Option<Result<StreamEvent>> {
        loop {
            if let Some(item) = self.next_pending() {
                return Some(item);
            }
            if self.terminated {
                return None;
            }
            let routed = self.rx.blocking_recv();
            if let Some(item) = self.absorb(routed) {
                return Some(item);
            }
        }
    }

    /// A blocking iterator over the remaining items.
    pub fn blocking_iter(self) -> BlockingIter {
        BlockingIter { stream: self }
    }

    /// Collects the stream and returns the final output, or the terminal error.
    pub async fn collect_final(mut self) -> Result<crate::FinalOutput> {
        use futures::StreamExt;
        while let Some(item) = self.next().await {
            if let StreamEvent::Final(done) = item? {
                return Ok(done);
            }
        }
        Err(Error::StreamEnded)
    }
}

impl Stream for GenerationStream {
    type Item = Result<StreamEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.next_pending() {
                return Poll::Ready(Some(item));
            }
            if this.terminated {
                return Poll::Ready(None);
            }
            let routed = match this.rx.poll_recv(cx) {
                Poll::Ready(routed) => routed,
                Poll::Pending => return Poll::Pending,
            };
            if let Some(item) = this.absorb(routed) {
                return Poll::Ready(Some(item));
            }
        }
    }
}

impl Drop for GenerationStream {
    fn drop(&mut self) {
        // Release on drop: a consumer that walks away must not leave work running in the executor.
        if !self.terminated {
            self.inner.release(self.id);
        }
    }
}

/// Blocking iterator over a [`GenerationStream`].
#[derive(Debug)]
pub struct BlockingIter {
    stream: GenerationStream,
}

impl Iterator for BlockingIter {
    type Item = Result<StreamEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        self.stream.blocking_next()
    }
}

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
/// let mut stream = executor.generate(GenerationRequest::new(vec![5, 6, 7], 4))?;
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
    pub async fn load(engine_dir: impl AsRef<std::path::Path>, config: crate::ExecutorConfig) -> Result<Self> {
        let dir = engine_dir.as_ref().to_path_buf();
        let executor = tokio::task::spawn_blocking(move || Executor::load(dir, config))
            .await
            .map_err(|e| Error::Executor(format!("loading task failed: {e}")))??;
        Ok(AsyncExecutor { executor: Arc::new(executor) })
    }

    /// Wraps an executor that is already loaded.
    pub fn new(executor: Executor) -> Self {
        AsyncExecutor { executor: Arc::new(executor) }
    }

    /// Enqueues a request and returns its stream. Enqueueing does not wait for the executor.
    pub fn generate(&self, request: GenerationRequest) -> Result<GenerationStream> {
        self.executor.enqueue(request)
    }

    /// Enqueues every request in one executor call and returns their streams in order; all or
    /// nothing (see [`Executor::enqueue_many`]).
    pub fn generate_many(&self, requests: Vec<GenerationRequest>) -> Result<Vec<GenerationStream>> {
        self.executor.enqueue_many(requests)
    }

    /// Shuts down on a blocking thread; see [`Executor::shutdown`].
    pub async fn shutdown(&self, mode: ShutdownMode) -> Result<()> {
        let executor = self.executor.clone();
        tokio::task::spawn_blocking(move || executor.shutdown(mode))
            .await
            .map_err(|e| Error::Executor(format!("shutdown task failed: {e}")))?
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

    /// Every KV-cache event from now on, as an async stream; see [`KvEventStream`](crate::KvEventStream).
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
    /// executor.generate(GenerationRequest::new(prompt, 1))?.collect_final().await?;
    /// // The prompt's full blocks become reusable once its context is computed.
    /// while let Some(event) = events.next().await {
    ///     if let KvCacheEventData::Stored { blocks, .. } = &event?.data {
    ///         assert_eq!(blocks.len(), 2);
    ///         break;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn subscribe_kv_events(&self) -> Result<crate::KvEventStream> {
        self.executor.subscribe_kv_events()
    }
}
