//! A PEFT adapter written by the test loads into exactly the rows TensorRT-LLM's layout defines.

use serde_json::json;

use super::{engine, lora_pair, matrix, write_adapter};
use crate::lora::{LoraDtype, LoraModule, load_peft_adapter};

/// The row TensorRT-LLM expects for one module-layer, computed from the test's own matrices:
/// `A` as written, then `B` times `scale`, padded to `row_len`.
fn expected_row(
    layer: u32,
    hf_module: &str,
    rank: usize,
    in_dim: usize,
    out_dim: usize,
    scale: f32,
    row_len: usize,
) -> Vec<f32> {
    let seed = layer as usize * 7 + hf_module.len();
    let mut row = matrix(rank, in_dim, seed);
    row.extend(matrix(out_dim, rank, seed + 1).iter().map(|v| v * scale));
    row.resize(row_len, 0.0);
    row
}

#[test]
fn rows_hold_a_then_scaled_b_in_layer_then_module_order() {
    let dir = tempfile::tempdir().unwrap();
    // Stored in three different dtypes: all values are exact in each, so the f32 engine sees them
    // unchanged.
    let tensors: Vec<_> = [
        lora_pair(1, "q_proj", 2, 8, 8, LoraDtype::F16),
        lora_pair(0, "v_proj", 2, 8, 4, LoraDtype::Bf16),
        lora_pair(0, "q_proj", 2, 8, 8, LoraDtype::F32),
        lora_pair(1, "down_proj", 2, 12, 8, LoraDtype::F32),
    ]
    .into_iter()
    .flatten()
    .collect();
    write_adapter(dir.path(), 2, 4.0, json!({}), &tensors);
    let settings = engine(&[LoraModule::AttnQ, LoraModule::AttnV, LoraModule::Mlp4hToH], LoraDtype::F32);

    let weights = load_peft_adapter(dir.path(), &settings).unwrap();

    // Rows: q 2·(8+8) = 32, v 2·(8+4) = 24, down 2·(12+8) = 40 values; the longest sets row_len.
    assert_eq!(weights.shape(), [4, 40]);
    assert_eq!(weights.dtype(), LoraDtype::F32);
    assert_eq!(weights.config_i32(), vec![1, 0, 2, 3, 0, 2, 1, 1, 2, 6, 1, 2]);
    let scale = 4.0 / 2.0;
    assert_eq!(weights.row_values(0), expected_row(0, "q_proj", 2, 8, 8, scale, 40));
    assert_eq!(weights.row_values(1), expected_row(0, "v_proj", 2, 8, 4, scale, 40));
    assert_eq!(weights.row_values(2), expected_row(1, "q_proj", 2, 8, 8, scale, 40));
    assert_eq!(weights.row_values(3), expected_row(1, "down_proj", 2, 12, 8, scale, 40));
}

#[test]
fn weights_are_converted_to_the_engines_dtype() {
    let dir = tempfile::tempdir().unwrap();
    write_adapter(dir.path(), 2, 2.0, json!({}), &lora_pair(0, "q_proj", 2, 8, 8, LoraDtype::F32));
    for dtype in [LoraDtype::F16, LoraDtype::Bf16] {
        let weights = load_peft_adapter(dir.path(), &engine(&[LoraModule::AttnQ], dtype)).unwrap();
        assert_eq!(weights.dtype(), dtype);
        let mut expected = Vec::new();
        dtype.encode(&expected_row(0, "q_proj", 2, 8, 8, 1.0, 32), &mut expected);
        assert_eq!(weights.data(), expected.as_slice(), "{dtype}");
    }
}

#[test]
fn rank_stabilised_adapters_scale_by_alpha_over_root_rank() {
    let dir = tempfile::tempdir().unwrap();
    write_adapter(dir.path(), 4, 4.0, json!({"use_rslora": true}), &lora_pair(0, "v_proj", 4, 8, 4, LoraDtype::F32));
    let weights = load_peft_adapter(dir.path(), &engine(&[LoraModule::AttnV], LoraDtype::F32)).unwrap();
    // 4 / sqrt(4) = 2, where plain LoRA would scale by 4 / 4 = 1.
    assert_eq!(weights.row_values(0), expected_row(0, "v_proj", 4, 8, 4, 2.0, 48));
}

#[test]
fn separate_qkv_adapters_fuse_into_an_attn_qkv_row() {
    let dir = tempfile::tempdir().unwrap();
    let tensors: Vec<_> =
        [lora_pair(0, "q_proj", 1, 8, 8, LoraDtype::F32), lora_pair(0, "v_proj", 2, 8, 4, LoraDtype::F32)]
            .into_iter()
            .flatten()
            .collect();
    // alpha = rank for each part would differ; with alpha 2, q scales by 2 and v by 1.
    write_adapter(dir.path(), 2, 2.0, json!({"rank_pattern": {"q_proj": 1}}), &tensors);
    let settings = engine(&[LoraModule::AttnQkv], LoraDtype::F32);

    let weights = load_peft_adapter(dir.path(), &settings).unwrap();

    // One row: attn_qkv, layer 0, rank 1 + 2 = 3; out = 8 (q) + 4 (k) + 4 (v) = 16.
    assert_eq!(weights.config_i32(), vec![0, 0, 3]);
    assert_eq!(weights.shape(), [1, 3 * (8 + 16)]);
    let q_seed = 6; // layer 0, "q_proj".len()
    let v_seed = 6;
    let (q_a, q_b) = (matrix(1, 8, q_seed), matrix(8, 1, q_seed + 1));
    let (v_a, v_b) = (matrix(2, 8, v_seed), matrix(4, 2, v_seed + 1));
    let mut expected: Vec<f32> = q_a.iter().chain(&v_a).copied().collect();
    let mut b = vec![0.0f32; 16 * 3];
    for out in 0..8 {
        b[out * 3] = q_b[out] * 2.0; // q rows 0..8, column 0
    }
    for out in 0..4 {
        // v rows 12..16, columns 1..3; k rows 8..12 stay zero.
        b[(12 + out) * 3 + 1] = v_b[out * 2];
        b[(12 + out) * 3 + 2] = v_b[out * 2 + 1];
    }
    expected.extend(b);
    assert_eq!(weights.row_values(0), expected);
}

#[test]
fn gate_up_adapters_swap_their_output_halves() {
    let dir = tempfile::tempdir().unwrap();
    write_adapter(dir.path(), 1, 1.0, json!({}), &lora_pair(1, "gate_up_proj", 1, 8, 24, LoraDtype::F32));
    let weights = load_peft_adapter(dir.path(), &engine(&[LoraModule::MlpGateUp], LoraDtype::F32)).unwrap();
    assert_eq!(weights.config_i32(), vec![18, 1, 1]);
    let seed = 7 + "gate_up_proj".len();
    let b = matrix(24, 1, seed + 1);
    let mut expected = matrix(1, 8, seed);
    expected.extend_from_slice(&b[12..]);
    expected.extend_from_slice(&b[..12]);
    assert_eq!(weights.row_values(0), expected);
}

#[test]
fn the_loaded_adapter_costs_what_its_rows_say() {
    let dir = tempfile::tempdir().unwrap();
    let tensors: Vec<_> =
        [lora_pair(0, "q_proj", 2, 8, 8, LoraDtype::F32), lora_pair(1, "q_proj", 4, 8, 8, LoraDtype::F32)]
            .into_iter()
            .flatten()
            .collect();
    write_adapter(dir.path(), 2, 2.0, json!({}), &tensors);
    let settings = engine(&[LoraModule::AttnQ], LoraDtype::F16);
    let weights = load_peft_adapter(dir.path(), &settings).unwrap();
    let cost = weights.cost(&settings);
    // Values: 2·16 + 4·16 = 96; FLOPs twice that; f16 bytes twice that.
    assert_eq!(cost.flops_per_token, 192);
    assert_eq!(cost.weight_bytes, 192);
}
