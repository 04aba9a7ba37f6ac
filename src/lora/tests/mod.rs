//! Tests of the LoRA layer with adapters written by the tests themselves.

mod peft_load;
mod peft_reject;
mod validate;
mod wire;

use std::path::Path;

use safetensors::{Dtype, tensor::TensorView};
use serde_json::json;

use super::{EngineLoraSettings, LoraDtype, LoraModule, ModelDims};

/// A tiny model: hidden 8, 2 query heads and 1 key/value head of width 4 (q out 8, k/v out 4),
/// MLP width 12, 2 layers.
pub(super) const DIMS: ModelDims =
    ModelDims { hidden_size: 8, intermediate_size: 12, num_heads: 2, num_kv_heads: 1, head_size: 4 };

pub(super) fn engine(modules: &[LoraModule], dtype: LoraDtype) -> EngineLoraSettings {
    EngineLoraSettings::new(modules.to_vec(), 4, dtype, 2, DIMS).unwrap()
}

/// A matrix with distinct values, all exact in f16 and bf16 (multiples of 1/8 below 16).
pub(super) fn matrix(rows: usize, cols: usize, seed: usize) -> Vec<f32> {
    (0..rows * cols).map(|i| ((seed * 37 + i * 5) % 113) as f32 / 8.0 - 7.0).collect()
}

/// One tensor to write: name, shape, values, and the dtype to store them in.
pub(super) struct TestTensor {
    pub name: String,
    pub shape: Vec<usize>,
    pub values: Vec<f32>,
    pub dtype: LoraDtype,
}

/// The PEFT name of a LoRA tensor of a Llama-style model.
pub(super) fn peft_name(layer: u32, hf_module: &str, side: char) -> String {
    let group =
        if hf_module.ends_with("_proj") && ["gate", "up", "down", "gate_up"].iter().any(|m| hf_module.starts_with(m)) {
            "mlp"
        } else {
            "self_attn"
        };
    format!("base_model.model.model.layers.{layer}.{group}.{hf_module}.lora_{side}.weight")
}

/// `lora_A` `[rank, in]` and `lora_B` `[out, rank]` of one module-layer, stored as `dtype`.
pub(super) fn lora_pair(
    layer: u32,
    hf_module: &str,
    rank: usize,
    in_dim: usize,
    out_dim: usize,
    dtype: LoraDtype,
) -> [TestTensor; 2] {
    let seed = layer as usize * 7 + hf_module.len();
    [
        TestTensor {
            name: peft_name(layer, hf_module, 'A'),
            shape: vec![rank, in_dim],
            values: matrix(rank, in_dim, seed),
            dtype,
        },
        TestTensor {
            name: peft_name(layer, hf_module, 'B'),
            shape: vec![out_dim, rank],
            values: matrix(out_dim, rank, seed + 1),
            dtype,
        },
    ]
}

/// Writes `adapter_config.json` (with `extra` merged in) and `adapter_model.safetensors`.
pub(super) fn write_adapter(dir: &Path, rank: u32, alpha: f64, extra: serde_json::Value, tensors: &[TestTensor]) {
    let mut config = json!({
        "peft_type": "LORA",
        "r": rank,
        "lora_alpha": alpha,
        "target_modules": ["q_proj", "v_proj"],
        "task_type": "CAUSAL_LM"
    });
    if let (Some(base), Some(more)) = (config.as_object_mut(), extra.as_object()) {
        base.extend(more.clone());
    }
    std::fs::write(dir.join(super::ADAPTER_CONFIG_FILE), config.to_string()).unwrap();
    let encoded: Vec<(String, Vec<u8>, Dtype, Vec<usize>)> = tensors
        .iter()
        .map(|t| {
            let mut bytes = Vec::new();
            t.dtype.encode(&t.values, &mut bytes);
            let dtype = match t.dtype {
                LoraDtype::F16 => Dtype::F16,
                LoraDtype::Bf16 => Dtype::BF16,
                LoraDtype::F32 => Dtype::F32,
            };
            (t.name.clone(), bytes, dtype, t.shape.clone())
        })
        .collect();
    let views: Vec<(String, TensorView<'_>)> = encoded
        .iter()
        .map(|(name, bytes, dtype, shape)| (name.clone(), TensorView::new(*dtype, shape.clone(), bytes).unwrap()))
        .collect();
    let file = safetensors::serialize(views, None).unwrap();
    std::fs::write(dir.join(super::ADAPTER_WEIGHTS_FILE), file).unwrap();
}
