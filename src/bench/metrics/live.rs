//! What a run has done so far, for a live view: counters and latency histograms cheap to update
//! per request and to read a few times a second, with no lock on the runner's side.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::record::{Phase, RequestRecord};

/// Buckets of the latency histograms: 2% wide from 1 µs, up to about 10⁵ s.
const BUCKETS: usize = 1200;
const BUCKET_GROWTH: f64 = 1.02;
const SMALLEST_MS: f64 = 0.001;

/// A log-bucketed histogram of milliseconds: constant memory and O(buckets) percentiles,
/// however many tokens a run streams (within 2% of the exact percentile). Its counts are
/// atomics, so adding never waits for a reader: the view reads at idle priority, and a lock
/// it held while preempted would stall the runner's tasks behind it.
#[derive(Debug)]
struct Histogram {
    counts: Box<[AtomicU64]>,
    total: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(), total: AtomicU64::new(0) }
    }
}

impl Histogram {
    fn add(&self, ms: f64) {
        self.add_times(ms, 1);
    }

    /// Adds `ms` `times` times.
    fn add_times(&self, ms: f64, times: u64) {
        if !ms.is_finite() || ms < 0.0 {
            return;
        }
        let index = ((ms.max(SMALLEST_MS) / SMALLEST_MS).ln() / BUCKET_GROWTH.ln()) as usize;
        self.counts[index.min(BUCKETS - 1)].fetch_add(times, Ordering::Relaxed);
        // Released after the bucket: a reader that sees this total sees the bucket's count.
        self.total.fetch_add(times, Ordering::Release);
    }

    fn clear(&self) {
        self.total.store(0, Ordering::Relaxed);
        for count in &self.counts {
            count.store(0, Ordering::Relaxed);
        }
    }

    /// The `p`th percentile (0-100), as its bucket's geometric middle.
    fn percentile(&self, p: f64) -> Option<f64> {
        let total = self.total.load(Ordering::Acquire);
        if total == 0 {
            return None;
        }
        let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, count) in self.counts.iter().enumerate() {
            seen += count.load(Ordering::Relaxed);
            if seen >= rank {
                return Some(SMALLEST_MS * BUCKET_GROWTH.powf(i as f64 + 0.5));
            }
        }
        None
    }
}

/// The figures of a live view at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveSnapshot {
    /// What runs: the target and the point (its file stem).
    pub label: String,
    /// Seconds since the point started: simulated seconds when `virtual_clock`.
    pub elapsed_s: f64,
    /// The point runs on the virtual clock: times are the executor's simulated ones.
    pub virtual_clock: bool,
    /// Measured (and ramp-up) requests finished, failures included.
    pub done: u64,
    /// Of those, failed.
    pub failed: u64,
    /// Measured requests the point sends in all, when it is a count run.
    pub total: Option<u64>,
    /// Requests sent and not yet finished.
    pub in_flight: u64,
    /// Requests waiting in the runner for a concurrency slot.
    pub queued: u64,
    /// Output tokens per second over the point so far.
    pub output_tok_s: f64,
    /// TTFT p50, p90, p99 so far (ms).
    pub ttft_ms: Option<[f64; 3]>,
    /// ITL p50, p90, p99 so far (ms).
    pub itl_ms: Option<[f64; 3]>,
    /// KV-cache use (0-1), where the target reports it.
    pub kv_utilization: Option<f64>,
    /// GPU figures (power, utilization, memory), where a telemetry source gives them.
    pub gpu: Option<String>,
}

/// What names the running point, set between points and by the telemetry sampler: the only
/// part behind a lock, which the runner never takes while a point runs.
#[derive(Debug, Default)]
struct PointMeta {
    label: String,
    total: Option<u64>,
    started: Option<Instant>,
    gpu: Option<String>,
}

/// Shared by the runner (which counts requests it creates, sends and gets back), the progress
/// callback (which adds each finished request) and the view (which reads snapshots). Counting
/// is a relaxed atomic add per request event, and a finished request adds its latencies to
/// atomic histograms, off the per-token path: nothing the runner does waits for the view.
#[derive(Debug, Default)]
pub struct LiveStats {
    created: AtomicU64,
    sent: AtomicU64,
    returned: AtomicU64,
    done: AtomicU64,
    failed: AtomicU64,
    output_tokens: AtomicU64,
    /// KV-cache use × 10⁶, plus one (0: unknown).
    kv_millionths: AtomicU64,
    /// Requests active and queued in the executor, from its latest iteration statistics: shown
    /// when the runner does not count its own (a virtual-clock point).
    executor_active: AtomicU64,
    executor_queued: AtomicU64,
    /// Simulated microseconds since the point started, plus one (0: the point runs in real
    /// time), from the executor's stamps of the requests finished so far.
    simulated_micros: AtomicU64,
    ttft: Histogram,
    itl: Histogram,
    meta: Mutex<PointMeta>,
}

impl LiveStats {
    /// Starts a new point named `label` (`total` measured requests when known): counters and
    /// histograms from zero.
    pub fn start_point(&self, label: &str, total: Option<u64>) {
        for counter in [
            &self.created,
            &self.sent,
            &self.returned,
            &self.done,
            &self.failed,
            &self.output_tokens,
            &self.kv_millionths,
            &self.executor_active,
            &self.executor_queued,
            &self.simulated_micros,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        self.ttft.clear();
        self.itl.clear();
        let mut meta = self.meta();
        *meta = PointMeta { label: label.to_owned(), total, started: Some(Instant::now()), gpu: meta.gpu.take() };
    }

    /// The runner created a request (it may wait for a slot).
    pub fn created(&self) {
        self.created.fetch_add(1, Ordering::Relaxed);
    }

    /// The runner sent a request.
    pub fn sent(&self) {
        self.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// A request came back (finished or failed).
    pub fn returned(&self) {
        self.returned.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds a finished request after the warmup: its outcome, tokens, TTFT and ITLs.
    pub fn record(&self, record: &RequestRecord) {
        if !self.count_finished(record) {
            return;
        }
        if let Some(ttft) = record.ttft_s() {
            self.ttft.add(ttft * 1e3);
        }
        for itl in record.itl_s() {
            self.itl.add(itl * 1e3);
        }
    }

    /// Adds a finished request of a virtual-clock point, still in wall-clock time, from the
    /// executor's simulated stamps (seconds since the point started): TTFT from its arrival to
    /// its first token, and each gap its mean inter-token time (the view's ITL percentiles are
    /// then those of per-request means; the result files rebuild every token's time). The
    /// point's elapsed time becomes simulated: the latest last token so far.
    pub fn record_simulated(&self, record: &RequestRecord) {
        let server = record.server.unwrap_or_default();
        if record.phase != Phase::Warmup
            && let Some(last) = server.last_token_s
        {
            self.set_simulated_elapsed(last);
        }
        if !self.count_finished(record) {
            return;
        }
        if let (Some(arrival), Some(first)) = (server.arrival_s, server.first_token_s) {
            self.ttft.add((first - arrival) * 1e3);
        }
        if let (Some(first), Some(last), gaps @ 1..) =
            (server.first_token_s, server.last_token_s, record.output_tokens.saturating_sub(1))
        {
            self.itl.add_times((last - first) * 1e3 / gaps as f64, gaps);
        }
    }

    /// Counts a finished request after the warmup (done, failed, output tokens); whether its
    /// latencies count too, which they do when it succeeded.
    fn count_finished(&self, record: &RequestRecord) -> bool {
        if record.phase == Phase::Warmup {
            return false;
        }
        self.done.fetch_add(1, Ordering::Relaxed);
        if !record.is_success() {
            self.failed.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        self.output_tokens.fetch_add(record.output_tokens, Ordering::Relaxed);
        true
    }

    /// The point runs on the virtual clock and has reached `seconds` of simulated time (an
    /// earlier time than one already reached changes nothing).
    pub fn set_simulated_elapsed(&self, seconds: f64) {
        if seconds.is_finite() && seconds >= 0.0 {
            self.simulated_micros.fetch_max((seconds * 1e6) as u64 + 1, Ordering::Relaxed);
        }
    }

    /// The target's KV-cache use (0-1).
    pub fn set_kv_utilization(&self, utilization: f64) {
        if utilization.is_finite() {
            self.kv_millionths.store((utilization.clamp(0.0, 1.0) * 1e6) as u64 + 1, Ordering::Relaxed);
        }
    }

    /// The executor's own count of requests active and queued (its iteration statistics): the
    /// in-flight and queued figures where the runner counts none of its own.
    pub fn set_executor_requests(&self, active: u64, queued: u64) {
        self.executor_active.store(active, Ordering::Relaxed);
        self.executor_queued.store(queued, Ordering::Relaxed);
    }

    /// One line of GPU figures, shown as given.
    pub fn set_gpu(&self, figures: Option<String>) {
        self.meta().gpu = figures;
    }

    /// The figures now.
    pub fn snapshot(&self) -> LiveSnapshot {
        let (created, sent, returned) = (
            self.created.load(Ordering::Relaxed),
            self.sent.load(Ordering::Relaxed),
            self.returned.load(Ordering::Relaxed),
        );
        let (label, total, started, gpu) = {
            let meta = self.meta();
            (meta.label.clone(), meta.total, meta.started, meta.gpu.clone())
        };
        let simulated = self.simulated_micros.load(Ordering::Relaxed);
        let elapsed_s = match simulated {
            0 => started.map_or(0.0, |s| s.elapsed().as_secs_f64()),
            micros => (micros - 1) as f64 / 1e6,
        };
        let tokens = self.output_tokens.load(Ordering::Relaxed) as f64;
        let three = |h: &Histogram| Some([h.percentile(50.0)?, h.percentile(90.0)?, h.percentile(99.0)?]);
        let kv = self.kv_millionths.load(Ordering::Relaxed);
        let (in_flight, queued) = match created {
            0 => (self.executor_active.load(Ordering::Relaxed), self.executor_queued.load(Ordering::Relaxed)),
            _ => (sent.saturating_sub(returned), created.saturating_sub(sent)),
        };
        LiveSnapshot {
            label,
            elapsed_s,
            virtual_clock: simulated > 0,
            done: self.done.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            total,
            in_flight,
            queued,
            output_tok_s: if elapsed_s > 0.0 { tokens / elapsed_s } else { 0.0 },
            ttft_ms: three(&self.ttft),
            itl_ms: three(&self.itl),
            kv_utilization: (kv > 0).then(|| (kv - 1) as f64 / 1e6),
            gpu,
        }
    }

    fn meta(&self) -> std::sync::MutexGuard<'_, PointMeta> {
        // A panic elsewhere while holding the lock leaves plain values: still readable.
        self.meta.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::ServerTimes;
    use super::*;

    #[test]
    fn histogram_percentiles_are_within_two_percent() {
        let h = Histogram::default();
        for i in 1..=1000 {
            h.add(f64::from(i) * 0.1);
        }
        for (p, exact) in [(50.0, 50.0), (90.0, 90.0), (99.0, 99.0)] {
            let got = h.percentile(p).unwrap();
            assert!((got / exact - 1.0).abs() < 0.02, "p{p}: {got} vs {exact}");
        }
        assert_eq!(Histogram::default().percentile(50.0), None);
    }

    #[test]
    fn counts_give_in_flight_queued_and_done() {
        let stats = LiveStats::default();
        stats.start_point("c4", Some(10));
        for _ in 0..6 {
            stats.created();
        }
        for _ in 0..4 {
            stats.sent();
        }
        stats.returned();
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.record_chunk(0.010, 1);
        r.record_chunk(0.015, 1);
        r.finish(0.015, 2, Some("length".into()));
        stats.record(&r);
        stats.record(&RequestRecord::new(1, Phase::Warmup, 0.0));
        stats.set_kv_utilization(0.25);
        let s = stats.snapshot();
        assert_eq!((s.done, s.in_flight, s.queued, s.total), (1, 3, 2, Some(10)));
        let [p50, ..] = s.ttft_ms.unwrap();
        assert!((p50 - 10.0).abs() < 0.2, "{p50}");
        assert!((s.itl_ms.unwrap()[0] - 5.0).abs() < 0.1);
        assert_eq!(s.kv_utilization, Some(0.25));
        stats.set_executor_requests(7, 9);
        assert_eq!(stats.snapshot().in_flight, 3, "the runner's own counts come first");
        stats.start_point("c8", None);
        assert_eq!(stats.snapshot().done, 0, "a new point starts from zero");
    }

    #[test]
    fn a_virtual_clock_point_reads_the_executors_simulated_stamps() {
        let stats = LiveStats::default();
        stats.start_point("virtual c2", Some(2));
        stats.set_simulated_elapsed(0.0);
        assert!(stats.snapshot().virtual_clock && stats.snapshot().elapsed_s == 0.0);
        // Wall-clock stamps a microsecond apart; the executor's say 50 ms to the first token and
        // 10 ms between the next four.
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        for i in 0..5 {
            r.record_chunk(1e-6 * f64::from(i), 1);
        }
        r.finish(5e-6, 5, Some("length".into()));
        r.server = Some(ServerTimes {
            arrival_s: Some(1.0),
            first_token_s: Some(1.05),
            last_token_s: Some(1.09),
            ..Default::default()
        });
        stats.record_simulated(&r);
        let s = stats.snapshot();
        assert_eq!((s.done, s.failed), (1, 0));
        assert!((s.elapsed_s - 1.09).abs() < 1e-6, "{}", s.elapsed_s);
        assert!((s.output_tok_s - 5.0 / 1.09).abs() < 1e-3, "{}", s.output_tok_s);
        assert!((s.ttft_ms.unwrap()[0] / 50.0 - 1.0).abs() < 0.02, "{:?}", s.ttft_ms);
        assert!(s.itl_ms.unwrap().iter().all(|itl| (itl / 10.0 - 1.0).abs() < 0.02), "{:?}", s.itl_ms);
        let mut earlier = r.clone();
        earlier.server.as_mut().unwrap().last_token_s = Some(0.5);
        stats.record_simulated(&earlier);
        assert!((stats.snapshot().elapsed_s - 1.09).abs() < 1e-6, "simulated time never goes back");
        stats.start_point("real c2", Some(2));
        assert!(!stats.snapshot().virtual_clock, "a new point runs in real time unless told");
    }

    #[test]
    fn without_runner_counts_the_executor_gives_in_flight_and_queued() {
        let stats = LiveStats::default();
        stats.start_point("virtual c64", Some(100));
        stats.set_executor_requests(64, 12);
        let s = stats.snapshot();
        assert_eq!((s.in_flight, s.queued), (64, 12));
        stats.start_point("virtual c128", Some(100));
        assert_eq!((stats.snapshot().in_flight, stats.snapshot().queued), (0, 0), "a new point starts from zero");
    }
}
