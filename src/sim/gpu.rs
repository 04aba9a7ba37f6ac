//! GPU presets of the simulated executor, read from the same document the C++ simulator compiles in.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::error::SimError;

/// The presets document: a C++ raw string literal holding JSON, shared with cpp/sim/src/gpu_spec.cpp.
const PRESETS_SOURCE: &str = include_str!("../../cpp/sim/src/gpu_presets.inc");

static PRESETS: LazyLock<Vec<GpuPreset>> = LazyLock::new(|| {
    let json = raw_string_body(PRESETS_SOURCE).expect("gpu_presets.inc holds one R\"json(...)json\" literal");
    serde_json::from_str(json).expect("gpu_presets.inc holds a valid presets document")
});

/// The text between `R"json(` and `)json"`.
fn raw_string_body(source: &str) -> Option<&str> {
    let start = source.find("R\"json(")? + "R\"json(".len();
    let end = source.rfind(")json\"")?;
    source.get(start..end)
}

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
    /// Interconnect bandwidth per GPU and direction, GB/s.
    pub interconnect_gb_s: f64,
    /// Fixed cost of one all-reduce, microseconds.
    pub allreduce_latency_us: f64,
    /// Fraction of peak bandwidth achieved streaming weights and KV cache.
    pub bandwidth_efficiency: f64,
    /// Fraction of peak tensor FLOP/s achieved by prefill (model FLOPs utilisation).
    pub mfu: f64,
    /// Fixed cost of one executor iteration, milliseconds.
    pub iteration_overhead_ms: f64,
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
        let fraction = matches!(name, "bandwidth_efficiency" | "mfu");
        let may_be_zero = matches!(name, "allreduce_latency_us" | "iteration_overhead_ms");
        let valid = if fraction {
            value > 0.0 && value <= 1.0
        } else if may_be_zero {
            value >= 0.0
        } else {
            value > 0.0
        };
        if !valid || !value.is_finite() {
            return Err(SimError::Invalid(format!("GPU figure {name} = {value} is out of range")));
        }
        let slot = match name {
            "memory_gib" => &mut self.memory_gib,
            "bandwidth_gb_s" => &mut self.bandwidth_gb_s,
            "bf16_tflops" => &mut self.bf16_tflops,
            "fp8_tflops" => self.fp8_tflops.insert(value),
            "interconnect_gb_s" => &mut self.interconnect_gb_s,
            "allreduce_latency_us" => &mut self.allreduce_latency_us,
            "bandwidth_efficiency" => &mut self.bandwidth_efficiency,
            "mfu" => &mut self.mfu,
            "iteration_overhead_ms" => &mut self.iteration_overhead_ms,
            _ => {
                return Err(SimError::Invalid(format!(
                    "unknown GPU figure {name:?} (known: {})",
                    OVERRIDABLE_FIGURES.join(", ")
                )));
            }
        };
        *slot = value;
        Ok(())
    }
}

/// Names of the figures simulation.json's `gpu_overrides` may replace.
pub const OVERRIDABLE_FIGURES: [&str; 9] = [
    "memory_gib",
    "bandwidth_gb_s",
    "bf16_tflops",
    "fp8_tflops",
    "interconnect_gb_s",
    "allreduce_latency_us",
    "bandwidth_efficiency",
    "mfu",
    "iteration_overhead_ms",
];

/// Bytes in a GiB.
pub(crate) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_document_lists_the_five_presets() {
        let ids: Vec<&str> = GpuPreset::all().iter().map(|g| g.id.as_str()).collect();
        assert_eq!(ids, ["rtx-a6000", "l40s", "a100-sxm-80gb", "h100-sxm", "h200"]);
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
