//! Model presets (exact shapes of public checkpoints) and the precisions a simulated engine can use.

use serde::Serialize;

use super::error::SimError;

/// The shape of a decoder-only transformer, as its config.json states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ModelShape {
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Hidden size.
    pub hidden_size: usize,
    /// Transformer layers.
    pub num_layers: usize,
    /// Attention (query) heads.
    pub num_heads: usize,
    /// Key/value heads (grouped-query attention).
    pub num_kv_heads: usize,
    /// Dimension of one head.
    pub head_size: usize,
    /// Width of the gated MLP.
    pub intermediate_size: usize,
    /// The output head shares the input embedding's weights.
    pub tie_word_embeddings: bool,
}

impl ModelShape {
    /// Parameters: attention and gated-MLP matrices of every layer, norms, embedding and output head.
    pub fn parameter_count(&self) -> f64 {
        let hidden = self.hidden_size as f64;
        let q = (self.num_heads * self.head_size) as f64;
        let kv = (self.num_kv_heads * self.head_size) as f64;
        let per_layer = 2.0 * hidden * q + 2.0 * hidden * kv + 3.0 * hidden * self.intermediate_size as f64;
        let embeddings = self.vocab_size as f64 * hidden * if self.tie_word_embeddings { 1.0 } else { 2.0 };
        per_layer * self.num_layers as f64 + (2.0 * self.num_layers as f64 + 1.0) * hidden + embeddings
    }
}

/// A public model's exact configuration, for simulated engines.
///
/// ```
/// let qwen = trtllm::sim::ModelPreset::by_id("qwen2.5-7b")?;
/// assert_eq!(qwen.shape.intermediate_size, 18944);
/// assert!((qwen.shape.parameter_count() / 1e9 - 7.6).abs() < 0.05);
/// # Ok::<(), trtllm::sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPreset {
    /// Preset id used on the command line, e.g. `llama-3.1-70b`.
    pub id: &'static str,
    /// The checkpoint's Hugging Face name, recorded as the engine's model name.
    pub name: &'static str,
    /// TensorRT-LLM architecture name (`pretrained_config.architecture`).
    pub architecture: &'static str,
    /// The shape.
    pub shape: ModelShape,
    /// Longest context the model was trained for.
    pub max_position_embeddings: usize,
    /// RoPE base frequency.
    pub rotary_base: f64,
    /// RMSNorm epsilon.
    pub norm_epsilon: f64,
    /// Beginning-of-sequence token id.
    pub bos_token_id: u32,
    /// Token ids that end generation (generation_config.json's `eos_token_id`).
    pub eos_token_ids: &'static [u32],
}

impl ModelPreset {
    /// Every preset.
    pub fn all() -> &'static [ModelPreset] {
        &MODEL_PRESETS
    }

    /// The preset with this id.
    pub fn by_id(id: &str) -> Result<&'static ModelPreset, SimError> {
        MODEL_PRESETS.iter().find(|m| m.id == id).ok_or_else(|| SimError::UnknownModel {
            id: id.to_string(),
            known: MODEL_PRESETS.iter().map(|m| m.id).collect::<Vec<_>>().join(", "),
        })
    }
}

const LLAMA3_EOS: &[u32] = &[128001, 128008, 128009];

static MODEL_PRESETS: [ModelPreset; 5] = [
    ModelPreset {
        id: "tinyllama-1.1b",
        name: "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        architecture: "LlamaForCausalLM",
        shape: ModelShape {
            vocab_size: 32000,
            hidden_size: 2048,
            num_layers: 22,
            num_heads: 32,
            num_kv_heads: 4,
            head_size: 64,
            intermediate_size: 5632,
            tie_word_embeddings: false,
        },
        max_position_embeddings: 2048,
        rotary_base: 10000.0,
        norm_epsilon: 1e-5,
        bos_token_id: 1,
        eos_token_ids: &[2],
    },
    ModelPreset {
        id: "qwen2.5-7b",
        name: "Qwen/Qwen2.5-7B-Instruct",
        architecture: "Qwen2ForCausalLM",
        shape: ModelShape {
            vocab_size: 152064,
            hidden_size: 3584,
            num_layers: 28,
            num_heads: 28,
            num_kv_heads: 4,
            head_size: 128,
            intermediate_size: 18944,
            tie_word_embeddings: false,
        },
        max_position_embeddings: 32768,
        rotary_base: 1_000_000.0,
        norm_epsilon: 1e-6,
        bos_token_id: 151643,
        eos_token_ids: &[151645, 151643],
    },
    ModelPreset {
        id: "llama-3.1-8b",
        name: "meta-llama/Llama-3.1-8B-Instruct",
        architecture: "LlamaForCausalLM",
        shape: ModelShape {
            vocab_size: 128256,
            hidden_size: 4096,
            num_layers: 32,
            num_heads: 32,
            num_kv_heads: 8,
            head_size: 128,
            intermediate_size: 14336,
            tie_word_embeddings: false,
        },
        max_position_embeddings: 131072,
        rotary_base: 500_000.0,
        norm_epsilon: 1e-5,
        bos_token_id: 128000,
        eos_token_ids: LLAMA3_EOS,
    },
    ModelPreset {
        id: "llama-3.1-70b",
        name: "meta-llama/Llama-3.1-70B-Instruct",
        architecture: "LlamaForCausalLM",
        shape: ModelShape {
            vocab_size: 128256,
            hidden_size: 8192,
            num_layers: 80,
            num_heads: 64,
            num_kv_heads: 8,
            head_size: 128,
            intermediate_size: 28672,
            tie_word_embeddings: false,
        },
        max_position_embeddings: 131072,
        rotary_base: 500_000.0,
        norm_epsilon: 1e-5,
        bos_token_id: 128000,
        eos_token_ids: LLAMA3_EOS,
    },
    // The draft model for Llama-3.1 targets in draft-target speculative decoding (same vocabulary).
    ModelPreset {
        id: "llama-3.2-1b",
        name: "meta-llama/Llama-3.2-1B-Instruct",
        architecture: "LlamaForCausalLM",
        shape: ModelShape {
            vocab_size: 128256,
            hidden_size: 2048,
            num_layers: 16,
            num_heads: 32,
            num_kv_heads: 8,
            head_size: 64,
            intermediate_size: 8192,
            tie_word_embeddings: true,
        },
        max_position_embeddings: 131072,
        rotary_base: 500_000.0,
        norm_epsilon: 1e-5,
        bos_token_id: 128000,
        eos_token_ids: LLAMA3_EOS,
    },
];

/// How the weights of the linear layers are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum WeightDtype {
    /// bfloat16 (`dtype: bfloat16`, no quantization).
    #[default]
    Bf16,
    /// float16.
    Fp16,
    /// FP8 (E4M3) weights and activations (`quant_algo: FP8`, `dtype: bfloat16`); Ada and Hopper only.
    Fp8,
}

impl WeightDtype {
    /// `pretrained_config.dtype`.
    pub fn config_dtype(self) -> &'static str {
        match self {
            WeightDtype::Fp16 => "float16",
            WeightDtype::Bf16 | WeightDtype::Fp8 => "bfloat16",
        }
    }

    /// `pretrained_config.quantization.quant_algo`.
    pub fn quant_algo(self) -> Option<&'static str> {
        matches!(self, WeightDtype::Fp8).then_some("FP8")
    }
}

/// How the KV cache is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum KvCacheDtype {
    /// The activations' 16-bit type.
    #[default]
    Auto,
    /// FP8 (`kv_cache_quant_algo: FP8`); Ada and Hopper only.
    Fp8,
    /// INT8 (`kv_cache_quant_algo: INT8`).
    Int8,
}

impl KvCacheDtype {
    /// `pretrained_config.quantization.kv_cache_quant_algo`.
    pub fn quant_algo(self) -> Option<&'static str> {
        match self {
            KvCacheDtype::Auto => None,
            KvCacheDtype::Fp8 => Some("FP8"),
            KvCacheDtype::Int8 => Some("INT8"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_counts_match_the_published_sizes() {
        let billions = |id: &str| ModelPreset::by_id(id).unwrap().shape.parameter_count() / 1e9;
        assert!((billions("tinyllama-1.1b") - 1.1).abs() < 0.01);
        assert!((billions("qwen2.5-7b") - 7.6).abs() < 0.02);
        assert!((billions("llama-3.1-8b") - 8.03).abs() < 0.01);
        assert!((billions("llama-3.1-70b") - 70.6).abs() < 0.05);
        assert!((billions("llama-3.2-1b") - 1.24).abs() < 0.02);
    }

    #[test]
    fn unknown_model_names_the_known_ones() {
        let err = ModelPreset::by_id("llama-70b").unwrap_err();
        assert!(err.to_string().contains("llama-3.1-70b"), "{err}");
    }
}
