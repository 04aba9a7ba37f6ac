//! `EngineLoad` records: the load the gateway routes on, from iteration stats and requests in flight.
//!
//! The gateway treats the record on a `KvEventBatch` as a fresh poll of the worker: it routes
//! least-load and power-of-two on the running and waiting counts and on `token_usage`, and admits
//! requests against `max_running_requests` and the token capacity (`num_used_tokens` plus the
//! request's tokens within `max_total_num_tokens`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::proto::smg::grpc::common as cpb;
use crate::{Executor, IterationStats};

/// The span `gen_throughput` averages over.
const THROUGHPUT_WINDOW: Duration = Duration::from_secs(2);

#[derive(Debug, Default)]
struct Samples {
    /// The newest iteration's stats and when they reached the server.
    latest: Option<(Arc<IterationStats>, Instant)>,
    /// Tokens generated per iteration, by arrival, over the last `THROUGHPUT_WINDOW`.
    recent: VecDeque<(Instant, u64)>,
}

/// Follows the executor's iteration stats for the load records.
#[derive(Debug)]
pub(crate) struct LoadTracker {
    samples: Mutex<Samples>,
    started: Instant,
    /// The executor's batch size, when the stats do not say it.
    max_running: u32,
    /// Ends the task that follows the stats, when the tracker goes.
    stop: CancellationToken,
}

impl Drop for LoadTracker {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl LoadTracker {
    /// Starts following `executor`'s iteration stats on the current runtime.
    pub(crate) fn start(executor: &Executor, max_running: u32) -> Arc<Self> {
        let latest = executor.latest_iteration_stats().map(|s| (Arc::new(s), Instant::now()));
        let tracker = Arc::new(LoadTracker {
            samples: Mutex::new(Samples { latest, recent: VecDeque::new() }),
            started: Instant::now(),
            max_running,
            stop: CancellationToken::new(),
        });
        let mut iterations = executor.subscribe_iteration_stats();
        let weak: Weak<LoadTracker> = Arc::downgrade(&tracker);
        let stop = tracker.stop.clone();
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    _ = stop.cancelled() => return,
                    received = iterations.recv() => received,
                };
                match received {
                    Ok(stats) => match weak.upgrade() {
                        Some(tracker) => tracker.record(stats),
                        None => return,
                    },
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                }
            }
        });
        tracker
    }

    fn record(&self, stats: Arc<IterationStats>) {
        let now = Instant::now();
        let mut samples = self.samples.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // Each request in the generation phase adds one token per iteration.
        let tokens = stats.inflight_batching.map_or(0, |b| b.num_gen_requests.max(0) as u64);
        samples.recent.push_back((now, tokens));
        while samples.recent.front().is_some_and(|&(at, _)| now.duration_since(at) > THROUGHPUT_WINDOW) {
            samples.recent.pop_front();
        }
        samples.latest = Some((stats, now));
    }

    /// The load now, as the `sample`-th record of a stream.
    ///
    /// The iteration stats describe the last iteration that ran; an idle executor runs none, so
    /// its last stats would still show the final request running. The requests registered with
    /// the executor are known at every moment, so they bound the counts: with none in flight the
    /// executor runs nothing, queues nothing and holds no KV blocks for a sequence (blocks kept
    /// for reuse count as free, as the executor counts them), and the figures are exact, with
    /// `age_ms` 0. Otherwise `age_ms` is how long ago the stats they come from arrived.
    pub(crate) fn load(&self, executor: &Executor, sample: u64) -> cpb::EngineLoad {
        let in_flight = u32::try_from(executor.in_flight()).unwrap_or(u32::MAX);
        let samples = self.samples.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        let latest = samples.latest.as_ref().map(|(stats, at)| (stats.as_ref(), *at));
        let idle = in_flight == 0;
        let running = match latest {
            Some((stats, _)) if !idle => (stats.num_active_requests.max(0) as u32).min(in_flight),
            _ => 0,
        };
        // Requests the last iteration did not schedule, including those enqueued since.
        let waiting = in_flight - running;
        let kv = latest.and_then(|(stats, _)| stats.kv_cache);
        let used_blocks = kv.map_or(0, |k| if idle { 0 } else { k.used_num_blocks.max(0) });
        let paused = latest.and_then(|(stats, _)| stats.inflight_batching).map_or(0, |b| b.num_paused_requests);
        let tokens: u64 = samples
            .recent
            .iter()
            .filter(|&&(at, _)| now.duration_since(at) <= THROUGHPUT_WINDOW)
            .map(|&(_, n)| n)
            .sum();
        let span = now.duration_since(self.started).min(THROUGHPUT_WINDOW).as_secs_f64();
        let age_ms = match latest {
            Some((_, at)) if !idle => u32::try_from(now.duration_since(at).as_millis()).unwrap_or(u32::MAX),
            // Requests run but no stats ever came (the stats poll fails): the figures are as old
            // as the tracker, not fresh.
            None if !idle => u32::try_from(now.duration_since(self.started).as_millis()).unwrap_or(u32::MAX),
            _ => 0,
        };
        let max_running = latest
            .map(|(stats, _)| stats.max_num_active_requests)
            .filter(|&n| n > 0)
            .map_or(self.max_running, |n| n as u32);
        cpb::EngineLoad {
            running_requests: running,
            waiting_requests: waiting,
            token_usage: kv.map_or(0.0, |k| {
                if k.max_num_blocks > 0 { f64::from(used_blocks) / f64::from(k.max_num_blocks) } else { 0.0 }
            }),
            gen_throughput: if span > 0.0 { tokens as f64 / span } else { 0.0 },
            max_running_requests: max_running,
            age_ms,
            sample,
            load_only: true,
            // The executor's own figure: reused blocks over blocks looked up, since it started.
            // Unset until a lookup happened, rather than a misleading 0.
            cache_hit_rate: kv
                .filter(|k| k.reused_blocks + k.missed_blocks > 0)
                .map(|k| f64::from(k.cache_hit_rate).clamp(0.0, 1.0)),
            num_used_tokens: kv.map(|k| used_blocks.saturating_mul(k.tokens_per_block)),
            // Known from the cache's configuration before the first iteration reports it.
            max_total_num_tokens: kv
                .map(|k| k.max_num_blocks.saturating_mul(k.tokens_per_block))
                .or_else(|| executor.kv_cache_capacity_tokens().map(|t| i32::try_from(t).unwrap_or(i32::MAX))),
            queues: Some(cpb::EngineQueues {
                waiting: i32::try_from(waiting).unwrap_or(i32::MAX),
                paused: if idle { 0 } else { paused },
                ..Default::default()
            }),
            // Weights, graphs and the KV pool's bytes are not reported by the executor's API.
            memory: None,
            ..Default::default()
        }
    }
}
