//! Fixed-interval samples of a long run (TTFT, token rate, active requests, KV use) for plotting.

use super::record::RequestRecord;

/// Largest number of samples [`time_series`] produces, so a tiny interval cannot exhaust memory.
pub const MAX_SAMPLES: usize = 1_000_000;

/// Errors from sampling a time series.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TimeSeriesError {
    /// The interval is not a positive finite number of seconds.
    #[error("sampling interval must be a positive number of seconds, got {0}")]
    InvalidInterval(f64),
    /// The run is so long for the interval that the series would exceed [`MAX_SAMPLES`].
    #[error("{samples} samples needed at this interval (limit {MAX_SAMPLES}); use a larger interval")]
    TooManySamples {
        /// Samples the run would need.
        samples: u64,
    },
}

/// One interval `[start_s, end_s)` of a run.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimeSample {
    /// Interval start, seconds since the run start.
    pub start_s: f64,
    /// Interval end, seconds since the run start.
    pub end_s: f64,
    /// Mean TTFT (ms) of the requests whose first token arrived in the interval.
    pub mean_ttft_ms: Option<f64>,
    /// Tokens received in the interval per second.
    pub output_tokens_per_s: f64,
    /// Time-averaged number of requests in flight (sent, not yet ended) during the interval.
    pub active_requests: f64,
    /// KV-cache utilisation (0..=1) during the interval, set by [`fill_kv_utilization`].
    pub kv_utilization: Option<f64>,
}

impl TimeSample {
    /// Midpoint of the interval, the x coordinate used by plots.
    pub fn mid_s(&self) -> f64 {
        (self.start_s + self.end_s) / 2.0
    }
}

/// Samples the given records every `interval_s` seconds from the first send to the last end.
///
/// Every record passed counts (filter out warmup or failures first if unwanted); TTFT uses only
/// successful requests.
///
/// ```rust
/// use trtllm::bench::{time_series, Phase, RequestRecord};
///
/// let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
/// r.record_chunk(0.5, 1);
/// r.record_chunk(1.5, 4);
/// r.finish(2.0, 5, None);
/// let s = time_series(&[r], 1.0).unwrap();
/// assert_eq!(s.len(), 2);
/// assert_eq!(s[0].mean_ttft_ms, Some(500.0));
/// assert_eq!(s[1].output_tokens_per_s, 4.0);
/// assert_eq!(s[1].active_requests, 1.0);
/// ```
pub fn time_series(records: &[RequestRecord], interval_s: f64) -> Result<Vec<TimeSample>, TimeSeriesError> {
    if !(interval_s.is_finite() && interval_s > 0.0) {
        return Err(TimeSeriesError::InvalidInterval(interval_s));
    }
    let end_of = |r: &RequestRecord| r.end_s.or_else(|| r.last_token_s()).unwrap_or(r.send_s);
    let Some(origin) = records.iter().map(|r| r.send_s).reduce(f64::min) else {
        return Ok(Vec::new());
    };
    let last = records.iter().map(end_of).fold(origin, f64::max);
    let needed = ((last - origin) / interval_s).ceil().max(1.0);
    if needed > MAX_SAMPLES as f64 {
        return Err(TimeSeriesError::TooManySamples { samples: needed as u64 });
    }
    let n = needed as usize;
    let mut samples: Vec<TimeSample> = (0..n)
        .map(|k| TimeSample {
            start_s: origin + k as f64 * interval_s,
            end_s: origin + (k + 1) as f64 * interval_s,
            mean_ttft_ms: None,
            output_tokens_per_s: 0.0,
            active_requests: 0.0,
            kv_utilization: None,
        })
        .collect();
    let bucket = |t: f64| (((t - origin) / interval_s).floor().max(0.0) as usize).min(n - 1);
    let mut ttft_sum = vec![(0.0_f64, 0_u32); n];
    for r in records {
        if let (true, Some(t), Some(ttft)) = (r.is_success(), r.first_token_s, r.ttft_s()) {
            let slot = &mut ttft_sum[bucket(t)];
            slot.0 += ttft * 1000.0;
            slot.1 += 1;
        }
        for c in &r.chunks {
            samples[bucket(c.t_s)].output_tokens_per_s += f64::from(c.tokens) / interval_s;
        }
        let (s, e) = (r.send_s, end_of(r));
        for sample in &mut samples[bucket(s)..=bucket(e)] {
            let overlap = e.min(sample.end_s) - s.max(sample.start_s);
            sample.active_requests += overlap.max(0.0) / interval_s;
        }
    }
    for (sample, (sum, count)) in samples.iter_mut().zip(ttft_sum) {
        sample.mean_ttft_ms = (count > 0).then(|| sum / f64::from(count));
    }
    Ok(samples)
}

/// Sets each sample's KV utilisation to the highest `(t_s, utilisation)` point inside its
/// interval; samples without a point keep their value.
///
/// ```rust
/// use trtllm::bench::{fill_kv_utilization, TimeSample};
///
/// let mut s = vec![TimeSample {
///     start_s: 0.0, end_s: 5.0, mean_ttft_ms: None,
///     output_tokens_per_s: 0.0, active_requests: 0.0, kv_utilization: None,
/// }];
/// fill_kv_utilization(&mut s, &[(1.0, 0.2), (4.0, 0.6), (6.0, 0.9)]);
/// assert_eq!(s[0].kv_utilization, Some(0.6));
/// ```
pub fn fill_kv_utilization(samples: &mut [TimeSample], points: &[(f64, f64)]) {
    for sample in samples.iter_mut() {
        let peak =
            points.iter().filter(|(t, _)| *t >= sample.start_s && *t < sample.end_s).map(|&(_, u)| u).reduce(f64::max);
        if peak.is_some() {
            sample.kv_utilization = peak;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::record::Phase;

    #[test]
    fn rejects_bad_intervals() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(time_series(&[], bad), Err(TimeSeriesError::InvalidInterval(_))));
        }
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.finish(1e9, 1, None);
        assert!(matches!(time_series(&[r], 1.0), Err(TimeSeriesError::TooManySamples { .. })));
    }

    #[test]
    fn active_requests_are_time_averaged() {
        let mk = |i, s, e| {
            let mut r = RequestRecord::new(i, Phase::Measure, s);
            r.finish(e, 1, None);
            r
        };
        // [0, 2) and [1, 2) over intervals of 1 s: 1.0 then 2.0 in flight on average.
        let s = time_series(&[mk(0, 0.0, 2.0), mk(1, 1.0, 2.0)], 1.0).unwrap();
        assert_eq!(s.len(), 2);
        assert!((s[0].active_requests - 1.0).abs() < 1e-12);
        assert!((s[1].active_requests - 2.0).abs() < 1e-12);
        assert_eq!(s[1].mid_s(), 1.5);
    }
}
