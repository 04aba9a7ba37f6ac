//! [`EngineDescription`]: an engine's config.json resolved once, every default applied and every rule
//! checked; the executor's limits, the loader's [`EngineConfig`](super::EngineConfig), the timing model's
//! engine and the LoRA settings are views of it. A Hugging Face config.json reads into the same
//! description through [`super::hf_config`].

use serde::Serialize;

use super::config_json::{ConfigJson, PretrainedConfig};
use super::model_shape::{Family, ModelShape, MoeShape};
use super::speculative::SpeculativeDecodingMode;

/// Longest draft (max_draft_len, num_medusa_heads) an engine may have.
const MAX_DRAFT: usize = 1024;

/// Why a config.json cannot describe an engine; the message names the member at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("config.json: {0}")]
pub struct DescriptionError(pub String);

fn fail<T>(message: String) -> Result<T, DescriptionError> {
    Err(DescriptionError(message))
}

/// How the linear layers' weights are stored (`quantization.quant_algo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WeightQuant {
    /// In the activations' 16-bit type.
    None,
    /// FP8 weights and activations (`FP8`, `FP8_PER_CHANNEL_PER_TOKEN`, ...).
    Fp8,
    /// INT8 weights, 16-bit math (`W8A16`, `W8A16_GPTQ`).
    W8A16,
    /// INT4 weights, 16-bit math (`W4A16`, `W4A16_AWQ`, `W4A16_GPTQ`).
    W4A16,
}

impl WeightQuant {
    /// The quantization a `quant_algo` names.
    pub fn from_quant_algo(algo: Option<&str>) -> Result<Self, DescriptionError> {
        Ok(match algo {
            None => WeightQuant::None,
            Some(a) if a.starts_with("FP8") => WeightQuant::Fp8,
            Some(a) if a.starts_with("W8A16") => WeightQuant::W8A16,
            Some(a) if a.starts_with("W4A16") => WeightQuant::W4A16,
            Some(a) => {
                return fail(format!(
                    "pretrained_config.quantization.quant_algo \"{a}\" is not modelled (modelled: none, FP8, W8A16, W4A16)"
                ));
            }
        })
    }

    /// The `quant_algo` written for this quantization.
    pub fn quant_algo(self) -> Option<&'static str> {
        match self {
            WeightQuant::None => None,
            WeightQuant::Fp8 => Some("FP8"),
            WeightQuant::W8A16 => Some("W8A16"),
            WeightQuant::W4A16 => Some("W4A16"),
        }
    }
}

/// How the KV cache is stored (`quantization.kv_cache_quant_algo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum KvQuant {
    /// In the activations' type.
    None,
    /// FP8.
    Fp8,
    /// INT8.
    Int8,
}

impl KvQuant {
    /// The KV-cache quantization a `kv_cache_quant_algo` names.
    pub fn from_quant_algo(algo: Option<&str>) -> Result<Self, DescriptionError> {
        Ok(match algo {
            None => KvQuant::None,
            Some("FP8") => KvQuant::Fp8,
            Some("INT8") => KvQuant::Int8,
            Some(a) => {
                return fail(format!(
                    "pretrained_config.quantization.kv_cache_quant_algo \"{a}\" is not modelled (modelled: none, FP8, INT8)"
                ));
            }
        })
    }

    /// The `kv_cache_quant_algo` written for this quantization.
    pub fn quant_algo(self) -> Option<&'static str> {
        match self {
            KvQuant::None => None,
            KvQuant::Fp8 => Some("FP8"),
            KvQuant::Int8 => Some("INT8"),
        }
    }
}

/// Bytes per element of a dtype name (`float16`, `bfloat16`, `float32`, ...); 16-bit when absent.
pub fn dtype_bytes(dtype: Option<&str>) -> f64 {
    match dtype {
        Some("float32") => 4.0,
        Some("int8" | "fp8") => 1.0,
        _ => 2.0,
    }
}

/// The precision of each part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Precision {
    /// `pretrained_config.dtype` (the activations', the norms', the embedding's and the output head's type).
    pub dtype: String,
    /// Bytes per activation element.
    pub activation_bytes: f64,
    /// The linear layers' weights.
    pub weights: WeightQuant,
    /// The KV cache.
    pub kv_cache: KvQuant,
}

impl Precision {
    /// Bytes per linear-layer weight.
    pub fn weight_bytes(&self) -> f64 {
        match self.weights {
            WeightQuant::None => self.activation_bytes,
            WeightQuant::Fp8 | WeightQuant::W8A16 => 1.0,
            WeightQuant::W4A16 => 0.5,
        }
    }

    /// Bytes per KV-cache element.
    pub fn kv_bytes(&self) -> f64 {
        match self.kv_cache {
            KvQuant::None => self.activation_bytes,
            KvQuant::Fp8 | KvQuant::Int8 => 1.0,
        }
    }
}

/// How the engine is split across GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Parallelism {
    /// Tensor-parallel ranks (attention heads, dense MLPs, the output head).
    pub tp: usize,
    /// Pipeline stages.
    pub pp: usize,
    /// Context-parallel ranks.
    pub cp: usize,
    /// All ranks (tp × pp × cp).
    pub world: usize,
    /// Tensor parallelism inside each expert (moe_tp × moe_ep = tp).
    pub moe_tp: usize,
    /// Expert parallelism: ranks holding disjoint sets of whole experts.
    pub moe_ep: usize,
}

/// The build limits and plugin settings, TensorRT-LLM's defaults applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BuildLimits {
    /// `max_input_len` (default 1024).
    pub max_input_len: usize,
    /// `max_seq_len` (default `max_position_embeddings`, else the larger of 2048 and max_input_len + 1).
    pub max_seq_len: usize,
    /// `max_batch_size` (default 2048).
    pub max_batch_size: usize,
    /// `max_beam_width` (default 1).
    pub max_beam_width: usize,
    /// `max_num_tokens` (default 8192).
    pub max_num_tokens: usize,
    /// `plugin_config.tokens_per_block` (default 32).
    pub tokens_per_block: usize,
    /// `plugin_config.paged_kv_cache` (default true).
    pub paged_kv_cache: bool,
    /// `plugin_config.use_paged_context_fmha` (default true).
    pub paged_context_fmha: bool,
    /// `gather_context_logits`.
    pub gather_context_logits: bool,
    /// `use_parallel_embedding`: the embedding table is split across tensor-parallel ranks.
    pub parallel_embedding: bool,
}

/// Speculative decoding the engine was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Speculative {
    /// `speculative_decoding_mode` (default none).
    pub mode: SpeculativeDecodingMode,
    /// `max_draft_len` (default 0).
    pub max_draft_len: usize,
    /// `num_medusa_heads` (default 0).
    pub num_medusa_heads: usize,
}

/// The LoRA build settings: the plugin on, target modules and a positive rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoraLimits {
    /// `lora_config.lora_target_modules` (TensorRT-LLM module names).
    pub target_modules: Vec<String>,
    /// `lora_config.max_lora_rank`.
    pub max_rank: u32,
}

/// An engine's config.json, resolved once.
///
/// ```
/// use trtllm::sim::EngineDescription;
/// let json = r#"{"pretrained_config": {"architecture": "MixtralForCausalLM", "vocab_size": 32000,
///     "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
///     "intermediate_size": 14336, "moe": {"num_experts": 8, "top_k": 2},
///     "mapping": {"tp_size": 4, "moe_ep_size": 4}}}"#;
/// let d = EngineDescription::resolve(&serde_json::from_str(json)?)?;
/// assert_eq!((d.parallelism.moe_tp, d.parallelism.moe_ep), (1, 4));
/// assert_eq!(d.shape.moe.unwrap().expert_intermediate_size, 14336);
/// assert!((d.shape.parameter_count() / 1e9 - 46.7).abs() < 0.1);
/// assert_eq!(d.limits.max_batch_size, 2048);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineDescription {
    /// The TensorRT-LLM version that built the engine (`version`).
    pub version: Option<String>,
    /// `pretrained_config.architecture` (default `LlamaForCausalLM`).
    pub architecture: String,
    /// The family the architecture names; `None` for one the timing model does not describe.
    pub family: Option<Family>,
    /// `model_name`, else `_name_or_path`.
    pub model_name: Option<String>,
    /// The model's shape (for an unmodelled architecture, its widths read as a Llama's).
    pub shape: ModelShape,
    /// `max_position_embeddings`.
    pub max_position_embeddings: Option<usize>,
    /// Precisions.
    pub precision: Precision,
    /// Parallel layout.
    pub parallelism: Parallelism,
    /// Build limits.
    pub limits: BuildLimits,
    /// Speculative decoding.
    pub speculative: Speculative,
    /// LoRA, when built with it.
    pub lora: Option<LoraLimits>,
}

/// A size member: absent takes `default`; present must lie in [`min`, i32::MAX] (the executor's ints).
fn size(value: Option<usize>, name: &str, default: usize, min: usize) -> Result<usize, DescriptionError> {
    let value = value.unwrap_or(default);
    if value < min || i32::try_from(value).is_err() {
        return fail(format!("{name} must be in [{min}, {}], got {value}", i32::MAX));
    }
    Ok(value)
}

/// A size member that must be present (and at least 1).
fn required(value: Option<usize>, name: &str) -> Result<usize, DescriptionError> {
    match value {
        None => fail(format!("{name} is missing")),
        Some(_) => size(value, name, 0, 1),
    }
}

impl EngineDescription {
    /// Resolves a TensorRT-LLM config.json: defaults applied, limits, parallelism and shape checked.
    pub fn resolve(config: &ConfigJson) -> Result<Self, DescriptionError> {
        let p = &config.pretrained_config;
        let architecture = p.architecture.clone().unwrap_or_else(|| Family::Llama.architecture().to_string());
        let family = Family::from_architecture(&architecture).ok();
        let shape = resolve_shape(p, family)?;
        let parallelism = resolve_parallelism(p, &shape)?;
        let limits = resolve_limits(config)?;
        let speculative = resolve_speculative(config)?;
        let precision = Precision {
            dtype: p.dtype.clone().unwrap_or_else(|| "float16".to_string()),
            activation_bytes: dtype_bytes(p.dtype.as_deref()),
            weights: WeightQuant::from_quant_algo(p.quantization.quant_algo.as_deref())?,
            kv_cache: KvQuant::from_quant_algo(p.quantization.kv_cache_quant_algo.as_deref())?,
        };
        Ok(EngineDescription {
            version: config.version.clone(),
            architecture,
            family,
            model_name: p.model_name.clone().or_else(|| p.name_or_path.clone()),
            shape,
            max_position_embeddings: p.max_position_embeddings,
            precision,
            parallelism,
            limits,
            speculative,
            lora: resolve_lora(config)?,
        })
    }

    /// The shape, when the timing model describes the architecture; otherwise the error names the
    /// supported architectures.
    pub fn modelled_shape(&self) -> Result<&ModelShape, DescriptionError> {
        match self.family {
            Some(_) => Ok(&self.shape),
            None => Family::from_architecture(&self.architecture).map(|_| &self.shape).map_err(DescriptionError),
        }
    }

    /// The vocabulary as the engine pads it: a multiple of the tensor-parallel size.
    pub fn vocab_size_padded(&self) -> usize {
        self.shape.vocab_size.div_ceil(self.parallelism.tp) * self.parallelism.tp
    }

    /// KV heads each tensor-parallel rank holds: with more ranks than KV heads each keeps a copy of one.
    pub fn kv_heads_per_rank(&self) -> usize {
        self.shape.num_kv_heads.div_ceil(self.parallelism.tp)
    }
}

fn resolve_shape(p: &PretrainedConfig, family: Option<Family>) -> Result<ModelShape, DescriptionError> {
    let heads = required(p.num_attention_heads, "pretrained_config.num_attention_heads")?;
    let vocab = required(p.vocab_size, "pretrained_config.vocab_size")?;
    let hidden = required(p.hidden_size, "pretrained_config.hidden_size")?;
    let layers = required(p.num_hidden_layers, "pretrained_config.num_hidden_layers")?;
    let kv_heads = size(p.num_key_value_heads, "pretrained_config.num_key_value_heads", heads, 1)?;
    let head_size = size(p.head_size, "pretrained_config.head_size", hidden / heads, 1)?;
    let intermediate = size(p.intermediate_size, "pretrained_config.intermediate_size", 4 * hidden, 1)?;
    let family_or_llama = family.unwrap_or(Family::Llama);
    let moe = match (&p.moe, family_or_llama.is_moe()) {
        (Some(moe), _) if moe.num_experts.unwrap_or(0) > 0 => Some(resolve_moe(p, moe, intermediate)?),
        (_, true) => {
            return fail(format!(
                "{} is a Mixture-of-Experts architecture: pretrained_config.moe.num_experts and top_k are required",
                family_or_llama.architecture()
            ));
        }
        _ => None,
    };
    let sliding_window = match p.sliding_window {
        Some(0) => return fail("pretrained_config.sliding_window must be at least 1".into()),
        window => window,
    };
    Ok(ModelShape {
        family: family_or_llama,
        vocab_size: vocab,
        hidden_size: hidden,
        num_layers: layers,
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_size,
        intermediate_size: intermediate,
        tie_word_embeddings: p.tie_word_embeddings,
        qkv_bias: p.attn_bias.unwrap_or(family_or_llama.default_qkv_bias()),
        qk_norm: p.qk_layernorm.unwrap_or(family_or_llama.default_qk_norm()),
        sliding_window,
        moe,
    })
}

fn resolve_moe(
    p: &PretrainedConfig,
    moe: &super::config_json::MoeConfigJson,
    intermediate: usize,
) -> Result<MoeShape, DescriptionError> {
    let num_experts = required(moe.num_experts, "pretrained_config.moe.num_experts")?;
    let top_k = required(moe.top_k, "pretrained_config.moe.top_k")?;
    if top_k > num_experts {
        return fail(format!("pretrained_config.moe.top_k ({top_k}) exceeds num_experts ({num_experts})"));
    }
    let shared = p.moe_shared_expert_intermediate_size.or(moe.shared_expert_intermediate_size);
    Ok(MoeShape {
        num_experts,
        top_k,
        expert_intermediate_size: size(
            p.moe_intermediate_size,
            "pretrained_config.moe_intermediate_size",
            intermediate,
            1,
        )?,
        shared_expert_intermediate_size: size(shared, "pretrained_config.moe_shared_expert_intermediate_size", 0, 0)?,
    })
}

fn resolve_parallelism(p: &PretrainedConfig, shape: &ModelShape) -> Result<Parallelism, DescriptionError> {
    let m = &p.mapping;
    let tp = size(m.tp_size, "pretrained_config.mapping.tp_size", 1, 1)?;
    let pp = size(m.pp_size, "pretrained_config.mapping.pp_size", 1, 1)?;
    let cp = size(m.cp_size, "pretrained_config.mapping.cp_size", 1, 1)?;
    let ranks = tp * pp * cp;
    let world = size(m.world_size, "pretrained_config.mapping.world_size", ranks, 1)?;
    if world != ranks {
        return fail(format!(
            "pretrained_config.mapping.world_size ({world}) must equal tp_size * pp_size * cp_size ({ranks})"
        ));
    }
    check_head_split(shape.num_heads, shape.num_kv_heads, tp)?;
    if pp > shape.num_layers {
        return fail(format!(
            "pretrained_config.mapping.pp_size ({pp}) exceeds num_hidden_layers ({})",
            shape.num_layers
        ));
    }
    // TensorRT-LLM's mapping: absent MoE sizes split tp as all-tensor-parallel experts.
    let (moe_tp, moe_ep) = match (m.moe_tp_size, m.moe_ep_size) {
        (None, None) => (tp, 1),
        (Some(a), None) => (a, tp / a.max(1)),
        (None, Some(b)) => (tp / b.max(1), b),
        (Some(a), Some(b)) => (a, b),
    };
    if moe_tp == 0 || moe_ep == 0 || moe_tp * moe_ep != tp {
        return fail(format!(
            "pretrained_config.mapping.moe_tp_size ({moe_tp}) x moe_ep_size ({moe_ep}) must equal tp_size ({tp})"
        ));
    }
    if let Some(moe) = &shape.moe
        && !moe.num_experts.is_multiple_of(moe_ep)
    {
        return fail(format!(
            "pretrained_config.mapping.moe_ep_size ({moe_ep}) must divide the {} experts: every expert-parallel rank holds whole experts",
            moe.num_experts
        ));
    }
    Ok(Parallelism { tp, pp, cp, world, moe_tp, moe_ep })
}

/// Tensor parallelism splits the attention heads across the ranks: each needs a whole number of query heads,
/// and of KV heads unless there are fewer KV heads than ranks, which then share replicated ones.
fn check_head_split(heads: usize, kv_heads: usize, tp: usize) -> Result<(), DescriptionError> {
    if !heads.is_multiple_of(tp) {
        return fail(format!(
            "pretrained_config.mapping.tp_size ({tp}) must divide pretrained_config.num_attention_heads ({heads}): every tensor-parallel rank runs a whole number of attention heads, and {tp} ranks do not divide the {heads} attention heads"
        ));
    }
    let split = kv_heads.is_multiple_of(tp);
    let replicated = kv_heads < tp && tp.is_multiple_of(kv_heads);
    if !split && !replicated {
        return fail(format!(
            "pretrained_config.mapping.tp_size ({tp}) must divide pretrained_config.num_key_value_heads ({kv_heads}), or be a multiple of it (each KV head then replicated on tp_size / num_key_value_heads ranks)"
        ));
    }
    Ok(())
}

fn resolve_limits(config: &ConfigJson) -> Result<BuildLimits, DescriptionError> {
    let p = &config.pretrained_config;
    let b = &config.build_config;
    let plugins = &b.plugin_config;
    let max_input_len = size(b.max_input_len, "build_config.max_input_len", 1024, 1)?;
    let default_seq_len = p.max_position_embeddings.unwrap_or(2048.max(max_input_len + 1));
    let max_seq_len = size(b.max_seq_len, "build_config.max_seq_len", default_seq_len, 1)?;
    if max_input_len > max_seq_len {
        return fail(format!(
            "build_config.max_input_len ({max_input_len}) must not exceed max_seq_len ({max_seq_len})"
        ));
    }
    Ok(BuildLimits {
        max_input_len,
        max_seq_len,
        max_batch_size: size(b.max_batch_size, "build_config.max_batch_size", 2048, 1)?,
        max_beam_width: size(b.max_beam_width, "build_config.max_beam_width", 1, 1)?,
        max_num_tokens: size(b.max_num_tokens, "build_config.max_num_tokens", 8192, 1)?,
        tokens_per_block: size(plugins.tokens_per_block, "build_config.plugin_config.tokens_per_block", 32, 1)?,
        paged_kv_cache: plugins.paged_kv_cache.unwrap_or(true),
        paged_context_fmha: plugins.use_paged_context_fmha.unwrap_or(true),
        gather_context_logits: b.gather_context_logits,
        parallel_embedding: p.use_parallel_embedding,
    })
}

fn resolve_speculative(config: &ConfigJson) -> Result<Speculative, DescriptionError> {
    let b = &config.build_config;
    let mode = b.speculative_decoding_mode.unwrap_or(SpeculativeDecodingMode::None);
    let max_draft_len = size(b.max_draft_len, "build_config.max_draft_len", 0, 0)?;
    let num_medusa_heads = size(config.pretrained_config.num_medusa_heads, "pretrained_config.num_medusa_heads", 0, 0)?;
    for (value, name) in [(max_draft_len, "build_config.max_draft_len"), (num_medusa_heads, "num_medusa_heads")] {
        if value > MAX_DRAFT {
            return fail(format!("{name} ({value}) must be at most {MAX_DRAFT}"));
        }
    }
    let drafts = !matches!(mode, SpeculativeDecodingMode::None | SpeculativeDecodingMode::LookaheadDecoding);
    if drafts && max_draft_len == 0 {
        return fail(format!(
            "build_config.max_draft_len must be positive for speculative_decoding_mode {}",
            mode.name()
        ));
    }
    Ok(Speculative { mode, max_draft_len, num_medusa_heads })
}

/// The plugin is a dtype name (`auto`, `float16`, ...), or null / false when off; LoRA is on with the plugin,
/// at least one target module and a positive rank.
fn resolve_lora(config: &ConfigJson) -> Result<Option<LoraLimits>, DescriptionError> {
    let build = &config.build_config;
    let plugin_on =
        build.plugin_config.lora_plugin.as_ref().is_some_and(|p| !p.is_null() && *p != serde_json::Value::Bool(false));
    let Some(lora) = build.lora_config.as_ref().filter(|_| plugin_on) else {
        return Ok(None);
    };
    let modules = lora.lora_target_modules.clone().unwrap_or_default();
    let rank = lora.max_lora_rank.unwrap_or(0);
    let max_rank = u32::try_from(rank)
        .ok()
        .filter(|r| i32::try_from(*r).is_ok())
        .ok_or_else(|| DescriptionError(format!("build_config.lora_config.max_lora_rank ({rank}) is too large")))?;
    Ok((!modules.is_empty() && max_rank > 0).then_some(LoraLimits { target_modules: modules, max_rank }))
}

impl EngineDescription {
    /// The LoRA settings adapters are checked against; `None` when the engine was built without LoRA.
    ///
    /// The LoRA dtype is `pretrained_config.dtype`: TensorRT-LLM checks adapter weights against the
    /// model's data type, and `lora_plugin` names the same type (or `auto`).
    pub fn lora_settings(&self) -> Result<Option<crate::lora::EngineLoraSettings>, crate::lora::LoraError> {
        use crate::lora::{EngineLoraSettings, LoraDtype, LoraModule, ModelDims};
        let Some(lora) = &self.lora else { return Ok(None) };
        let modules =
            lora.target_modules.iter().map(|name| LoraModule::from_name(name)).collect::<Result<Vec<_>, _>>()?;
        let s = &self.shape;
        let int = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        let dims = ModelDims {
            hidden_size: int(s.hidden_size),
            intermediate_size: int(s.intermediate_size),
            num_heads: int(s.num_heads),
            num_kv_heads: int(s.num_kv_heads),
            head_size: int(s.head_size),
        };
        let dtype = LoraDtype::from_name(&self.precision.dtype)?;
        EngineLoraSettings::new(modules, lora.max_rank, dtype, int(s.num_layers), dims).map(Some)
    }
}
