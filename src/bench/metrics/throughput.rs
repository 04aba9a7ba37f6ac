//! Counts and rates over the measured window: throughput, goodput, peak token rate, peak overlap.

use std::collections::HashMap;

use super::record::RequestRecord;
use super::slo::Slos;

/// Measured, successful requests: the only ones that enter latency and rate figures.
fn measured_successes(records: &[RequestRecord]) -> impl Iterator<Item = &RequestRecord> {
    records.iter().filter(|r| r.is_measured() && r.is_success())
}

/// When a request stopped occupying the engine: its end, else its last token, else its send.
fn request_end_s(r: &RequestRecord) -> f64 {
    r.end_s.or_else(|| r.last_token_s()).unwrap_or(r.send_s)
}

/// The measured window `(start, end)`: first send to last completion over all measured
/// requests, failed ones included (they were part of the load). `None` without measured requests.
///
/// ```rust
/// use trtllm::bench::{measured_window, Phase, RequestRecord};
///
/// let mut warm = RequestRecord::new(0, Phase::Warmup, 0.0);
/// warm.finish(0.5, 1, None);
/// let mut a = RequestRecord::new(1, Phase::Measure, 1.0);
/// a.finish(3.0, 4, None);
/// let mut b = RequestRecord::new(2, Phase::Measure, 1.5);
/// b.fail(4.0, "timeout");
/// assert_eq!(measured_window(&[warm, a, b]), Some((1.0, 4.0)));
/// ```
pub fn measured_window(records: &[RequestRecord]) -> Option<(f64, f64)> {
    let measured = records.iter().filter(|r| r.is_measured());
    let mut window: Option<(f64, f64)> = None;
    for r in measured {
        let end = request_end_s(r);
        window = Some(match window {
            None => (r.send_s, end),
            Some((s, e)) => (s.min(r.send_s), e.max(end)),
        });
    }
    window
}

/// Counts per 1 s bucket, from the first send of the measured successful requests; the peak.
fn peak_per_second(records: &[RequestRecord], count: impl Fn(&RequestRecord, &mut dyn FnMut(f64, u64))) -> f64 {
    let successes: Vec<&RequestRecord> = measured_successes(records).collect();
    let Some(origin) = successes.iter().map(|r| r.send_s).reduce(f64::min) else {
        return 0.0;
    };
    let mut buckets: HashMap<i64, u64> = HashMap::new();
    let mut add = |t: f64, n: u64| {
        let offset = t - origin;
        if offset.is_finite() && offset >= 0.0 {
            *buckets.entry(offset.floor() as i64).or_default() += n;
        }
    };
    for r in successes {
        count(r, &mut add);
    }
    buckets.values().copied().max().unwrap_or(0) as f64
}

/// vLLM's `max_output_tokens_per_s`: the peak, over 1 s buckets starting at the first send of the
/// measured successful requests, of the number of *responses* that carried tokens.
///
/// vLLM rebuilds token times from TTFT and the per-response gaps, so it counts each streamed
/// response once however many tokens it carried; this keeps that meaning. A non-streaming
/// request counts once, at its end. [`peak_output_tokens_per_s_by_token`] counts every token.
///
/// ```rust
/// use trtllm::bench::{peak_output_tokens_per_s, Phase, RequestRecord};
///
/// let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
/// r.record_chunk(0.5, 3);
/// r.record_chunk(1.2, 4); // bucket 1
/// r.record_chunk(1.9, 2); // bucket 1
/// r.finish(1.9, 9, None);
/// assert_eq!(peak_output_tokens_per_s(&[r]), 2.0);
/// ```
pub fn peak_output_tokens_per_s(records: &[RequestRecord]) -> f64 {
    peak_per_second(records, |r, add| {
        if r.chunks.is_empty() {
            if let Some(t) = r.end_s.filter(|_| r.output_tokens > 0) {
                add(t, 1);
            }
        } else {
            for c in &r.chunks {
                add(c.t_s, 1);
            }
        }
    })
}

/// Peak output tokens received in any 1 s bucket, every token counted (a response with three
/// tokens adds three; a non-streaming request adds all its tokens at its end).
///
/// ```rust
/// use trtllm::bench::{peak_output_tokens_per_s_by_token, Phase, RequestRecord};
///
/// let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
/// r.record_chunk(0.5, 3);
/// r.record_chunk(1.2, 4); // bucket 1
/// r.record_chunk(1.9, 2); // bucket 1
/// r.finish(1.9, 9, None);
/// assert_eq!(peak_output_tokens_per_s_by_token(&[r]), 6.0);
/// ```
pub fn peak_output_tokens_per_s_by_token(records: &[RequestRecord]) -> f64 {
    peak_per_second(records, |r, add| {
        if r.chunks.is_empty() {
            if let Some(t) = r.end_s {
                add(t, r.output_tokens);
            }
        } else {
            for c in &r.chunks {
                add(c.t_s, u64::from(c.tokens));
            }
        }
    })
}

/// Time-averaged number of measured successful requests in flight over the measured window
/// (Little's law: the sum of their send-to-end times / the window).
///
/// ```rust
/// use trtllm::bench::{mean_concurrency, Phase, RequestRecord};
///
/// let mk = |i, s, e| {
///     let mut r = RequestRecord::new(i, Phase::Measure, s);
///     r.finish(e, 2, None);
///     r
/// };
/// // Window [0, 4): 2 s + 2 s of requests in flight → 1.0 on average.
/// assert_eq!(mean_concurrency(&[mk(0, 0.0, 2.0), mk(1, 2.0, 4.0)]), 1.0);
/// ```
pub fn mean_concurrency(records: &[RequestRecord]) -> f64 {
    let Some((start, end)) = measured_window(records) else { return 0.0 };
    if end <= start {
        return 0.0;
    }
    let busy: f64 = measured_successes(records).map(|r| (request_end_s(r) - r.send_s).max(0.0)).sum();
    busy / (end - start)
}

/// Peak number of measured successful requests in flight at once.
///
/// Each request occupies the half-open interval `[send, end)`, so one finishing exactly when
/// another is sent does not overlap it (vLLM's sweep-line semantics).
///
/// ```rust
/// use trtllm::bench::{peak_concurrency, Phase, RequestRecord};
///
/// let mk = |i, s, e| {
///     let mut r = RequestRecord::new(i, Phase::Measure, s);
///     r.finish(e, 2, None);
///     r
/// };
/// // [0,2) [1,3) overlap; [3,4) starts when the second ends
/// assert_eq!(peak_concurrency(&[mk(0, 0.0, 2.0), mk(1, 1.0, 3.0), mk(2, 3.0, 4.0)]), 2);
/// ```
pub fn peak_concurrency(records: &[RequestRecord]) -> u64 {
    let mut events: Vec<(f64, i64)> = Vec::new();
    for r in measured_successes(records) {
        events.push((r.send_s, 1));
        events.push((request_end_s(r), -1));
    }
    // Departures sort before arrivals at the same instant.
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let (mut current, mut peak) = (0_i64, 0_i64);
    for (_, delta) in events {
        current += delta;
        peak = peak.max(current);
    }
    peak as u64
}

/// Request and token counts and rates over the measured window.
///
/// Warmup requests are ignored. Token totals count successful requests only (as vLLM does);
/// `completed` and `failed` partition the measured requests.
///
/// ```rust
/// use trtllm::bench::{Phase, RequestRecord, Slos, Throughput};
///
/// let mut a = RequestRecord::new(0, Phase::Measure, 0.0);
/// a.prompt_tokens = 100;
/// a.record_chunk(0.1, 1);
/// a.record_chunk(2.0, 9);
/// a.finish(2.0, 10, None);
/// let mut b = RequestRecord::new(1, Phase::Measure, 0.0);
/// b.prompt_tokens = 100;
/// b.fail(1.0, "oom");
/// let slos = Slos::parse("ttft:200").unwrap();
/// let t = Throughput::compute(&[a, b], Some(&slos));
/// assert_eq!((t.completed, t.failed), (1, 1));
/// assert_eq!(t.duration_s, 2.0);
/// assert_eq!(t.output_throughput, 5.0);
/// assert_eq!(t.input_throughput, 50.0);
/// assert_eq!(t.request_goodput, Some(0.5));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Throughput {
    /// Measured window length, seconds (first send to last completion).
    pub duration_s: f64,
    /// Measured requests that succeeded.
    pub completed: u64,
    /// Measured requests that failed.
    pub failed: u64,
    /// Prompt tokens of the successful measured requests.
    pub total_input_tokens: u64,
    /// Output tokens of the successful measured requests (executor counts).
    pub total_output_tokens: u64,
    /// `completed / duration`, requests per second.
    pub request_throughput: f64,
    /// Successful requests meeting every SLO per second; `None` when no SLO was given.
    pub request_goodput: Option<f64>,
    /// Prompt tokens per second.
    pub input_throughput: f64,
    /// Output tokens per second.
    pub output_throughput: f64,
    /// Prompt plus output tokens per second.
    pub total_token_throughput: f64,
    /// vLLM's peak: responses carrying tokens in a 1 s bucket ([`peak_output_tokens_per_s`]).
    pub max_output_tokens_per_s: f64,
    /// Peak output tokens in a 1 s bucket, every token counted.
    pub max_output_tokens_per_s_by_token: f64,
    /// Peak measured successful requests in flight.
    pub max_concurrent_requests: u64,
    /// Time-averaged measured successful requests in flight ([`mean_concurrency`]).
    pub mean_concurrent_requests: f64,
}

impl Throughput {
    /// Computes every figure from the records; `slos` enables goodput (each request is held to
    /// the limits it can be measured against: E2E only without streaming; no goodput when no
    /// given limit applies to any request).
    pub fn compute(records: &[RequestRecord], slos: Option<&Slos>) -> Self {
        let duration_s = measured_window(records).map(|(s, e)| (e - s).max(0.0)).unwrap_or(0.0);
        let rate = |count: f64| {
            if duration_s > 0.0 { count / duration_s } else { 0.0 }
        };
        let mut t = Throughput { duration_s, ..Throughput::default() };
        let mut good = 0_u64;
        // Runs are all streaming or all not; a limit the run cannot measure is left out.
        let streaming = records.iter().filter(|r| r.is_measured()).all(|r| r.streaming);
        let applicable = slos.map(|s| s.applicable_to(streaming)).filter(|s| !s.is_empty());
        for r in records.iter().filter(|r| r.is_measured()) {
            if !r.is_success() {
                t.failed += 1;
                continue;
            }
            t.completed += 1;
            t.total_input_tokens += r.prompt_tokens;
            t.total_output_tokens += r.output_tokens;
            if applicable.is_some_and(|s| s.is_met_by(r)) {
                good += 1;
            }
        }
        t.request_throughput = rate(t.completed as f64);
        t.request_goodput = applicable.map(|_| rate(good as f64));
        t.input_throughput = rate(t.total_input_tokens as f64);
        t.output_throughput = rate(t.total_output_tokens as f64);
        t.total_token_throughput = rate((t.total_input_tokens + t.total_output_tokens) as f64);
        t.max_output_tokens_per_s = peak_output_tokens_per_s(records);
        t.max_output_tokens_per_s_by_token = peak_output_tokens_per_s_by_token(records);
        t.max_concurrent_requests = peak_concurrency(records);
        t.mean_concurrent_requests = mean_concurrency(records);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::record::Phase;

    fn streamed(index: u64, send: f64, chunk_times: &[(f64, u32)]) -> RequestRecord {
        let mut r = RequestRecord::new(index, Phase::Measure, send);
        for &(t, n) in chunk_times {
            r.record_chunk(t, n);
        }
        let end = chunk_times.last().map_or(send, |c| c.0);
        r.finish(end, r.chunk_tokens(), Some("length".into()));
        r
    }

    #[test]
    fn buckets_are_one_second_from_first_send() {
        // Origin 10.0: responses at 10.9 (bucket 0), 11.0/11.5/11.99 (bucket 1), 12.0 (bucket 2).
        let a = streamed(0, 10.0, &[(10.9, 1), (11.0, 1), (11.5, 2)]);
        let b = streamed(1, 10.5, &[(11.99, 3), (12.0, 5)]);
        assert_eq!(peak_output_tokens_per_s(&[a.clone(), b.clone()]), 3.0, "responses, as vLLM counts");
        assert_eq!(peak_output_tokens_per_s_by_token(&[a.clone(), b.clone()]), 6.0);
        // A warmup request full of tokens in bucket 2 changes nothing.
        let mut w = streamed(2, 9.0, &[(12.5, 100), (12.6, 1), (12.7, 1), (12.8, 1)]);
        w.phase = Phase::Warmup;
        assert_eq!(peak_output_tokens_per_s(&[a.clone(), b.clone(), w.clone()]), 3.0);
        assert_eq!(peak_output_tokens_per_s_by_token(&[a, b, w]), 6.0);
    }

    #[test]
    fn failed_requests_do_not_count_towards_peaks() {
        let a = streamed(0, 0.0, &[(0.5, 2)]);
        let mut f = streamed(1, 0.0, &[(0.6, 7)]);
        f.error = Some("disconnect".into());
        assert_eq!(peak_output_tokens_per_s_by_token(&[a.clone(), f.clone()]), 2.0);
        assert_eq!(peak_concurrency(&[a, f]), 1);
    }

    #[test]
    fn non_streaming_request_counts_at_its_end() {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.streaming = false;
        r.finish(1.5, 40, None);
        assert_eq!(peak_output_tokens_per_s(&[r.clone()]), 1.0);
        assert_eq!(peak_output_tokens_per_s_by_token(&[r]), 40.0);
    }

    #[test]
    fn goodput_uses_only_the_limits_a_request_can_meet() {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.streaming = false;
        r.finish(2.0, 40, Some("length".into()));
        // Without streaming TTFT and TPOT limits do not apply: neither pass nor fail.
        let ttft_only = Slos::parse("ttft:1,tpot:1").unwrap();
        assert_eq!(Throughput::compute(std::slice::from_ref(&r), Some(&ttft_only)).request_goodput, None);
        let with_e2el = Slos::parse("ttft:1,e2el:3000").unwrap();
        assert_eq!(Throughput::compute(std::slice::from_ref(&r), Some(&with_e2el)).request_goodput, Some(0.5));
        let tight = Slos::parse("e2el:1000").unwrap();
        assert_eq!(Throughput::compute(&[r], Some(&tight)).request_goodput, Some(0.0));
    }

    #[test]
    fn no_measured_requests_gives_zeros() {
        let mut w = streamed(0, 0.0, &[(1.0, 1)]);
        w.phase = Phase::RampUp;
        let t = Throughput::compute(&[w], None);
        assert_eq!(t, Throughput::default());
        assert_eq!(measured_window(&[]), None);
    }

    #[test]
    fn goodput_absent_without_slos() {
        let a = streamed(0, 0.0, &[(0.1, 1), (0.2, 1)]);
        assert_eq!(Throughput::compute(&[a], None).request_goodput, None);
    }
}
