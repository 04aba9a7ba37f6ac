//! [`SimulatedEngine`]: the description of a simulated engine and the config.json and
//! simulation.json it writes.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::model::{KvCacheDtype, ModelPreset, ModelShape, WeightDtype};
use super::speculation::SimulatedSpeculation;
use crate::engine::config_json::{
    BuildConfig, ConfigJson, LoraConfigJson, Mapping, MoeConfigJson, PluginConfig, PretrainedConfig, Quantization,
};
use crate::engine::description::BuildLimits;
use crate::engine::kv_link::SimKvTransfer;
use crate::engine::simulation_json::{ClockMode, SimFaults, SimulationJson};
use crate::engine::{DescriptionError, EngineDescription};
use crate::error::{Error, Result};

/// A simulated engine: model shape, precision, parallelism, build limits, and the simulated GPU.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine, WeightDtype};
/// let dir = tempfile::tempdir()?;
/// let engine = SimulatedEngine::builder()
///     .model(ModelPreset::by_id("llama-3.1-70b")?)
///     .gpu("h100-sxm")
///     .tensor_parallel(4)
///     .dtype(WeightDtype::Fp8)
///     .max_batch_size(256)
///     .clock(ClockMode::Virtual)
///     .build();
/// engine.write_to(dir.path())?;
/// let config: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.path().join("config.json"))?)?;
/// assert_eq!(config["pretrained_config"]["mapping"]["tp_size"], 4);
/// assert_eq!(config["pretrained_config"]["quantization"]["quant_algo"], "FP8");
/// assert!(dir.path().join("simulation.json").is_file());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimulatedEngine {
    /// Model name recorded in config.json.
    pub model_name: String,
    /// TensorRT-LLM version recorded in config.json (defaults to the linked library's release).
    pub version: String,
    /// `pretrained_config.architecture`.
    pub architecture: String,
    /// The model's shape (family, widths, experts).
    pub shape: ModelShape,
    /// `pretrained_config.max_position_embeddings`; `None` for max_seq_len.
    pub max_position_embeddings: Option<usize>,
    /// Weight precision (`dtype` and `quantization.quant_algo`).
    pub weight_dtype: WeightDtype,
    /// KV-cache precision (`quantization.kv_cache_quant_algo`).
    pub kv_cache_dtype: KvCacheDtype,
    /// Tensor-parallel GPUs (`mapping.tp_size` and `world_size`).
    pub tp_size: usize,
    /// Expert-parallel ranks among them (`mapping.moe_ep_size`; `moe_tp_size` is tp_size / this).
    pub moe_ep_size: usize,
    /// The build limits and plugin settings written to `build_config` (and `use_parallel_embedding`).
    pub limits: BuildLimits,
    /// GPU preset id ([`GpuPreset`](super::GpuPreset)).
    pub gpu: String,
    /// GPU figures replaced by name (simulation.json `gpu_overrides`).
    pub gpu_overrides: BTreeMap<String, f64>,
    /// Real or virtual time.
    pub clock: ClockMode,
    /// A fixed simulated time of every iteration in milliseconds; `None` lets the timing model decide.
    pub iteration_ms: Option<f64>,
    /// Real clock: wall-clock sleep = simulated time × this; 0 runs without sleeping.
    pub time_scale: f64,
    /// KV-cache capacity in tokens; `None` derives it from GPU memory as TensorRT-LLM does.
    pub kv_cache_max_tokens: Option<usize>,
    /// Seed mixed into the deterministic token generator.
    pub seed: u64,
    /// Test hooks.
    pub faults: SimFaults,
    /// LoRA support (`lora_plugin`, `lora_config`); `None` builds an engine without LoRA.
    pub lora: Option<SimLora>,
    /// Speculative decoding (`None`: a plain engine).
    pub speculation: Option<SimulatedSpeculation>,
    /// Kernels launch from CUDA graphs (simulation.json `cuda_graphs`).
    pub cuda_graphs: bool,
    /// A GPU without a preset, described in full (simulation.json `gpu_spec`).
    pub gpu_spec: Option<serde_json::Value>,
    /// MoE routing imbalance (simulation.json `moe_imbalance`); `None` assumes uniform routing.
    pub moe_imbalance: Option<f64>,
    /// The link this engine's KV transfers cross when it serves one leg of a disaggregated request
    /// (simulation.json `kv_transfer`).
    pub kv_transfer: SimKvTransfer,
}

/// The LoRA build settings of a simulated engine (`trtllm-build --lora_plugin auto
/// --lora_target_modules ... --max_lora_rank R`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimLora {
    /// The modules adapters may target.
    #[serde(serialize_with = "module_names")]
    pub target_modules: Vec<crate::lora::LoraModule>,
    /// The largest adapter rank.
    pub max_rank: u32,
}

fn module_names<S: serde::Serializer>(
    modules: &[crate::lora::LoraModule],
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.collect_seq(modules.iter().map(|m| m.name()))
}

impl SimLora {
    /// Attention and MLP projections (q, k, v, o, gate, up, down), ranks up to `max_rank`.
    pub fn attention_and_mlp(max_rank: u32) -> Self {
        use crate::lora::LoraModule as M;
        let target_modules = vec![M::AttnQ, M::AttnK, M::AttnV, M::AttnDense, M::MlpGate, M::MlpHTo4h, M::Mlp4hToH];
        SimLora { target_modules, max_rank }
    }
}

impl Default for SimulatedEngine {
    fn default() -> Self {
        let tiny = &ModelPreset::all()[0];
        SimulatedEngine {
            model_name: "sim-tiny".into(),
            version: crate::version::release(&crate::Backend::current().version).to_string(),
            architecture: tiny.architecture.clone(),
            shape: tiny.shape,
            max_position_embeddings: None,
            weight_dtype: WeightDtype::Bf16,
            kv_cache_dtype: KvCacheDtype::Auto,
            tp_size: 1,
            moe_ep_size: 1,
            limits: BuildLimits {
                max_input_len: 4096,
                max_seq_len: 8192,
                max_batch_size: 256,
                max_beam_width: 1,
                max_num_tokens: 8192,
                tokens_per_block: 32,
                paged_kv_cache: true,
                paged_context_fmha: true,
                gather_context_logits: false,
                parallel_embedding: false,
            },
            gpu: crate::engine::simulation_json::DEFAULT_GPU.into(),
            gpu_overrides: BTreeMap::new(),
            clock: ClockMode::Real,
            iteration_ms: None,
            time_scale: 1.0,
            kv_cache_max_tokens: None,
            seed: 0,
            faults: SimFaults::default(),
            lora: None,
            speculation: None,
            cuda_graphs: false,
            gpu_spec: None,
            moe_imbalance: None,
            kv_transfer: SimKvTransfer::default(),
        }
    }
}

impl SimulatedEngine {
    /// Starts from the defaults: TinyLlama-1.1B's shape in BF16 on an RTX A6000, timed by the model, in real time.
    pub fn builder() -> SimulatedEngineBuilder {
        SimulatedEngineBuilder { engine: SimulatedEngine::default() }
    }

    /// The config.json document, shaped as `trtllm-build` writes it.
    pub fn config_json(&self) -> ConfigJson {
        let (shape, limits) = (self.shape, &self.limits);
        let some = |s: &str| Some(s.to_string());
        let moe_tp = self.tp_size / self.moe_ep_size.max(1);
        ConfigJson {
            version: Some(self.version.clone()),
            pretrained_config: PretrainedConfig {
                architecture: Some(self.architecture.clone()),
                dtype: some(self.weight_dtype.config_dtype()),
                logits_dtype: some("float32"),
                model_name: Some(self.model_name.clone()),
                name_or_path: None,
                vocab_size: Some(shape.vocab_size),
                hidden_size: Some(shape.hidden_size),
                num_hidden_layers: Some(shape.num_layers),
                num_attention_heads: Some(shape.num_heads),
                num_key_value_heads: Some(shape.num_kv_heads),
                head_size: Some(shape.head_size),
                intermediate_size: Some(shape.intermediate_size),
                hidden_act: some("silu"),
                position_embedding_type: some("rope_gpt_neox"),
                max_position_embeddings: Some(self.max_position_embeddings.unwrap_or(limits.max_seq_len)),
                rotary_base: None,
                norm_epsilon: None,
                bos_token_id: None,
                eos_token_id: None,
                tie_word_embeddings: shape.tie_word_embeddings,
                use_parallel_embedding: limits.parallel_embedding,
                mapping: Mapping {
                    world_size: Some(self.tp_size),
                    tp_size: Some(self.tp_size),
                    pp_size: Some(1),
                    cp_size: Some(1),
                    moe_tp_size: shape.moe.map(|_| moe_tp),
                    moe_ep_size: shape.moe.map(|_| self.moe_ep_size),
                },
                quantization: Quantization {
                    quant_algo: self.weight_dtype.quant_algo().map(str::to_string),
                    kv_cache_quant_algo: self.kv_cache_dtype.quant_algo().map(str::to_string),
                },
                num_medusa_heads: self.speculation.as_ref().and_then(SimulatedSpeculation::medusa_heads),
                attn_bias: Some(shape.qkv_bias),
                qk_layernorm: Some(shape.qk_norm),
                sliding_window: shape.sliding_window,
                moe: shape.moe.map(|m| MoeConfigJson {
                    num_experts: Some(m.num_experts),
                    top_k: Some(m.top_k),
                    shared_expert_intermediate_size: Some(m.shared_expert_intermediate_size),
                }),
                moe_intermediate_size: shape.moe.map(|m| m.expert_intermediate_size),
                moe_shared_expert_intermediate_size: None,
                // The dense layers by count: the first ones (which layers they are does not change the timing).
                mlp_only_layers: shape.moe.filter(|m| m.dense_layers > 0).map(|m| (0..m.dense_layers).collect()),
                decoder_sparse_step: None,
            },
            build_config: BuildConfig {
                max_input_len: Some(limits.max_input_len),
                max_seq_len: Some(limits.max_seq_len),
                max_batch_size: Some(limits.max_batch_size),
                max_beam_width: Some(limits.max_beam_width),
                max_num_tokens: Some(limits.max_num_tokens),
                kv_cache_type: some("PAGED"),
                gather_context_logits: limits.gather_context_logits,
                gather_generation_logits: false,
                plugin_config: PluginConfig {
                    dtype: some(self.weight_dtype.config_dtype()),
                    gpt_attention_plugin: some("auto"),
                    gemm_plugin: some("auto"),
                    paged_kv_cache: Some(limits.paged_kv_cache),
                    tokens_per_block: Some(limits.tokens_per_block),
                    use_paged_context_fmha: Some(limits.paged_context_fmha),
                    use_fp8_context_fmha: Some(false),
                    context_fmha: Some(true),
                    remove_input_padding: Some(true),
                    lora_plugin: self.lora.as_ref().map(|_| serde_json::Value::from("auto")),
                },
                lora_config: self.lora.as_ref().map(|lora| LoraConfigJson {
                    lora_target_modules: Some(lora.target_modules.iter().map(|m| m.name().to_string()).collect()),
                    max_lora_rank: Some(u64::from(lora.max_rank)),
                }),
                speculative_decoding_mode: self
                    .speculation
                    .as_ref()
                    .map(|s| s.mode)
                    .filter(|m| *m != crate::engine::speculative::SpeculativeDecodingMode::None),
                max_draft_len: self.speculation.as_ref().map(|s| s.max_draft_len).filter(|&n| n > 0),
            },
            tokenizer_dir: None,
        }
    }

    /// The description its config.json resolves to, as the simulator will read it; fails on a shape,
    /// split or limit the rules refuse.
    pub fn description(&self) -> std::result::Result<EngineDescription, DescriptionError> {
        EngineDescription::resolve(&self.config_json())
    }

    /// The simulation.json document.
    pub fn simulation_json(&self) -> SimulationJson {
        SimulationJson {
            gpu: self.gpu.clone(),
            gpu_overrides: self.gpu_overrides.clone(),
            clock: self.clock,
            time_scale: self.time_scale,
            iteration_ms: self.iteration_ms,
            kv_cache_max_tokens: self.kv_cache_max_tokens,
            seed: self.seed,
            faults: self.faults.clone(),
            speculative: self.speculation.as_ref().map(SimulatedSpeculation::simulation),
            cuda_graphs: self.cuda_graphs,
            gpu_spec: self.gpu_spec.clone(),
            moe_imbalance: self.moe_imbalance,
            kv_transfer: self.kv_transfer,
        }
    }

    /// Writes config.json and simulation.json into `dir` (created if missing).
    pub fn write_to(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        let io = |source| Error::EngineDir { path: dir.to_path_buf(), source };
        std::fs::create_dir_all(dir).map_err(io)?;
        let documents = [
            ("config.json", serde_json::to_string_pretty(&self.config_json())),
            ("simulation.json", serde_json::to_string_pretty(&self.simulation_json())),
        ];
        for (name, text) in documents {
            let text = text.map_err(|e| Error::EngineConfig { path: dir.join(name), message: e.to_string() })?;
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

    /// A model preset: its name, architecture, exact shape and context length (max_seq_len and
    /// max_input_len are capped at its max_position_embeddings).
    pub fn model(mut self, preset: &ModelPreset) -> Self {
        let e = &mut self.engine;
        e.model_name = preset.name.clone();
        e.architecture = preset.architecture.clone();
        e.shape = preset.shape;
        e.max_position_embeddings = Some(preset.max_position_embeddings);
        e.limits.max_seq_len = e.limits.max_seq_len.min(preset.max_position_embeddings);
        e.limits.max_input_len = e.limits.max_input_len.min(e.limits.max_seq_len);
        self
    }

    /// GPU preset id ([`GpuPreset::all`](super::GpuPreset::all)).
    pub fn gpu(mut self, id: impl Into<String>) -> Self {
        self.engine.gpu = id.into();
        self
    }

    /// Replaces one figure of the GPU preset (simulation.json `gpu_overrides`), e.g. `("mfu", 0.5)`.
    pub fn gpu_override(mut self, figure: impl Into<String>, value: f64) -> Self {
        self.engine.gpu_overrides.insert(figure.into(), value);
        self
    }

    /// Tensor-parallel GPUs.
    pub fn tensor_parallel(mut self, tp: usize) -> Self {
        self.engine.tp_size = tp;
        self
    }

    /// Expert-parallel ranks among the tensor-parallel GPUs of a Mixture-of-Experts model
    /// (`mapping.moe_ep_size`; each expert is then split over tp / `ep` ranks, `moe_tp_size`). Ignored
    /// for dense models; must divide the tensor-parallel size and the expert count.
    pub fn expert_parallel(mut self, ep: usize) -> Self {
        self.engine.moe_ep_size = ep;
        self
    }

    /// A GPU without a preset, described in full by a JSON object with a preset's members
    /// (simulation.json `gpu_spec`); its `id` becomes the engine's GPU.
    pub fn gpu_spec(mut self, spec: serde_json::Value) -> Self {
        if let Some(id) = spec.get("id").and_then(|v| v.as_str()) {
            self.engine.gpu = id.to_string();
        }
        self.engine.gpu_spec = Some(spec);
        self
    }

    /// MoE routing imbalance: rows of the busiest expert-parallel rank over the mean (simulation.json
    /// `moe_imbalance`).
    pub fn moe_imbalance(mut self, factor: f64) -> Self {
        self.engine.moe_imbalance = Some(factor);
        self
    }

    /// The link KV transfers cross in disaggregated serving (simulation.json `kv_transfer`): a preset,
    /// any of its figures replaced.
    ///
    /// ```
    /// use trtllm::sim::SimulatedEngine;
    /// use trtllm::{KvLinkPreset, SimKvTransfer};
    /// let link = SimKvTransfer { link: KvLinkPreset::Ib400, efficiency: Some(0.7), ..SimKvTransfer::default() };
    /// let engine = SimulatedEngine::builder().kv_transfer(link).build();
    /// assert_eq!(engine.simulation_json().kv_transfer.link(), KvLinkPreset::Ib400.link().with_efficiency(0.7));
    /// ```
    pub fn kv_transfer(mut self, link: SimKvTransfer) -> Self {
        self.engine.kv_transfer = link;
        self
    }

    /// Vocabulary size.
    pub fn vocab_size(mut self, value: usize) -> Self {
        self.engine.shape.vocab_size = value;
        self
    }

    /// Hidden size (the head size follows: hidden / heads).
    pub fn hidden_size(mut self, value: usize) -> Self {
        self.engine.shape.hidden_size = value;
        self.engine.shape.head_size = value / self.engine.shape.num_heads.max(1);
        self
    }

    /// Layers.
    pub fn num_layers(mut self, value: usize) -> Self {
        self.engine.shape.num_layers = value;
        self
    }

    /// Attention heads (the head size follows: hidden / heads).
    pub fn num_heads(mut self, value: usize) -> Self {
        self.engine.shape.num_heads = value;
        self.engine.shape.head_size = self.engine.shape.hidden_size / value.max(1);
        self
    }

    /// KV heads.
    pub fn num_kv_heads(mut self, value: usize) -> Self {
        self.engine.shape.num_kv_heads = value;
        self
    }

    /// Width of the gated MLP (of each expert, for Mixtral).
    pub fn intermediate_size(mut self, value: usize) -> Self {
        self.engine.shape.intermediate_size = value;
        self
    }

    /// Weight precision.
    pub fn dtype(mut self, dtype: WeightDtype) -> Self {
        self.engine.weight_dtype = dtype;
        self
    }

    /// KV-cache precision.
    pub fn kv_cache_dtype(mut self, dtype: KvCacheDtype) -> Self {
        self.engine.kv_cache_dtype = dtype;
        self
    }

    /// Real or virtual time.
    pub fn clock(mut self, clock: ClockMode) -> Self {
        self.engine.clock = clock;
        self
    }

    /// Every iteration takes exactly `ms` simulated milliseconds, whatever the timing model says.
    pub fn iteration_ms(mut self, ms: f64) -> Self {
        self.engine.iteration_ms = Some(ms);
        self
    }

    /// A fixed KV-cache capacity in tokens instead of the one GPU memory leaves.
    pub fn kv_cache_max_tokens(mut self, tokens: usize) -> Self {
        self.engine.kv_cache_max_tokens = Some(tokens);
        self
    }
}

macro_rules! limit_setters {
    ($($(#[$doc:meta])* $name:ident;)*) => {
        impl SimulatedEngineBuilder {
            $(
                $(#[$doc])*
                pub fn $name(mut self, value: usize) -> Self {
                    self.engine.limits.$name = value;
                    self
                }
            )*
        }
    };
}

limit_setters! {
    /// max_input_len.
    max_input_len;
    /// max_seq_len.
    max_seq_len;
    /// max_batch_size.
    max_batch_size;
    /// max_beam_width.
    max_beam_width;
    /// max_num_tokens.
    max_num_tokens;
    /// tokens_per_block.
    tokens_per_block;
}

engine_setters! {
    /// Wall-clock scale of the real clock.
    time_scale: f64;
    /// Token generator seed.
    seed: u64;
    /// Test hooks.
    faults: SimFaults;
    /// Kernels launch from CUDA graphs.
    cuda_graphs: bool;
}

impl SimulatedEngineBuilder {
    /// Builds the engine with LoRA support.
    pub fn lora(mut self, lora: SimLora) -> Self {
        self.engine.lora = Some(lora);
        self
    }

    /// Makes the engine speculative (config.json `speculative_decoding_mode`, `max_draft_len`;
    /// simulation.json `speculative.acceptance`).
    pub fn speculation(mut self, speculation: SimulatedSpeculation) -> Self {
        self.engine.speculation = Some(speculation);
        self
    }

    /// Returns the engine description.
    pub fn build(self) -> SimulatedEngine {
        self.engine
    }
}
