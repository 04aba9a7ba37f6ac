//! The runner's own measurement error, from the executor's stamps: what the client side adds.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::record::RequestRecord;
use super::stats::Distribution;

/// How far the runner's client-side times are from the executor's own, over the measured
/// streaming requests that carried executor stamps.
///
/// - TTFT error: client-side first-token time − the executor's `firstTokenTime`, per request.
///   Not the executor's queue time (that is in `server`): only what delivering the token to
///   the runner took.
/// - ITL error: per response after the first, the client-side gap − the gap between the
///   executor iterations that produced the two responses (from the iterations' timestamps;
///   in process only, and only for requests scheduled in every iteration from first to last
///   token, so response *k* is iteration `first_iter + k`). With one token per iteration this
///   is the per-token error.
/// - Runner scheduling delay: per response, when the runner's task handled it − when the
///   response thread received it (in process only): what the async runtime adds.
///
/// ```rust
/// use std::collections::BTreeMap;
/// use trtllm::bench::{Calibration, Phase, RequestRecord, ServerTimes};
///
/// let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
/// r.record_chunk_handled(0.101, 1, 0.1012);
/// r.record_chunk_handled(0.112, 1, 0.1121);
/// r.finish(0.112, 2, Some("length".into()));
/// r.server = Some(ServerTimes {
///     first_token_s: Some(0.100),
///     first_iter: Some(7),
///     last_iter: Some(8),
///     ..ServerTimes::default()
/// });
/// let ends = BTreeMap::from([(7, 0.1), (8, 0.11)]);
/// let c = Calibration::compute(&[r], &ends, &[50.0]).unwrap();
/// assert!((c.ttft_error.mean().unwrap() - 1.0).abs() < 1e-9); // ms
/// assert!((c.itl_error.mean().unwrap() - 1.0).abs() < 1e-9); // 11 ms gap vs 10 ms
/// assert_eq!(c.runner_scheduling_delay.count(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// Requests with an executor first-token stamp.
    pub requests: u64,
    /// Requests whose responses could be matched to executor iterations.
    pub itl_requests: u64,
    /// Client first token − executor first token, ms.
    pub ttft_error: Distribution,
    /// Client response gap − executor iteration gap, ms, pooled over responses.
    pub itl_error: Distribution,
    /// Runner handling − response-thread receipt, ms, pooled over responses.
    pub runner_scheduling_delay: Distribution,
}

impl Calibration {
    /// Computes the errors of the measured successful streaming requests; `iteration_end_s`
    /// maps iteration numbers to their end on the run clock (empty when unknown). `None` when
    /// no request carried an executor first-token stamp.
    pub fn compute(
        records: &[RequestRecord],
        iteration_end_s: &BTreeMap<u64, f64>,
        percentiles: &[f64],
    ) -> Option<Self> {
        let ok: Vec<&RequestRecord> =
            records.iter().filter(|r| r.is_measured() && r.is_success() && r.streaming).collect();
        let ttft: Vec<f64> = ok.iter().filter_map(|r| r.ttft_measurement_error_s()).map(|s| s * 1e3).collect();
        if ttft.is_empty() {
            return None;
        }
        let mut itl = Vec::new();
        let mut itl_requests = 0;
        for r in &ok {
            if let Some(errors) = itl_errors_s(r, iteration_end_s) {
                itl_requests += 1;
                itl.extend(errors.into_iter().map(|s| s * 1e3));
            }
        }
        let delays: Vec<f64> = ok.iter().flat_map(|r| r.runner_scheduling_delays_s()).map(|s| s * 1e3).collect();
        Some(Calibration {
            requests: ttft.len() as u64,
            itl_requests,
            ttft_error: Distribution::from_samples(ttft, percentiles),
            itl_error: Distribution::from_samples(itl, percentiles),
            runner_scheduling_delay: Distribution::from_samples(delays, percentiles),
        })
    }

    /// The `calibration` summary object: `requests`, `itl_requests`, and
    /// `{mean,median,std,pNN}_{ttft_error,itl_error,runner_scheduling_delay}_ms` (the ITL and
    /// scheduling keys only when there were samples).
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("requests".into(), self.requests.into());
        map.insert("itl_requests".into(), self.itl_requests.into());
        self.ttft_error.write_ms_keys(&mut map, "ttft_error");
        if !self.itl_error.is_empty() {
            self.itl_error.write_ms_keys(&mut map, "itl_error");
        }
        if !self.runner_scheduling_delay.is_empty() {
            self.runner_scheduling_delay.write_ms_keys(&mut map, "runner_scheduling_delay");
        }
        Value::Object(map)
    }
}

/// Per response after the first: client gap − executor iteration gap, seconds; `None` when the
/// request's responses cannot be matched one-to-one with consecutive iterations.
pub fn itl_errors_s(record: &RequestRecord, iteration_end_s: &BTreeMap<u64, f64>) -> Option<Vec<f64>> {
    let server = record.server?;
    let (first, last) = (server.first_iter?, server.last_iter?);
    let chunks = &record.chunks;
    if chunks.len() < 2 || last.checked_sub(first)? != chunks.len() as u64 - 1 {
        return None;
    }
    let ends: Vec<f64> = (first..=last).map(|i| iteration_end_s.get(&i).copied()).collect::<Option<_>>()?;
    Some(chunks.windows(2).zip(ends.windows(2)).map(|(c, e)| (c[1].t_s - c[0].t_s) - (e[1] - e[0])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::record::{Phase, ServerTimes};

    fn record(chunks: &[f64], first_iter: u64, last_iter: u64) -> RequestRecord {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        for &t in chunks {
            r.record_chunk(t, 1);
        }
        r.finish(*chunks.last().unwrap(), chunks.len() as u64, Some("length".into()));
        r.server = Some(ServerTimes {
            first_token_s: Some(chunks[0] - 0.002),
            first_iter: Some(first_iter),
            last_iter: Some(last_iter),
            ..ServerTimes::default()
        });
        r
    }

    #[test]
    fn unmatched_iterations_give_no_itl_error() {
        let ends = BTreeMap::from([(1, 1.0), (2, 1.01), (3, 1.02)]);
        // Three responses over iterations 1..=3: matched.
        let errors = itl_errors_s(&record(&[1.001, 1.012, 1.021], 1, 3), &ends).unwrap();
        assert!((errors[0] - 0.001).abs() < 1e-9 && (errors[1] + 0.001).abs() < 1e-9);
        // Paused in between (four iterations for three responses), or an iteration unknown.
        assert_eq!(itl_errors_s(&record(&[1.0, 1.1, 1.2], 1, 4), &ends), None);
        assert_eq!(itl_errors_s(&record(&[1.0, 1.1, 1.2], 2, 4), &ends), None);
    }

    #[test]
    fn non_streaming_and_warmup_requests_are_left_out() {
        let mut warm = record(&[1.0, 1.1], 1, 2);
        warm.phase = Phase::Warmup;
        let mut plain = record(&[1.0, 1.1], 1, 2);
        plain.streaming = false;
        assert_eq!(Calibration::compute(&[warm, plain], &BTreeMap::new(), &[50.0]), None);
        let c = Calibration::compute(&[record(&[1.0, 1.1], 1, 2)], &BTreeMap::new(), &[50.0]).unwrap();
        assert!((c.ttft_error.median().unwrap() - 2.0).abs() < 1e-9);
        let json = c.to_json();
        assert!(json.get("p50_ttft_error_ms").is_some());
        assert!(json.get("mean_itl_error_ms").is_none(), "no iteration times: no ITL error keys");
    }
}
