//! Executor iteration statistics over one point: collected while it runs, summarised as per-point deltas.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::{broadcast, oneshot};

use super::live::LiveStats;
use super::record::RunClock;
use crate::{Executor, IterationStats, KvCacheStats};

/// A moment seen on both clocks, to place Unix-epoch wall-clock stamps (a server's perf times,
/// an iteration's timestamp text) on this process's monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct WallAnchor {
    instant: Instant,
    unix: Duration,
}

impl WallAnchor {
    /// Reads both clocks now.
    pub fn now() -> Self {
        WallAnchor { instant: Instant::now(), unix: SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default() }
    }

    /// The instant of a Unix time in seconds; `None` for non-positive or unrepresentable times.
    pub fn instant_of_unix(&self, unix_s: f64) -> Option<Instant> {
        if !(unix_s.is_finite() && unix_s > 0.0) {
            return None;
        }
        let unix_s = Duration::from_secs_f64(unix_s);
        match unix_s.checked_sub(self.unix) {
            Some(after) => self.instant.checked_add(after),
            None => self.instant.checked_sub(self.unix - unix_s),
        }
    }
}

/// Parses an `IterationStats` timestamp (`"%m-%d-%Y %H:%M:%S.uuuuuu"`, local time) into Unix
/// seconds.
///
/// ```rust
/// use trtllm::bench::parse_iteration_timestamp;
///
/// let a = parse_iteration_timestamp("03-14-2025 09:26:53.500000").unwrap();
/// let b = parse_iteration_timestamp("03-14-2025 09:26:54.250000").unwrap();
/// assert!((b - a - 0.75).abs() < 1e-6);
/// assert_eq!(parse_iteration_timestamp("yesterday"), None);
/// ```
pub fn parse_iteration_timestamp(text: &str) -> Option<f64> {
    use chrono::TimeZone;
    let naive = chrono::NaiveDateTime::parse_from_str(text.trim(), "%m-%d-%Y %H:%M:%S%.f").ok()?;
    let local = chrono::Local.from_local_datetime(&naive).earliest()?;
    Some(local.timestamp_micros() as f64 / 1e6)
}

/// The iterations of one point's measured phase, as collected.
#[derive(Debug, Clone, Default)]
pub struct IterationLog {
    /// Every iteration received, in order.
    pub iterations: Vec<IterationStats>,
    /// Iterations the stats channel dropped because the collector fell behind.
    pub lagged: u64,
    /// The executor's KV figures just before the phase began (its counters are cumulative).
    pub baseline_kv: Option<KvCacheStats>,
}

impl IterationLog {
    /// Iteration numbers absent between the first and the last received (lost to the channel or
    /// to the executor's own stats buffer).
    pub fn missing_iterations(&self) -> u64 {
        let mut numbers: Vec<u64> = self.iterations.iter().map(|s| s.iter).collect();
        numbers.sort_unstable();
        numbers.dedup();
        match (numbers.first(), numbers.last()) {
            (Some(&first), Some(&last)) => (last - first + 1).saturating_sub(numbers.len() as u64),
            _ => 0,
        }
    }

    /// The log from iteration `first` on, for a phase that shared the executor with an
    /// earlier one: earlier iterations are dropped, and the KV counters at the end of the last
    /// dropped one become the baseline, so block reuse counts only the window.
    pub fn from_iteration(self, first: u64) -> IterationLog {
        let (before, window): (Vec<_>, Vec<_>) = self.iterations.into_iter().partition(|s| s.iter < first);
        let baseline_kv = before.iter().rev().find_map(|s| s.kv_cache).or(self.baseline_kv);
        IterationLog { iterations: window, lagged: self.lagged, baseline_kv }
    }

    /// End time of each forward pass, seconds on `clock`, by iteration number (from the
    /// timestamp text; entries that report an idle executor are skipped, as they reuse the
    /// next pass's number).
    pub fn end_times_s(&self, clock: &RunClock, anchor: &WallAnchor) -> BTreeMap<u64, f64> {
        self.iterations
            .iter()
            .filter(|s| s.num_active_requests > 0)
            .filter_map(|s| {
                let instant = anchor.instant_of_unix(parse_iteration_timestamp(&s.timestamp)?)?;
                Some((s.iter, clock.offset_s(instant)))
            })
            .collect()
    }

    /// `(time on clock, KV utilisation)` of every iteration with KV figures.
    pub fn kv_points(&self, clock: &RunClock, anchor: &WallAnchor) -> Vec<(f64, f64)> {
        self.iterations
            .iter()
            .filter_map(|s| {
                let kv = s.kv_cache?;
                let instant = anchor.instant_of_unix(parse_iteration_timestamp(&s.timestamp)?)?;
                Some((clock.offset_s(instant), kv.utilization()))
            })
            .collect()
    }
}

/// Receives an executor's iteration statistics while a phase runs, so none are lost to the
/// bounded stats channel however long the phase.
#[derive(Debug)]
pub struct IterationCollector {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<(Vec<IterationStats>, u64)>,
    baseline_kv: Option<KvCacheStats>,
}

impl IterationCollector {
    /// Flushes the executor's pending statistics, notes the KV counters as the baseline, and
    /// starts receiving. Must be called inside a Tokio runtime.
    pub fn start(executor: &Executor) -> Self {
        Self::start_live(executor, None)
    }

    /// [`IterationCollector::start`], also giving `live` each received iteration's KV-cache
    /// use and its active and queued requests (relaxed stores per iteration, where the batch
    /// is received).
    pub fn start_live(executor: &Executor, live: Option<Arc<LiveStats>>) -> Self {
        executor.refresh_stats();
        let baseline_kv = executor.kv_cache_stats();
        if let (Some(live), Some(kv)) = (&live, baseline_kv) {
            live.set_kv_utilization(kv.utilization());
        }
        let rx = executor.subscribe_iteration_stats();
        let (stop, stop_rx) = oneshot::channel();
        let task = tokio::spawn(collect(rx, stop_rx, live));
        IterationCollector { stop, task, baseline_kv }
    }

    /// Flushes the executor's statistics once more, stops, and returns what was received.
    pub async fn finish(self, executor: &Executor) -> IterationLog {
        executor.refresh_stats();
        // On the virtual clock no batch is dropped: those the collector had no room for yet are
        // still on their way, and the collector keeps reading until they are all in.
        while executor.stats_backlog() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let _ = self.stop.send(());
        let (iterations, lagged) = self.task.await.unwrap_or_default();
        IterationLog { iterations, lagged, baseline_kv: self.baseline_kv }
    }
}

async fn collect(
    mut rx: broadcast::Receiver<Arc<IterationStats>>,
    mut stop: oneshot::Receiver<()>,
    live: Option<Arc<LiveStats>>,
) -> (Vec<IterationStats>, u64) {
    let mut iterations = Vec::new();
    let mut lagged = 0_u64;
    let note_lag = |n: u64, lagged: &mut u64| *lagged += n;
    let receive = |stats: &IterationStats, iterations: &mut Vec<IterationStats>| {
        if let Some(live) = &live {
            if let Some(kv) = stats.kv_cache {
                live.set_kv_utilization(kv.utilization());
            }
            let count = |n: i32| u64::try_from(n).unwrap_or(0);
            live.set_executor_requests(count(stats.num_active_requests), count(stats.num_queued_requests));
        }
        iterations.push(stats.clone());
    };
    loop {
        tokio::select! {
            biased;
            item = rx.recv() => match item {
                Ok(stats) => receive(&stats, &mut iterations),
                Err(broadcast::error::RecvError::Lagged(n)) => note_lag(n, &mut lagged),
                Err(broadcast::error::RecvError::Closed) => break,
            },
            _ = &mut stop => break,
        }
    }
    // Whatever was sent before the stop signal is already in the channel.
    loop {
        match rx.try_recv() {
            Ok(stats) => receive(&stats, &mut iterations),
            Err(broadcast::error::TryRecvError::Lagged(n)) => note_lag(n, &mut lagged),
            Err(_) => break,
        }
    }
    // Counted, not logged: the run's summary says once how many were lost over all its points.
    (iterations, lagged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(iter: u64, reused: i32, missed: i32, used: i32) -> IterationStats {
        IterationStats {
            timestamp: "01-02-2025 03:04:05.000000".into(),
            iter,
            iter_latency_ms: 10.0,
            new_active_requests_queue_latency_ms: 0.0,
            num_new_active_requests: 0,
            num_active_requests: 1,
            num_queued_requests: 0,
            num_completed_requests: 0,
            max_num_active_requests: 8,
            max_batch_size_static: 8,
            max_batch_size_runtime: 8,
            max_num_tokens_static: 64,
            max_num_tokens_runtime: 64,
            gpu_mem_usage: 0,
            cpu_mem_usage: 0,
            pinned_mem_usage: 0,
            kv_cache: Some(KvCacheStats {
                max_num_blocks: 100,
                free_num_blocks: 100 - used,
                used_num_blocks: used,
                tokens_per_block: 32,
                alloc_total_blocks: 0,
                alloc_new_blocks: 0,
                reused_blocks: reused,
                missed_blocks: missed,
                cache_hit_rate: 0.0,
            }),
            inflight_batching: None,
            static_batching: None,
            spec_decoding: None,
        }
    }

    #[test]
    fn kv_reuse_is_a_delta_over_the_phase() {
        let log = IterationLog {
            iterations: vec![stats(10, 40, 10, 5), stats(11, 46, 12, 20)],
            lagged: 0,
            baseline_kv: stats(9, 40, 10, 0).kv_cache,
        };
        let kv = log.kv_summary().figures().cloned().unwrap();
        assert_eq!(kv.reused_blocks, Some(6));
        assert_eq!(kv.missed_blocks, Some(2));
        assert_eq!(kv.cache_hit_rate, Some(0.75));
        assert_eq!(kv.max_utilization, 0.2);
        assert_eq!(kv.counted_from, "start of the measured phase");
    }

    #[test]
    fn a_window_counts_reuse_from_the_iteration_before_it() {
        let log = IterationLog {
            iterations: vec![stats(10, 40, 10, 5), stats(11, 46, 12, 20), stats(12, 50, 15, 21)],
            lagged: 1,
            baseline_kv: stats(9, 30, 0, 0).kv_cache,
        };
        let window = log.from_iteration(11);
        assert_eq!(window.iterations.iter().map(|s| s.iter).collect::<Vec<_>>(), [11, 12]);
        assert_eq!(window.lagged, 1);
        let kv = window.kv_summary().figures().cloned().unwrap();
        // Counted from the end of iteration 10 (40 reused, 10 missed), not from the phase start.
        assert_eq!(kv.reused_blocks, Some(10));
        assert_eq!(kv.missed_blocks, Some(5));
        assert_eq!(window.iter_summary().figures().unwrap().count, 2);
        // A window that starts before the log keeps the phase's own baseline.
        let all = IterationLog {
            iterations: vec![stats(10, 40, 10, 5)],
            lagged: 0,
            baseline_kv: stats(9, 34, 8, 0).kv_cache,
        };
        assert_eq!(all.from_iteration(0).kv_summary().figures().unwrap().reused_blocks, Some(6));
    }

    #[test]
    fn idle_entries_are_counted_apart_from_forward_passes() {
        let mut idle = stats(12, 0, 0, 0);
        idle.num_active_requests = 0;
        idle.iter_latency_ms = 0.0;
        let log = IterationLog {
            iterations: vec![stats(10, 0, 0, 0), stats(11, 0, 0, 0), idle],
            lagged: 0,
            baseline_kv: None,
        };
        let iter = log.iter_summary().figures().cloned().unwrap();
        assert_eq!(iter.count, 2);
        assert_eq!(iter.idle_entries, 1);
        assert_eq!(iter.mean_latency_ms, Some(10.0));
        assert_eq!(iter.mean_active_requests, Some(1.0));
    }

    #[test]
    fn gaps_in_iteration_numbers_are_counted() {
        let log = IterationLog {
            iterations: vec![stats(3, 0, 0, 0), stats(4, 0, 0, 0), stats(4, 0, 0, 0), stats(8, 0, 0, 0)],
            lagged: 2,
            baseline_kv: None,
        };
        assert_eq!(log.missing_iterations(), 3);
        let iter = log.iter_summary().figures().cloned().unwrap();
        assert_eq!(iter.lost_iterations, 2);
        assert_eq!(iter.missing_iterations, 3);
    }

    #[tokio::test]
    async fn a_lagging_collector_counts_what_it_lost() {
        let (tx, rx) = broadcast::channel(4);
        let (stop_tx, stop_rx) = oneshot::channel();
        // Fill past capacity before the collector runs: the oldest six are lost.
        for i in 0..10 {
            tx.send(std::sync::Arc::new(stats(i, 0, 0, 0))).unwrap();
        }
        stop_tx.send(()).unwrap();
        let (received, lagged) = collect(rx, stop_rx, None).await;
        assert_eq!(lagged, 6);
        assert_eq!(received.iter().map(|s| s.iter).collect::<Vec<_>>(), [6, 7, 8, 9]);
    }

    #[test]
    fn wall_anchor_round_trips() {
        let anchor = WallAnchor::now();
        let unix = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64() + 2.0;
        let at = anchor.instant_of_unix(unix).unwrap();
        let ahead = at.duration_since(Instant::now()).as_secs_f64();
        assert!((1.0..=2.1).contains(&ahead), "{ahead}");
        assert_eq!(anchor.instant_of_unix(0.0), None);
    }
}
