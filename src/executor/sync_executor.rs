//! The safe executor: loads an engine, enqueues requests, shuts down; owns the threads.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::broadcast;

use super::accumulator::Accumulator;
#[cfg(feature = "guided")]
use super::guide_check::GuideCompiler;
use super::kv_events::{KvEventHub, KvEventStream};
use super::responses;
use super::shared::{EndCause, Shared};
use super::stats_poller::StatsPoller;
use super::stream::GenerationStream;
use crate::engine::EngineConfig;
use crate::engine::simulation_json::{ClockMode, SimulationJson};
use crate::error::{Error, InvalidRequest, Result};
use crate::ffi::sys;
use crate::types::config::ExecutorConfig;
use crate::types::disagg::RequestType;
use crate::types::handoff::EngineFingerprint;
use crate::types::ids::RequestId;
use crate::types::kv_event::KvCacheEvent;
use crate::types::request::GenerationRequest;
use crate::types::stats::{IterationStats, KvCacheStats, RequestStatsPerIteration};
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
    pub(super) shared: Arc<Shared>,
    stats: Arc<StatsPoller>,
    /// KV-cache event delivery, when the executor records events.
    kv_events: Option<Arc<KvEventHub>>,
    config: ExecutorConfig,
    engine: EngineConfig,
    /// What a KV handoff from or to this executor must match (disaggregated serving).
    fingerprint: EngineFingerprint,
    backend: Backend,
    /// Compiles guides before enqueue (when the executor has a llguidance guided decoding config).
    #[cfg(feature = "guided")]
    guides: Option<GuideCompiler>,
    /// Whether this is the simulated executor on its virtual clock (see [`Executor::sim_control`]).
    pub(super) virtual_clock: bool,
    shutdown_done: Mutex<bool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
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
        let dir = engine_dir.to_str().ok_or_else(|| Error::EngineDir {
            path: engine_dir.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidInput, "path is not valid UTF-8"),
        })?;
        let virtual_clock = !cfg!(trtllm_real)
            && crate::engine::read_json_or_default::<SimulationJson>(&engine_dir.join("simulation.json"))
                .is_ok_and(|s| s.clock == ClockMode::Virtual);
        Self::start(dir, engine, virtual_clock, config)
    }

    /// Starts the executor on `engine`, which the executor library finds under `engine_dir`: a directory,
    /// or the key of an engine the simulator holds (`crate::sim::SimulatedEngine::start`). `config` was
    /// validated; `virtual_clock` says whether the engine runs the simulator's virtual clock.
    pub(crate) fn start(
        engine_dir: &str,
        engine: EngineConfig,
        virtual_clock: bool,
        config: ExecutorConfig,
    ) -> Result<Self> {
        let backend = Backend::current();
        if !config.allow_version_mismatch {
            version::check(&backend, &engine)?;
        }
        check_against_engine(&config, &engine)?;
        // Before the executor: the simulated executor's grammar engine then finds this factory.
        #[cfg(feature = "guided")]
        let guides = GuideCompiler::for_config(config.guided_decoding.as_ref())?;
        tracing::info!(engine = %engine.dir().display(), backend = %backend, "loading executor");
        let handle = sys::new_executor(engine_dir, &config.to_ffi()).map_err(|e| Error::from_executor(e.what()))?;
        if let Some(link) = &config.sim_kv_link
            && backend.is_simulated()
        {
            handle
                .sim_set_kv_link(link.bandwidth_gb_s, link.latency_us, link.efficiency)
                .map_err(|e| Error::from_executor(e.what()))?;
        }
        let shared = Arc::new(Shared::new(handle));
        let stats = Arc::new(StatsPoller::new(shared.clone(), config.request_stats_max_iterations > 0, virtual_clock));
        let kv_events = (config.kv_cache_event_buffer_max_size > 0)
            .then(|| Arc::new(KvEventHub::new(config.kv_cache_event_buffer_max_size)));
        let (response_poll, stats_poll) = (config.response_poll_interval, config.stats_poll_interval);
        let executor = Executor {
            shared: shared.clone(),
            stats: stats.clone(),
            kv_events: kv_events.clone(),
            config,
            fingerprint: EngineFingerprint::of(engine.description()),
            engine,
            backend,
            #[cfg(feature = "guided")]
            guides,
            virtual_clock,
            shutdown_done: Mutex::new(false),
            threads: Mutex::new(Vec::new()),
        };
        // On a failed spawn, Drop shuts down whatever did start.
        let responses = responses::spawn(shared.clone(), response_poll);
        let stats = stats.start(stats_poll);
        let threads = vec![responses?, stats?];
        if let Ok(mut slot) = executor.threads.lock() {
            *slot = threads;
        }
        if let Some(hub) = &kv_events {
            hub.start(shared)?;
        }
        Ok(executor)
    }

    /// Validates `request` against the engine's limits and hands it to the executor.
    ///
    /// The request is registered for routing under the same lock as the executor call, so no
    /// response can be lost. Errors: [`Error::InvalidRequest`] (nothing enqueued),
    /// [`Error::QueueFull`], [`Error::ShutDown`], [`Error::ExecutorFailed`].
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
    pub(super) fn check(&self, request: &GenerationRequest) -> Result<()> {
        request.validate(&self.engine)?;
        if request.guided_decoding().is_some() && self.config.guided_decoding.is_none() {
            return Err(Error::GuidedDecodingDisabled);
        }
        #[cfg(feature = "guided")]
        if let (Some(guide), Some(guides)) = (request.guided_decoding(), &self.guides) {
            guides.check(guide)?;
        }
        let beam_width = request.sampling().beam_width;
        if beam_width > self.config.max_beam_width {
            return Err(InvalidRequest::BeamWidth { requested: beam_width, max: self.config.max_beam_width }.into());
        }
        Ok(())
    }

    /// Registers `requests` for routing while `submit` hands them to the executor (see
    /// [`Shared::register`]) and returns their streams.
    pub(super) fn register(
        &self,
        requests: &[GenerationRequest],
        submit: impl FnOnce(&sys::ExecutorHandle) -> std::result::Result<Vec<u64>, cxx::Exception>,
    ) -> Result<Vec<GenerationStream>> {
        let (enqueued_at, registrations) = self.shared.register(requests.len(), self.config.stream_buffer, submit)?;
        let tokens_per_block = u32::try_from(self.engine.tokens_per_block()).unwrap_or(u32::MAX);
        let streams = requests
            .iter()
            .zip(registrations)
            .map(|(request, registration)| {
                let origin = (request.request_type() == RequestType::ContextOnly).then(|| self.fingerprint.clone());
                let accumulator = Accumulator::new(
                    registration.id,
                    request.prompt().len() as u32,
                    tokens_per_block,
                    request.sampling().sequences(),
                    request.streaming(),
                    request.sampling().beam_width > 1,
                    enqueued_at,
                )
                .with_handoff_origin(origin);
                GenerationStream::new(self.shared.clone(), registration, accumulator)
            })
            .collect();
        Ok(streams)
    }

    /// Cancels a request by id. Its stream ends with a final whose reason is `Cancelled`.
    /// Cancelling a finished or unknown id does nothing.
    pub fn cancel(&self, request_id: RequestId) -> Result<()> {
        self.shared.cancel_checked(request_id.get())
    }

    /// Stops accepting requests, cancels or drains those in flight, stops the threads and shuts the
    /// executor down. Every open stream ends with a terminal item. Idempotent; blocks.
    pub fn shutdown(&self, mode: ShutdownMode) -> Result<()> {
        let Ok(mut done) = self.shutdown_done.lock() else { return Ok(()) };
        if *done {
            return Ok(());
        }
        let in_flight = self.shared.stop_accepting();
        tracing::info!(in_flight, ?mode, "shutting down executor");
        if let ShutdownMode::Drain { timeout } = mode {
            self.wait_idle(timeout);
        }
        for id in self.shared.in_flight_ids() {
            self.shared.cancel_quietly(id);
        }
        // Cancelled finals arrive within an iteration or two; don't wait forever on a stuck executor.
        self.wait_idle(Duration::from_secs(10));
        self.shared.request_stop();
        let threads = self.threads.lock().map(|mut t| std::mem::take(&mut *t)).unwrap_or_default();
        for thread in threads {
            let _ = thread.join();
        }
        let result = self.shared.handle().shutdown().map_err(|e| Error::from_executor(e.what()));
        // After the executor's shutdown, so that the events of its last iterations are delivered too.
        if let Some(hub) = &self.kv_events {
            hub.stop_and_join();
        }
        self.shared.fail_all(EndCause::ShutDown);
        *done = true;
        result
    }

    /// Waits until no request is in flight, for at most `timeout`. Returns whether it is idle.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        self.shared.wait_idle(timeout)
    }

    /// How many requests have ended so far: completed, cancelled, failed.
    pub fn totals(&self) -> super::totals::RequestTotals {
        self.shared.totals.read()
    }

    /// Whether this process may enqueue: false after shutdown, and on non-leader ranks of a
    /// multi-GPU leader-mode run (which must not serve).
    pub fn can_enqueue(&self) -> bool {
        self.shared.is_accepting() && self.shared.handle().can_enqueue().unwrap_or(false)
    }

    /// Requests registered and not yet finished.
    pub fn in_flight(&self) -> usize {
        self.shared.in_flight()
    }

    /// True while requests are accepted and the response thread is running.
    pub fn is_healthy(&self) -> bool {
        self.shared.is_healthy()
    }

    /// Why the executor is not fit to take work, the fatal issue first; empty when it is. Derived
    /// from its real state: the response thread alive, the last enqueue and stats poll succeeding,
    /// and requests not all failing. Every issue but a stopped response thread clears itself when
    /// the state recovers.
    pub fn health(&self) -> Vec<super::health::HealthIssue> {
        self.shared.health.issues()
    }

    /// Whether the last requests all failed (see [`super::HealthIssue::RequestsFailing`]).
    pub fn requests_failing(&self) -> bool {
        self.shared.health.requests_failing()
    }

    /// The KV cache's capacity in tokens, known from the start: the executor's Created event
    /// (with KV-cache events on; its poller reads it within milliseconds of loading), else the
    /// configured `kv_cache_max_tokens`. `None` when neither
    /// says; iteration stats report it once an iteration has run.
    pub fn kv_cache_capacity_tokens(&self) -> Option<u64> {
        let from_event = self.kv_events.as_ref().and_then(|hub| hub.created_blocks());
        let from_event = from_event.map(|blocks| blocks.saturating_mul(self.engine.tokens_per_block() as u64));
        from_event.or(self.config.kv_cache_max_tokens.map(u64::from))
    }

    /// Cancel calls that threw since the start: each left a request running in the executor.
    pub fn cancel_failures(&self) -> u64 {
        self.shared.health.cancel_failures()
    }

    /// The engine's configuration.
    pub fn engine(&self) -> &EngineConfig {
        &self.engine
    }

    /// What a KV handoff made by or given to this executor must match (see [`EngineFingerprint`]).
    pub fn fingerprint(&self) -> &EngineFingerprint {
        &self.fingerprint
    }

    /// The executor configuration it was loaded with.
    pub fn config(&self) -> &ExecutorConfig {
        &self.config
    }

    /// The most requests it runs at once: the configured `max_batch_size`, capped by the
    /// engine's (at least 1).
    pub fn max_batch_size(&self) -> usize {
        let engine = self.engine.max_batch_size();
        self.config.max_batch_size.map_or(engine, |b| (b as usize).min(engine)).max(1)
    }

    /// Which executor this is: `tensorrt-llm <version>` or `simulated`.
    pub fn backend(&self) -> &Backend {
        &self.backend
    }

    /// The most recent iteration's stats, if any iteration has run.
    pub fn latest_iteration_stats(&self) -> Option<IterationStats> {
        self.stats.latest_iteration()
    }

    /// The most recent KV-cache figures.
    pub fn kv_cache_stats(&self) -> Option<KvCacheStats> {
        self.latest_iteration_stats().and_then(|s| s.kv_cache)
    }

    /// Every iteration's stats from now on (a lagging receiver loses the oldest).
    pub fn subscribe_iteration_stats(&self) -> broadcast::Receiver<Arc<IterationStats>> {
        self.stats.subscribe_iterations()
    }

    /// Per-request stats of every iteration from now on; empty unless
    /// `request_stats_max_iterations` > 0.
    pub fn subscribe_request_stats(&self) -> broadcast::Receiver<Arc<RequestStatsPerIteration>> {
        self.stats.subscribe_requests()
    }

    /// Drains the executor's stats buffers now instead of waiting for the next poll.
    pub fn refresh_stats(&self) {
        self.stats.poll();
    }

    /// Stats batches drained from the executor that a subscriber a full buffer behind has not
    /// had room for yet (only on the virtual clock, where none is dropped): a reader that must
    /// see every batch keeps reading until this is 0.
    pub(crate) fn stats_backlog(&self) -> usize {
        self.stats.backlog()
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
        let hub = self.kv_events.as_ref().ok_or(Error::KvEventsDisabled)?;
        Ok(hub.take(timeout))
    }

    /// Every KV-cache event from now on, for any number of subscribers; see [`KvEventStream`].
    ///
    /// Errors: [`Error::KvEventsDisabled`] unless `kv_cache_event_buffer_max_size` > 0;
    /// [`Error::ShutDown`] after shutdown.
    pub fn subscribe_kv_events(&self) -> Result<KvEventStream> {
        self.kv_events.as_ref().ok_or(Error::KvEventsDisabled)?.subscribe()
    }
}

// ---- LoRA ----
impl Executor {
    /// The LoRA device-cache counters since start: the simulated executor's own figures (TensorRT-LLM
    /// reports none, so a real executor returns `None`).
    pub fn lora_cache_stats(&self) -> Option<crate::lora::LoraCacheStats> {
        let item = self.shared.handle().lora_cache_counts().ok()?;
        crate::lora::LoraCacheStats::from_ffi(item)
    }

    /// The key of the simulated executor's modelled GPU telemetry (`crate::sim::telemetry::SimTelemetry::of`
    /// finds it); `None` on TensorRT-LLM.
    pub(crate) fn sim_telemetry_key(&self) -> Option<u64> {
        self.shared.handle().sim_telemetry_key().ok().filter(|key| *key != 0)
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
    if config.max_beam_width as usize > engine.max_beam_width() {
        return over("max_beam_width", config.max_beam_width, engine.max_beam_width());
    }
    if let Some(b) = config.max_batch_size
        && b as usize > engine.max_batch_size()
    {
        return over("max_batch_size", b, engine.max_batch_size());
    }
    if let Some(t) = config.max_num_tokens
        && t as usize > engine.max_num_tokens()
    {
        return over("max_num_tokens", t, engine.max_num_tokens());
    }
    Ok(())
}
