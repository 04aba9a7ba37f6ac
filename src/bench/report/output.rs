//! Result files beside each other under one stem: summary JSON, per-request JSONL/CSV, iterations.

use std::ffi::OsString;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::csv::{opt_num, push_row};
use super::summary::Summary;
use super::sweep::{SweepRow, sweep_csv};
use crate::bench::metrics::disagg_summary::record_split;
use crate::bench::metrics::record::RequestRecord;
use crate::bench::metrics::timeseries::TimeSample;

/// Errors from writing result files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// Creating or writing a file failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file (or directory) being written.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Serializing a row or the summary failed.
    #[error("cannot serialize {what}: {source}")]
    Json {
        /// What was being serialized.
        what: &'static str,
        /// The underlying error.
        source: serde_json::Error,
    },
}

/// Column names of `<stem>.requests.csv`, in order. The `disagg_` columns are a disaggregated
/// request's TTFT split (they add up to `ttft_ms`) and its KV transfer's bytes per rank; empty
/// for an aggregated request.
pub const REQUEST_CSV_COLUMNS: [&str; 40] = [
    "index",
    "phase",
    "streaming",
    "scheduled_send_s",
    "send_s",
    "first_token_s",
    "end_s",
    "prompt_tokens",
    "output_tokens",
    "expected_output_tokens",
    "cached_tokens",
    "finish_reason",
    "error",
    "client_queue_s",
    "server_arrival_s",
    "server_first_scheduled_s",
    "server_first_token_s",
    "server_last_token_s",
    "server_first_iter",
    "server_last_iter",
    "ttft_ms",
    "tpot_ms",
    "e2el_ms",
    "dispatch_delay_ms",
    "server_queue_ms",
    "server_ttft_ms",
    "server_prefill_ms",
    "server_tpot_ms",
    "runner_overhead_ms",
    "ttft_measurement_error_ms",
    "request_output_tok_s",
    "num_chunks",
    "chunk_tokens_total",
    "chunk_times_s",
    "chunk_tokens",
    "disagg_prefill_ms",
    "disagg_transfer_wait_ms",
    "disagg_transfer_ms",
    "disagg_first_decode_ms",
    "disagg_transfer_bytes",
];

/// The per-request CSV (RFC 4180, CRLF line ends): raw stamps in seconds since the run start,
/// derived latencies in ms, and the chunk receive times and token counts as `;`-separated lists.
///
/// ```rust
/// use trtllm::bench::{requests_csv, Phase, RequestRecord};
///
/// let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
/// r.fail(0.5, "bad request: \"max_tokens\", too large");
/// let csv = requests_csv(&[r]);
/// assert!(csv.contains("\"bad request: \"\"max_tokens\"\", too large\""));
/// ```
pub fn requests_csv(records: &[RequestRecord]) -> String {
    let mut out = String::new();
    push_row(&mut out, REQUEST_CSV_COLUMNS);
    let ms = |v: Option<f64>| opt_num(v.map(|s| s * 1000.0));
    for r in records {
        let server = r.server.unwrap_or_default();
        let split = record_split(r);
        let join = |f: &dyn Fn(&crate::bench::metrics::record::RecordedChunk) -> String| {
            r.chunks.iter().map(f).collect::<Vec<_>>().join(";")
        };
        push_row(
            &mut out,
            [
                r.index.to_string(),
                r.phase.as_str().to_owned(),
                r.streaming.to_string(),
                opt_num(r.scheduled_send_s),
                r.send_s.to_string(),
                opt_num(r.first_token_s),
                opt_num(r.end_s),
                r.prompt_tokens.to_string(),
                r.output_tokens.to_string(),
                r.expected_output_tokens.map(|n| n.to_string()).unwrap_or_default(),
                r.cached_tokens.to_string(),
                r.finish_reason.clone().unwrap_or_default(),
                r.error.clone().unwrap_or_default(),
                r.client_queue_s.to_string(),
                opt_num(server.arrival_s),
                opt_num(server.first_scheduled_s),
                opt_num(server.first_token_s),
                opt_num(server.last_token_s),
                server.first_iter.map(|n| n.to_string()).unwrap_or_default(),
                server.last_iter.map(|n| n.to_string()).unwrap_or_default(),
                ms(r.ttft_s()),
                ms(r.tpot_s()),
                ms(r.e2el_s()),
                ms(r.dispatch_delay_s()),
                ms(r.server_queue_s()),
                ms(r.server_ttft_s()),
                ms(r.server_prefill_s()),
                ms(r.server_tpot_s()),
                ms(r.runner_overhead_s()),
                ms(r.ttft_measurement_error_s()),
                opt_num(r.output_tokens_per_s()),
                r.chunks.len().to_string(),
                r.chunk_tokens().to_string(),
                join(&|c| c.t_s.to_string()),
                join(&|c| c.tokens.to_string()),
                opt_num(split.map(|s| s.prefill_ms)),
                opt_num(split.map(|s| s.transfer_wait_ms)),
                opt_num(split.map(|s| s.transfer_ms)),
                opt_num(split.map(|s| s.first_decode_ms)),
                r.disagg.map(|d| d.transfer_bytes.to_string()).unwrap_or_default(),
            ],
        );
    }
    out
}

/// One JSON object per line, each a serialized [`RequestRecord`] (readable back with
/// `serde_json::from_str::<RequestRecord>`).
pub fn requests_jsonl(records: &[RequestRecord]) -> Result<String, OutputError> {
    jsonl(records, "request record")
}

fn jsonl<T: serde::Serialize>(rows: &[T], what: &'static str) -> Result<String, OutputError> {
    let mut out = String::new();
    for row in rows {
        let line = serde_json::to_string(row).map_err(|source| OutputError::Json { what, source })?;
        out.push_str(&line);
        out.push('\n');
    }
    Ok(out)
}

/// Paths and writers for one benchmark point's files, all named from one stem:
/// `<stem>.json`, `<stem>.requests.jsonl`, `<stem>.requests.csv`, `<stem>.iters.jsonl`, and for
/// duration runs `<stem>.timeseries.jsonl` and `<stem>.timeseries.svg`.
///
/// Parent directories are created on write.
///
/// ```rust
/// use trtllm::bench::{Phase, RequestRecord, ResultFiles, RunInfo, Summary};
///
/// let dir = tempfile::tempdir().unwrap();
/// let files = ResultFiles::new(dir.path().join("c8").join("point"));
/// let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
/// r.record_chunk(0.1, 1);
/// r.finish(0.1, 1, None);
/// let summary = Summary::builder(RunInfo::default()).build(std::slice::from_ref(&r)).unwrap();
/// files.write_summary(&summary).unwrap();
/// files.write_requests(&[r]).unwrap();
/// files.write_iterations(&[serde_json::json!({"iter": 1})]).unwrap();
/// assert!(files.summary_path().ends_with("point.json"));
/// assert!(files.requests_csv_path().exists());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultFiles {
    stem: PathBuf,
}

impl ResultFiles {
    /// Files named from `stem` (a path without extension, e.g. `results/c8-in512-out128`).
    pub fn new(stem: impl Into<PathBuf>) -> Self {
        Self { stem: stem.into() }
    }

    fn with_suffix(&self, suffix: &str) -> PathBuf {
        let mut name = OsString::from(self.stem.as_os_str());
        name.push(suffix);
        PathBuf::from(name)
    }

    /// `<stem>.json`.
    pub fn summary_path(&self) -> PathBuf {
        self.with_suffix(".json")
    }

    /// `<stem>.requests.jsonl`.
    pub fn requests_jsonl_path(&self) -> PathBuf {
        self.with_suffix(".requests.jsonl")
    }

    /// `<stem>.requests.csv`.
    pub fn requests_csv_path(&self) -> PathBuf {
        self.with_suffix(".requests.csv")
    }

    /// `<stem>.iters.jsonl`.
    pub fn iters_jsonl_path(&self) -> PathBuf {
        self.with_suffix(".iters.jsonl")
    }

    /// `<stem>.timeseries.jsonl`.
    pub fn timeseries_jsonl_path(&self) -> PathBuf {
        self.with_suffix(".timeseries.jsonl")
    }

    /// `<stem>.timeseries.svg`.
    pub fn timeseries_svg_path(&self) -> PathBuf {
        self.with_suffix(".timeseries.svg")
    }

    /// `<stem>.gpu.jsonl`: GPU telemetry samples.
    pub fn gpu_jsonl_path(&self) -> PathBuf {
        self.with_suffix(".gpu.jsonl")
    }

    /// `<stem>.gpu.svg`: GPU telemetry beside throughput.
    pub fn gpu_svg_path(&self) -> PathBuf {
        self.with_suffix(".gpu.svg")
    }

    /// Writes `<stem>.gpu.jsonl`, one [`crate::bench::GpuSample`] per line; returns its path.
    pub fn write_gpu_telemetry(&self, samples: &[crate::bench::GpuSample]) -> Result<PathBuf, OutputError> {
        let path = self.gpu_jsonl_path();
        write_file(&path, jsonl(samples, "GPU sample")?.as_bytes())?;
        Ok(path)
    }

    /// Writes `<stem>.timeseries.jsonl`, one [`TimeSample`] per line; returns its path.
    pub fn write_time_series(&self, samples: &[TimeSample]) -> Result<PathBuf, OutputError> {
        let path = self.timeseries_jsonl_path();
        write_file(&path, jsonl(samples, "time sample")?.as_bytes())?;
        Ok(path)
    }

    /// Writes the summary as pretty JSON in file order; returns its path.
    pub fn write_summary(&self, summary: &Summary) -> Result<PathBuf, OutputError> {
        let path = self.summary_path();
        let mut text =
            serde_json::to_string_pretty(summary).map_err(|source| OutputError::Json { what: "summary", source })?;
        text.push('\n');
        write_file(&path, text.as_bytes())?;
        Ok(path)
    }

    /// Writes `<stem>.requests.jsonl` and `<stem>.requests.csv` (warmup rows included, marked
    /// by `phase`).
    pub fn write_requests(&self, records: &[RequestRecord]) -> Result<(), OutputError> {
        write_file(&self.requests_jsonl_path(), requests_jsonl(records)?.as_bytes())?;
        write_file(&self.requests_csv_path(), requests_csv(records).as_bytes())
    }

    /// Writes `<stem>.iters.jsonl`, one caller-given row (e.g. an executor `IterationStats`) per
    /// line; returns its path.
    pub fn write_iterations(&self, rows: &[Value]) -> Result<PathBuf, OutputError> {
        let path = self.iters_jsonl_path();
        write_file(&path, jsonl(rows, "iteration row")?.as_bytes())?;
        Ok(path)
    }
}

/// Writes the aggregate sweep CSV ([`sweep_csv`]) to `path`.
pub fn write_sweep_csv(path: &Path, rows: &[SweepRow]) -> Result<(), OutputError> {
    write_file(path, sweep_csv(rows).as_bytes())
}

/// Writes `bytes` to `path`, creating missing parent directories.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let io_err = |source| OutputError::Io { path: path.to_owned(), source };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(io_err)?;
    }
    let file = fs::File::create(path).map_err(io_err)?;
    let mut w = BufWriter::new(file);
    w.write_all(bytes).map_err(io_err)?;
    w.flush().map_err(io_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::record::Phase;

    #[test]
    fn suffixes_append_to_the_stem() {
        let f = ResultFiles::new("out/run.v1");
        assert_eq!(f.summary_path(), PathBuf::from("out/run.v1.json"));
        assert_eq!(f.requests_jsonl_path(), PathBuf::from("out/run.v1.requests.jsonl"));
        assert_eq!(f.iters_jsonl_path(), PathBuf::from("out/run.v1.iters.jsonl"));
    }

    #[test]
    fn csv_header_matches_row_width() {
        let mut r = RequestRecord::new(0, Phase::Warmup, 0.0);
        r.record_chunk(0.1, 2);
        r.record_chunk(0.2, 1);
        r.finish(0.2, 3, Some("length".into()));
        let csv = requests_csv(&[r]);
        let lines: Vec<&str> = csv.split("\r\n").collect();
        assert_eq!(lines[0].split(',').count(), REQUEST_CSV_COLUMNS.len());
        assert_eq!(lines[1].split(',').count(), REQUEST_CSV_COLUMNS.len());
        assert!(lines[1].starts_with("0,warmup,true,"));
        // An aggregated request leaves the disaggregation columns empty.
        assert!(lines[1].ends_with(",2,3,0.1;0.2,2;1,,,,,"), "{}", lines[1]);
    }

    #[test]
    fn a_disaggregated_request_writes_its_ttft_split() {
        let mut r = RequestRecord::new(0, Phase::Measure, 1.0);
        r.record_chunk(1.050, 1);
        r.finish(1.1, 1, Some("length".into()));
        r.disagg = Some(crate::bench::metrics::disagg::DisaggTimes {
            prefill_end_s: Some(1.020),
            transfer_start_s: Some(1.025),
            transfer_end_s: Some(1.040),
            transfer_bytes: 4096,
            ..Default::default()
        });
        let csv = requests_csv(&[r]);
        let row: Vec<&str> = csv.split("\r\n").nth(1).unwrap().split(',').collect();
        let col = |name: &str| row[REQUEST_CSV_COLUMNS.iter().position(|c| *c == name).unwrap()];
        let ms = |name: &str| col(name).parse::<f64>().unwrap();
        assert!((ms("disagg_prefill_ms") - 20.0).abs() < 1e-9);
        assert!((ms("disagg_transfer_wait_ms") - 5.0).abs() < 1e-9);
        assert!((ms("disagg_transfer_ms") - 15.0).abs() < 1e-9);
        assert!((ms("disagg_first_decode_ms") - 10.0).abs() < 1e-9);
        assert_eq!(col("disagg_transfer_bytes"), "4096");
    }

    #[test]
    fn unwritable_path_reports_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"x").unwrap();
        let err = write_file(&blocker.join("sub").join("x.csv"), b"").unwrap_err();
        assert!(err.to_string().contains("file"), "{err}");
        assert!(matches!(err, OutputError::Io { .. }));
    }
}
