//! TensorRT-LLM's LoRA module types: their numeric ids, names and input/output widths.

use std::fmt;

/// One kind of linear layer a LoRA adapter can adapt, numbered as TensorRT-LLM numbers them
/// (`runtime::LoraModule::ModuleType` in `loraModule.h`). The number is what the first column of
/// a LoRA config row holds; the name is what `lora_target_modules` in an engine's config.json
/// lists.
///
/// ```
/// use trtllm::lora::LoraModule;
/// assert_eq!(LoraModule::from_name("attn_q").unwrap(), LoraModule::AttnQ);
/// assert_eq!(LoraModule::AttnQ.id(), 1);
/// assert_eq!(LoraModule::from_id(7).unwrap().name(), "mlp_gate");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum LoraModule {
    /// `attn_qkv` (0): the fused query/key/value projection.
    AttnQkv,
    /// `attn_q` (1): the query projection.
    AttnQ,
    /// `attn_k` (2): the key projection.
    AttnK,
    /// `attn_v` (3): the value projection.
    AttnV,
    /// `attn_dense` (4): the attention output projection (`o_proj`).
    AttnDense,
    /// `mlp_h_to_4h` (5): the first MLP projection; for gated MLPs the gate (`gate_proj`).
    MlpHTo4h,
    /// `mlp_4h_to_h` (6): the MLP down projection (`down_proj`).
    Mlp4hToH,
    /// `mlp_gate` (7): for gated MLPs the up projection (`up_proj`).
    MlpGate,
    /// `cross_attn_qkv` (8): fused query/key/value of cross attention.
    CrossAttnQkv,
    /// `cross_attn_q` (9): query of cross attention.
    CrossAttnQ,
    /// `cross_attn_k` (10): key of cross attention.
    CrossAttnK,
    /// `cross_attn_v` (11): value of cross attention.
    CrossAttnV,
    /// `cross_attn_dense` (12): output projection of cross attention.
    CrossAttnDense,
    /// `moe_h_to_4h` (13): expert up projection.
    MoeHTo4h,
    /// `moe_4h_to_h` (14): expert down projection.
    Moe4hToH,
    /// `moe_gate` (15): expert gate.
    MoeGate,
    /// `moe_router` (16): the expert router.
    MoeRouter,
    /// `mlp_router` (17): a one-output router.
    MlpRouter,
    /// `mlp_gate_up` (18): fused gate and up projections (`gate_up_proj`).
    MlpGateUp,
    /// `shared_expert_h_to_4h` (19): shared-expert up projection.
    SharedExpertHTo4h,
    /// `shared_expert_4h_to_h` (20): shared-expert down projection.
    SharedExpert4hToH,
    /// `shared_expert_gate` (21): shared-expert gate.
    SharedExpertGate,
}

/// Every module, in id order (the index is the id).
pub(super) const ALL: [LoraModule; 22] = [
    LoraModule::AttnQkv,
    LoraModule::AttnQ,
    LoraModule::AttnK,
    LoraModule::AttnV,
    LoraModule::AttnDense,
    LoraModule::MlpHTo4h,
    LoraModule::Mlp4hToH,
    LoraModule::MlpGate,
    LoraModule::CrossAttnQkv,
    LoraModule::CrossAttnQ,
    LoraModule::CrossAttnK,
    LoraModule::CrossAttnV,
    LoraModule::CrossAttnDense,
    LoraModule::MoeHTo4h,
    LoraModule::Moe4hToH,
    LoraModule::MoeGate,
    LoraModule::MoeRouter,
    LoraModule::MlpRouter,
    LoraModule::MlpGateUp,
    LoraModule::SharedExpertHTo4h,
    LoraModule::SharedExpert4hToH,
    LoraModule::SharedExpertGate,
];

/// Sizes of the base model that fix each module's input and output widths. All are the full
/// (not tensor-parallel-split) sizes from the engine's `pretrained_config`: the executor takes the
/// whole adapter and splits it across ranks itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelDims {
    /// `hidden_size`.
    pub hidden_size: u32,
    /// `intermediate_size`: the MLP's inner width.
    pub intermediate_size: u32,
    /// `num_attention_heads`.
    pub num_heads: u32,
    /// `num_key_value_heads`.
    pub num_kv_heads: u32,
    /// `head_size` (`hidden_size / num_attention_heads` when the config omits it).
    pub head_size: u32,
}

/// The input and output widths of one adapted linear layer: `A` is `[rank, in_dim]`, `B` is
/// `[out_dim, rank]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModuleDims {
    /// Width of the layer's input.
    pub in_dim: u32,
    /// Width of the layer's output.
    pub out_dim: u32,
}

impl ModuleDims {
    /// Values one module-layer row needs at `rank`: `rank × (in_dim + out_dim)` (`A` then `B`).
    pub fn row_values(self, rank: u32) -> usize {
        rank as usize * (self.in_dim as usize + self.out_dim as usize)
    }
}

impl LoraModule {
    /// Every module TensorRT-LLM defines, in id order.
    pub fn all() -> &'static [LoraModule] {
        &ALL
    }

    /// TensorRT-LLM's numeric id (the first column of a config row).
    pub fn id(self) -> i32 {
        // ALL is in id order, so the position is the id.
        ALL.iter().position(|m| *m == self).map_or(-1, |i| i as i32)
    }

    /// TensorRT-LLM's name, as `lora_target_modules` lists it.
    pub fn name(self) -> &'static str {
        match self {
            Self::AttnQkv => "attn_qkv",
            Self::AttnQ => "attn_q",
            Self::AttnK => "attn_k",
            Self::AttnV => "attn_v",
            Self::AttnDense => "attn_dense",
            Self::MlpHTo4h => "mlp_h_to_4h",
            Self::Mlp4hToH => "mlp_4h_to_h",
            Self::MlpGate => "mlp_gate",
            Self::CrossAttnQkv => "cross_attn_qkv",
            Self::CrossAttnQ => "cross_attn_q",
            Self::CrossAttnK => "cross_attn_k",
            Self::CrossAttnV => "cross_attn_v",
            Self::CrossAttnDense => "cross_attn_dense",
            Self::MoeHTo4h => "moe_h_to_4h",
            Self::Moe4hToH => "moe_4h_to_h",
            Self::MoeGate => "moe_gate",
            Self::MoeRouter => "moe_router",
            Self::MlpRouter => "mlp_router",
            Self::MlpGateUp => "mlp_gate_up",
            Self::SharedExpertHTo4h => "shared_expert_h_to_4h",
            Self::SharedExpert4hToH => "shared_expert_4h_to_h",
            Self::SharedExpertGate => "shared_expert_gate",
        }
    }

    /// The TensorRT-LLM module a Hugging Face PEFT module name adapts, following TensorRT-LLM's own
    /// converter for Llama-style models (note that `gate_proj` is `mlp_h_to_4h` and `up_proj` is
    /// `mlp_gate`). `None` for names with no counterpart.
    pub fn from_hf_name(hf_module: &str) -> Option<Self> {
        Some(match hf_module {
            "q_proj" => Self::AttnQ,
            "k_proj" => Self::AttnK,
            "v_proj" => Self::AttnV,
            "qkv_proj" | "query_key_value" => Self::AttnQkv,
            "o_proj" | "dense" => Self::AttnDense,
            "gate_proj" => Self::MlpHTo4h,
            "up_proj" => Self::MlpGate,
            "down_proj" => Self::Mlp4hToH,
            "gate_up_proj" => Self::MlpGateUp,
            _ => return None,
        })
    }

    /// The widths of this module's adapter for a model of the given sizes, as TensorRT-LLM computes
    /// them (`LoraModule::createLoraModules`). `None` for the mixture-of-experts modules, whose
    /// widths also depend on expert counts this crate does not model.
    pub fn dims(self, model: &ModelDims) -> Option<ModuleDims> {
        let hidden = model.hidden_size;
        let mlp = model.intermediate_size;
        let q_out = model.num_heads * model.head_size;
        let kv_out = model.num_kv_heads * model.head_size;
        let (in_dim, out_dim) = match self {
            Self::AttnQkv | Self::CrossAttnQkv => (hidden, q_out + 2 * kv_out),
            Self::AttnQ | Self::CrossAttnQ => (hidden, q_out),
            Self::AttnK | Self::CrossAttnK | Self::AttnV | Self::CrossAttnV => (hidden, kv_out),
            Self::AttnDense | Self::CrossAttnDense => (hidden, hidden),
            Self::MlpHTo4h | Self::MlpGate => (hidden, mlp),
            Self::Mlp4hToH => (mlp, hidden),
            Self::MlpGateUp => (hidden, 2 * mlp),
            Self::MlpRouter => (hidden, 1),
            Self::MoeHTo4h
            | Self::Moe4hToH
            | Self::MoeGate
            | Self::MoeRouter
            | Self::SharedExpertHTo4h
            | Self::SharedExpert4hToH
            | Self::SharedExpertGate => return None,
        };
        Some(ModuleDims { in_dim, out_dim })
    }
}

impl fmt::Display for LoraModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lora::LoraError;

    #[test]
    fn ids_and_names_round_trip_for_every_module() {
        for (index, module) in LoraModule::all().iter().enumerate() {
            assert_eq!(module.id() as usize, index);
            assert_eq!(LoraModule::from_id(index as i64).unwrap(), *module);
            assert_eq!(LoraModule::from_name(module.name()).unwrap(), *module);
        }
    }

    #[test]
    fn upstream_ids_of_the_common_modules() {
        // The numbering documented in TensorRT-LLM's lora.md module table.
        let expected = [
            ("attn_qkv", 0),
            ("attn_q", 1),
            ("attn_k", 2),
            ("attn_v", 3),
            ("attn_dense", 4),
            ("mlp_h_to_4h", 5),
            ("mlp_4h_to_h", 6),
            ("mlp_gate", 7),
            ("moe_router", 16),
            ("mlp_gate_up", 18),
        ];
        for (name, id) in expected {
            assert_eq!(LoraModule::from_name(name).unwrap().id(), id, "{name}");
        }
    }

    #[test]
    fn unknown_ids_and_names_are_errors() {
        assert!(matches!(LoraModule::from_id(22), Err(LoraError::UnknownModuleId(22))));
        assert!(matches!(LoraModule::from_id(-1), Err(LoraError::UnknownModuleId(-1))));
        assert!(matches!(LoraModule::from_name("attn_x"), Err(LoraError::UnknownModuleName(n)) if n == "attn_x"));
    }

    #[test]
    fn widths_follow_the_model_sizes() {
        // Llama-3.1-8B: hidden 4096, 32 heads of 128, 8 kv heads, MLP 14336.
        let dims =
            ModelDims { hidden_size: 4096, intermediate_size: 14336, num_heads: 32, num_kv_heads: 8, head_size: 128 };
        let of = |m: LoraModule| m.dims(&dims).map(|d| (d.in_dim, d.out_dim));
        assert_eq!(of(LoraModule::AttnQ), Some((4096, 4096)));
        assert_eq!(of(LoraModule::AttnK), Some((4096, 1024)));
        assert_eq!(of(LoraModule::AttnV), Some((4096, 1024)));
        assert_eq!(of(LoraModule::AttnQkv), Some((4096, 6144)));
        assert_eq!(of(LoraModule::AttnDense), Some((4096, 4096)));
        assert_eq!(of(LoraModule::MlpHTo4h), Some((4096, 14336)));
        assert_eq!(of(LoraModule::MlpGate), Some((4096, 14336)));
        assert_eq!(of(LoraModule::Mlp4hToH), Some((14336, 4096)));
        assert_eq!(of(LoraModule::MlpGateUp), Some((4096, 28672)));
        assert_eq!(of(LoraModule::MoeGate), None);
    }

    #[test]
    fn hf_names_map_like_the_upstream_converter() {
        assert_eq!(LoraModule::from_hf_name("gate_proj"), Some(LoraModule::MlpHTo4h));
        assert_eq!(LoraModule::from_hf_name("up_proj"), Some(LoraModule::MlpGate));
        assert_eq!(LoraModule::from_hf_name("down_proj"), Some(LoraModule::Mlp4hToH));
        assert_eq!(LoraModule::from_hf_name("o_proj"), Some(LoraModule::AttnDense));
        assert_eq!(LoraModule::from_hf_name("lm_head"), None);
    }
}
