//! A Hugging Face checkpoint's config.json read as the `pretrained_config` TensorRT-LLM's converters
//! would write for it, so that both forms resolve through one [`EngineDescription`](super::EngineDescription).

use serde::Deserialize;

use super::config_json::{ConfigJson, MoeConfigJson, PretrainedConfig, Quantization};
use super::description::DescriptionError;

/// The members of a Hugging Face config.json that shape the engine (the families' names for them).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HfConfig {
    architectures: Vec<String>,
    torch_dtype: Option<String>,
    dtype: Option<String>,
    #[serde(rename = "_name_or_path")]
    name_or_path: Option<String>,
    vocab_size: Option<usize>,
    hidden_size: Option<usize>,
    num_hidden_layers: Option<usize>,
    num_attention_heads: Option<usize>,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    intermediate_size: Option<usize>,
    hidden_act: Option<String>,
    max_position_embeddings: Option<usize>,
    rope_theta: Option<f64>,
    rms_norm_eps: Option<f64>,
    bos_token_id: Option<u32>,
    eos_token_id: Option<super::config_json::TokenIds>,
    tie_word_embeddings: Option<bool>,
    attention_bias: Option<bool>,
    sliding_window: Option<usize>,
    use_sliding_window: Option<bool>,
    /// Mixtral's expert count.
    num_local_experts: Option<usize>,
    /// Qwen MoE's expert count.
    num_experts: Option<usize>,
    num_experts_per_tok: Option<usize>,
    moe_intermediate_size: Option<usize>,
    shared_expert_intermediate_size: Option<usize>,
    /// Qwen2-MoE: layers with a dense MLP, and the stride of the layers with experts.
    mlp_only_layers: Option<Vec<usize>>,
    decoder_sparse_step: Option<usize>,
    quantization_config: Option<HfQuantization>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct HfQuantization {
    quant_method: Option<String>,
    /// ModelOpt checkpoints name TensorRT-LLM's algorithms directly.
    quant_algo: Option<String>,
    kv_cache_quant_algo: Option<String>,
    bits: Option<u32>,
}

/// True when `json` is a Hugging Face checkpoint's config (it names its class or model type and has no
/// `pretrained_config`), not a TensorRT-LLM engine's.
pub fn is_checkpoint_config(json: &serde_json::Value) -> bool {
    json.get("pretrained_config").is_none() && (json.get("architectures").is_some() || json.get("model_type").is_some())
}

/// The engine config.json (no build settings: their defaults apply) TensorRT-LLM would build from a
/// Hugging Face config.json.
///
/// ```
/// let hf = serde_json::json!({"architectures": ["Qwen2ForCausalLM"], "torch_dtype": "bfloat16",
///     "vocab_size": 152064, "hidden_size": 3584, "num_hidden_layers": 28, "num_attention_heads": 28,
///     "num_key_value_heads": 4, "intermediate_size": 18944, "max_position_embeddings": 32768,
///     "sliding_window": 131072, "use_sliding_window": false});
/// let config = trtllm::sim::hf_config::engine_config(&hf)?;
/// let d = trtllm::engine::EngineDescription::resolve(&config)?;
/// assert!(d.shape().qkv_bias && d.shape().sliding_window.is_none());
/// assert!((d.shape().parameter_count() / 1e9 - 7.62).abs() < 0.01);
/// # Ok::<(), trtllm::engine::DescriptionError>(())
/// ```
pub fn engine_config(json: &serde_json::Value) -> Result<ConfigJson, DescriptionError> {
    let hf: HfConfig =
        serde_path_to_error::deserialize(json).map_err(|e| DescriptionError(format!("{}: {}", e.path(), e.inner())))?;
    let architecture = hf.architectures.first().cloned().ok_or_else(|| {
        DescriptionError("architectures is missing (a Hugging Face config.json names its class)".into())
    })?;
    let experts = hf.num_local_experts.or(hf.num_experts).filter(|n| *n > 0);
    let moe = experts.map(|n| MoeConfigJson {
        num_experts: Some(n),
        top_k: hf.num_experts_per_tok,
        shared_expert_intermediate_size: hf.shared_expert_intermediate_size,
    });
    let pretrained = PretrainedConfig {
        architecture: Some(architecture),
        dtype: hf.torch_dtype.or(hf.dtype).map(|d| if d == "float32" { "float16".into() } else { d }),
        name_or_path: hf.name_or_path,
        vocab_size: hf.vocab_size,
        hidden_size: hf.hidden_size,
        num_hidden_layers: hf.num_hidden_layers,
        num_attention_heads: hf.num_attention_heads,
        num_key_value_heads: hf.num_key_value_heads,
        head_size: hf.head_dim,
        intermediate_size: hf.intermediate_size,
        hidden_act: hf.hidden_act,
        max_position_embeddings: hf.max_position_embeddings,
        rotary_base: hf.rope_theta,
        norm_epsilon: hf.rms_norm_eps,
        bos_token_id: hf.bos_token_id,
        eos_token_id: hf.eos_token_id,
        tie_word_embeddings: hf.tie_word_embeddings.unwrap_or(false),
        attn_bias: hf.attention_bias,
        // Qwen configs state a window and switch it off with use_sliding_window.
        sliding_window: hf.sliding_window.filter(|_| hf.use_sliding_window.unwrap_or(true)),
        moe_intermediate_size: hf.moe_intermediate_size.filter(|_| moe.is_some()),
        mlp_only_layers: hf.mlp_only_layers.filter(|_| moe.is_some()),
        decoder_sparse_step: hf.decoder_sparse_step.filter(|_| moe.is_some()),
        moe,
        quantization: hf.quantization_config.map(quantization).unwrap_or_default(),
        ..PretrainedConfig::default()
    };
    Ok(ConfigJson { pretrained_config: pretrained, ..ConfigJson::default() })
}

/// `quantization_config` as TensorRT-LLM's `quant_algo`: ModelOpt names it; `fp8` checkpoints are FP8;
/// 4- and 8-bit AWQ/GPTQ are weight-only. Others pass through by name, to be refused as unmodelled.
fn quantization(q: HfQuantization) -> Quantization {
    let method = q.quant_method.map(|m| m.to_ascii_lowercase());
    let quant_algo = q.quant_algo.or_else(|| match (method.as_deref(), q.bits) {
        (Some("fp8"), _) => Some("FP8".into()),
        (Some("awq" | "gptq"), Some(4)) => Some("W4A16".into()),
        (Some("awq" | "gptq"), Some(8)) => Some("W8A16".into()),
        (Some("modelopt") | None, _) => None,
        (Some(other), _) => Some(other.to_ascii_uppercase()),
    });
    Quantization { quant_algo, kv_cache_quant_algo: q.kv_cache_quant_algo }
}
