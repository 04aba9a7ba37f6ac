//! The shape of a decoder the engine path runs: its family, attention and MLP widths, the per-family
//! details (QKV bias, Q/K norms, sliding window) and, for Mixture-of-Experts models, the experts.

use serde::Serialize;

/// A model family the timing model describes (TensorRT-LLM's engine-path decoders of the Llama and
/// Mixtral shape), named by its `architecture`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Family {
    /// Llama 2 / 3 / 3.1 / 3.2 / 3.3 (`LlamaForCausalLM`).
    Llama,
    /// Mistral, with a sliding attention window (`MistralForCausalLM`).
    Mistral,
    /// Mixtral 8x7B / 8x22B (`MixtralForCausalLM`).
    Mixtral,
    /// Qwen2 / Qwen2.5: bias on the Q, K and V projections (`Qwen2ForCausalLM`).
    Qwen2,
    /// Qwen3: RMS norms on queries and keys (`Qwen3ForCausalLM`).
    Qwen3,
    /// Qwen1.5-MoE / Qwen2-MoE: routed experts plus a shared expert, QKV bias (`Qwen2MoeForCausalLM`).
    Qwen2Moe,
    /// Qwen3-MoE: routed experts, Q/K norms (`Qwen3MoeForCausalLM`).
    Qwen3Moe,
}

/// Every family with its `architecture` name.
const ARCHITECTURES: [(Family, &str); 7] = [
    (Family::Llama, "LlamaForCausalLM"),
    (Family::Mistral, "MistralForCausalLM"),
    (Family::Mixtral, "MixtralForCausalLM"),
    (Family::Qwen2, "Qwen2ForCausalLM"),
    (Family::Qwen3, "Qwen3ForCausalLM"),
    (Family::Qwen2Moe, "Qwen2MoeForCausalLM"),
    (Family::Qwen3Moe, "Qwen3MoeForCausalLM"),
];

impl Family {
    /// The family of an `architecture` name; `Err` names the supported ones.
    pub fn from_architecture(name: &str) -> Result<Self, String> {
        ARCHITECTURES.iter().find(|(_, a)| *a == name).map(|(f, _)| *f).ok_or_else(|| {
            format!("architecture \"{name}\" is not modelled (supported: {})", ARCHITECTURES.map(|(_, a)| a).join(", "))
        })
    }

    /// The `architecture` name.
    pub fn architecture(self) -> &'static str {
        ARCHITECTURES.iter().find(|(f, _)| *f == self).map(|(_, a)| *a).unwrap_or("LlamaForCausalLM")
    }

    /// The family's MLP is a Mixture-of-Experts.
    pub fn is_moe(self) -> bool {
        matches!(self, Family::Mixtral | Family::Qwen2Moe | Family::Qwen3Moe)
    }

    /// The Q, K and V projections carry a bias unless the config says otherwise.
    pub fn default_qkv_bias(self) -> bool {
        matches!(self, Family::Qwen2 | Family::Qwen2Moe)
    }

    /// Queries and keys pass an RMS norm per head unless the config says otherwise.
    pub fn default_qk_norm(self) -> bool {
        matches!(self, Family::Qwen3 | Family::Qwen3Moe)
    }
}

/// The experts of a Mixture-of-Experts MLP (every layer's MLP is one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MoeShape {
    /// Routed experts per layer.
    pub num_experts: usize,
    /// Experts each token is routed to.
    pub top_k: usize,
    /// Width of one expert's gated MLP.
    pub expert_intermediate_size: usize,
    /// Width of the shared expert every token also passes (Qwen2-MoE); 0 for none.
    pub shared_expert_intermediate_size: usize,
}

impl MoeShape {
    /// Expected distinct experts that `tokens` tokens touch among `experts` when each picks `top_k`
    /// uniformly: E(1 - (1 - k/E)^T).
    pub fn distinct_experts(experts: f64, top_k: f64, tokens: f64) -> f64 {
        if experts <= 0.0 || tokens <= 0.0 {
            return 0.0;
        }
        experts * (1.0 - (1.0 - (top_k / experts).min(1.0)).powf(tokens))
    }
}

/// The shape of a decoder-only transformer, defaults applied (see `EngineDescription`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ModelShape {
    /// The family (what kind of layer this is).
    pub family: Family,
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
    /// Width of the dense gated MLP (Mixtral: each expert's).
    pub intermediate_size: usize,
    /// The output head shares the input embedding's weights.
    pub tie_word_embeddings: bool,
    /// The Q, K and V projections carry a bias.
    pub qkv_bias: bool,
    /// RMS norms on queries and keys per head.
    pub qk_norm: bool,
    /// Attention sees at most this many past tokens (Mistral); `None` for full attention.
    pub sliding_window: Option<usize>,
    /// The experts, for Mixture-of-Experts families.
    pub moe: Option<MoeShape>,
}

/// Parameters of one shape, by part; every weight count derives from these sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ParameterCount {
    /// Q, K, V and output projections (with biases and Q/K norms) of every layer.
    pub attention: f64,
    /// Dense MLPs, or the shared experts and routers of MoE layers.
    pub dense_mlp: f64,
    /// Routed experts of every layer (all of them).
    pub experts: f64,
    /// Layer norms and the final norm.
    pub norms: f64,
    /// The input embedding table.
    pub embedding: f64,
    /// The output head (0 when tied to the embedding).
    pub lm_head: f64,
}

impl ParameterCount {
    /// All parameters.
    pub fn total(&self) -> f64 {
        self.attention + self.dense_mlp + self.experts + self.norms + self.embedding + self.lm_head
    }
}

impl ModelShape {
    /// Width of all query heads.
    pub fn q_width(&self) -> usize {
        self.num_heads * self.head_size
    }

    /// Width of all key (or value) heads.
    pub fn kv_width(&self) -> usize {
        self.num_kv_heads * self.head_size
    }

    /// Parameters of one layer's attention: projections, their biases and the Q/K norms.
    pub fn attention_params_per_layer(&self) -> f64 {
        let (h, q, kv) = (self.hidden_size as f64, self.q_width() as f64, self.kv_width() as f64);
        let bias = if self.qkv_bias { q + 2.0 * kv } else { 0.0 };
        let norms = if self.qk_norm { 2.0 * self.head_size as f64 } else { 0.0 };
        2.0 * h * q + 2.0 * h * kv + bias + norms
    }

    /// Parameters by part.
    pub fn parameters(&self) -> ParameterCount {
        let (h, layers) = (self.hidden_size as f64, self.num_layers as f64);
        let (dense_mlp, experts) = match &self.moe {
            None => (3.0 * h * self.intermediate_size as f64, 0.0),
            Some(moe) => {
                let router = h * moe.num_experts as f64;
                // Qwen2-MoE gates its shared expert with a hidden -> 1 projection.
                let shared = moe.shared_expert_intermediate_size as f64;
                let shared = if shared > 0.0 { 3.0 * h * shared + h } else { 0.0 };
                (router + shared, moe.num_experts as f64 * 3.0 * h * moe.expert_intermediate_size as f64)
            }
        };
        let table = self.vocab_size as f64 * h;
        ParameterCount {
            attention: self.attention_params_per_layer() * layers,
            dense_mlp: dense_mlp * layers,
            experts: experts * layers,
            norms: (2.0 * layers + 1.0) * h,
            embedding: table,
            lm_head: if self.tie_word_embeddings { 0.0 } else { table },
        }
    }

    /// All parameters.
    pub fn parameter_count(&self) -> f64 {
        self.parameters().total()
    }

    /// Parameters one token passes through (MoE: its `top_k` experts, not all of them).
    pub fn active_parameter_count(&self) -> f64 {
        let p = self.parameters();
        let experts = match &self.moe {
            Some(moe) => p.experts * moe.top_k as f64 / moe.num_experts as f64,
            None => 0.0,
        };
        p.total() - p.experts + experts
    }
}
