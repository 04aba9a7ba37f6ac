//! A disaggregated request's TTFT split: prefill on a context worker, the wait for the KV transfer,
//! the transfer, and the first decode step on a generation worker.

use serde::{Deserialize, Serialize};

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
