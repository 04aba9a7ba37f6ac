//! The subset of TensorRT-LLM's engine `config.json` (written by `trtllm-build`) that this crate reads or writes.
//!
//! Every member is optional at this level and unknown members are ignored, since real engines carry many
//! more: which members are required, and their defaults, is decided once by
//! [`EngineDescription::resolve`](super::EngineDescription::resolve), which names a missing or invalid
//! member in its error. To read a new member, add it here as an `Option` (or a `#[serde(default)]` value)
//! and resolve it there.

use serde::{Deserialize, Serialize};

/// The whole document.
///
/// ```
/// let json = r#"{"version": "1.2.0", "pretrained_config": {"num_attention_heads": 32, "future_field": 1},
///                "build_config": {"max_batch_size": 8}}"#;
/// let config: trtllm::engine::ConfigJson = serde_json::from_str(json)?;
/// assert_eq!(config.pretrained_config.num_attention_heads, Some(32));
/// assert_eq!(config.pretrained_config.num_key_value_heads, None); // resolved to 32 by the description
/// assert_eq!(config.build_config.max_batch_size, Some(8));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConfigJson {
    /// The TensorRT-LLM version that built the engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The model: shape, precision, parallel mapping.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub pretrained_config: PretrainedConfig,
    /// The build limits and plugin settings.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub build_config: BuildConfig,
    /// Not written by `trtllm-build`: a tokenizer directory, relative to the engine directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer_dir: Option<String>,
}

/// `pretrained_config`: the model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PretrainedConfig {
    /// e.g. `LlamaForCausalLM`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    /// The activations' type, e.g. `bfloat16`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// The logits' type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logits_dtype: Option<String>,
    /// A display name (written by the simulator; absent from `trtllm-build` output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The Hugging Face checkpoint name, when the converter recorded it.
    #[serde(rename = "_name_or_path", skip_serializing_if = "Option::is_none")]
    pub name_or_path: Option<String>,
    /// Vocabulary size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vocab_size: Option<usize>,
    /// Hidden size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_size: Option<usize>,
    /// Transformer layers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_hidden_layers: Option<usize>,
    /// Attention (query) heads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_attention_heads: Option<usize>,
    /// Key/value heads; absent means `num_attention_heads`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_key_value_heads: Option<usize>,
    /// Dimension of one head; absent means `hidden_size / num_attention_heads`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head_size: Option<usize>,
    /// Width of the MLP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intermediate_size: Option<usize>,
    /// Activation function, e.g. `silu`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden_act: Option<String>,
    /// e.g. `rope_gpt_neox`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position_embedding_type: Option<String>,
    /// Longest context the model was trained for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_position_embeddings: Option<usize>,
    /// RoPE base frequency; absent means 10000.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rotary_base: Option<f64>,
    /// The norms' epsilon; absent means 1e-5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub norm_epsilon: Option<f64>,
    /// Not written by `trtllm-build`: the checkpoint's beginning-of-sequence token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bos_token_id: Option<u32>,
    /// Not written by `trtllm-build`: the checkpoint's end-of-sequence token, or tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eos_token_id: Option<TokenIds>,
    /// The output head shares the input embedding's weights.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub tie_word_embeddings: bool,
    /// The embedding table is split across tensor-parallel ranks.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub use_parallel_embedding: bool,
    /// How the model is split across GPUs.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub mapping: Mapping,
    /// Weight and KV-cache quantization.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub quantization: Quantization,
    /// Medusa heads (Medusa engines): the longest draft chain per step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_medusa_heads: Option<usize>,
    /// The Q, K and V projections carry a bias; absent means the family's default (Qwen2: yes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attn_bias: Option<bool>,
    /// RMS norms on queries and keys; absent means the family's default (Qwen3: yes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub qk_layernorm: Option<bool>,
    /// Attention window in tokens (Mistral); absent means full attention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<usize>,
    /// Mixture-of-Experts settings (Mixtral, Qwen MoE).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe: Option<MoeConfigJson>,
    /// Width of one expert's MLP (Qwen MoE); absent means `intermediate_size` (Mixtral).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_intermediate_size: Option<usize>,
    /// Width of the shared expert (Qwen2-MoE); absent means `moe.shared_expert_intermediate_size`, else none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_shared_expert_intermediate_size: Option<usize>,
    /// Layers (0-based) whose MLP is dense in a Mixture-of-Experts model (Qwen2-MoE's `mlp_only_layers`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mlp_only_layers: Option<Vec<usize>>,
    /// Every `decoder_sparse_step`-th layer has experts, the others a dense MLP (Qwen2-MoE; default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decoder_sparse_step: Option<usize>,
}

/// One token id or several (a checkpoint's `eos_token_id`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TokenIds {
    /// One id.
    One(u32),
    /// Several ids.
    Many(Vec<u32>),
}

impl TokenIds {
    /// The ids, in order.
    pub fn to_vec(&self) -> Vec<u32> {
        match self {
            TokenIds::One(id) => vec![*id],
            TokenIds::Many(ids) => ids.clone(),
        }
    }
}

/// `pretrained_config.moe`: the experts of a Mixture-of-Experts model.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MoeConfigJson {
    /// Routed experts per layer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_experts: Option<usize>,
    /// Experts each token is routed to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<usize>,
    /// Width of the shared expert, 0 for none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_expert_intermediate_size: Option<usize>,
}

/// `pretrained_config.mapping`: the parallel layout. Absent sizes are 1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Mapping {
    /// All ranks; absent means tp × pp × cp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub world_size: Option<usize>,
    /// Tensor-parallel size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tp_size: Option<usize>,
    /// Pipeline-parallel size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pp_size: Option<usize>,
    /// Context-parallel size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cp_size: Option<usize>,
    /// Tensor parallelism inside each expert (MoE); absent means tp_size / moe_ep_size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_tp_size: Option<usize>,
    /// Expert parallelism (MoE: whole experts per rank); absent means tp_size / moe_tp_size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moe_ep_size: Option<usize>,
}

/// `pretrained_config.quantization`. Both members are written, `null` meaning none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Quantization {
    /// Weight quantization, e.g. `FP8`, `W4A16_AWQ`.
    pub quant_algo: Option<String>,
    /// KV-cache quantization: `FP8`, `INT8`.
    pub kv_cache_quant_algo: Option<String>,
}

/// `build_config`: the limits the engine was built for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BuildConfig {
    /// Longest prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_input_len: Option<usize>,
    /// Longest prompt + output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_seq_len: Option<usize>,
    /// Most sequences in one batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch_size: Option<usize>,
    /// Widest beam; absent means 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_beam_width: Option<usize>,
    /// Most tokens in one iteration; absent means 8192.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_num_tokens: Option<usize>,
    /// e.g. `PAGED`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_cache_type: Option<String>,
    /// Context logits can be returned.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub gather_context_logits: bool,
    /// Generation logits can be returned.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub gather_generation_logits: bool,
    /// Plugin and kernel settings.
    #[serde(deserialize_with = "super::null_default::null_as_default")]
    pub plugin_config: PluginConfig,
    /// LoRA build settings (`trtllm-build --lora_target_modules ... --max_lora_rank R`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lora_config: Option<LoraConfigJson>,
    /// Speculative decoding the engine was built for; absent means none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculative_decoding_mode: Option<super::speculative::SpeculativeDecodingMode>,
    /// Draft tokens verified per step (speculative engines).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_draft_len: Option<usize>,
}

/// `build_config.lora_config`: which modules adapters may target, and their largest rank.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LoraConfigJson {
    /// TensorRT-LLM module names, e.g. `attn_q`, `mlp_4h_to_h`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lora_target_modules: Option<Vec<String>>,
    /// The largest adapter rank the engine accepts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_lora_rank: Option<u64>,
}

/// `build_config.plugin_config`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PluginConfig {
    /// The plugins' type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// e.g. `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpt_attention_plugin: Option<String>,
    /// e.g. `auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gemm_plugin: Option<String>,
    /// The KV cache is paged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paged_kv_cache: Option<bool>,
    /// KV-cache block size in tokens; absent means 32.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_block: Option<usize>,
    /// Paged context attention (chunked prefill); absent means true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_paged_context_fmha: Option<bool>,
    /// FP8 context attention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub use_fp8_context_fmha: Option<bool>,
    /// Fused context attention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_fmha: Option<bool>,
    /// Packed (unpadded) inputs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remove_input_padding: Option<bool>,
    /// The LoRA plugin's type (`auto`, `float16`, ...); absent, null or `false` when the engine has no LoRA.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lora_plugin: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_members_are_ignored_and_nulls_are_absent() {
        let json = r#"{"version": "1.1.0", "extra": [1],
            "pretrained_config": {"vocab_size": 10, "num_key_value_heads": null, "num_attention_heads": 4,
                                  "mapping": {"tp_size": 2, "moe_tp_size": 2}, "quantization": {"group_size": 128}},
            "build_config": {"lora_config": {}, "plugin_config": {"lora_plugin": null, "tokens_per_block": 64}}}"#;
        let config: ConfigJson = serde_json::from_str(json).unwrap();
        assert_eq!(config.pretrained_config.num_key_value_heads, None);
        assert_eq!(
            (config.pretrained_config.mapping.tp_size, config.pretrained_config.mapping.world_size),
            (Some(2), None)
        );
        assert_eq!(config.pretrained_config.quantization.quant_algo, None);
        assert_eq!(config.build_config.plugin_config.tokens_per_block, Some(64));
        assert_eq!(config.build_config.max_num_tokens, None);
    }

    #[test]
    fn a_mistyped_member_is_an_error() {
        let json = r#"{"pretrained_config": {"vocab_size": "many"}}"#;
        assert!(serde_json::from_str::<ConfigJson>(json).is_err());
    }
}
