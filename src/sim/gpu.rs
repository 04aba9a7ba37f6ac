//! GPU presets of the simulated executor: published hardware figures and the timing model's
//! per-operation efficiencies, read from the plain data file src/sim/gpu_presets.json.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::error::SimError;

/// The presets document (docs/simulator.md explains every figure and where it comes from).
const PRESETS_SOURCE: &str = include_str!("gpu_presets.json");

#[derive(Deserialize)]
struct PresetsDocument {
    #[allow(dead_code)] // documentation inside the data file
    units: String,
    presets: Vec<GpuPreset>,
}

static PRESETS: LazyLock<Vec<GpuPreset>> = LazyLock::new(|| {
    serde_json::from_str::<PresetsDocument>(PRESETS_SOURCE)
        .expect("gpu_presets.json is a valid presets document")
        .presets
});

/// A simulated GPU: published hardware figures and the timing model's efficiency factors.
///
/// ```
/// let h100 = trtllm::sim::GpuPreset::by_id("h100-sxm")?;
/// assert_eq!(h100.bandwidth_gb_s, 3350.0);
/// assert!(h100.has_fp8());
/// assert!(!trtllm::sim::GpuPreset::by_id("rtx-a6000")?.has_fp8());
/// # Ok::<(), trtllm::sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuPreset {
    /// Preset id used in simulation.json and on the command line, e.g. `h100-sxm`.
    pub id: String,
    /// Marketing name.
    pub name: String,
    /// `Ampere`, `Ada` or `Hopper`.
    pub architecture: String,
    /// Device memory, GiB.
    pub memory_gib: f64,
    /// Peak memory bandwidth, GB/s (10^9 bytes/s).
    pub bandwidth_gb_s: f64,
    /// Dense BF16/FP16 tensor-core TFLOP/s.
    pub bf16_tflops: f64,
    /// Dense FP8 tensor-core TFLOP/s; `None` without FP8 tensor cores.
    pub fp8_tflops: Option<f64>,
    /// The link tensor-parallel all-reduces use.
    pub interconnect: String,
    /// Interconnect bandwidth per GPU and direction, GB/s (datasheet).
    pub interconnect_gb_s: f64,
    /// Fraction of the interconnect bandwidth an all-reduce achieves (bus bandwidth).
    pub interconnect_efficiency: f64,
    /// Fixed cost of one all-reduce, microseconds.
    pub allreduce_latency_us: f64,
    /// The GPUs reach each other's memory (NVLink): TensorRT-LLM's one-shot custom all-reduce serves small
    /// messages at `allreduce_latency_us`; otherwise NCCL's ring pays it once per ring step.
    pub custom_allreduce: bool,
    /// Fraction of peak bandwidth that GEMMs achieve streaming their weights (few rows).
    pub bandwidth_efficiency: f64,
    /// Fraction of peak BF16 FLOP/s that large GEMMs achieve.
    pub mfu: f64,
    /// Fraction of peak FP8 FLOP/s that large FP8 GEMMs achieve.
    pub fp8_gemm_efficiency: f64,
    /// Fraction of peak BF16 FLOP/s that context (flash) attention approaches with many query rows.
    pub attention_efficiency: f64,
    /// Query rows at which context attention reaches half of that rate.
    pub attention_rows_half: f64,
    /// Fraction of peak bandwidth that decode attention achieves reading the KV cache.
    pub decode_attention_efficiency: f64,
    /// Fraction of peak bandwidth that norms, activations, residual adds and quantization achieve.
    pub elementwise_efficiency: f64,
    /// Time every kernel takes however little it does (ramp-up and tail), microseconds.
    pub kernel_floor_us: f64,
    /// Host cost of launching one kernel without CUDA graphs; no kernel finishes sooner, microseconds.
    pub launch_us: f64,
    /// The same inside a CUDA graph, microseconds.
    pub graph_launch_us: f64,
    /// Fixed cost of one executor iteration (scheduling, host work), milliseconds.
    pub iteration_overhead_ms: f64,
    /// Where the figures come from: datasheet, borrowed from a calibrated preset of the architecture, or measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// How a GPU figure may be overridden: a fraction in (0, 1], a value >= 0, or a value > 0.
#[derive(Clone, Copy)]
enum FigureRange {
    Fraction,
    NonNegative,
    Positive,
}

/// The range a figure must lie in, `None` for a name that is no overridable figure.
fn figure_range(name: &str) -> Option<FigureRange> {
    if !OVERRIDABLE_FIGURES.contains(&name) {
        return None;
    }
    Some(if name.ends_with("efficiency") || name == "mfu" {
        FigureRange::Fraction
    } else if name.ends_with("_us") || name.ends_with("_ms") || name == "attention_rows_half" {
        FigureRange::NonNegative
    } else {
        FigureRange::Positive
    })
}

impl GpuPreset {
    /// Every preset, in the document's order.
    pub fn all() -> &'static [GpuPreset] {
        &PRESETS
    }

    /// The preset with this id.
    pub fn by_id(id: &str) -> Result<&'static GpuPreset, SimError> {
        Self::all().iter().find(|gpu| gpu.id == id).ok_or_else(|| SimError::UnknownGpu {
            id: id.to_string(),
            known: Self::all().iter().map(|gpu| gpu.id.as_str()).collect::<Vec<_>>().join(", "),
        })
    }

    /// The GPU a simulation.json describes: its inline `gpu_spec`, else the preset `gpu` names, with its
    /// `gpu_overrides` applied.
    pub fn for_simulation(sim: &crate::engine::SimulationJson) -> Result<GpuPreset, SimError> {
        let mut gpu = match &sim.gpu_spec {
            Some(spec) => {
                Self::from_spec_json(spec).map_err(|e| SimError::Invalid(format!("simulation.json: gpu_spec: {e}")))?
            }
            None => Self::by_id(&sim.gpu)?.clone(),
        };
        for (name, value) in &sim.gpu_overrides {
            gpu.set_figure(name, *value)
                .map_err(|e| SimError::Invalid(format!("simulation.json: gpu_overrides: {e}")))?;
        }
        Ok(gpu)
    }

    /// A GPU described in full by a JSON object with a preset's members (`trtllm sim build --gpu-spec`).
    pub fn from_spec_json(json: &serde_json::Value) -> Result<GpuPreset, SimError> {
        let gpu: GpuPreset = serde_json::from_value(json.clone()).map_err(|e| SimError::Invalid(e.to_string()))?;
        for name in OVERRIDABLE_FIGURES {
            if let Some(value) = gpu.figure(name) {
                gpu.clone().set_figure(name, value)?;
            }
        }
        Ok(gpu)
    }

    /// True when the GPU has FP8 tensor cores (Ada and Hopper).
    pub fn has_fp8(&self) -> bool {
        self.fp8_tflops.is_some()
    }

    /// Device memory in bytes.
    pub fn memory_bytes(&self) -> f64 {
        self.memory_gib * GIB
    }

    /// Replaces one figure by its simulation.json name (`bandwidth_gb_s`, `mfu`, ...), as `gpu_overrides` does.
    pub fn set_figure(&mut self, name: &str, value: f64) -> Result<(), SimError> {
        let Some(range) = figure_range(name) else {
            return Err(SimError::Invalid(format!(
                "unknown GPU figure {name:?} (known: {})",
                OVERRIDABLE_FIGURES.join(", ")
            )));
        };
        let valid = match range {
            FigureRange::Fraction => value > 0.0 && value <= 1.0,
            FigureRange::NonNegative => value >= 0.0,
            FigureRange::Positive => value > 0.0,
        };
        if !valid || !value.is_finite() {
            return Err(SimError::Invalid(format!("GPU figure {name} = {value} is out of range")));
        }
        *self.figure_mut(name).expect("every overridable figure has a slot") = value;
        Ok(())
    }

    /// The value of a numeric figure by name (`None` for an unknown name or an absent FP8 rate).
    pub fn figure(&self, name: &str) -> Option<f64> {
        let mut copy = self.clone();
        copy.figure_mut(name).map(|slot| *slot).filter(|_| name != "fp8_tflops" || self.fp8_tflops.is_some())
    }

    fn figure_mut(&mut self, name: &str) -> Option<&mut f64> {
        Some(match name {
            "memory_gib" => &mut self.memory_gib,
            "bandwidth_gb_s" => &mut self.bandwidth_gb_s,
            "bf16_tflops" => &mut self.bf16_tflops,
            "fp8_tflops" => self.fp8_tflops.get_or_insert(0.0),
            "interconnect_gb_s" => &mut self.interconnect_gb_s,
            "interconnect_efficiency" => &mut self.interconnect_efficiency,
            "allreduce_latency_us" => &mut self.allreduce_latency_us,
            "bandwidth_efficiency" => &mut self.bandwidth_efficiency,
            "mfu" => &mut self.mfu,
            "fp8_gemm_efficiency" => &mut self.fp8_gemm_efficiency,
            "attention_efficiency" => &mut self.attention_efficiency,
            "attention_rows_half" => &mut self.attention_rows_half,
            "decode_attention_efficiency" => &mut self.decode_attention_efficiency,
            "elementwise_efficiency" => &mut self.elementwise_efficiency,
            "kernel_floor_us" => &mut self.kernel_floor_us,
            "launch_us" => &mut self.launch_us,
            "graph_launch_us" => &mut self.graph_launch_us,
            "iteration_overhead_ms" => &mut self.iteration_overhead_ms,
            _ => return None,
        })
    }
}

/// Names of the figures simulation.json's `gpu_overrides` (and calibration files) may replace.
pub const OVERRIDABLE_FIGURES: [&str; 18] = [
    "memory_gib",
    "bandwidth_gb_s",
    "bf16_tflops",
    "fp8_tflops",
    "interconnect_gb_s",
    "interconnect_efficiency",
    "allreduce_latency_us",
    "bandwidth_efficiency",
    "mfu",
    "fp8_gemm_efficiency",
    "attention_efficiency",
    "attention_rows_half",
    "decode_attention_efficiency",
    "elementwise_efficiency",
    "kernel_floor_us",
    "launch_us",
    "graph_launch_us",
    "iteration_overhead_ms",
];

/// Bytes in a GiB.
pub(crate) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_document_lists_the_presets() {
        let ids: Vec<&str> = GpuPreset::all().iter().map(|g| g.id.as_str()).collect();
        let expected = [
            "rtx-a6000",
            "l40s",
            "a100-sxm-80gb",
            "h100-sxm",
            "h200",
            "a100-pcie-80gb",
            "a100-sxm-40gb",
            "a10g",
            "l4",
            "l40",
            "h100-pcie",
            "h100-nvl",
            "h20",
            "gh200",
        ];
        assert_eq!(ids, expected);
        for gpu in GpuPreset::all() {
            assert_eq!(gpu.has_fp8(), gpu.architecture != "Ampere", "{}", gpu.id);
            assert!(gpu.bandwidth_efficiency > 0.0 && gpu.bandwidth_efficiency <= 1.0);
            assert!(gpu.mfu > 0.0 && gpu.mfu <= 1.0);
        }
    }

    #[test]
    fn unknown_ids_and_figures_are_refused() {
        let err = GpuPreset::by_id("b200").unwrap_err();
        assert!(err.to_string().contains("known: rtx-a6000, l40s"), "{err}");
        let mut gpu = GpuPreset::by_id("l40s").unwrap().clone();
        assert!(gpu.set_figure("mfu", 1.5).is_err());
        assert!(gpu.set_figure("bandwith_gb_s", 1.0).is_err());
        gpu.set_figure("bandwidth_gb_s", 1000.0).unwrap();
        assert_eq!(gpu.bandwidth_gb_s, 1000.0);
    }
}
