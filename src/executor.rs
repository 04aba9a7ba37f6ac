//! The safe executor: loads an engine, enqueues requests, routes responses, collects stats, shuts down.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc};

use crate::clock::SteadyClock;
use crate::config::ExecutorConfig;
use crate::engine::EngineConfig;
use crate::error::{Error, InvalidRequest, Result};
use crate::ffi::sys;
use crate::kv_events::{KvCacheEvent, KvEventHub, KvEventStream};
use crate::output::Accumulator;
use crate::request::GenerationRequest;
use crate::router::{self, EndCause, Route, Routes};
use crate::stats::{IterationStats, KvCacheStats, RequestStatsPerIteration};
use crate::stream::GenerationStream;
use crate::version::{self, Backend};

/// How [`Executor::shutdown`] treats requests still in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownMode {
    /// Cancel them at once; each stream ends with a `Cancelled` final.
    Cancel,
    /// Let them finish for up to `timeout`, then cancel the rest.
    Drain {
        /// The grace period.
        timeout: Duration,
    },
}

/// State shared by the executor handle, its threads and every stream.
pub(crate) struct Inner {
    pub(crate) handle: cxx::UniquePtr<sys::ExecutorHandle>,
    pub(crate) config: ExecutorConfig,
    pub(crate) engine: EngineConfig,
    pub(crate) backend: Backend,
    pub(crate) clock: SteadyClock,
    pub(crate) routes: Mutex<Routes>,
    pub(crate) routes_changed: Condvar,
    /// Cleared when shutdown starts or the response thread fails; checked under the routes lock.
    pub(crate) accepting: AtomicBool,
    /// Tells the response and stats threads to stop.
    pub(crate) stop: AtomicBool,
    pub(crate) healthy: AtomicBool,
    shutdown_done: Mutex<bool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    latest_iteration: RwLock<Option<IterationStats>>,
    /// Held while draining the executor's stats buffers: the stats thread and `refresh_stats` both
    /// drain, and unserialised they could publish batches out of order.
    stats_poll: Mutex<()>,
    iteration_tx: broadcast::Sender<Arc<IterationStats>>,
    request_stats_tx: broadcast::Sender<Arc<RequestStatsPerIteration>>,
    /// KV-cache event delivery, when the executor records events.
    pub(crate) kv_events: Option<KvEventHub>,
    failure: OnceLock<String>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inner").field("engine", &self.engine.dir).field("backend", &self.backend).finish()
    }
}

impl Inner {
    /// Ends every in-flight request with `cause` and refuses new ones (response thread failure).
    pub(crate) fn fail_all(&self, cause: EndCause) {
        if let EndCause::Fatal(message) = &cause {
            let _ = self.failure.set(message.clone());
            self.healthy.store(false, Ordering::Release);
        }
        self.accepting.store(false, Ordering::Release);
        let drained: Vec<Route> = match self.routes.lock() {
            Ok(mut routes) => routes.drain().map(|(_, r)| r).collect(),
            Err(_) => Vec::new(),
        };
        for route in drained {
            let _ = route.end.set(cause.clone());
            // Dropping the sender closes the channel; the stream then reads the cause.
        }
        self.routes_changed.notify_all();
    }

    /// Cancels a request in the executor, tolerating a shut-down executor.
    pub(crate) fn cancel_quietly(&self, id: u64) {
        if let Err(e) = self.handle.cancel(id) {
            tracing::debug!(request_id = id, error = e.what(), "cancel failed");
        }
    }

    /// Removes a request's route (its stream was dropped) and cancels it in the executor.
    pub(crate) fn release(&self, id: u64) {
        let removed = self.routes.lock().map(|mut r| r.remove(&id).is_some()).unwrap_or(false);
        if removed {
            self.routes_changed.notify_all();
            self.cancel_quietly(id);
        }
    }

    fn poll_stats(&self) {
        let _serialised = self.stats_poll.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match self.handle.iteration_stats() {
            Ok(items) => {
                let mut last = None;
                for item in items {
                    let stats = Arc::new(IterationStats::from(item));
                    // No receivers is fine: the value is still kept as the latest.
                    let _ = self.iteration_tx.send(stats.clone());
                    last = Some(stats);
                }
                if let Some(last) = last
                    && let Ok(mut latest) = self.latest_iteration.write()
                {
                    *latest = Some((*last).clone());
                }
            }
            Err(e) => tracing::debug!(error = e.what(), "getLatestIterationStats failed"),
        }
        if self.config.request_stats_max_iterations > 0 {
            match self.handle.request_stats() {
                Ok(items) => {
                    for item in items {
                        let _ = self.request_stats_tx.send(Arc::new(RequestStatsPerIteration::from(item)));
                    }
                }
                Err(e) => tracing::debug!(error = e.what(), "getLatestRequestStats failed"),
            }
        }
    }
}

fn stats_loop(inner: Arc<Inner>) {
    let period = inner.config.stats_poll_interval;
    while !inner.stop.load(Ordering::Acquire) {
        inner.poll_stats();
        // Sleep in short slices so that shutdown is not held up by a long period.
        let until = Instant::now() + period;
        while !inner.stop.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= until {
                break;
            }
            std::thread::sleep((until - now).min(Duration::from_millis(20)));
        }
    }
    // One last drain so that the final iterations are not lost.
    inner.poll_stats();
}

/// A TensorRT-LLM executor (or the simulated one) with its response and stats threads.
///
/// Requests are enqueued with [`Executor::enqueue`], which returns a [`GenerationStream`]: an
/// async `Stream` (and a blocking iterator) of chunks ending in exactly one final item or error.
/// Dropping the stream cancels the request. Dropping the executor shuts it down, cancelling what
/// is still in flight.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use trtllm::{Executor, ExecutorConfig, GenerationRequest, StreamEvent};
/// let dir = tempfile::tempdir()?;
/// trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
/// let executor = Executor::load(dir.path(), ExecutorConfig::default())?;
/// let mut tokens = Vec::new();
/// for event in executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 8))?.blocking_iter() {
///     match event? {
///         StreamEvent::Chunk(chunk) => tokens.extend(chunk.token_ids),
///         StreamEvent::Final(done) => assert_eq!(done.token_ids(), tokens.as_slice()),
///     }
/// }
/// assert_eq!(tokens.len(), 8);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Executor {
    inner: Arc<Inner>,
}

impl Executor {
    /// Loads the engine in `engine_dir` and starts the response and stats threads.
    ///
    /// Reads the engine's config.json first, so a missing directory, a malformed config, a version
    /// mismatch or a configuration over the engine's limits is reported before the executor starts.
    pub fn load(engine_dir: impl AsRef<Path>, config: ExecutorConfig) -> Result<Self> {
        config.validate()?;
        let engine_dir = engine_dir.as_ref();
        let engine = EngineConfig::from_dir(engine_dir)?;
        let backend = Backend::current();
        if !config.allow_version_mismatch {
            version::check(&backend, &engine)?;
        }
        check_against_engine(&config, &engine)?;
        let dir = engine_dir.to_str().ok_or_else(|| Error::EngineDir {
            path: engine_dir.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "path is not valid UTF-8"),
        })?;
        tracing::info!(engine = %engine_dir.display(), backend = %backend, "loading executor");
        let handle = sys::new_executor(dir, &config.to_ffi()).map_err(|e| Error::from_executor(e.what()))?;
        let kv_events =
            (config.kv_cache_event_buffer_max_size > 0).then(|| KvEventHub::new(config.kv_cache_event_buffer_max_size));
        let (iteration_tx, _) = broadcast::channel(4096);
        let (request_stats_tx, _) = broadcast::channel(4096);
        let inner = Arc::new(Inner {
            handle,
            config,
            engine,
            backend,
            clock: SteadyClock::calibrate(),
            routes: Mutex::new(Routes::new()),
            routes_changed: Condvar::new(),
            accepting: AtomicBool::new(true),
            stop: AtomicBool::new(false),
            healthy: AtomicBool::new(true),
            shutdown_done: Mutex::new(false),
            threads: Mutex::new(Vec::new()),
            latest_iteration: RwLock::new(None),
            stats_poll: Mutex::new(()),
            iteration_tx,
            request_stats_tx,
            kv_events,
            failure: OnceLock::new(),
        });
        let spawn = |name: &str, body: fn(Arc<Inner>), inner: Arc<Inner>| {
            std::thread::Builder::new()
                .name(name.to_string())
                .spawn(move || body(inner))
                .map_err(|e| Error::Executor(format!("cannot start the {name} thread: {e}")))
        };
        let responses = spawn("trtllm-responses", router::run, inner.clone());
        let stats = spawn("trtllm-stats", stats_loop, inner.clone());
        let executor = Executor { inner };
        // On a failed spawn, Drop shuts down whatever did start.
        let threads = vec![responses?, stats?];
        if let Ok(mut slot) = executor.inner.threads.lock() {
            *slot = threads;
        }
        KvEventHub::start(&executor.inner)?;
        Ok(executor)
    }

    /// Validates `request` against the engine's limits and hands it to the executor.
    ///
    /// The request is registered for routing under the same lock as the executor call, so no
    /// response can be lost. Errors: [`Error::InvalidRequest`] (nothing enqueued),
    /// [`Error::QueueFull`], [`Error::ShutDown`], [`Error::Executor`].
    pub fn enqueue(&self, request: GenerationRequest) -> Result<GenerationStream> {
        self.check(&request)?;
        let spec = request.to_ffi();
        let mut streams =
            self.register(std::slice::from_ref(&request), |handle| handle.enqueue(&spec).map(|id| vec![id]))?;
        Ok(streams.remove(0))
    }

    /// Validates every request, then hands them all to the executor in one call
    /// (`enqueueRequests`): they join its queue together, so the first is not scheduled before
    /// the last has arrived. Streams come back in the order given.
    ///
    /// All or nothing: if any request is invalid, or the executor refuses the batch (a full queue
    /// counts every request), none is enqueued. Errors as for [`Executor::enqueue`]; an invalid
    /// request's error names it by its position.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use trtllm::{Executor, ExecutorConfig, GenerationRequest, StreamEvent};
    /// let dir = tempfile::tempdir()?;
    /// trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
    /// let executor = Executor::load(dir.path(), ExecutorConfig::default())?;
    /// let requests = (0..4).map(|i| GenerationRequest::new(vec![1, 2, 3 + i], 5)).collect();
    /// for stream in executor.enqueue_many(requests)? {
    ///     let last = stream.blocking_iter().last().expect("a terminal item")?;
    ///     let StreamEvent::Final(done) = last else { panic!("the last item is the final") };
    ///     assert_eq!(done.completion_tokens, 5);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn enqueue_many(&self, requests: Vec<GenerationRequest>) -> Result<Vec<GenerationStream>> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        for (index, request) in requests.iter().enumerate() {
            self.check(request).map_err(|e| match e {
                Error::InvalidRequest(reason) => Error::InvalidBatchRequest { index, reason },
                other => other,
            })?;
        }
        let specs: Vec<_> = requests.iter().map(GenerationRequest::to_ffi).collect();
        self.register(&requests, |handle| handle.enqueue_many(&specs).map(|ids| ids.into_iter().collect()))
    }

    /// The checks made before the executor sees a request: the engine's limits and the
    /// configured beam width.
    fn check(&self, request: &GenerationRequest) -> Result<()> {
        request.validate(&self.inner.engine)?;
        let beam_width = request.sampling().beam_width;
        if beam_width > self.inner.config.max_beam_width {
            return Err(
                InvalidRequest::BeamWidth { requested: beam_width, max: self.inner.config.max_beam_width }.into()
            );
        }
        Ok(())
    }

    /// Calls `submit` (which enqueues `requests` and returns their ids in order) with the routing
    /// table locked, registers a route per id before any response can be routed, and returns the
    /// streams.
    fn register(
        &self,
        requests: &[GenerationRequest],
        submit: impl FnOnce(&sys::ExecutorHandle) -> std::result::Result<Vec<u64>, cxx::Exception>,
    ) -> Result<Vec<GenerationStream>> {
        let (senders, receivers): (Vec<_>, Vec<_>) =
            requests.iter().map(|_| mpsc::channel(self.inner.config.stream_buffer)).unzip();
        let ends: Vec<_> = requests.iter().map(|_| Arc::new(OnceLock::new())).collect();
        let enqueued_at;
        let ids = {
            let mut routes = self.inner.routes.lock().map_err(|_| Error::Executor("routing table poisoned".into()))?;
            if !self.inner.accepting.load(Ordering::Acquire) {
                return Err(match self.inner.failure.get() {
                    Some(message) => Error::Executor(message.clone()),
                    None => Error::ShutDown,
                });
            }
            enqueued_at = Instant::now();
            let ids = submit(&self.inner.handle).map_err(|e| Error::from_executor(e.what()))?;
            if ids.len() != requests.len() {
                // Not expected from any executor; the ids cannot be matched to the requests, so
                // they are cancelled rather than left running unrouted.
                for id in &ids {
                    let _ = self.inner.handle.cancel(*id);
                }
                return Err(Error::Executor(format!(
                    "the executor returned {} request ids for {} requests",
                    ids.len(),
                    requests.len()
                )));
            }
            for ((id, tx), end) in ids.iter().zip(senders).zip(&ends) {
                routes.insert(*id, Route { tx, end: end.clone() });
            }
            ids
        };
        let tokens_per_block = u32::try_from(self.inner.engine.tokens_per_block).unwrap_or(u32::MAX);
        let streams = requests
            .iter()
            .zip(ids)
            .zip(receivers)
            .zip(ends)
            .map(|(((request, id), rx), end)| {
                let accumulator = Accumulator::new(
                    id,
                    request.prompt().len() as u32,
                    tokens_per_block,
                    request.sampling().sequences(),
                    request.streaming(),
                    request.sampling().beam_width > 1,
                    enqueued_at,
                );
                GenerationStream::new(self.inner.clone(), id, rx, end, accumulator)
            })
            .collect();
        Ok(streams)
    }

    /// Cancels a request by id. Its stream ends with a final whose reason is `Cancelled`.
    /// Cancelling a finished or unknown id does nothing.
    pub fn cancel(&self, request_id: u64) -> Result<()> {
        self.inner.handle.cancel(request_id).map_err(|e| Error::from_executor(e.what()))
    }

    /// Stops accepting requests, cancels or drains those in flight, stops the threads and shuts the
    /// executor down. Every open stream ends with a terminal item. Idempotent; blocks.
    pub fn shutdown(&self, mode: ShutdownMode) -> Result<()> {
        let inner = &self.inner;
        let Ok(mut done) = inner.shutdown_done.lock() else { return Ok(()) };
        if *done {
            return Ok(());
        }
        let ids: Vec<u64> = match inner.routes.lock() {
            Ok(routes) => {
                inner.accepting.store(false, Ordering::Release);
                routes.keys().copied().collect()
            }
            Err(_) => Vec::new(),
        };
        tracing::info!(in_flight = ids.len(), ?mode, "shutting down executor");
        if let ShutdownMode::Drain { timeout } = mode {
            self.wait_idle(timeout);
        }
        let remaining: Vec<u64> = inner.routes.lock().map(|r| r.keys().copied().collect()).unwrap_or_default();
        for id in remaining {
            inner.cancel_quietly(id);
        }
        // Cancelled finals arrive within an iteration or two; don't wait forever on a stuck executor.
        self.wait_idle(Duration::from_secs(10));
        inner.stop.store(true, Ordering::Release);
        let threads = inner.threads.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default();
        for thread in threads {
            let _ = thread.join();
        }
        let result = inner.handle.shutdown().map_err(|e| Error::from_executor(e.what()));
        // After the executor's shutdown, so that the events of its last iterations are delivered too.
        if let Some(hub) = &inner.kv_events {
            hub.stop_and_join();
        }
        inner.fail_all(EndCause::ShutDown);
        *done = true;
        result
    }

    /// Waits until no request is in flight, for at most `timeout`. Returns whether it is idle.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let Ok(mut routes) = self.inner.routes.lock() else { return false };
        while !routes.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            match self.inner.routes_changed.wait_timeout(routes, deadline - now) {
                Ok((guard, _)) => routes = guard,
                Err(_) => return false,
            }
        }
        true
    }

    /// Whether this process may enqueue: false after shutdown, and on non-leader ranks of a
    /// multi-GPU leader-mode run (which must not serve).
    pub fn can_enqueue(&self) -> bool {
        self.inner.accepting.load(Ordering::Acquire) && self.inner.handle.can_enqueue().unwrap_or(false)
    }

    /// Requests registered and not yet finished.
    pub fn in_flight(&self) -> usize {
        self.inner.routes.lock().map(|r| r.len()).unwrap_or(0)
    }

    /// True while requests are accepted and the response thread is running.
    pub fn is_healthy(&self) -> bool {
        self.inner.healthy.load(Ordering::Acquire) && self.inner.accepting.load(Ordering::Acquire)
    }

    /// The engine's configuration.
    pub fn engine(&self) -> &EngineConfig {
        &self.inner.engine
    }

    /// The executor configuration it was loaded with.
    pub fn config(&self) -> &ExecutorConfig {
        &self.inner.config
    }

    /// The most requests it runs at once: the configured `max_batch_size`, capped by the
    /// engine's (at least 1).
    pub fn max_batch_size(&self) -> usize {
        let engine = self.inner.engine.max_batch_size;
        self.inner.config.max_batch_size.map_or(engine, |b| (b as usize).min(engine)).max(1)
    }

    /// Which executor this is: `tensorrt-llm <version>` or `simulated`.
    pub fn backend(&self) -> &Backend {
        &self.inner.backend
    }

    /// The most recent iteration's stats, if any iteration has run.
    pub fn latest_iteration_stats(&self) -> Option<IterationStats> {
        self.inner.latest_iteration.read().ok().and_then(|s| s.clone())
    }

    /// The most recent KV-cache figures.
    pub fn kv_cache_stats(&self) -> Option<KvCacheStats> {
        self.latest_iteration_stats().and_then(|s| s.kv_cache)
    }

    /// Every iteration's stats from now on (a lagging receiver loses the oldest).
    pub fn subscribe_iteration_stats(&self) -> broadcast::Receiver<Arc<IterationStats>> {
        self.inner.iteration_tx.subscribe()
    }

    /// Per-request stats of every iteration from now on; empty unless
    /// `request_stats_max_iterations` > 0.
    pub fn subscribe_request_stats(&self) -> broadcast::Receiver<Arc<RequestStatsPerIteration>> {
        self.inner.request_stats_tx.subscribe()
    }

    /// Drains the executor's stats buffers now instead of waiting for the next poll.
    pub fn refresh_stats(&self) {
        self.inner.poll_stats();
    }

    /// The KV-cache events recorded since the last call (at most `kv_cache_event_buffer_max_size`, the
    /// oldest dropped first), waiting up to `timeout` for one when there is none: TensorRT-LLM's
    /// `getLatestEvents`. Subscribers of [`Executor::subscribe_kv_events`] see the same events; this queue
    /// is separate from theirs. After shutdown it returns what is left, at once.
    ///
    /// Errors: [`Error::KvEventsDisabled`] unless `kv_cache_event_buffer_max_size` > 0.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use trtllm::{Executor, ExecutorConfig, GenerationRequest, KvCacheEventData};
    /// let dir = tempfile::tempdir()?;
    /// trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
    /// let config = ExecutorConfig::builder().kv_cache_event_buffer_max_size(1024).build()?;
    /// let executor = Executor::load(dir.path(), config)?;
    /// // The first event says how large the cache is.
    /// let created = executor.kv_cache_events(Duration::from_secs(5))?;
    /// assert!(matches!(created[0].data, KvCacheEventData::Created { .. }));
    /// // A 65-token prompt fills two blocks of 32 tokens (its last token is always computed, never cached).
    /// let prompt: Vec<u32> = (1..=65).collect();
    /// executor.enqueue(GenerationRequest::new(prompt.clone(), 1))?.blocking_iter().for_each(drop);
    /// let events = executor.kv_cache_events(Duration::from_secs(5))?;
    /// let KvCacheEventData::Stored { parent_hash, blocks } = &events[0].data else { panic!("{events:?}") };
    /// assert_eq!(*parent_hash, None);
    /// assert_eq!(blocks.len(), 2);
    /// assert_eq!(blocks[0].token_ids, prompt[..32]);
    /// # Ok(()) }
    /// ```
    pub fn kv_cache_events(&self, timeout: Duration) -> Result<Vec<KvCacheEvent>> {
        let hub = self.inner.kv_events.as_ref().ok_or(Error::KvEventsDisabled)?;
        Ok(hub.take(timeout))
    }

    /// Every KV-cache event from now on, for any number of subscribers; see [`KvEventStream`].
    ///
    /// Errors: [`Error::KvEventsDisabled`] unless `kv_cache_event_buffer_max_size` > 0;
    /// [`Error::ShutDown`] after shutdown.
    pub fn subscribe_kv_events(&self) -> Result<KvEventStream> {
        self.inner.kv_events.as_ref().ok_or(Error::KvEventsDisabled)?.subscribe()
    }
}

impl Drop for Executor {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown(ShutdownMode::Cancel) {
            tracing::debug!(error = %e, "shutdown on drop");
        }
    }
}

fn check_against_engine(config: &ExecutorConfig, engine: &EngineConfig) -> Result<()> {
    let over = |what: &str, value: u32, limit: usize| {
        Err(Error::InvalidConfig(format!("{what} {value} exceeds the engine's build limit of {limit}")))
    };
    if config.max_beam_width as usize > engine.max_beam_width {
        return over("max_beam_width", config.max_beam_width, engine.max_beam_width);
    }
    if let Some(b) = config.max_batch_size
        && b as usize > engine.max_batch_size
    {
        return over("max_batch_size", b, engine.max_batch_size);
    }
    if let Some(t) = config.max_num_tokens
        && t as usize > engine.max_num_tokens
    {
        return over("max_num_tokens", t, engine.max_num_tokens);
    }
    Ok(())
}
