//! The timing view of an engine directory: the description config.json resolves to, and simulation.json's
//! GPU (preset, overrides or an inline spec) and MoE routing assumption, for the C++ simulator and the
//! planner alike.

use std::path::Path;

use super::error::SimError;
use super::executor_files::EngineFiles;
use super::gpu::GpuPreset;
use super::kernels::WeightFormat;
use super::perf_model::PerfModel;
use super::timing_spec::{DEFAULT_MOE_IMBALANCE, Drafter, TimingSpec};
use crate::engine::EngineDescription;
use crate::engine::config_json::ConfigJson;
use crate::engine::description::WeightQuant;
use crate::engine::simulation_json::SimulationJson;
use crate::engine::speculative::SpeculativeDecodingMode;

impl TimingSpec {
    /// The timing view of an engine's description; refuses an architecture the model does not describe.
    pub fn from_description(d: &EngineDescription) -> Result<Self, SimError> {
        let shape = *d.modelled_shape()?;
        let precision = &d.precision;
        let activation_bytes = precision.activation_bytes;
        let weights =
            WeightFormat { bytes_per_param: precision.weight_bytes(), fp8_math: precision.weights == WeightQuant::Fp8 };
        let tp = d.parallelism.tp as f64;
        let (h, vocab) = (shape.hidden_size as f64, shape.vocab_size as f64);
        let max_draft = d.speculative.max_draft_len as f64;
        let drafter = match d.speculative.mode {
            // Each Medusa head: a hidden x hidden residual block and its own LM head in 16 bits; the heads
            // read the same last hidden state, so one pass.
            SpeculativeDecodingMode::Medusa => {
                let heads = Some(d.speculative.num_medusa_heads as f64).filter(|n| *n > 0.0).unwrap_or(max_draft);
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
                    bytes_per_gpu: layer * weights.bytes_per_param + (fc + head) * activation_bytes,
                    passes: max_draft,
                }
            }
            _ => Drafter::default(),
        };
        Ok(TimingSpec {
            shape,
            weights,
            kv_bytes_per_element: precision.kv_bytes(),
            kv_cache_fp8: precision.kv_cache == crate::engine::description::KvQuant::Fp8,
            activation_bytes,
            tp: d.parallelism.tp,
            pp: d.parallelism.pp,
            moe_tp: d.parallelism.moe_tp,
            moe_ep: d.parallelism.moe_ep,
            moe_imbalance: DEFAULT_MOE_IMBALANCE,
            parallel_embedding: d.limits.parallel_embedding,
            cuda_graphs: false,
            drafter,
            limits: d.limits,
        })
    }
}

impl PerfModel {
    /// The model of the engine in `dir`: its config.json, and the GPU its simulation.json names (preset and
    /// `gpu_overrides`; the A6000 preset when there is no simulation.json).
    pub fn from_engine_dir(dir: &Path) -> Result<Self, SimError> {
        let files = EngineFiles::read(dir)?;
        Self::from_documents(&files.config, &files.simulation)
    }

    /// The model of an engine described by its config.json and simulation.json documents: the one path
    /// from an engine to its timing, shared by the simulator, the planner and the benchmark.
    pub fn from_documents(config: &ConfigJson, sim: &SimulationJson) -> Result<Self, SimError> {
        Self::from_description(&EngineDescription::resolve(config)?, sim)
    }

    /// The model of a resolved engine description on simulation.json's GPU.
    pub fn from_description(description: &EngineDescription, sim: &SimulationJson) -> Result<Self, SimError> {
        let gpu = GpuPreset::for_simulation(sim)?;
        let spec = TimingSpec {
            cuda_graphs: sim.cuda_graphs,
            moe_imbalance: sim.moe_imbalance.unwrap_or(DEFAULT_MOE_IMBALANCE),
            ..TimingSpec::from_description(description)?
        };
        Self::from_spec(spec, &gpu)
    }
}

impl From<crate::engine::DescriptionError> for SimError {
    fn from(e: crate::engine::DescriptionError) -> Self {
        SimError::Invalid(e.to_string())
    }
}
