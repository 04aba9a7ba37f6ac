//! Simulated engine directories: a TensorRT-LLM-shaped config.json plus our simulation.json.
//!
//! The simulated executor (built when no TensorRT-LLM is present) loads these exactly as the real
//! executor loads a `trtllm-build` output, so tests, examples and `serve`/`bench` take the same
//! `--engine-dir` either way. The simulation.json schema is documented in docs/simulation-json.md.

use std::path::Path;

use serde::Serialize;
use serde_json::json;

use crate::error::{Error, Result};

/// Test hooks of the simulated executor (all off by default).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SimFaults {
    /// Executor method that throws: `constructor`, `enqueueRequest`, `awaitResponses`,
    /// `cancelRequest`, `getLatestIterationStats`, `getLatestRequestStats` or `shutdown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throw_in: Option<String>,
    /// Calls of that method that succeed before it starts throwing.
    pub throw_after_calls: u64,
    /// Throw a non-`std::exception` value instead of a `std::runtime_error`.
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
    pub stall_ms: f64,
}

/// A simulated engine: model shape, build limits and simulation settings.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// trtllm::sim::SimulatedEngine::builder()
///     .model_name("tiny-test")
///     .vocab_size(1000)
///     .max_input_len(256)
///     .max_seq_len(512)
///     .iteration_ms(2.0)
///     .build()
///     .write_to(dir.path())?;
/// assert!(dir.path().join("config.json").is_file());
/// assert!(dir.path().join("simulation.json").is_file());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimulatedEngine {
    /// Model name recorded in config.json.
    pub model_name: String,
    /// TensorRT-LLM version recorded in config.json (defaults to the linked library's release).
    pub version: String,
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Hidden size.
    pub hidden_size: usize,
    /// Transformer layers.
    pub num_layers: usize,
    /// Attention heads.
    pub num_heads: usize,
    /// KV heads.
    pub num_kv_heads: usize,
    /// `build_config.max_input_len`.
    pub max_input_len: usize,
    /// `build_config.max_seq_len`.
    pub max_seq_len: usize,
    /// `build_config.max_batch_size`.
    pub max_batch_size: usize,
    /// `build_config.max_beam_width`.
    pub max_beam_width: usize,
    /// `build_config.max_num_tokens`.
    pub max_num_tokens: usize,
    /// `plugin_config.tokens_per_block`.
    pub tokens_per_block: usize,
    /// GPU preset name (informational for the plain simulator).
    pub gpu: String,
    /// Simulated time of one executor iteration, in milliseconds.
    pub iteration_ms: f64,
    /// Wall-clock sleep = simulated time × this; 0 runs without sleeping.
    pub time_scale: f64,
    /// KV-cache capacity in tokens when the executor config sets none.
    pub kv_cache_max_tokens: usize,
    /// Seed mixed into the deterministic token generator.
    pub seed: u64,
    /// Test hooks.
    pub faults: SimFaults,
}

impl Default for SimulatedEngine {
    fn default() -> Self {
        SimulatedEngine {
            model_name: "sim-tiny".into(),
            version: crate::version::release(&crate::Backend::current().version).to_string(),
            vocab_size: 32000,
            hidden_size: 2048,
            num_layers: 22,
            num_heads: 32,
            num_kv_heads: 4,
            max_input_len: 4096,
            max_seq_len: 8192,
            max_batch_size: 256,
            max_beam_width: 1,
            max_num_tokens: 8192,
            tokens_per_block: 32,
            gpu: "rtx-a6000".into(),
            iteration_ms: 20.0,
            time_scale: 1.0,
            kv_cache_max_tokens: 262_144,
            seed: 0,
            faults: SimFaults::default(),
        }
    }
}

impl SimulatedEngine {
    /// Starts from the defaults (a TinyLlama-shaped model, 20 ms iterations in real time).
    pub fn builder() -> SimulatedEngineBuilder {
        SimulatedEngineBuilder { engine: SimulatedEngine::default() }
    }

    /// The config.json document.
    pub fn config_json(&self) -> serde_json::Value {
        json!({
            "version": self.version,
            "pretrained_config": {
                "architecture": "LlamaForCausalLM",
                "dtype": "bfloat16",
                "model_name": self.model_name,
                "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size,
                "num_hidden_layers": self.num_layers,
                "num_attention_heads": self.num_heads,
                "num_key_value_heads": self.num_kv_heads,
                "head_size": self.hidden_size / self.num_heads.max(1),
                "max_position_embeddings": self.max_seq_len,
                "mapping": { "world_size": 1, "tp_size": 1, "pp_size": 1, "cp_size": 1 },
                "quantization": { "quant_algo": null, "kv_cache_quant_algo": null }
            },
            "build_config": {
                "max_input_len": self.max_input_len,
                "max_seq_len": self.max_seq_len,
                "max_batch_size": self.max_batch_size,
                "max_beam_width": self.max_beam_width,
                "max_num_tokens": self.max_num_tokens,
                "plugin_config": {
                    "paged_kv_cache": true,
                    "tokens_per_block": self.tokens_per_block,
                    "use_paged_context_fmha": true,
                    "context_fmha": true,
                    "remove_input_padding": true
                }
            }
        })
    }

    /// The simulation.json document.
    pub fn simulation_json(&self) -> serde_json::Value {
        json!({
            "gpu": self.gpu,
            "iteration_ms": self.iteration_ms,
            "time_scale": self.time_scale,
            "kv_cache_max_tokens": self.kv_cache_max_tokens,
            "seed": self.seed,
            "faults": self.faults,
        })
    }

    /// Writes config.json and simulation.json into `dir` (created if missing).
    pub fn write_to(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        let io = |source| Error::EngineDir { path: dir.to_path_buf(), source };
        std::fs::create_dir_all(dir).map_err(io)?;
        for (name, doc) in [("config.json", self.config_json()), ("simulation.json", self.simulation_json())] {
            let text = serde_json::to_string_pretty(&doc)
                .map_err(|e| Error::EngineConfig { path: dir.join(name), message: e.to_string() })?;
            std::fs::write(dir.join(name), text).map_err(io)?;
        }
        Ok(())
    }
}

/// Builder for [`SimulatedEngine`].
#[derive(Debug, Clone)]
pub struct SimulatedEngineBuilder {
    engine: SimulatedEngine,
}

macro_rules! engine_setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty;)*) => {
        impl SimulatedEngineBuilder {
            $(
                $(#[$doc])*
                pub fn $name(mut self, value: $ty) -> Self {
                    self.engine.$name = value;
                    self
                }
            )*
        }
    };
}

impl SimulatedEngineBuilder {
    /// Model name.
    pub fn model_name(mut self, value: impl Into<String>) -> Self {
        self.engine.model_name = value.into();
        self
    }

    /// Version recorded in config.json.
    pub fn version(mut self, value: impl Into<String>) -> Self {
        self.engine.version = value.into();
        self
    }

    /// GPU preset name.
    pub fn gpu(mut self, value: impl Into<String>) -> Self {
        self.engine.gpu = value.into();
        self
    }
}

engine_setters! {
    /// Vocabulary size.
    vocab_size: usize;
    /// Hidden size.
    hidden_size: usize;
    /// Layers.
    num_layers: usize;
    /// Attention heads.
    num_heads: usize;
    /// KV heads.
    num_kv_heads: usize;
    /// max_input_len.
    max_input_len: usize;
    /// max_seq_len.
    max_seq_len: usize;
    /// max_batch_size.
    max_batch_size: usize;
    /// max_beam_width.
    max_beam_width: usize;
    /// max_num_tokens.
    max_num_tokens: usize;
    /// tokens_per_block.
    tokens_per_block: usize;
    /// Milliseconds per iteration.
    iteration_ms: f64;
    /// Wall-clock scale.
    time_scale: f64;
    /// KV capacity in tokens.
    kv_cache_max_tokens: usize;
    /// Token generator seed.
    seed: u64;
    /// Test hooks.
    faults: SimFaults;
}

impl SimulatedEngineBuilder {
    /// Returns the engine description.
    pub fn build(self) -> SimulatedEngine {
        self.engine
    }
}
