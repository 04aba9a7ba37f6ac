//! Fitting a GPU's figures to measurements: iteration logs of a real (or simulated) engine as
//! `trtllm bench` writes them, or a kernel table in the shared format; the result is a calibration
//! file that `trtllm sim build --calibration` and `trtllm plan` apply as GPU overrides.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::SimError;
use super::gpu::GpuPreset;
use super::kernel_table::{self, KernelRow};
use super::perf_model::{BatchWork, PerfModel, TimingSpec};

/// One measurement the model should reproduce.
#[derive(Debug, Clone)]
pub enum Sample {
    /// One executor iteration of an engine: its work and its measured latency (host overhead included).
    Iteration {
        /// The iteration's work.
        work: BatchWork,
        /// Measured milliseconds.
        measured_ms: f64,
    },
    /// A kernel-table row.
    Kernel(KernelRow),
}

impl Sample {
    fn measured_ms(&self) -> f64 {
        match self {
            Sample::Iteration { measured_ms, .. } => *measured_ms,
            Sample::Kernel(row) => row.measured_ms,
        }
    }
}

/// A calibration file: the GPU preset it refines and the fitted figures (applied as `gpu_overrides`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuCalibration {
    /// The GPU preset id the figures refine.
    pub gpu: String,
    /// Fitted figures by name (see `OVERRIDABLE_FIGURES`).
    pub figures: BTreeMap<String, f64>,
    /// Where the measurements came from.
    #[serde(default)]
    pub source: String,
    /// Error on the held-out measurements: median, p90 and worst |model/measured - 1|.
    #[serde(default)]
    pub held_out_error: [f64; 3],
}

impl GpuCalibration {
    /// Reads a calibration file's text.
    pub fn parse(text: &str) -> Result<Self, SimError> {
        serde_json::from_str(text).map_err(|e| SimError::Invalid(format!("calibration file: {e}")))
    }

    /// The fitted figures of the calibration file at `path`, as `gpu_overrides` of engines on `gpu`
    /// (`trtllm sim build --calibration`, `trtllm plan --calibration`); refuses a file that calibrates
    /// another GPU or names a figure the preset lacks.
    pub fn overrides_from_file(path: &std::path::Path, gpu: &str) -> Result<BTreeMap<String, f64>, SimError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| SimError::EngineFile { path: path.to_path_buf(), message: format!("cannot read: {e}") })?;
        let calibration = Self::parse(&text)?;
        if calibration.gpu != gpu {
            return Err(SimError::Invalid(format!(
                "{} calibrates the {} preset, not {gpu}",
                path.display(),
                calibration.gpu
            )));
        }
        calibration.apply()?;
        Ok(calibration.figures)
    }

    /// The preset with the fitted figures applied.
    pub fn apply(&self) -> Result<GpuPreset, SimError> {
        let mut gpu = GpuPreset::by_id(&self.gpu)?.clone();
        for (name, value) in &self.figures {
            gpu.set_figure(name, *value)?;
        }
        Ok(gpu)
    }
}

/// What a fit produced.
#[derive(Debug, Clone)]
pub struct Fit {
    /// The GPU with the fitted figures.
    pub gpu: GpuPreset,
    /// The fitted figures' values.
    pub figures: BTreeMap<String, f64>,
    /// Signed relative errors (model/measured - 1) on the held-out samples.
    pub held_out_errors: Vec<f64>,
}

/// Figures a fit to whole iterations can tell apart: weight streaming, GEMM rate, KV reads, the fixed
/// per-iteration cost; FP8 engines fit the FP8 rate instead of the 16-bit one.
pub fn iteration_figures(fp8: bool) -> Vec<&'static str> {
    let rate = if fp8 { "fp8_gemm_efficiency" } else { "mfu" };
    vec!["bandwidth_efficiency", rate, "decode_attention_efficiency", "iteration_overhead_ms"]
}

/// Figures a kernel table pins.
pub const KERNEL_FIGURES: [&str; 6] = [
    "bandwidth_efficiency",
    "mfu",
    "fp8_gemm_efficiency",
    "attention_efficiency",
    "decode_attention_efficiency",
    "kernel_floor_us",
];

/// The model's time for a sample, milliseconds.
fn predict(sample: &Sample, gpu: &GpuPreset, spec: Option<&TimingSpec>) -> Result<f64, SimError> {
    match sample {
        Sample::Iteration { work, .. } => {
            let spec = spec.ok_or_else(|| SimError::Invalid("iteration samples need the engine".into()))?;
            Ok(PerfModel::from_spec(spec.clone(), gpu)?.iteration(work).total_ms)
        }
        Sample::Kernel(row) => kernel_table::predict(row, gpu),
    }
}

/// Log residuals ln(model / measured) of the model over `samples` (a large one where the model fails).
fn residuals(samples: &[&Sample], gpu: &GpuPreset, spec: Option<&TimingSpec>) -> Vec<f64> {
    samples
        .iter()
        .map(|sample| {
            let e = (predict(sample, gpu, spec).unwrap_or(f64::INFINITY) / sample.measured_ms()).ln();
            if e.is_finite() { e } else { 1e3 }
        })
        .collect()
}

fn sum_sq(r: &[f64]) -> f64 {
    r.iter().map(|e| e * e).sum()
}

/// `gpu` with each figure multiplied by exp(step); `None` when one leaves its valid range.
fn moved(gpu: &GpuPreset, figures: &[&str], step: &[f64]) -> Option<GpuPreset> {
    let mut out = gpu.clone();
    for (name, s) in figures.iter().zip(step) {
        let current = gpu.figure(name)?.max(1e-3);
        out.set_figure(name, current * s.exp()).ok()?;
    }
    Some(out)
}

/// Solves `a x = b` (small, symmetric positive definite after damping) by Gaussian elimination.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Option<Vec<f64>> {
    let n = b.len();
    for col in 0..n {
        let pivot = (col..n).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() < 1e-300 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..n {
            let f = a[row][col] / a[col][col];
            let pivot_row = a[col].clone();
            for (target, value) in a[row].iter_mut().zip(&pivot_row).skip(col) {
                *target -= f * value;
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let tail: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - tail) / a[row][row];
    }
    Some(x)
}

/// Fits `figures` of `preset` to the samples with even index (every other one), and reports the error on
/// the odd ones: Levenberg-Marquardt on the log residuals, over the figures' logarithms, each figure kept in
/// its valid range.
pub fn fit(
    preset: &GpuPreset,
    spec: Option<&TimingSpec>,
    samples: &[Sample],
    figures: &[&str],
) -> Result<Fit, SimError> {
    let train: Vec<&Sample> = samples.iter().step_by(2).collect();
    let held: Vec<&Sample> = samples.iter().skip(1).step_by(2).collect();
    if train.len() < figures.len() || held.is_empty() {
        return Err(SimError::Invalid(format!(
            "{} measurements are too few to fit {} figures and hold half out",
            samples.len(),
            figures.len()
        )));
    }
    let n = figures.len();
    let mut gpu = preset.clone();
    let mut r = residuals(&train, &gpu, spec);
    let mut cost = sum_sq(&r);
    let mut damping = 1e-3;
    for _ in 0..100 {
        // Jacobian by forward differences in log space.
        let h = 1e-4;
        let mut jac = Vec::with_capacity(n);
        for i in 0..n {
            let mut step = vec![0.0; n];
            step[i] = h;
            let column = match moved(&gpu, figures, &step) {
                Some(g) => residuals(&train, &g, spec).iter().zip(&r).map(|(a, b)| (a - b) / h).collect(),
                None => vec![0.0; r.len()],
            };
            jac.push(column);
        }
        let jtj: Vec<Vec<f64>> =
            (0..n).map(|i| (0..n).map(|j| jac[i].iter().zip(&jac[j]).map(|(a, b)| a * b).sum()).collect()).collect();
        let jtr: Vec<f64> = (0..n).map(|i| -jac[i].iter().zip(&r).map(|(a, b)| a * b).sum::<f64>()).collect();
        let mut accepted = false;
        while damping < 1e8 {
            let mut a = jtj.clone();
            for (i, row) in a.iter_mut().enumerate() {
                row[i] += damping * (jtj[i][i] + 1e-9);
            }
            if let Some(step) = solve(a, jtr.clone())
                && let Some(candidate) = moved(&gpu, figures, &step)
            {
                let candidate_r = residuals(&train, &candidate, spec);
                let candidate_cost = sum_sq(&candidate_r);
                if candidate_cost < cost {
                    accepted = (cost - candidate_cost) > 1e-12 * cost.max(1e-300);
                    gpu = candidate;
                    r = candidate_r;
                    cost = candidate_cost;
                    damping = (damping / 3.0).max(1e-9);
                    break;
                }
            }
            damping *= 4.0;
        }
        if !accepted {
            break;
        }
    }
    let figures = figures.iter().map(|name| (name.to_string(), gpu.figure(name).unwrap_or(0.0))).collect();
    let mut held_out_errors = Vec::with_capacity(held.len());
    for sample in held {
        held_out_errors.push(predict(sample, &gpu, spec)? / sample.measured_ms() - 1.0);
    }
    Ok(Fit { gpu, figures, held_out_errors })
}

#[derive(Deserialize)]
struct IterRow {
    iter: u64,
    iter_latency_ms: f64,
    #[serde(default)]
    inflight_batching: Option<Inflight>,
}

#[derive(Deserialize)]
struct Inflight {
    num_ctx_tokens: f64,
    #[serde(default)]
    num_context_requests: Option<u64>,
    #[serde(default)]
    num_gen_requests: Option<u64>,
}

#[derive(Deserialize)]
struct RequestRow {
    prompt_tokens: u64,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cached_tokens: u64,
    #[serde(default)]
    server: Option<ServerRow>,
}

#[derive(Deserialize)]
struct ServerRow {
    first_iter: Option<u64>,
    last_iter: Option<u64>,
}

/// One iteration as the requests file explains it.
#[derive(Default)]
struct Explained {
    work: BatchWork,
    context_requests: u64,
    generation_requests: u64,
    /// A request in it emitted more or fewer tokens than steps (speculation, beams).
    unexplained: bool,
}

/// Iteration samples from `trtllm bench` files: `<stem>.iters.jsonl` (one `IterationStats` per line: the
/// latency, context tokens and request counts of every iteration) and `<stem>.requests.jsonl` (each
/// request's prompt length, reused prompt tokens, output length and the iterations of its first and last
/// token, which give the KV cache each iteration read).
///
/// A request's prompt is taken as processed whole in the iteration that produced its first token, and each
/// later iteration up to its last as one decoding step. Only iterations the requests explain exactly are
/// kept: the same context tokens and, where the file has them, the same context and generation request
/// counts. That drops iterations with chunked prompts (their chunks' split is not in the files), requests
/// missing from the file (warm-up) and speculative or beam-search steps, rather than fitting them wrongly.
pub fn bench_samples(iters_jsonl: &str, requests_jsonl: &str) -> Result<Vec<Sample>, SimError> {
    let bad = |what: &str, e: serde_json::Error| SimError::Invalid(format!("{what}: {e}"));
    let mut rows: BTreeMap<u64, (f64, Inflight)> = BTreeMap::new();
    for line in iters_jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let row: IterRow = serde_json::from_str(line).map_err(|e| bad("iterations file", e))?;
        let counts = row.inflight_batching.unwrap_or(Inflight {
            num_ctx_tokens: 0.0,
            num_context_requests: None,
            num_gen_requests: None,
        });
        rows.insert(row.iter, (row.iter_latency_ms, counts));
    }
    let mut explained: BTreeMap<u64, Explained> = BTreeMap::new();
    for line in requests_jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let row: RequestRow = serde_json::from_str(line).map_err(|e| bad("requests file", e))?;
        let Some(ServerRow { first_iter: Some(first), last_iter: Some(last) }) = row.server else {
            continue;
        };
        let prompt = row.prompt_tokens as f64;
        let cached = (row.cached_tokens as f64).min(prompt);
        let entry = explained.entry(first).or_default();
        entry.work.add_context(prompt - cached, cached, true);
        entry.context_requests += 1;
        // One token per step: a request that emitted fewer steps than tokens speculated or ran beams.
        let steps = last.saturating_sub(first) + 1;
        let decodes = row.output_tokens.is_none_or(|tokens| tokens == steps);
        for iter in first + 1..=last {
            let entry = explained.entry(iter).or_default();
            entry.generation_requests += 1;
            entry.unexplained |= !decodes;
            entry.work.add_generation(prompt + (iter - first) as f64 - 1.0, 1.0);
        }
    }
    Ok(rows
        .into_iter()
        .filter_map(|(iter, (measured_ms, counts))| {
            let e = explained.remove(&iter)?;
            let matches = !e.unexplained
                && (e.work.context_tokens - counts.num_ctx_tokens).abs() < 0.5
                && counts.num_context_requests.is_none_or(|n| n == e.context_requests)
                && counts.num_gen_requests.is_none_or(|n| n == e.generation_requests);
            (matches && e.work.tokens > 0.0).then_some(Sample::Iteration { work: e.work, measured_ms })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::kernel_table::{error_summary, pass_rows};
    use crate::sim::{KvCacheDtype, ModelPreset, WeightDtype};

    /// Bench-format files of a run of `requests` on an engine whose GPU has `gpu`'s figures: staggered
    /// arrivals of varied prompts, each request decoding `output` tokens.
    fn bench_files(spec: &TimingSpec, gpu: &GpuPreset) -> (String, String) {
        let model = PerfModel::from_spec(spec.clone(), gpu).unwrap();
        let mut requests = String::new();
        let mut active: Vec<(u64, f64, u64)> = Vec::new(); // (first iter, prompt, last iter)
        for r in 0..48u64 {
            let prompt = 64.0 + ((r * 977) % 1900) as f64;
            let first = r * 6;
            let last = first + 40 + (r * 13) % 200;
            active.push((first, prompt, last));
            requests += &format!(
                "{{\"prompt_tokens\": {prompt}, \"server\": {{\"first_iter\": {first}, \"last_iter\": {last}}}}}\n"
            );
        }
        let mut iters = String::new();
        for iter in 0..600u64 {
            let mut work = BatchWork::default();
            for &(first, prompt, last) in &active {
                if iter == first {
                    work.add_context(prompt, 0.0, true);
                } else if iter > first && iter <= last {
                    work.add_generation(prompt + (iter - first) as f64 - 1.0, 1.0);
                }
            }
            let ms = model.iteration(&work).total_ms;
            iters += &format!(
                "{{\"iter\": {iter}, \"iter_latency_ms\": {ms}, \"inflight_batching\": {{\"num_ctx_tokens\": {}}}}}\n",
                work.context_tokens
            );
        }
        (iters, requests)
    }

    #[test]
    fn hidden_figures_are_recovered_from_iteration_logs() {
        let shape = ModelPreset::by_id("llama-3.1-8b").unwrap().shape;
        let preset = GpuPreset::by_id("h100-sxm").unwrap();
        let spec = PerfModel::new(&shape, preset, WeightDtype::Bf16, KvCacheDtype::Auto, 1).unwrap().spec().clone();
        let preset = GpuPreset::by_id("h100-sxm").unwrap();
        let mut hidden = preset.clone();
        for (name, value) in [
            ("bandwidth_efficiency", 0.72),
            ("mfu", 0.52),
            ("decode_attention_efficiency", 0.8),
            ("iteration_overhead_ms", 1.3),
        ] {
            hidden.set_figure(name, value).unwrap();
        }
        let (iters, requests) = bench_files(&spec, &hidden);
        let samples = bench_samples(&iters, &requests).unwrap();
        assert!(samples.len() > 500);
        let fit = fit(preset, Some(&spec), &samples, &iteration_figures(false)).unwrap();
        for (name, value) in &fit.figures {
            let truth = hidden.figure(name).unwrap();
            println!("{name}: fitted {value:.4}, hidden {truth:.4}, preset {:.4}", preset.figure(name).unwrap());
            assert!((value / truth - 1.0).abs() < 0.03, "{name}: fitted {value}, hidden {truth}");
        }
        let (median, p90, worst) = error_summary(&fit.held_out_errors);
        println!("held-out iterations: median {median:.5}, p90 {p90:.5}, worst {worst:.5}");
        assert!(median < 0.005 && worst < 0.02, "held-out median {median}, worst {worst}");
    }

    #[test]
    fn half_of_the_h100_table_predicts_the_other_half() {
        let rows =
            pass_rows(include_str!("calibration/h100_roofline.json"), include_str!("calibration/h100_knee.json"))
                .unwrap();
        // Start from generic figures, not the calibrated preset.
        let mut start = GpuPreset::by_id("h100-sxm").unwrap().clone();
        for (name, value) in [("bandwidth_efficiency", 0.8), ("mfu", 0.55), ("fp8_gemm_efficiency", 0.55)] {
            start.set_figure(name, value).unwrap();
        }
        let samples: Vec<Sample> = rows.into_iter().map(Sample::Kernel).collect();
        let fit = fit(&start, None, &samples, &KERNEL_FIGURES).unwrap();
        let (median, p90, worst) = error_summary(&fit.held_out_errors);
        println!("fitted {:?}; held-out rows: median {median:.3}, p90 {p90:.3}, worst {worst:.3}", fit.figures);
        assert!(median <= 0.08 && p90 <= 0.25, "held-out median {median:.3}, p90 {p90:.3}");
    }
}
