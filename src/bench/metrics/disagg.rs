//! Disaggregated requests' TTFT split: prefill on a context worker, the wait for the KV transfer,
//! the transfer, and the first decode step on a generation worker, per request and summarised.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::record::{Phase, RequestRecord};
use super::stats::Distribution;

/// What a disaggregated request adds to its record: where each leg ran, and the stamps between
/// its prefill and its first decoded token, in seconds since the run start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DisaggTimes {
    /// The prefill pool's worker (from 0) that ran the context leg.
    pub prefill_worker: u32,
    /// The decode pool's worker (from 0) that ran the generation leg, once it was placed.
    pub decode_worker: Option<u32>,
    /// When the context leg's final (the first token and the KV handoff) reached the runner.
    pub prefill_end_s: Option<f64>,
    /// When the generation executor started pulling the KV cache (its own stamp).
    pub transfer_start_s: Option<f64>,
    /// When the KV cache had arrived.
    pub transfer_end_s: Option<f64>,
    /// KV-cache bytes the transfer moved per rank, as the generation executor reports them.
    pub transfer_bytes: u64,
}

/// One request's TTFT in four consecutive parts (ms) that add up to it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TtftSplit {
    /// Send to the context leg's final: queueing and prefill on the context worker.
    pub prefill_ms: f64,
    /// The context leg's final to the start of the transfer: placing and enqueueing the generation
    /// leg, and its wait for KV space and a transfer slot.
    pub transfer_wait_ms: f64,
    /// The KV-cache transfer.
    pub transfer_ms: f64,
    /// The end of the transfer to the first decoded token.
    pub first_decode_ms: f64,
}

impl DisaggTimes {
    /// The split of a request sent at `send_s` whose first decoded token came at `first_token_s`;
    /// `None` unless every stamp is known.
    ///
    /// ```
    /// use trtllm::bench::DisaggTimes;
    /// let times = DisaggTimes {
    ///     prefill_end_s: Some(1.010),
    ///     transfer_start_s: Some(1.012),
    ///     transfer_end_s: Some(1.015),
    ///     ..Default::default()
    /// };
    /// let split = times.split(1.0, 1.020).unwrap();
    /// assert!((split.prefill_ms - 10.0).abs() < 1e-9 && (split.first_decode_ms - 5.0).abs() < 1e-9);
    /// let sum = split.prefill_ms + split.transfer_wait_ms + split.transfer_ms + split.first_decode_ms;
    /// assert!((sum - 20.0).abs() < 1e-9);
    /// ```
    pub fn split(&self, send_s: f64, first_token_s: f64) -> Option<TtftSplit> {
        let (prefill, start, end) = (self.prefill_end_s?, self.transfer_start_s?, self.transfer_end_s?);
        Some(TtftSplit {
            prefill_ms: (prefill - send_s) * 1e3,
            transfer_wait_ms: (start - prefill) * 1e3,
            transfer_ms: (end - start) * 1e3,
            first_decode_ms: (first_token_s - end) * 1e3,
        })
    }

    /// The transfer's duration, ms, when both stamps are known.
    pub fn transfer_ms(&self) -> Option<f64> {
        Some((self.transfer_end_s? - self.transfer_start_s?) * 1e3)
    }
}

/// The split of a record, when it is a disaggregated request with every stamp.
pub fn record_split(record: &RequestRecord) -> Option<TtftSplit> {
    record.disagg.as_ref()?.split(record.send_s, record.first_token_s?)
}

/// The summary's `disaggregation.ttft_split` and transfer figures over the successful measured
/// requests: per part mean, median, std and percentiles (ms), the transfer's bytes per rank and
/// rate, and how many requests had a complete split. `None` when no request was disaggregated.
pub fn split_section(records: &[RequestRecord], percentiles: &[f64]) -> Option<Value> {
    let ok: Vec<&RequestRecord> =
        records.iter().filter(|r| r.phase == Phase::Measure && r.is_success() && r.disagg.is_some()).collect();
    if !records.iter().any(|r| r.disagg.is_some()) {
        return None;
    }
    let splits: Vec<TtftSplit> = ok.iter().filter_map(|r| record_split(r)).collect();
    let part = |f: fn(&TtftSplit) -> f64| Distribution::from_samples(splits.iter().map(f).collect(), percentiles);
    let mut split = Map::new();
    for (name, d) in [
        ("prefill", part(|s| s.prefill_ms)),
        ("transfer_wait", part(|s| s.transfer_wait_ms)),
        ("transfer", part(|s| s.transfer_ms)),
        ("first_decode", part(|s| s.first_decode_ms)),
    ] {
        d.write_ms_keys(&mut split, name);
    }
    let bytes: Vec<f64> = ok.iter().filter_map(|r| r.disagg).map(|d| d.transfer_bytes as f64).collect();
    let rates: Vec<f64> = ok
        .iter()
        .filter_map(|r| r.disagg)
        .filter_map(|d| d.transfer_ms().filter(|&ms| ms > 0.0).map(|ms| d.transfer_bytes as f64 / (ms * 1e-3) / 1e9))
        .collect();
    Some(json!({
        "requests": ok.len(),
        "requests_with_split": splits.len(),
        "ttft_split": split,
        "mean_transfer_bytes_per_rank": super::stats::mean(&bytes),
        "mean_transfer_gb_s": super::stats::mean(&rates),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(section["requests"], 3, "the warmup request is left out");
        let split = &section["ttft_split"];
        let sum: f64 = ["prefill", "transfer_wait", "transfer", "first_decode"]
            .iter()
            .map(|p| split[format!("mean_{p}_ms")].as_f64().unwrap())
            .sum();
        assert!((sum - records[1].ttft_s().unwrap() * 1e3).abs() < 1e-6, "{sum}");
        assert!((split["mean_transfer_ms"].as_f64().unwrap() - 15.0).abs() < 1e-6);
        // 3 MB in 15 ms: 0.2 GB/s.
        assert!((section["mean_transfer_gb_s"].as_f64().unwrap() - 0.2).abs() < 1e-9);
        records.iter_mut().for_each(|r| r.disagg = None);
        assert_eq!(split_section(&records, &[50.0]), None);
    }
}
