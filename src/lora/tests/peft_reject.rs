//! Adapters an engine cannot take are refused by the loader with an error naming the culprit.

use serde_json::json;

use super::{TestTensor, engine, lora_pair, write_adapter};
use crate::lora::{LoraDtype, LoraError, LoraModule, load_peft_adapter};

fn load(tensors: &[TestTensor], extra: serde_json::Value, modules: &[LoraModule]) -> LoraError {
    let dir = tempfile::tempdir().unwrap();
    write_adapter(dir.path(), 2, 2.0, extra, tensors);
    load_peft_adapter(dir.path(), &engine(modules, LoraDtype::F16)).unwrap_err()
}

#[test]
fn a_rank_above_max_lora_rank_is_refused_naming_module_and_layer() {
    let err = load(&lora_pair(1, "q_proj", 6, 8, 8, LoraDtype::F32), json!({}), &[LoraModule::AttnQ]);
    assert!(
        matches!(err, LoraError::InvalidRank { module: LoraModule::AttnQ, layer: 1, rank: 6, max_rank: 4 }),
        "{err}"
    );
    assert!(err.to_string().contains("attn_q layer 1 has rank 6"), "{err}");
}

#[test]
fn a_module_the_engine_does_not_adapt_is_refused() {
    let err =
        load(&lora_pair(0, "k_proj", 2, 8, 4, LoraDtype::F32), json!({}), &[LoraModule::AttnQ, LoraModule::AttnV]);
    assert!(matches!(err, LoraError::ModuleNotEnabled { module: LoraModule::AttnK, layer: 0, .. }), "{err}");
    assert!(err.to_string().contains("attn_q, attn_v"), "{err}");
}

#[test]
fn a_module_with_no_tensorrt_llm_counterpart_is_refused() {
    let err = load(&lora_pair(0, "fc_in", 2, 8, 8, LoraDtype::F32), json!({}), &[LoraModule::AttnQ]);
    assert!(matches!(&err, LoraError::UnsupportedTensor { name, .. } if name.contains("fc_in")), "{err}");
}

#[test]
fn a_layer_beyond_the_engine_is_refused() {
    let err = load(&lora_pair(5, "q_proj", 2, 8, 8, LoraDtype::F32), json!({}), &[LoraModule::AttnQ]);
    assert!(matches!(err, LoraError::LayerOutOfRange { module: LoraModule::AttnQ, layer: 5, num_layers: 2 }), "{err}");
}

#[test]
fn shapes_that_do_not_match_the_engine_are_refused() {
    // lora_A's input width 7 is not the hidden size 8.
    let err = load(&lora_pair(0, "q_proj", 2, 7, 8, LoraDtype::F32), json!({}), &[LoraModule::AttnQ]);
    assert!(
        matches!(&err, LoraError::ShapeMismatch { module: LoraModule::AttnQ, layer: 0, tensor: "lora_A", expected, found, .. }
            if expected == &[2, 8] && found == &[2, 7]),
        "{err}"
    );
    // lora_B's rank 3 does not match lora_A's rank 2.
    let [a, mut b] = lora_pair(1, "v_proj", 2, 8, 4, LoraDtype::F32);
    b.shape = vec![4, 3];
    b.values = vec![0.5; 12];
    let err = load(&[a, b], json!({}), &[LoraModule::AttnV]);
    assert!(
        matches!(&err, LoraError::ShapeMismatch { module: LoraModule::AttnV, layer: 1, tensor: "lora_B", expected, .. }
            if expected == &[4, 2]),
        "{err}"
    );
}

#[test]
fn a_half_pair_is_refused() {
    let [a, _] = lora_pair(0, "q_proj", 2, 8, 8, LoraDtype::F32);
    let err = load(&[a], json!({}), &[LoraModule::AttnQ]);
    assert!(
        matches!(&err, LoraError::MissingTensor { hf_module, layer: 0, missing: "lora_B" } if hf_module == "q_proj"),
        "{err}"
    );
}

#[test]
fn dora_alpha_patterns_and_extra_tensors_are_refused() {
    let pair = lora_pair(0, "q_proj", 2, 8, 8, LoraDtype::F32);
    let err = load(&pair, json!({"use_dora": true}), &[LoraModule::AttnQ]);
    assert!(matches!(&err, LoraError::AdapterConfig { reason, .. } if reason.contains("DoRA")), "{err}");
    let err = load(&pair, json!({"alpha_pattern": {"q_proj": 16}}), &[LoraModule::AttnQ]);
    assert!(matches!(&err, LoraError::AdapterConfig { reason, .. } if reason.contains("alpha_pattern")), "{err}");
    let err = load(&pair, json!({"peft_type": "IA3"}), &[LoraModule::AttnQ]);
    assert!(matches!(&err, LoraError::AdapterConfig { reason, .. } if reason.contains("IA3")), "{err}");

    let [a, b] = lora_pair(0, "q_proj", 2, 8, 8, LoraDtype::F32);
    let head = TestTensor {
        name: "base_model.model.lm_head.weight".into(),
        shape: vec![4, 8],
        values: vec![0.0; 32],
        dtype: LoraDtype::F32,
    };
    let err = load(&[a, b, head], json!({}), &[LoraModule::AttnQ]);
    assert!(matches!(&err, LoraError::UnsupportedTensor { name, .. } if name.ends_with("lm_head.weight")), "{err}");
}

#[test]
fn missing_or_corrupt_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let settings = engine(&[LoraModule::AttnQ], LoraDtype::F16);
    let err = load_peft_adapter(dir.path(), &settings).unwrap_err();
    assert!(matches!(&err, LoraError::Io { path, .. } if path.ends_with("adapter_config.json")), "{err}");
    write_adapter(dir.path(), 2, 2.0, json!({}), &lora_pair(0, "q_proj", 2, 8, 8, LoraDtype::F32));
    std::fs::write(dir.path().join("adapter_model.safetensors"), b"not a safetensors file").unwrap();
    let err = load_peft_adapter(dir.path(), &settings).unwrap_err();
    assert!(
        matches!(&err, LoraError::Safetensors { path, .. } if path.ends_with("adapter_model.safetensors")),
        "{err}"
    );
}
