//! [`EngineDescription`]: an engine's config.json resolved once, every default applied and every rule
//! checked; the executor's limits, the loader's [`EngineConfig`](super::EngineConfig), the timing model's
//! engine and the LoRA settings are views of it. A Hugging Face config.json reads into the same
//! description through [`super::hf_config`].

use serde::Serialize;

use super::config_json::{ConfigJson, PretrainedConfig, TokenIds};
pub use super::description_error::DescriptionError;
use super::description_error::fail;
use super::model_shape::{Family, ModelShape, MoeShape};
pub use super::precision::{KvQuant, Precision, WeightQuant, dtype_bytes};
use super::speculative::SpeculativeDecodingMode;

/// Longest draft (max_draft_len, num_medusa_heads) an engine may have.
const MAX_DRAFT: usize = 1024;

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

/// An engine's config.json, resolved once: every default applied and every rule checked. Consumers
/// hold or borrow it and ask it (its accessors, [`vocab_size_padded`](Self::vocab_size_padded),
/// [`kv_heads_per_rank`](Self::kv_heads_per_rank)) instead of copying its members.
///
/// [`EngineDescription::from_dir`] reads an engine directory's config.json (the one place that file
/// is opened); [`EngineDescription::from_model_config`] reads a model's config.json (Hugging Face or
/// TensorRT-LLM form); [`EngineDescription::resolve`] takes a document already in memory.
///
/// ```
/// use trtllm::engine::EngineDescription;
/// let json = r#"{"pretrained_config": {"architecture": "MixtralForCausalLM", "vocab_size": 32001,
///     "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
///     "intermediate_size": 14336, "moe": {"num_experts": 8, "top_k": 2},
///     "mapping": {"tp_size": 4, "moe_ep_size": 4}}}"#;
/// let d = EngineDescription::resolve(&serde_json::from_str(json)?)?;
/// assert_eq!((d.parallelism().moe_tp, d.parallelism().moe_ep), (1, 4));
/// assert_eq!(d.shape().moe.unwrap().expert_intermediate_size, 14336);
/// assert!((d.shape().parameter_count() / 1e9 - 46.7).abs() < 0.1);
/// assert_eq!(d.limits().max_batch_size, 2048);
/// // The engine pads the vocabulary to a multiple of tp; each rank holds 8 / 4 KV heads.
/// assert_eq!((d.vocab_size_padded(), d.kv_heads_per_rank()), (32004, 2));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineDescription {
    version: Option<String>,
    architecture: String,
    family: Option<Family>,
    model_name: Option<String>,
    shape: ModelShape,
    max_position_embeddings: Option<usize>,
    precision: Precision,
    parallelism: Parallelism,
    limits: BuildLimits,
    speculative: Speculative,
    lora: Option<LoraLimits>,
    tokenizer_dir: Option<String>,
    rotary_base: f64,
    norm_epsilon: f64,
    bos_token_id: Option<u32>,
    eos_token_ids: Vec<u32>,
}

impl EngineDescription {
    /// The TensorRT-LLM version that built the engine (`version`), when stated.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// `pretrained_config.architecture` (default `LlamaForCausalLM`).
    pub fn architecture(&self) -> &str {
        &self.architecture
    }

    /// The family the architecture names; `None` for one the timing model does not describe.
    pub fn family(&self) -> Option<Family> {
        self.family
    }

    /// `model_name`, else `_name_or_path`, when the config names the model.
    pub fn model_name(&self) -> Option<&str> {
        self.model_name.as_deref()
    }

    /// The model's shape (for an unmodelled architecture, its widths read as a Llama's).
    pub fn shape(&self) -> &ModelShape {
        &self.shape
    }

    /// The longest context the model was trained for: `max_position_embeddings`, else the
    /// `max_seq_len` the build limits default to.
    pub fn context_length(&self) -> usize {
        self.max_position_embeddings.unwrap_or(self.limits.max_seq_len)
    }

    /// Precisions.
    pub fn precision(&self) -> &Precision {
        &self.precision
    }

    /// Parallel layout.
    pub fn parallelism(&self) -> &Parallelism {
        &self.parallelism
    }

    /// Build limits.
    pub fn limits(&self) -> &BuildLimits {
        &self.limits
    }

    /// Speculative decoding.
    pub fn speculative(&self) -> &Speculative {
        &self.speculative
    }

    /// LoRA, when built with it.
    pub fn lora(&self) -> Option<&LoraLimits> {
        self.lora.as_ref()
    }

    /// RoPE base frequency (`rotary_base`, a checkpoint's `rope_theta`; default 10000).
    pub fn rotary_base(&self) -> f64 {
        self.rotary_base
    }

    /// The norms' epsilon (`norm_epsilon`, a checkpoint's `rms_norm_eps`; default 1e-5).
    pub fn norm_epsilon(&self) -> f64 {
        self.norm_epsilon
    }

    /// The beginning-of-sequence token a checkpoint's config names.
    pub fn bos_token_id(&self) -> Option<u32> {
        self.bos_token_id
    }

    /// The end-of-sequence tokens a checkpoint's config names (none when it names none).
    pub fn eos_token_ids(&self) -> &[u32] {
        &self.eos_token_ids
    }

    /// The tokenizer directory config.json names (`tokenizer_dir`, relative to the engine directory).
    pub fn tokenizer_dir(&self) -> Option<&str> {
        self.tokenizer_dir.as_deref()
    }

    /// Names an unnamed model (after the directory it came from).
    pub(super) fn name_model(&mut self, name: Option<String>) {
        self.model_name = name;
    }

    /// The attention window a sequence's KV cache keeps: the sliding window when shorter than
    /// max_seq_len, else max_seq_len.
    pub fn attention_window(&self) -> usize {
        self.shape.sliding_window.map_or(self.limits.max_seq_len, |w| w.min(self.limits.max_seq_len))
    }
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
            tokenizer_dir: config.tokenizer_dir.clone(),
            rotary_base: p.rotary_base.unwrap_or(10000.0),
            norm_epsilon: p.norm_epsilon.unwrap_or(1e-5),
            bos_token_id: p.bos_token_id,
            eos_token_ids: p.eos_token_id.as_ref().map(TokenIds::to_vec).unwrap_or_default(),
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

    /// Vocabulary rows of the output head (and of a split embedding table) each tensor-parallel rank holds.
    pub fn vocab_rows_per_rank(&self) -> usize {
        self.vocab_size_padded() / self.parallelism.tp
    }
}

fn resolve_shape(p: &PretrainedConfig, family: Option<Family>) -> Result<ModelShape, DescriptionError> {
    let heads = required(p.num_attention_heads, "pretrained_config.num_attention_heads")?;
    let vocab = required(p.vocab_size, "pretrained_config.vocab_size")?;
    let hidden = required(p.hidden_size, "pretrained_config.hidden_size")?;
    let layers = required(p.num_hidden_layers, "pretrained_config.num_hidden_layers")?;
    let kv_heads = size(p.num_key_value_heads, "pretrained_config.num_key_value_heads", heads, 1)?;
    // As the engine splits the hidden state: without an explicit head size, the heads must divide it.
    if p.head_size.is_none() && !hidden.is_multiple_of(heads) {
        return fail(format!(
            "pretrained_config.hidden_size ({hidden}) is not a multiple of num_attention_heads ({heads}), and no head size is given (head_size; head_dim in a Hugging Face config)"
        ));
    }
    let head_size = size(p.head_size, "pretrained_config.head_size", hidden / heads, 1)?;
    let intermediate = size(p.intermediate_size, "pretrained_config.intermediate_size", 4 * hidden, 1)?;
    let family_or_llama = family.unwrap_or(Family::Llama);
    let moe = match (&p.moe, family_or_llama.is_moe()) {
        (Some(moe), _) if moe.num_experts.unwrap_or(0) > 0 => Some(resolve_moe(p, moe, intermediate, layers)?),
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
    layers: usize,
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
        dense_layers: dense_mlp_layers(p, layers)?,
    })
}

/// Layers of a Mixture-of-Experts model whose MLP is dense, by Hugging Face's Qwen2-MoE rule: layer `i` has
/// experts unless it is in `mlp_only_layers` or `(i + 1)` is not a multiple of `decoder_sparse_step`.
fn dense_mlp_layers(p: &PretrainedConfig, layers: usize) -> Result<usize, DescriptionError> {
    let step = size(p.decoder_sparse_step, "pretrained_config.decoder_sparse_step", 1, 1)?;
    let dense_only = p.mlp_only_layers.as_deref().unwrap_or_default();
    if let Some(bad) = dense_only.iter().find(|&&layer| layer >= layers) {
        return fail(format!("pretrained_config.mlp_only_layers names layer {bad} of a {layers}-layer model"));
    }
    let dense = (0..layers).filter(|i| dense_only.contains(i) || !(i + 1).is_multiple_of(step)).count();
    if dense == layers {
        return fail(format!(
            "pretrained_config.mlp_only_layers and decoder_sparse_step ({step}) leave no layer with experts"
        ));
    }
    Ok(dense)
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
    let (moe_tp, moe_ep) = moe_split(tp, m.moe_tp_size, m.moe_ep_size).or_else(|e| {
        fail(format!(
            "pretrained_config.mapping.moe_tp_size ({}) x moe_ep_size ({}) must equal tp_size ({})",
            e.moe_tp, e.moe_ep, e.tp
        ))
    })?;
    if let Some(moe) = &shape.moe {
        check_expert_split(moe.num_experts, moe_ep)?;
    }
    Ok(Parallelism { tp, pp, cp, world, moe_tp, moe_ep })
}

/// How a Mixture-of-Experts layer splits over `tp` ranks: `(moe_tp, moe_ep)`, tensor parallelism inside each
/// expert times expert parallelism. TensorRT-LLM's mapping fills an absent size from the other (both absent:
/// all tensor-parallel experts); the two must multiply to `tp`, so a given `moe_ep` alone must divide it.
///
/// ```
/// use trtllm::engine::description::moe_split;
/// assert_eq!(moe_split(4, None, None), Ok((4, 1)));
/// assert_eq!(moe_split(4, None, Some(2)), Ok((2, 2)));
/// let refused = moe_split(4, None, Some(3)).unwrap_err(); // 3 does not divide 4
/// assert_eq!((refused.moe_tp, refused.moe_ep, refused.tp), (1, 3, 4));
/// ```
pub fn moe_split(tp: usize, moe_tp: Option<usize>, moe_ep: Option<usize>) -> Result<(usize, usize), MoeSplitError> {
    let (moe_tp, moe_ep) = match (moe_tp, moe_ep) {
        (None, None) => (tp, 1),
        (Some(a), None) => (a, tp / a.max(1)),
        (None, Some(b)) => (tp / b.max(1), b),
        (Some(a), Some(b)) => (a, b),
    };
    if moe_tp == 0 || moe_ep == 0 || moe_tp * moe_ep != tp {
        return Err(MoeSplitError { tp, moe_tp, moe_ep });
    }
    Ok((moe_tp, moe_ep))
}

/// A Mixture-of-Experts split that does not multiply to the tensor parallelism ([`moe_split`]), with the sizes
/// as filled in, so that each caller can name them in its own terms (config.json members, command-line flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("moe_tp ({moe_tp}) x moe_ep ({moe_ep}) must equal tp ({tp})")]
pub struct MoeSplitError {
    /// The tensor parallelism to split.
    pub tp: usize,
    /// Tensor parallelism inside each expert, given or filled in as `tp / moe_ep`.
    pub moe_tp: usize,
    /// Expert parallelism, given or filled in as `tp / moe_tp`.
    pub moe_ep: usize,
}

/// Tensor parallelism splits the attention heads across the ranks: each needs a whole number of query heads,
/// and of KV heads unless there are fewer KV heads than ranks, which then share replicated ones.
pub fn check_head_split(heads: usize, kv_heads: usize, tp: usize) -> Result<(), DescriptionError> {
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

/// Expert parallelism spreads a Mixture-of-Experts layer's experts across the ranks: each holds whole experts.
///
/// ```
/// use trtllm::engine::description::check_expert_split;
/// assert!(check_expert_split(8, 4).is_ok());
/// assert!(check_expert_split(8, 3).is_err()); // Mixtral's 8 experts over 3 ranks
/// ```
pub fn check_expert_split(num_experts: usize, moe_ep: usize) -> Result<(), DescriptionError> {
    if moe_ep == 0 || !num_experts.is_multiple_of(moe_ep) {
        return fail(format!(
            "pretrained_config.mapping.moe_ep_size ({moe_ep}) must divide the {num_experts} experts: every expert-parallel rank holds whole experts"
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
