//! Kernel tables in the shared measurement format (`roofline.json`, `knee.json`, `shards.json` of
//! scripts/kernels/): each row turned into the work the timing model prices, and the model's time beside
//! the measured one.

use serde::{Deserialize, Serialize};

use super::error::SimError;
use super::gpu::GpuPreset;
use super::kernels::{Kernels, WeightFormat};
use super::model::{KvCacheDtype, ModelPreset, WeightDtype};
use super::perf_model::{BatchWork, PerfModel};

/// The model the whole-pass tables were measured on.
const TABLE_MODEL: &str = "llama-3.1-8b";

/// One measured row and what it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelRow {
    /// `decode`, `prefill`, `mixed` (whole forward passes) or `gemm` (one GEMM shard).
    pub kind: String,
    /// `bf16` or `fp8`.
    pub dtype: String,
    /// The case, e.g. `B=256 L=128`.
    pub case: String,
    /// Measured milliseconds.
    pub measured_ms: f64,
    /// The work (whole passes).
    #[serde(skip)]
    pub work: BatchWork,
    /// Kernels ran from CUDA graphs.
    pub cuda_graphs: bool,
    /// GEMM rows: (M, K, N).
    #[serde(skip)]
    pub gemm: Option<(f64, f64, f64)>,
}

#[derive(Deserialize)]
struct Roofline {
    #[serde(default)]
    decode: Vec<PassRow>,
    #[serde(default)]
    prefill: Vec<PassRow>,
}

#[derive(Deserialize)]
struct Knee {
    #[serde(default)]
    decode_large: Vec<PassRow>,
    #[serde(default)]
    mixed: Vec<PassRow>,
}

#[derive(Deserialize)]
struct PassRow {
    dtype: String,
    ms: f64,
    #[serde(default)]
    batch: Option<f64>,
    #[serde(default)]
    decode_batch: Option<f64>,
    #[serde(default)]
    context: Option<f64>,
    #[serde(default)]
    tokens: Option<f64>,
    #[serde(default)]
    prefill_tokens: Option<f64>,
}

#[derive(Deserialize)]
struct Shards {
    #[serde(default)]
    gemm: Vec<GemmRow>,
}

#[derive(Deserialize)]
struct GemmRow {
    model: String,
    tp: u32,
    op: String,
    #[serde(rename = "M")]
    m: f64,
    #[serde(rename = "K")]
    k: f64,
    #[serde(rename = "N")]
    n: f64,
    dtype: String,
    ms: f64,
}

fn invalid(what: &str, e: serde_json::Error) -> SimError {
    SimError::Invalid(format!("kernel table {what}: {e}"))
}

fn decode_work(batch: f64, context: f64) -> BatchWork {
    // `batch` sequences of one row each price like one sequence of `batch` beams.
    *BatchWork::default().add_generation(context, batch)
}

/// The rows of the whole-pass tables (`roofline.json`'s decode and prefill, `knee.json`'s large-batch
/// decode and mixed iterations), in compare_with_model.py's order.
pub fn pass_rows(roofline_json: &str, knee_json: &str) -> Result<Vec<KernelRow>, SimError> {
    let roofline: Roofline = serde_json::from_str(roofline_json).map_err(|e| invalid("roofline", e))?;
    let knee: Knee = serde_json::from_str(knee_json).map_err(|e| invalid("knee", e))?;
    let mut rows = Vec::new();
    let row = |kind: &str, r: &PassRow, case: String, work: BatchWork, cuda_graphs: bool| KernelRow {
        kind: kind.into(),
        dtype: r.dtype.clone(),
        case,
        measured_ms: r.ms,
        work,
        cuda_graphs,
        gemm: None,
    };
    for r in roofline.decode.iter().chain(&knee.decode_large) {
        let (b, l) = (r.batch.or(r.decode_batch).unwrap_or(1.0), r.context.unwrap_or(0.0));
        rows.push(row("decode", r, format!("B={b} L={l}"), decode_work(b, l), true));
    }
    for r in &roofline.prefill {
        let (b, t) = (r.batch.unwrap_or(1.0), r.tokens.unwrap_or(0.0));
        let mut work = BatchWork::default();
        for _ in 0..b as usize {
            work.add_context(t, 0.0, true);
        }
        rows.push(row("prefill", r, format!("B={b} T={t}"), work, false));
    }
    for r in &knee.mixed {
        let (b, l, t) = (r.decode_batch.unwrap_or(0.0), r.context.unwrap_or(0.0), r.prefill_tokens.unwrap_or(0.0));
        let mut work = decode_work(b, l);
        if t > 0.0 {
            work.add_context(t, 0.0, true);
        }
        rows.push(row("mixed", r, format!("B={b} L={l} +T={t}"), work, true));
    }
    Ok(rows)
}

/// The GEMM rows of a `shards.json` table.
pub fn gemm_rows(shards_json: &str) -> Result<Vec<KernelRow>, SimError> {
    let shards: Shards = serde_json::from_str(shards_json).map_err(|e| invalid("shards", e))?;
    Ok(shards
        .gemm
        .into_iter()
        .map(|g| KernelRow {
            kind: "gemm".into(),
            case: format!("{} tp{} {} M={}", g.model, g.tp, g.op, g.m),
            dtype: g.dtype,
            measured_ms: g.ms,
            work: BatchWork::default(),
            cuda_graphs: true,
            gemm: Some((g.m, g.k, g.n)),
        })
        .collect())
}

/// The model's time for a row on `gpu`, milliseconds: a whole pass's forward time (without the
/// executor's host overhead, which the kernel timings do not include), or one GEMM's time.
pub fn predict(row: &KernelRow, gpu: &GpuPreset) -> Result<f64, SimError> {
    let fp8 = row.dtype == "fp8";
    if let Some((m, k, n)) = row.gemm {
        let weights = WeightFormat { bytes_per_param: if fp8 { 1.0 } else { 2.0 }, fp8_math: fp8 };
        return Ok(Kernels::new(gpu, true).gemm(m, k, n, weights) * 1e3);
    }
    let shape = ModelPreset::by_id(TABLE_MODEL)?.shape;
    let weights = if fp8 { WeightDtype::Fp8 } else { WeightDtype::Bf16 };
    let model = PerfModel::new(&shape, gpu, weights, KvCacheDtype::Auto, 1)?.with_cuda_graphs(row.cuda_graphs);
    Ok(model.iteration(&row.work).forward_ms())
}

/// Median, 90th percentile and worst of absolute relative errors (fractions).
pub fn error_summary(errors: &[f64]) -> (f64, f64, f64) {
    let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
    abs.sort_by(f64::total_cmp);
    if abs.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let at = |q: f64| abs[((abs.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9), abs[abs.len() - 1])
}
