//! Headline numbers of each sweep point: the aggregate CSV and the console table.

use serde::{Deserialize, Serialize};

use super::csv::{opt_num, push_row};
use super::summary::Summary;
use crate::bench::metrics::stats::Distribution;

/// The headline figures of one sweep point (latencies in ms).
///
/// [`SweepRow::from_summary`] fills everything it can; set the configured shape
/// (`input_len`, `output_len`) with [`SweepRow::with_shape`], since a summary only knows the
/// actual token counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    /// Concurrency (closed loop) or concurrency cap.
    pub concurrency: Option<u64>,
    /// Request rate (open loop); `None` for no rate limit.
    pub request_rate: Option<f64>,
    /// Configured prompt length of the point.
    pub input_len: Option<u64>,
    /// Configured output length of the point.
    pub output_len: Option<u64>,
    /// Actual mean prompt tokens of successful requests.
    pub mean_prompt_tokens: f64,
    /// Actual mean output tokens of successful requests.
    pub mean_output_tokens: f64,
    /// Mean prompt tokens served from reused KV blocks.
    pub mean_cached_tokens: f64,
    /// Requests whose output length differed from the one asked for.
    pub output_len_mismatches: u64,
    /// In-flight input-token pressure: concurrency × actual mean prompt tokens.
    pub inflight_input_tokens: f64,
    /// Successful measured requests.
    pub completed: u64,
    /// Failed measured requests.
    pub failed: u64,
    /// Measured window, seconds.
    pub duration_s: f64,
    /// Requests per second.
    pub request_throughput: f64,
    /// Good requests per second, when SLOs were given.
    pub request_goodput: Option<f64>,
    /// Output tokens per second.
    pub output_throughput: f64,
    /// Prompt plus output tokens per second.
    pub total_token_throughput: f64,
    /// Median TTFT.
    pub p50_ttft_ms: Option<f64>,
    /// 95th-percentile TTFT.
    pub p95_ttft_ms: Option<f64>,
    /// 99th-percentile TTFT.
    pub p99_ttft_ms: Option<f64>,
    /// Median TPOT.
    pub p50_tpot_ms: Option<f64>,
    /// 99th-percentile TPOT.
    pub p99_tpot_ms: Option<f64>,
    /// Median per-chunk ITL.
    pub p50_itl_ms: Option<f64>,
    /// 99th-percentile per-chunk ITL.
    pub p99_itl_ms: Option<f64>,
    /// Median E2E latency.
    pub p50_e2el_ms: Option<f64>,
    /// 99th-percentile E2E latency.
    pub p99_e2el_ms: Option<f64>,
    /// Mean output tokens per second of a single request.
    pub mean_request_output_tok_s: Option<f64>,
}

impl SweepRow {
    /// The headline figures of `summary`; percentiles are computed from its samples whatever
    /// percentile list it was built with (linear interpolation), `None` without samples.
    pub fn from_summary(summary: &Summary) -> Self {
        let t = &summary.throughput;
        let p = |d: &Distribution, q: f64| d.percentile(q);
        SweepRow {
            concurrency: summary.run.max_concurrency,
            request_rate: Some(summary.run.request_rate).filter(|r| r.is_finite()),
            input_len: None,
            output_len: None,
            mean_prompt_tokens: summary.mean_prompt_tokens(),
            mean_output_tokens: summary.mean_output_tokens(),
            mean_cached_tokens: summary.tokens.cached.mean().unwrap_or(0.0),
            output_len_mismatches: summary.tokens.output_len_mismatches,
            inflight_input_tokens: summary.inflight_input_tokens,
            completed: t.completed,
            failed: t.failed,
            duration_s: t.duration_s,
            request_throughput: t.request_throughput,
            request_goodput: t.request_goodput,
            output_throughput: t.output_throughput,
            total_token_throughput: t.total_token_throughput,
            p50_ttft_ms: p(&summary.ttft, 50.0),
            p95_ttft_ms: p(&summary.ttft, 95.0),
            p99_ttft_ms: p(&summary.ttft, 99.0),
            p50_tpot_ms: p(&summary.tpot, 50.0),
            p99_tpot_ms: p(&summary.tpot, 99.0),
            p50_itl_ms: p(&summary.itl, 50.0),
            p99_itl_ms: p(&summary.itl, 99.0),
            p50_e2el_ms: p(&summary.e2el, 50.0),
            p99_e2el_ms: p(&summary.e2el, 99.0),
            mean_request_output_tok_s: summary.request_output_throughput.mean(),
        }
    }

    /// Sets the configured prompt and output lengths.
    pub fn with_shape(mut self, input_len: u64, output_len: u64) -> Self {
        self.input_len = Some(input_len);
        self.output_len = Some(output_len);
        self
    }

    /// The load column: `c=8`, `r=2.5`, `c=8 r=2.5` or `r=inf`.
    pub fn load_label(&self) -> String {
        match (self.concurrency, self.request_rate) {
            (Some(c), Some(r)) => format!("c={c} r={r}"),
            (Some(c), None) => format!("c={c}"),
            (None, Some(r)) => format!("r={r}"),
            (None, None) => "r=inf".to_owned(),
        }
    }
}

const SWEEP_COLUMNS: [&str; 26] = [
    "concurrency",
    "request_rate",
    "input_len",
    "output_len",
    "mean_prompt_tokens",
    "mean_output_tokens",
    "mean_cached_tokens",
    "output_len_mismatches",
    "inflight_input_tokens",
    "completed",
    "failed",
    "duration_s",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "p50_ttft_ms",
    "p95_ttft_ms",
    "p99_ttft_ms",
    "p50_tpot_ms",
    "p99_tpot_ms",
    "p50_itl_ms",
    "p99_itl_ms",
    "p50_e2el_ms",
    "p99_e2el_ms",
    "mean_request_output_tok_s",
];

/// The aggregate sweep CSV (RFC 4180, CRLF line ends): a header and one row per point; empty
/// fields for values that do not exist.
///
/// ```rust
/// use trtllm::bench::{sweep_csv, SweepRow};
///
/// let row = SweepRow { concurrency: Some(4), completed: 10, ..SweepRow::default() };
/// let csv = sweep_csv(&[row]);
/// let mut lines = csv.lines();
/// assert!(lines.next().unwrap().starts_with("concurrency,request_rate,input_len"));
/// assert!(lines.next().unwrap().starts_with("4,,,"));
/// ```
pub fn sweep_csv(rows: &[SweepRow]) -> String {
    let mut out = String::new();
    push_row(&mut out, SWEEP_COLUMNS);
    for r in rows {
        let int = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
        push_row(
            &mut out,
            [
                int(r.concurrency),
                opt_num(r.request_rate),
                int(r.input_len),
                int(r.output_len),
                r.mean_prompt_tokens.to_string(),
                r.mean_output_tokens.to_string(),
                r.mean_cached_tokens.to_string(),
                r.output_len_mismatches.to_string(),
                r.inflight_input_tokens.to_string(),
                r.completed.to_string(),
                r.failed.to_string(),
                r.duration_s.to_string(),
                r.request_throughput.to_string(),
                opt_num(r.request_goodput),
                r.output_throughput.to_string(),
                r.total_token_throughput.to_string(),
                opt_num(r.p50_ttft_ms),
                opt_num(r.p95_ttft_ms),
                opt_num(r.p99_ttft_ms),
                opt_num(r.p50_tpot_ms),
                opt_num(r.p99_tpot_ms),
                opt_num(r.p50_itl_ms),
                opt_num(r.p99_itl_ms),
                opt_num(r.p50_e2el_ms),
                opt_num(r.p99_e2el_ms),
                opt_num(r.mean_request_output_tok_s),
            ],
        );
    }
    out
}

/// A fixed-width console table, one line per point: load, input/output length (configured,
/// else the actual mean), req/s, output tok/s, p50/p99 TTFT, p50/p99 TPOT, p99 ITL, p99 E2E
/// (ms) and failures. Missing values (TTFT without streaming, ...) print as `-`.
///
/// ```rust
/// use trtllm::bench::{console_table, SweepRow};
///
/// let row = SweepRow {
///     concurrency: Some(8),
///     p99_ttft_ms: Some(123.456),
///     ..SweepRow::default()
/// }
/// .with_shape(512, 128);
/// let table = console_table(&[row]);
/// assert!(table.lines().next().unwrap().contains("p99 TTFT"));
/// assert!(table.contains("c=8"));
/// assert!(table.contains("123.46"));
/// ```
pub fn console_table(rows: &[SweepRow]) -> String {
    let header = [
        "load",
        "in",
        "out",
        "req/s",
        "out tok/s",
        "p50 TTFT",
        "p99 TTFT",
        "p50 TPOT",
        "p99 TPOT",
        "p99 ITL",
        "p99 E2E",
        "failed",
    ];
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}"));
    let len =
        |configured: Option<u64>, actual: f64| configured.map_or_else(|| format!("{actual:.0}"), |v| v.to_string());
    let body: Vec<[String; 12]> = rows
        .iter()
        .map(|r| {
            [
                r.load_label(),
                len(r.input_len, r.mean_prompt_tokens),
                len(r.output_len, r.mean_output_tokens),
                format!("{:.2}", r.request_throughput),
                format!("{:.1}", r.output_throughput),
                ms(r.p50_ttft_ms),
                ms(r.p99_ttft_ms),
                ms(r.p50_tpot_ms),
                ms(r.p99_tpot_ms),
                ms(r.p99_itl_ms),
                ms(r.p99_e2el_ms),
                r.failed.to_string(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &body {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let text: Vec<String> = cells
            .zip(widths)
            .enumerate()
            .map(|(i, (c, w))| if i == 0 { format!("{c:<w$}") } else { format!("{c:>w$}") })
            .collect();
        out.push_str(text.join("  ").trim_end());
        out.push('\n');
    };
    line(&mut header.iter().copied());
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    line(&mut rule.iter().map(String::as_str));
    for row in &body {
        line(&mut row.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_labels() {
        let mut r = SweepRow::default();
        assert_eq!(r.load_label(), "r=inf");
        r.request_rate = Some(2.5);
        assert_eq!(r.load_label(), "r=2.5");
        r.concurrency = Some(4);
        assert_eq!(r.load_label(), "c=4 r=2.5");
    }

    #[test]
    fn table_columns_line_up() {
        let rows = [
            SweepRow { concurrency: Some(1), ..SweepRow::default() },
            SweepRow { concurrency: Some(256), p99_itl_ms: Some(12345.678), failed: 3, ..SweepRow::default() },
        ];
        let table = console_table(&rows);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4);
        // Right-aligned columns end at the same offset: the failures column is last.
        assert!(lines[2].ends_with('0') && lines[3].ends_with('3'));
        assert_eq!(lines[2].len(), lines[3].len());
        assert!(lines[3].contains("12345.68"));
        assert!(lines[2].contains(" - "));
    }

    #[test]
    fn csv_has_one_row_per_point() {
        let csv = sweep_csv(&[SweepRow::default(), SweepRow::default()]);
        assert_eq!(csv.matches("\r\n").count(), 3);
        let header = csv.lines().next().unwrap();
        assert_eq!(header.split(',').count(), SWEEP_COLUMNS.len());
    }
}
