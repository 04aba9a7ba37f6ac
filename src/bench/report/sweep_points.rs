//! The sweep's points as its two charts take them: TTFT under input-token pressure and latency
//! against throughput, each with its line (the shape) and its load.

use super::sweep::SweepRow;

/// One sweep point for the TTFT-pressure chart.
#[derive(Debug, Clone, PartialEq)]
pub struct PressurePoint {
    /// Configured prompt length.
    pub input_len: u64,
    /// Configured output length: one line per shape (input and output length), named and
    /// coloured as in the latency-vs-throughput chart.
    pub output_len: Option<u64>,
    /// The point's load, written beside it (`c4`, `r2.5`).
    pub load: String,
    /// In-flight input tokens: concurrency × actual prompt tokens (the x coordinate).
    pub inflight_tokens: f64,
    /// 95th-percentile TTFT, ms.
    pub p95_ttft_ms: f64,
}

impl PressurePoint {
    /// A closed-loop point: `concurrency` × `prompt_tokens` in flight.
    pub fn closed(input_len: u64, concurrency: u64, prompt_tokens: f64, p95_ttft_ms: f64) -> Self {
        PressurePoint {
            input_len,
            output_len: None,
            load: format!("c{concurrency}"),
            inflight_tokens: concurrency as f64 * prompt_tokens,
            p95_ttft_ms,
        }
    }

    /// The line it belongs to: `in=512 out=128` (`in=512` without an output length).
    pub fn series(&self) -> String {
        match self.output_len {
            Some(out) => format!("in={} out={out}", self.input_len),
            None => format!("in={}", self.input_len),
        }
    }

    /// Points from sweep rows that have a p95 TTFT (streaming runs) and a positive
    /// [`SweepRow::inflight_input_tokens`]; the line is the shape: the configured input and
    /// output lengths, else the rounded actual ones.
    pub fn from_rows(rows: &[SweepRow]) -> Vec<Self> {
        rows.iter()
            .filter(|r| r.inflight_input_tokens > 0.0)
            .filter_map(|r| {
                Some(PressurePoint {
                    input_len: r.input_len.unwrap_or(r.mean_prompt_tokens.round() as u64),
                    output_len: Some(r.output_len.unwrap_or(r.mean_output_tokens.round() as u64)),
                    load: load_label(r)?,
                    inflight_tokens: r.inflight_input_tokens,
                    p95_ttft_ms: r.p95_ttft_ms?,
                })
            })
            .collect()
    }
}

/// Which latency the latency-vs-throughput chart shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyMetric {
    /// Median time per output token.
    P50Tpot,
    /// Median time to first token.
    P50Ttft,
    /// Median end-to-end latency (the one latency of non-streaming runs).
    P50E2el,
}

impl LatencyMetric {
    pub(crate) fn label(self) -> &'static str {
        match self {
            LatencyMetric::P50Tpot => "p50 TPOT (ms)",
            LatencyMetric::P50Ttft => "p50 TTFT (ms)",
            LatencyMetric::P50E2el => "p50 E2E latency (ms)",
        }
    }
}

/// One sweep point for the latency-vs-throughput chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyThroughputPoint {
    /// Line label (e.g. the shape `in=512 out=128`).
    pub series: String,
    /// Concurrency or request rate: orders the points along a line.
    pub load: f64,
    /// The load as written beside the point (`c4`, `r2.5`).
    pub load_label: String,
    /// Output tokens per second (x).
    pub output_throughput: f64,
    /// Latency in ms (y).
    pub latency_ms: f64,
}

impl LatencyThroughputPoint {
    /// Points from sweep rows with a concurrency or rate and the chosen latency; one line per
    /// input/output shape.
    pub fn from_rows(rows: &[SweepRow], metric: LatencyMetric) -> Vec<Self> {
        rows.iter()
            .filter_map(|r| {
                let latency = match metric {
                    LatencyMetric::P50Tpot => r.p50_tpot_ms,
                    LatencyMetric::P50Ttft => r.p50_ttft_ms,
                    LatencyMetric::P50E2el => r.p50_e2el_ms,
                }?;
                let shape = |configured: Option<u64>, actual: f64| configured.unwrap_or(actual.round() as u64);
                Some(LatencyThroughputPoint {
                    series: format!(
                        "in={} out={}",
                        shape(r.input_len, r.mean_prompt_tokens),
                        shape(r.output_len, r.mean_output_tokens)
                    ),
                    load: r.request_rate.or(r.concurrency.map(|c| c as f64))?,
                    load_label: load_label(r)?,
                    output_throughput: r.output_throughput,
                    latency_ms: latency,
                })
            })
            .collect()
    }
}

/// A point's load as written beside it: `c4` (closed loop) or `r2.5` (open loop).
fn load_label(row: &SweepRow) -> Option<String> {
    match (row.request_rate, row.concurrency) {
        (Some(rate), _) => Some(format!("r{rate}")),
        (None, Some(c)) => Some(format!("c{c}")),
        (None, None) => None,
    }
}
