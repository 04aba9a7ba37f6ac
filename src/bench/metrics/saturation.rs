//! Over-saturation: an open-loop load the target cannot keep up with, seen as a backlog (requests
//! sent and not yet finished) that keeps growing. Checked as a run goes (to stop sending) and
//! after it from its records.

use super::record::{Phase, RequestRecord};

/// Seconds between backlog samples.
pub const SAMPLE_S: f64 = 0.25;

/// The first finished requests whose latency sets how long the backlog takes to settle.
pub const SETTLE_REQUESTS: usize = 16;

/// Watches the backlog of an open-loop point at `rate` requests per second.
///
/// The backlog of a target that keeps up climbs to `rate × latency` within about one request
/// latency and then stays there, whatever the noise of Poisson arrivals; one that does not
/// grows by `(rate − capacity) × t`. The watch ignores the climb (windows that start before
/// [`settle_after`](Self::settle_after), twice the first requests' latency) and flags the point
/// once, over the last `max(1 s, 40% of the time so far)`, the backlog has grown by more than
/// `max(8, 20% of the arrivals in that window)`, at two samples in a row: so a target whose
/// capacity is below about 80% of the offered rate is caught within seconds, and a brief burst
/// is not.
///
/// ```rust
/// use trtllm::bench::BacklogWatch;
///
/// // 100 requests/s offered, 50 served: the backlog grows by 50 a second.
/// let mut watch = BacklogWatch::new(100.0);
/// let flagged = (1..=20).map(|i| i as f64 * 0.25).find(|&t| watch.push(t, (50.0 * t) as u64));
/// assert!(flagged.is_some_and(|t| t <= 2.0), "{flagged:?}");
/// // Keeping up: a backlog that hovers around 10.
/// let mut watch = BacklogWatch::new(100.0);
/// assert!((1..=40).all(|i| !watch.push(i as f64 * 0.25, 8 + (i % 5))));
/// ```
#[derive(Debug, Clone)]
pub struct BacklogWatch {
    rate: f64,
    samples: Vec<(f64, u64)>,
    strikes: u32,
    settle_s: f64,
}

impl BacklogWatch {
    /// A watch for arrivals at `rate` per second.
    pub fn new(rate: f64) -> Self {
        BacklogWatch { rate, samples: Vec::new(), strikes: 0, settle_s: 0.0 }
    }

    /// Backlog growth before `t_s` (the climb to the steady level) does not count.
    pub fn settle_after(&mut self, t_s: f64) {
        self.settle_s = t_s;
    }

    /// Adds the backlog at `t_s` seconds after the start (later than the previous sample's); true
    /// once the point is over-saturated.
    pub fn push(&mut self, t_s: f64, backlog: u64) -> bool {
        self.samples.push((t_s, backlog));
        if self.strikes >= 2 {
            return true;
        }
        let window = (0.4 * t_s).max(1.0);
        if t_s < window {
            return false;
        }
        let since = t_s - window;
        if since < self.settle_s {
            return false;
        }
        // Samples come in time order, so the last one at or before `since` is found by bisection.
        let at_since = self.samples.partition_point(|(t, _)| *t <= since);
        let before = at_since.checked_sub(1).map_or(0, |i| self.samples[i].1);
        let growth = backlog as f64 - before as f64;
        let threshold = (0.2 * self.rate * window).max(8.0);
        if growth > threshold {
            self.strikes += 1;
        } else {
            self.strikes = 0;
        }
        self.strikes >= 2
    }

    /// The largest backlog seen.
    pub fn peak(&self) -> u64 {
        self.samples.iter().map(|s| s.1).max().unwrap_or(0)
    }
}

/// When (seconds after the first measured send) a finished open-loop run's backlog shows it was
/// over-saturated, replaying its records through a [`BacklogWatch`]; `None` when it kept up.
pub fn over_saturated_at(records: &[RequestRecord], rate: f64) -> Option<f64> {
    let load: Vec<&RequestRecord> = records.iter().filter(|r| r.phase == Phase::Measure).collect();
    let start = load.iter().map(|r| r.send_s).fold(f64::INFINITY, f64::min);
    let last = load.iter().map(|r| r.send_s).fold(f64::NEG_INFINITY, f64::max);
    if !start.is_finite() || !last.is_finite() {
        return None;
    }
    let mut watch = BacklogWatch::new(rate);
    let mut by_end: Vec<(f64, f64)> = load.iter().filter_map(|r| Some((r.end_s?, r.send_s))).collect();
    by_end.sort_by(|a, b| a.0.total_cmp(&b.0));
    let first: Vec<f64> = by_end.iter().take(SETTLE_REQUESTS).map(|(end, send)| end - send).collect();
    if !first.is_empty() {
        watch.settle_after(2.0 * first.iter().sum::<f64>() / first.len() as f64);
    }
    // Sends and ends sorted once, then swept with one cursor each as the sample time advances.
    let mut sends: Vec<f64> = load.iter().map(|r| r.send_s).collect();
    sends.sort_by(f64::total_cmp);
    let (mut sent, mut done) = (0, 0);
    let mut t = start + SAMPLE_S;
    // Only while arrivals come: the drain after the last one is not a growing backlog.
    while t <= last {
        while sent < sends.len() && sends[sent] <= t {
            sent += 1;
        }
        while done < by_end.len() && by_end[done].0 <= t {
            done += 1;
        }
        if watch.push(t - start, sent.saturating_sub(done) as u64) {
            return Some(t - start);
        }
        t += SAMPLE_S;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(n: usize, rate: f64, capacity: f64) -> Vec<RequestRecord> {
        // A single queue served at `capacity`: request i ends at max(arrival, previous end) + 1/capacity.
        let mut end: f64 = 0.0;
        (0..n)
            .map(|i| {
                let send = i as f64 / rate;
                end = end.max(send) + 1.0 / capacity;
                let mut r = RequestRecord::new(i as u64, Phase::Measure, send);
                r.finish(end, 1, Some("length".into()));
                r
            })
            .collect()
    }

    #[test]
    fn a_queue_that_grows_is_flagged_and_one_that_keeps_up_is_not() {
        assert!(over_saturated_at(&served(400, 40.0, 20.0), 40.0).is_some_and(|t| t < 3.0));
        assert!(over_saturated_at(&served(400, 40.0, 50.0), 40.0).is_none());
        // Keeping up with long requests: the backlog climbs to rate × latency (40 × 2 s), then holds.
        let long: Vec<RequestRecord> = (0..400)
            .map(|i| {
                let send = i as f64 / 40.0;
                let mut r = RequestRecord::new(i, Phase::Measure, send);
                r.finish(send + 2.0, 1, Some("length".into()));
                r
            })
            .collect();
        assert!(over_saturated_at(&long, 40.0).is_none());
    }
}
