//! The timing model of an engine directory: config.json's shape, precision and parallelism and
//! simulation.json's GPU (preset, overrides), read once here for the C++ simulator and the planner alike.

use std::path::Path;

use super::error::SimError;
use super::executor_files::{EngineFiles, dtype_bytes};
use super::gpu::GpuPreset;
use super::kernels::WeightFormat;
use super::model::ModelShape;
use super::perf_model::{Drafter, EngineSpec, PerfModel};
use crate::engine::config_json::ConfigJson;
use crate::engine::simulation_json::SimulationJson;
use crate::engine::speculative::SpeculativeDecodingMode;

/// How `quant_algo` stores and multiplies the linear layers' weights.
fn weight_format(quant_algo: Option<&str>, activation_bytes: f64) -> Result<WeightFormat, SimError> {
    Ok(match quant_algo {
        None => WeightFormat { bytes_per_param: activation_bytes, fp8_math: false },
        Some(algo) if algo.starts_with("FP8") => WeightFormat { bytes_per_param: 1.0, fp8_math: true },
        Some(algo) if algo.starts_with("W8A16") => WeightFormat { bytes_per_param: 1.0, fp8_math: false },
        Some(algo) if algo.starts_with("W4A16") => WeightFormat { bytes_per_param: 0.5, fp8_math: false },
        Some(algo) => {
            return Err(SimError::Invalid(format!(
                "config.json: pretrained_config.quantization.quant_algo \"{algo}\" is not modelled by the simulator (modelled: none, FP8, W8A16, W4A16)"
            )));
        }
    })
}

impl EngineSpec {
    /// The engine that a config.json describes.
    pub fn from_config(config: &ConfigJson) -> Result<Self, SimError> {
        let p = &config.pretrained_config;
        let required = |value: Option<usize>, name: &str| {
            value
                .filter(|v| *v > 0)
                .ok_or_else(|| SimError::Invalid(format!("config.json: pretrained_config.{name} is required")))
        };
        let hidden = required(p.hidden_size, "hidden_size")?;
        let heads = required(p.num_attention_heads, "num_attention_heads")?;
        let shape = ModelShape {
            vocab_size: required(p.vocab_size, "vocab_size")?,
            hidden_size: hidden,
            num_layers: required(p.num_hidden_layers, "num_hidden_layers")?,
            num_heads: heads,
            num_kv_heads: p.num_kv_heads().unwrap_or(heads),
            head_size: p.head_size.unwrap_or(hidden / heads),
            intermediate_size: p.intermediate_size.unwrap_or(4 * hidden),
            tie_word_embeddings: p.tie_word_embeddings,
        };
        let activation_bytes = dtype_bytes(p.dtype.as_deref());
        let weights = weight_format(p.quantization.quant_algo.as_deref(), activation_bytes)?;
        let (kv_bytes_per_element, kv_cache_fp8) = match p.quantization.kv_cache_quant_algo.as_deref() {
            None => (activation_bytes, false),
            Some("FP8") => (1.0, true),
            Some("INT8") => (1.0, false),
            Some(algo) => {
                return Err(SimError::Invalid(format!(
                    "config.json: pretrained_config.quantization.kv_cache_quant_algo \"{algo}\" is not modelled by the simulator (modelled: none, FP8, INT8)"
                )));
            }
        };
        let tp = p.mapping.tp_size();
        let layer_params = {
            let (h, q, kv) =
                (hidden as f64, (heads * shape.head_size) as f64, (shape.num_kv_heads * shape.head_size) as f64);
            2.0 * h * q + 2.0 * h * kv + 3.0 * h * shape.intermediate_size as f64
        };
        let (h, vocab, tp_f) = (hidden as f64, shape.vocab_size as f64, tp as f64);
        let build = &config.build_config;
        let max_draft = build.max_draft_len.unwrap_or(0) as f64;
        let drafter = match build.speculative_decoding_mode {
            // Each Medusa head: a hidden x hidden residual block and its own LM head in 16 bits; the heads
            // read the same last hidden state, so one pass.
            Some(SpeculativeDecodingMode::Medusa) => {
                let heads = p.num_medusa_heads.map(|n| n as f64).filter(|n| *n > 0.0).unwrap_or(max_draft);
                let params = heads * (h * h + vocab * h) / tp_f;
                Drafter { params_per_gpu: params, bytes_per_gpu: params * activation_bytes, passes: 1.0 }
            }
            // One decoder layer over [embedding, hidden] projected back, then the target's LM head, once
            // per tree level.
            Some(SpeculativeDecodingMode::Eagle) => {
                let (fc, layer, head) = (2.0 * h * h / tp_f, layer_params / tp_f, vocab * h / tp_f);
                Drafter {
                    params_per_gpu: layer + fc + head,
                    bytes_per_gpu: layer * weights.bytes_per_param + (fc + head) * activation_bytes,
                    passes: max_draft,
                }
            }
            _ => Drafter::default(),
        };
        Ok(EngineSpec {
            shape,
            weights,
            kv_bytes_per_element,
            kv_cache_fp8,
            activation_bytes,
            tp,
            pp: p.mapping.pp_size(),
            parallel_embedding: p.use_parallel_embedding,
            cuda_graphs: false,
            drafter,
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
        let mut gpu = GpuPreset::by_id(&sim.gpu)?.clone();
        for (name, value) in &sim.gpu_overrides {
            gpu.set_figure(name, *value)
                .map_err(|e| SimError::Invalid(format!("simulation.json: gpu_overrides: {e}")))?;
        }
        let spec = EngineSpec { cuda_graphs: sim.cuda_graphs, ..EngineSpec::from_config(config)? };
        Self::from_spec(spec, &gpu)
    }
}
