//! The summary's disaggregation figures over the records: each request's TTFT split and the
//! split's statistics, transfer bytes and rate.

use serde_json::{Map, Value, json};

use super::disagg::TtftSplit;
use super::record::{Phase, RequestRecord};
use super::stats::Distribution;

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
