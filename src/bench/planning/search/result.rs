//! Results of the search: the figures of one load point, one configuration's sweep, and the
//! resumable results directory (one JSON file per configuration, named by its key).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::slo::{PercentileTable, SloMetric, SloSet};
use super::space::Candidate;
use crate::bench::RequestRecord;

/// Percentiles every point reports besides those the SLOs name.
const REPORTED_PERCENTILES: [f64; 3] = [50.0, 95.0, 99.0];

/// The figures of one load point on the virtual clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// `c16` (closed loop, 16 users) or `r2.5` (2.5 requests/s).
    pub load: String,
    /// Measured requests that succeeded.
    pub completed: u64,
    /// Measured requests that failed.
    pub failed: u64,
    /// Completed requests per simulated second.
    pub request_throughput: f64,
    /// Output tokens per simulated second (all GPUs of the configuration).
    pub output_throughput: f64,
    /// Output tokens per second and GPU.
    pub tokens_per_s_per_gpu: f64,
    /// Decode speed one user sees: 1000 / mean TPOT (ms), tokens per second.
    pub tokens_per_s_per_user: f64,
    /// Latency percentiles, `p95_ttft_ms` style.
    pub percentiles: PercentileTable,
    /// The SLOs this point misses (empty: it meets all of them).
    pub violations: Vec<String>,
    /// Simulated seconds of the point.
    pub simulated_s: f64,
    /// Wall-clock seconds the point took.
    pub wall_s: f64,
    /// Iteration statistics the point's log lacks (lost to a collector that fell behind, or
    /// absent between the first and last iteration); 0 on the virtual clock.
    #[serde(default)]
    pub lost_statistics: u64,
}

impl PointResult {
    /// The figures of `records` (warmup excluded) for a configuration on `gpus` GPUs.
    pub fn from_records(load: String, records: &[RequestRecord], gpus: usize, slos: &SloSet) -> Self {
        let measured: Vec<&RequestRecord> = records.iter().filter(|r| r.is_measured()).collect();
        let ok: Vec<&RequestRecord> = measured.iter().copied().filter(|r| r.is_success()).collect();
        let start = measured.iter().map(|r| r.send_s).fold(f64::INFINITY, f64::min);
        let end = ok.iter().filter_map(|r| r.end_s).fold(f64::NEG_INFINITY, f64::max);
        let window = if end > start { end - start } else { 0.0 };
        let output: u64 = ok.iter().map(|r| r.output_tokens).sum();
        let per_s = |n: f64| if window > 0.0 { n / window } else { 0.0 };
        let percentiles = slos.measure(records, &REPORTED_PERCENTILES);
        let tpots: Vec<f64> = SloMetric::Tpot.samples_s(records);
        let tokens_per_s_per_user = crate::bench::mean(&tpots).filter(|t| *t > 0.0).map_or(0.0, |t| 1.0 / t);
        let output_throughput = per_s(output as f64);
        let violations = slos.violations(&percentiles);
        PointResult {
            load,
            completed: ok.len() as u64,
            failed: (measured.len() - ok.len()) as u64,
            request_throughput: per_s(ok.len() as f64),
            output_throughput,
            tokens_per_s_per_gpu: output_throughput / gpus.max(1) as f64,
            tokens_per_s_per_user,
            percentiles,
            violations,
            simulated_s: window,
            wall_s: 0.0,
            lost_statistics: 0,
        }
    }

    /// Meets every SLO, and no request failed.
    pub fn meets_slos(&self) -> bool {
        self.violations.is_empty() && self.failed == 0 && self.completed > 0
    }
}

/// One configuration's outcome: its load points, lowest load first, up to the first that
/// missed an SLO (higher loads are not run), or the error that stopped it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigResult {
    /// [`Candidate::key`].
    pub key: String,
    /// What was searched for: the workload, loads and SLOs; a stored result of another study
    /// is run again.
    pub study: serde_json::Value,
    /// The configuration.
    pub candidate: Candidate,
    /// The points run.
    pub points: Vec<PointResult>,
    /// The error that stopped the sweep, if any.
    pub error: Option<String>,
    /// Wall-clock seconds the configuration took.
    pub wall_s: f64,
}

impl ConfigResult {
    /// GPUs the configuration occupies.
    pub fn gpus(&self) -> usize {
        self.candidate.gpus()
    }

    /// The highest-throughput point that meets every SLO: the configuration's goodput.
    pub fn best_point(&self) -> Option<&PointResult> {
        self.points
            .iter()
            .filter(|p| p.meets_slos())
            .max_by(|a, b| a.tokens_per_s_per_gpu.total_cmp(&b.tokens_per_s_per_gpu))
    }

    /// Goodput per GPU in output tokens/s: the best SLO-meeting point's, or 0.
    pub fn goodput_tokens_per_s_per_gpu(&self) -> f64 {
        self.best_point().map_or(0.0, |p| p.tokens_per_s_per_gpu)
    }

    /// Goodput per GPU in requests/s: the best SLO-meeting point's, or 0.
    pub fn goodput_requests_per_s_per_gpu(&self) -> f64 {
        self.best_point().map_or(0.0, |p| p.request_throughput / self.gpus().max(1) as f64)
    }
}

/// Errors reading or writing the results directory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultStoreError {
    /// A file or directory could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The failure.
        source: std::io::Error,
    },
    /// A result could not be serialized.
    #[error("serializing {path}: {source}")]
    Json {
        /// The path.
        path: PathBuf,
        /// The failure.
        source: serde_json::Error,
    },
}

/// The results directory: `configs/<key>.json` per finished configuration.
#[derive(Debug, Clone)]
pub struct ResultStore {
    root: PathBuf,
}

impl ResultStore {
    /// Opens (creating) the directory.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, ResultStoreError> {
        let root = root.into();
        let configs = root.join("configs");
        std::fs::create_dir_all(&configs).map_err(|source| ResultStoreError::Io { path: configs, source })?;
        Ok(ResultStore { root })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the result of `key` lives.
    pub fn path_of(&self, key: &str) -> PathBuf {
        self.root.join("configs").join(format!("{key}.json"))
    }

    /// The stored result of `key` for `study`, if there is one (unreadable or foreign files
    /// count as missing: the configuration runs again and overwrites them).
    pub fn load(&self, key: &str, study: &serde_json::Value) -> Option<ConfigResult> {
        let text = std::fs::read_to_string(self.path_of(key)).ok()?;
        let result: ConfigResult = serde_json::from_str(&text).ok()?;
        (result.key == key && &result.study == study).then_some(result)
    }

    /// Writes a result atomically (a temporary file renamed), so an interrupted run leaves
    /// either the whole file or none.
    pub fn save(&self, result: &ConfigResult) -> Result<(), ResultStoreError> {
        save_json(&self.path_of(&result.key), result)
    }
}

/// Writes `value` as JSON to `path` atomically (a temporary file renamed), so an interrupted run
/// leaves either the whole file or none.
pub(crate) fn save_json(path: &Path, value: &impl Serialize) -> Result<(), ResultStoreError> {
    let json = serde_json::to_vec_pretty(value)
        .map_err(|source| ResultStoreError::Json { path: path.to_path_buf(), source })?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, json).map_err(|source| ResultStoreError::Io { path: tmp.clone(), source })?;
    std::fs::rename(&tmp, path).map_err(|source| ResultStoreError::Io { path: path.to_path_buf(), source })
}

#[cfg(test)]
impl PointResult {
    /// A point of ten requests at `load` with `per_gpu` output tokens/s per GPU (and per second:
    /// one GPU) that meets `tpot:p95:50` (p95 TPOT 40 ms) or misses it (61.2 ms).
    pub(crate) fn with_goodput(load: &str, per_gpu: f64, ok: bool) -> PointResult {
        let tpot = if ok { 40.0 } else { 61.2 };
        PointResult {
            load: load.into(),
            completed: 10,
            failed: 0,
            request_throughput: per_gpu / 100.0,
            output_throughput: per_gpu,
            tokens_per_s_per_gpu: per_gpu,
            tokens_per_s_per_user: 10.0,
            percentiles: PercentileTable::from([("p95_tpot_ms".into(), tpot)]),
            violations: if ok { vec![] } else { vec![format!("tpot:p95:50 ({tpot:.1} ms)")] },
            simulated_s: 1.0,
            wall_s: 0.1,
            lost_statistics: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Phase;

    fn record(index: u64, ttft: f64, tpot: f64, tokens: u64) -> RequestRecord {
        let mut r = RequestRecord::new(index, Phase::Measure, index as f64);
        r.prompt_tokens = 100;
        for k in 0..tokens {
            r.record_chunk(index as f64 + ttft + k as f64 * tpot, 1);
        }
        r.finish(index as f64 + ttft + (tokens - 1) as f64 * tpot, tokens, Some("length".into()));
        r
    }

    #[test]
    fn figures_come_from_the_measured_requests() {
        let mut warm = record(0, 5.0, 1.0, 11);
        warm.phase = Phase::Warmup;
        // Two requests: sent at 1 and 2 s, 0.1 s TTFT, 10 ms per token, 11 tokens: the last
        // ends at 2.2 s, a 1.2 s window.
        let records = vec![warm, record(1, 0.1, 0.01, 11), record(2, 0.1, 0.01, 11)];
        let slos = SloSet::parse("ttft:p95:101,tpot:p95:5").unwrap();
        let p = PointResult::from_records("c2".into(), &records, 2, &slos);
        assert_eq!((p.completed, p.failed), (2, 0));
        assert!((p.output_throughput - 22.0 / 1.2).abs() < 1e-9);
        assert!((p.tokens_per_s_per_gpu - 11.0 / 1.2).abs() < 1e-9);
        assert!((p.tokens_per_s_per_user - 100.0).abs() < 1e-6);
        assert!((p.percentiles["p95_ttft_ms"] - 100.0).abs() < 1e-6);
        assert_eq!(p.violations, vec!["tpot:p95:5 (10.0 ms)".to_string()]);
        assert!(!p.meets_slos());
    }

    #[test]
    fn the_store_keeps_results_of_its_own_study_only() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::open(dir.path()).unwrap();
        let study = serde_json::json!({"slos": "ttft:p95:500"});
        let candidate: Candidate = serde_json::from_value(serde_json::json!({
            "engine": {"tp": 1, "fp8_weights": false, "fp8_kv_cache": false, "max_batch_size": 8, "max_num_tokens": 512},
            "runtime": {"kv_fraction": 0.9, "block_reuse": true, "chunked_context": true, "scheduler": "guaranteed-no-evict"}
        }))
        .unwrap();
        let result = ConfigResult {
            key: candidate.key(),
            study: study.clone(),
            candidate,
            points: vec![],
            error: None,
            wall_s: 1.0,
        };
        assert!(store.load(&result.key, &study).is_none());
        store.save(&result).unwrap();
        assert_eq!(store.load(&result.key, &study), Some(result.clone()));
        assert!(store.load(&result.key, &serde_json::json!({"slos": "ttft:p95:400"})).is_none());
        std::fs::write(store.path_of(&result.key), "{ truncated").unwrap();
        assert!(store.load(&result.key, &study).is_none());
    }
}
