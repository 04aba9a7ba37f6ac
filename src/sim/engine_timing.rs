//! The timing view of an engine directory: the description config.json resolves to, and simulation.json's
//! GPU (preset, overrides or an inline spec) and MoE routing assumption, for the C++ simulator and the
//! planner alike.

use std::path::Path;

use super::error::SimError;
use super::executor_files::EngineFiles;
use super::gpu::GpuPreset;
use super::perf_model::PerfModel;
use super::timing_spec::{DEFAULT_MOE_IMBALANCE, Drafter, TimingSpec};
use crate::engine::EngineDescription;
use crate::engine::simulation_json::SimulationJson;
use crate::engine::speculative::SpeculativeDecodingMode;

impl TimingSpec {
    /// The timing view of an engine's description; refuses an architecture the model does not describe.
    pub fn from_description(d: &EngineDescription) -> Result<Self, SimError> {
        let shape = *d.modelled_shape()?;
        let precision = d.precision();
        let activation_bytes = precision.activation_bytes;
        let weight_bytes = precision.weight_bytes();
        let tp = d.parallelism().tp as f64;
        let (h, vocab) = (shape.hidden_size as f64, shape.vocab_size as f64);
        let max_draft = d.speculative().max_draft_len as f64;
        let drafter = match d.speculative().mode {
            // Each Medusa head: a hidden x hidden residual block and its own LM head in 16 bits; the heads
            // read the same last hidden state, so one pass.
            SpeculativeDecodingMode::Medusa => {
                let heads = Some(d.speculative().num_medusa_heads as f64).filter(|n| *n > 0.0).unwrap_or(max_draft);
                let params = heads * (h * h + vocab * h) / tp;
                Drafter { params_per_gpu: params, bytes_per_gpu: params * activation_bytes, passes: 1.0 }
            }
            // One decoder layer over [embedding, hidden] projected back, then the target's LM head, once
            // per tree level.
            SpeculativeDecodingMode::Eagle => {
                let layer = (shape.attention_params_per_layer() + 3.0 * h * shape.intermediate_size as f64) / tp;
                let (fc, head) = (2.0 * h * h / tp, vocab * h / tp);
                Drafter {
                    params_per_gpu: layer + fc + head,
                    bytes_per_gpu: layer * weight_bytes + (fc + head) * activation_bytes,
                    passes: max_draft,
                }
            }
            _ => Drafter::default(),
        };
        Ok(TimingSpec::new(d.clone(), drafter))
    }
}

impl PerfModel {
    /// The model of the engine in `dir`: its config.json, and the GPU its simulation.json names (preset and
    /// `gpu_overrides`; the A6000 preset when there is no simulation.json).
    pub fn from_engine_dir(dir: &Path) -> Result<Self, SimError> {
        let files = EngineFiles::read(dir)?;
        Self::from_description(&files.description, &files.simulation)
    }

    /// The model of a resolved engine description on simulation.json's GPU: the one path from an engine
    /// to its timing, shared by the simulator, the planner and the benchmark.
    pub fn from_description(description: &EngineDescription, sim: &SimulationJson) -> Result<Self, SimError> {
        let gpu = GpuPreset::for_simulation(sim)?;
        let spec = TimingSpec::from_description(description)?
            .with_cuda_graphs(sim.cuda_graphs)
            .with_moe_imbalance(sim.moe_imbalance.unwrap_or(DEFAULT_MOE_IMBALANCE));
        Self::from_spec(spec, &gpu)
    }
}

impl From<crate::engine::DescriptionError> for SimError {
    fn from(e: crate::engine::DescriptionError) -> Self {
        SimError::Invalid(e.to_string())
    }
}
