//! The engine directory's `simulation.json`: how the simulated executor times and perturbs an engine.
//!
//! Written by [`SimulatedEngine`](crate::sim::SimulatedEngine), read by the simulated executor (cpp/sim) and by
//! the bench's predictions; documented in docs/simulation-json.md. Unknown members are refused, as the
//! simulator refuses them, so that a misspelt setting is not silently ignored.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::kv_link::SimKvTransfer;

/// The GPU preset a simulation.json without `gpu` runs on.
pub const DEFAULT_GPU: &str = "rtx-a6000";

/// The whole document; every member has a default, so `{}` (or no file at all) is a valid simulation.
///
/// ```
/// use trtllm::sim::{ClockMode, SimulationJson};
/// let sim: SimulationJson = serde_json::from_str(r#"{"clock": "virtual", "gpu_overrides": {"mfu": 0.5}}"#)?;
/// assert_eq!((sim.gpu.as_str(), sim.clock, sim.time_scale), ("rtx-a6000", ClockMode::Virtual, 1.0));
/// assert_eq!(sim.gpu_overrides["mfu"], 0.5);
/// assert!(serde_json::from_str::<SimulationJson>(r#"{"gpu_overide": {}}"#).is_err());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimulationJson {
    /// GPU preset id ([`GpuPreset`](crate::sim::GpuPreset)).
    #[serde(deserialize_with = "gpu_or_default")]
    pub gpu: String,
    /// GPU figures replaced by name, e.g. `mfu`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub gpu_overrides: BTreeMap<String, f64>,
    /// Real or virtual time.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub clock: ClockMode,
    /// Real clock: wall-clock sleep = simulated time × this; 0 runs without sleeping.
    #[serde(deserialize_with = "time_scale_or_default")]
    pub time_scale: f64,
    /// A fixed simulated time of every iteration in milliseconds; absent lets the timing model decide.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iteration_ms: Option<f64>,
    /// KV-cache capacity in tokens; absent derives it from GPU memory as TensorRT-LLM does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_max_tokens: Option<usize>,
    /// Seed mixed into the deterministic token generator.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub seed: u64,
    /// Test hooks.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub faults: SimFaults,
    /// Speculative decoding: the drafter's acceptance (absent: 0.7 per position).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative: Option<super::speculative::SimSpeculative>,
    /// Kernels launch from CUDA graphs (the per-kernel launch cost of a graph replay instead of one host
    /// enqueue each). Off by default, as in TensorRT-LLM; the executor's `cuda_graph_mode` turns it on too.
    #[serde(deserialize_with = "super::null_default::null_as_default", skip_serializing_if = "std::ops::Not::not")]
    pub cuda_graphs: bool,
    /// A GPU without a preset, described in full (the members of a GPU preset, docs/simulator.md); `gpu`
    /// then names it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_spec: Option<serde_json::Value>,
    /// Mixture-of-Experts routing imbalance: rows of the busiest expert-parallel rank over the mean
    /// (absent: 1, uniform routing in expectation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_imbalance: Option<f64>,
    /// Disaggregated serving: the link KV transfers into this engine's executor cross (default NVLink 4).
    #[serde(
        deserialize_with = "super::null_default::null_as_default",
        skip_serializing_if = "SimKvTransfer::is_default"
    )]
    pub kv_transfer: SimKvTransfer,
}

impl Default for SimulationJson {
    fn default() -> Self {
        SimulationJson {
            gpu: DEFAULT_GPU.to_string(),
            gpu_overrides: BTreeMap::new(),
            clock: ClockMode::Real,
            time_scale: 1.0,
            iteration_ms: None,
            kv_cache_max_tokens: None,
            seed: 0,
            faults: SimFaults::default(),
            speculative: None,
            cuda_graphs: false,
            gpu_spec: None,
            moe_imbalance: None,
            kv_transfer: SimKvTransfer::default(),
        }
    }
}

/// Checks a MoE routing imbalance (simulation.json `moe_imbalance`, `trtllm sim build --moe-imbalance`):
/// the busiest rank routes at least the mean, so the factor is at least 1.
pub fn check_moe_imbalance(factor: f64) -> Result<f64, String> {
    if factor.is_finite() && factor >= 1.0 {
        Ok(factor)
    } else {
        Err(format!("moe_imbalance must be at least 1, got {factor}"))
    }
}

fn gpu_or_default<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.unwrap_or_else(|| DEFAULT_GPU.to_string()))
}

fn time_scale_or_default<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(1.0))
}

/// Where the simulated executor's time comes from (simulation.json `clock`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum ClockMode {
    /// Iterations take their simulated time on the wall clock (× `time_scale`): clients measure real latencies.
    #[default]
    Real,
    /// Nothing sleeps; a simulated clock advances by each iteration's time and stamps every executor timestamp.
    Virtual,
}

/// Test hooks of the simulated executor (simulation.json `faults`; all off by default).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimFaults {
    /// Executor method that throws: `constructor`, `enqueueRequest`, `awaitResponses`,
    /// `cancelRequest`, `getLatestIterationStats`, `getLatestRequestStats` or `shutdown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throw_in: Option<String>,
    /// Calls of that method that succeed before it starts throwing.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub throw_after_calls: u64,
    /// Throw a non-`std::exception` value instead of a `std::runtime_error`.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub throw_non_std: bool,
    /// A request whose prompt contains this token id receives an error response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_prompt_token: Option<u32>,
    /// From this iteration on, every active request receives an error response.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_all_from_iteration: Option<u64>,
    /// Iteration that stalls for `stall_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall_iteration: Option<u64>,
    /// How long the stalled iteration takes, in milliseconds.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub stall_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_round_trip_and_omit_unset_members() {
        let text = serde_json::to_string(&SimulationJson::default()).unwrap();
        assert!(!text.contains("iteration_ms") && !text.contains("gpu_overrides"), "{text}");
        assert_eq!(serde_json::from_str::<SimulationJson>(&text).unwrap(), SimulationJson::default());
        assert_eq!(serde_json::from_str::<SimulationJson>("{}").unwrap(), SimulationJson::default());
        let nulls = r#"{"gpu": null, "time_scale": null, "clock": null, "seed": null, "faults": {"stall_ms": null}}"#;
        assert_eq!(serde_json::from_str::<SimulationJson>(nulls).unwrap(), SimulationJson::default());
    }

    #[test]
    fn a_bad_clock_or_fault_is_refused() {
        let err = serde_json::from_str::<SimulationJson>(r#"{"clock": "sundial"}"#).unwrap_err();
        assert!(err.to_string().contains("sundial"), "{err}");
        assert!(serde_json::from_str::<SimulationJson>(r#"{"faults": {"throw_inn": "x"}}"#).is_err());
    }
}
