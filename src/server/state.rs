//! The state every part of the server shares: the executor, the tokenizer, the requests in flight,
//! the limits, the shutdown lifecycle and the KV event sources.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Semaphore;

use super::convert::WallClock;
use super::disagg::Disaggregation;
use super::engine_load::LoadTracker;
use super::kv_feed::KvFeed;
use super::lifecycle::Lifecycle;
use super::limits::RequestLimits;
use super::live::LiveTable;
use super::metrics::ServerMetrics;
use super::options::ServeOptions;
use crate::text::Tokenizer;
use crate::{AsyncExecutor, Error};

/// Shared state of the service.
#[derive(Debug)]
pub struct ServiceState {
    pub(crate) executor: AsyncExecutor,
    pub(crate) tokenizer: Option<Tokenizer>,
    /// The requests in flight by client request id.
    pub(crate) live: Arc<LiveTable>,
    pub(crate) wall: WallClock,
    pub(crate) slots: Option<Arc<Semaphore>>,
    pub(crate) heartbeat: Duration,
    pub(crate) metrics: Option<Arc<ServerMetrics>>,
    pub(crate) limits: RequestLimits,
    pub(crate) default_deadline: Option<Duration>,
    pub(crate) lifecycle: Lifecycle,
    /// The KV event feed and load tracker behind SubscribeKvEvents.
    pub(crate) kv: KvSources,
    next_anonymous: AtomicU64,
    /// The largest message either side may send (`--max-message-size`).
    pub(crate) max_message_size: usize,
    /// The worker's disaggregation role, its legs in flight and finished contexts.
    pub(crate) disagg: Arc<Disaggregation>,
}

impl ServiceState {
    /// The state of a service over `executor` configured by `options`.
    pub(crate) fn new(
        executor: AsyncExecutor,
        tokenizer: Option<Tokenizer>,
        options: &ServeOptions,
        metrics: Option<Arc<ServerMetrics>>,
    ) -> Self {
        let limits = RequestLimits::of(executor.executor());
        ServiceState {
            executor,
            tokenizer,
            live: Arc::new(LiveTable::default()),
            wall: WallClock::now(),
            slots: options.max_concurrent_requests.map(|n| Arc::new(Semaphore::new(n))),
            heartbeat: options.kv_heartbeat,
            metrics,
            limits,
            default_deadline: options.default_deadline,
            lifecycle: Lifecycle::new(options.grace_period),
            kv: KvSources::default(),
            next_anonymous: AtomicU64::new(1),
            max_message_size: options.max_message_size,
            disagg: Arc::new(Disaggregation::new(options.disagg_role)),
        }
    }

    /// Refuses new work from now on: health goes NOT_SERVING, new Generate calls get
    /// UNAVAILABLE, and subscriptions end.
    pub fn begin_shutdown(&self) {
        self.lifecycle.draining.cancel();
    }

    /// Why the server cannot take work, if it cannot: shutting down, or every issue the executor
    /// reports (see [`crate::Executor::health`]), joined with "; ".
    pub(crate) fn healthy(&self) -> Result<(), String> {
        if self.lifecycle.is_draining() {
            return Err("the server is shutting down".into());
        }
        let issues = self.executor.executor().health();
        if !issues.is_empty() {
            let reasons: Vec<String> = issues.iter().map(ToString::to_string).collect();
            return Err(format!("the executor is unhealthy: {}", reasons.join("; ")));
        }
        if !self.executor.executor().is_healthy() {
            return Err("the executor has failed (its response thread stopped); restart the server".into());
        }
        Ok(())
    }

    /// Why a new request must be refused outright, if it must: shutting down, or an executor that
    /// can run nothing. Softer issues (enqueue or stats failing, requests failing) turn health
    /// NOT_SERVING but still let requests through, so that recovery shows.
    pub(crate) fn admits(&self) -> Result<(), String> {
        if self.lifecycle.is_draining() {
            return Err("the server is shutting down".into());
        }
        let executor = self.executor.executor();
        if let Some(fatal) = executor.health().into_iter().find(crate::HealthIssue::is_fatal) {
            return Err(format!("the executor has failed: {fatal}"));
        }
        if !executor.is_healthy() {
            return Err("the executor has failed (its response thread stopped); restart the server".into());
        }
        Ok(())
    }

    /// Whether the executor as a whole is failing (not just one request): then a request's executor
    /// error is UNAVAILABLE (try another server) rather than INTERNAL.
    pub(crate) fn executor_failing(&self) -> bool {
        let executor = self.executor.executor();
        !executor.is_healthy() || executor.requests_failing() || executor.health().iter().any(|i| i.kind() == "enqueue")
    }

    /// The client's request id, or a fresh server-made one when the client sent none.
    pub(crate) fn request_id(&self, given: &str) -> String {
        if given.is_empty() {
            format!("trtllm-{}", self.next_anonymous.fetch_add(1, Ordering::Relaxed))
        } else {
            given.to_string()
        }
    }
}

/// The server's KV event feed and load tracker, started with the server (or by the first
/// subscription when the service runs without [`super::serve`]).
#[derive(Debug, Default)]
pub(crate) struct KvSources {
    started: OnceLock<(Arc<KvFeed>, Arc<LoadTracker>)>,
}

impl KvSources {
    /// The feed and the tracker; must be called on a tokio runtime.
    pub(crate) fn get(&self, executor: &AsyncExecutor) -> (Arc<KvFeed>, Arc<LoadTracker>) {
        self.started
            .get_or_init(|| {
                let executor = executor.executor();
                let block_size = i32::try_from(executor.engine().tokens_per_block()).unwrap_or(i32::MAX);
                let feed = match executor.subscribe_kv_events() {
                    Ok(events) => KvFeed::start(events, block_size),
                    Err(Error::KvEventsDisabled) => {
                        tracing::info!(
                            "the executor keeps no KV-cache events (kv_cache_event_buffer_max_size 0): \
                             SubscribeKvEvents streams load only"
                        );
                        KvFeed::disabled()
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "no KV-cache events: SubscribeKvEvents streams load only");
                        KvFeed::disabled()
                    }
                };
                let max_running = u32::try_from(executor.max_batch_size()).unwrap_or(u32::MAX);
                (feed, LoadTracker::start(executor, max_running))
            })
            .clone()
    }
}
