//! The summary's disaggregation figures over the records: each request's TTFT split and the
//! split's statistics, transfer bytes and rate.

use serde::{Deserialize, Serialize};

use super::disagg::TtftSplit;
use super::load_shape::LatencyFigures;
use super::record::{Phase, RequestRecord};
use super::stats::Distribution;

/// The split of a record, when it is a disaggregated request with every stamp.
pub fn record_split(record: &RequestRecord) -> Option<TtftSplit> {
    record.disagg.as_ref()?.split(record.send_s, record.first_token_s?)
}

/// The summary's `disaggregation`: the TTFT split and transfer figures of the successful
/// measured requests (from the records), then the pools and the token check (filled by the
/// runner's report).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DisaggregationSection {
    /// Successful measured disaggregated requests.
    pub requests: usize,
    /// Those with every stamp of the split.
    pub requests_with_split: usize,
    /// Per part (`prefill`, `transfer_wait`, `transfer`, `first_decode`) mean, median, std and
    /// percentiles, ms (`mean_prefill_ms`, ...).
    pub ttft_split: LatencyFigures,
    /// Mean KV bytes moved per rank.
    pub mean_transfer_bytes_per_rank: Option<f64>,
    /// Mean transfer rate, GB/s.
    pub mean_transfer_gb_s: Option<f64>,
    /// The pools and the requests placed on each worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pools: Option<PoolsSection>,
    /// The first measured requests rerun aggregated: the same tokens?
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_check: Option<TokenCheck>,
}

impl DisaggregationSection {
    /// The mean of a split part (`prefill`, `transfer_wait`, `transfer`, `first_decode`), ms.
    pub fn mean_ms(&self, part: &str) -> Option<f64> {
        self.ttft_split.get(&format!("mean_{part}_ms"))
    }
}

/// `disaggregation.pools`: each worker and the requests placed on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolsSection {
    /// `XpYd`.
    pub shape: String,
    /// How a leg's worker is chosen.
    pub placement: String,
    /// The prefill pool.
    pub prefill: Vec<PoolWorker>,
    /// The decode pool.
    pub decode: Vec<PoolWorker>,
}

/// One worker of a pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolWorker {
    /// Its name (`prefill-0`).
    pub worker: String,
    /// Legs placed on it.
    pub requests: u64,
}

/// `disaggregation.token_check`: the first measured requests rerun aggregated, whose tokens
/// must be the disaggregated run's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenCheck {
    /// What was checked.
    pub what: String,
    /// Requests rerun.
    pub checked: usize,
    /// Those with the same tokens.
    pub matched: usize,
    /// The others.
    pub mismatched: Vec<TokenMismatch>,
}

/// A request whose aggregated rerun differed (or failed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenMismatch {
    /// Its place among the checked requests.
    pub request: usize,
    /// The tokens the disaggregated run streamed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disaggregated: Option<Vec<u32>>,
    /// The aggregated rerun's tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregated: Option<Vec<u32>>,
    /// The rerun's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The summary's `disaggregation` split and transfer figures over the successful measured
/// requests: per part mean, median, std and percentiles (ms), the transfer's bytes per rank and
/// rate, and how many requests had a complete split. `None` when no request was disaggregated.
pub fn split_section(records: &[RequestRecord], percentiles: &[f64]) -> Option<DisaggregationSection> {
    let ok: Vec<&RequestRecord> =
        records.iter().filter(|r| r.phase == Phase::Measure && r.is_success() && r.disagg.is_some()).collect();
    if !records.iter().any(|r| r.disagg.is_some()) {
        return None;
    }
    let splits: Vec<TtftSplit> = ok.iter().filter_map(|r| record_split(r)).collect();
    let part = |f: fn(&TtftSplit) -> f64| Distribution::from_samples(splits.iter().map(f).collect(), percentiles);
    let ttft_split = [
        ("prefill", part(|s| s.prefill_ms)),
        ("transfer_wait", part(|s| s.transfer_wait_ms)),
        ("transfer", part(|s| s.transfer_ms)),
        ("first_decode", part(|s| s.first_decode_ms)),
    ]
    .iter()
    .flat_map(|(name, d)| d.ms_entries(name))
    .collect();
    let bytes: Vec<f64> = ok.iter().filter_map(|r| r.disagg).map(|d| d.transfer_bytes as f64).collect();
    let rates: Vec<f64> = ok
        .iter()
        .filter_map(|r| r.disagg)
        .filter_map(|d| d.transfer_ms().filter(|&ms| ms > 0.0).map(|ms| d.transfer_bytes as f64 / (ms * 1e-3) / 1e9))
        .collect();
    Some(DisaggregationSection {
        requests: ok.len(),
        requests_with_split: splits.len(),
        ttft_split,
        mean_transfer_bytes_per_rank: super::stats::mean(&bytes),
        mean_transfer_gb_s: super::stats::mean(&rates),
        pools: None,
        token_check: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::disagg::DisaggTimes;

    #[test]
    fn the_parts_add_up_to_the_ttft_and_only_disaggregated_measured_requests_count() {
        let mut records = Vec::new();
        for i in 0..4u32 {
            let send = f64::from(i);
            let mut r = RequestRecord::new(u64::from(i), if i == 0 { Phase::Warmup } else { Phase::Measure }, send);
            r.record_chunk(send + 0.050, 2);
            r.finish(send + 0.1, 8, Some("length".into()));
            r.disagg = Some(DisaggTimes {
                prefill_worker: i % 2,
                decode_worker: Some(0),
                prefill_end_s: Some(send + 0.020),
                transfer_start_s: Some(send + 0.025),
                transfer_end_s: Some(send + 0.040),
                transfer_bytes: 3_000_000,
            });
            records.push(r);
        }
        let section = split_section(&records, &[50.0, 99.0]).unwrap();
        assert_eq!(section.requests, 3, "the warmup request is left out");
        let sum: f64 =
            ["prefill", "transfer_wait", "transfer", "first_decode"].iter().map(|p| section.mean_ms(p).unwrap()).sum();
        assert!((sum - records[1].ttft_s().unwrap() * 1e3).abs() < 1e-6, "{sum}");
        assert!((section.mean_ms("transfer").unwrap() - 15.0).abs() < 1e-6);
        // 3 MB in 15 ms: 0.2 GB/s.
        assert!((section.mean_transfer_gb_s.unwrap() - 0.2).abs() < 1e-9);
        let json = serde_json::to_value(&section).unwrap();
        assert!(json["ttft_split"]["std_transfer_ms"].is_number() && json["ttft_split"]["p99_transfer_ms"].is_number());
        records.iter_mut().for_each(|r| r.disagg = None);
        assert_eq!(split_section(&records, &[50.0]), None);
    }
}
