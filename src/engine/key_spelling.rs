//! Misspelled config.json members: a key nobody reads that is one or two edits from one that is read
//! would silently take that member's default (a misspelled `num_key_value_heads` triples the KV
//! cache), so it is refused with the known spelling.

use serde_json::Value;

use super::description::DescriptionError;

/// Members of a Hugging Face config.json: those the conversion reads, and common ones it ignores.
const CHECKPOINT_KEYS: &[&str] = &[
    "architectures",
    "model_type",
    "torch_dtype",
    "dtype",
    "_name_or_path",
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "hidden_act",
    "max_position_embeddings",
    "tie_word_embeddings",
    "attention_bias",
    "sliding_window",
    "use_sliding_window",
    "num_local_experts",
    "num_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "mlp_only_layers",
    "decoder_sparse_step",
    "quantization_config",
    "rope_theta",
    "rope_scaling",
    "rms_norm_eps",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "max_window_layers",
    "attention_dropout",
    "initializer_range",
    "transformers_version",
    "use_cache",
    "mlp_bias",
    "norm_topk_prob",
    "output_router_logits",
    "router_aux_loss_coef",
    "router_jitter_noise",
];

/// Members of a TensorRT-LLM engine's `pretrained_config`: those resolved, and common ones that are not.
const PRETRAINED_KEYS: &[&str] = &[
    "architecture",
    "dtype",
    "logits_dtype",
    "model_name",
    "_name_or_path",
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_size",
    "intermediate_size",
    "hidden_act",
    "position_embedding_type",
    "max_position_embeddings",
    "tie_word_embeddings",
    "use_parallel_embedding",
    "mapping",
    "quantization",
    "num_medusa_heads",
    "attn_bias",
    "qk_layernorm",
    "sliding_window",
    "moe",
    "moe_intermediate_size",
    "moe_shared_expert_intermediate_size",
    "mlp_only_layers",
    "decoder_sparse_step",
    "norm_epsilon",
    "rotary_base",
    "rotary_scaling",
    "rotary_pct",
    "rotary_embedding_dim",
    "embedding_sharding_dim",
    "share_embedding_table",
    "runtime_defaults",
    "residual_mlp",
    "mlp_bias",
    "lm_head_bias",
];

/// Members of a TensorRT-LLM engine's `build_config`.
const BUILD_KEYS: &[&str] = &[
    "max_input_len",
    "max_seq_len",
    "max_batch_size",
    "max_beam_width",
    "max_num_tokens",
    "opt_num_tokens",
    "max_prompt_embedding_table_size",
    "kv_cache_type",
    "gather_context_logits",
    "gather_generation_logits",
    "plugin_config",
    "lora_config",
    "speculative_decoding_mode",
    "max_draft_len",
];

/// The longest edit that still reads as a misspelling, and the shortest key checked (short keys are
/// a few edits from many others).
const MAX_EDITS: usize = 2;
const MIN_CHECKED_LEN: usize = 6;

/// Checks a Hugging Face config.json's top-level members.
pub(super) fn check_checkpoint(value: &Value) -> Result<(), DescriptionError> {
    check(value, "", CHECKPOINT_KEYS)
}

/// Checks a TensorRT-LLM engine config.json's `pretrained_config` and `build_config` members.
pub(super) fn check_engine(value: &Value) -> Result<(), DescriptionError> {
    check(&value["pretrained_config"], "pretrained_config.", PRETRAINED_KEYS)?;
    check(&value["build_config"], "build_config.", BUILD_KEYS)
}

fn check(value: &Value, prefix: &str, known: &[&str]) -> Result<(), DescriptionError> {
    let Some(object) = value.as_object() else { return Ok(()) };
    for key in object.keys().filter(|k| k.len() >= MIN_CHECKED_LEN && !known.contains(&k.as_str())) {
        let nearest = known
            .iter()
            .map(|k| (strsim::damerau_levenshtein(key, k), *k))
            .filter(|(edits, _)| *edits <= MAX_EDITS)
            .min();
        if let Some((_, meant)) = nearest {
            return Err(DescriptionError(format!(
                "unknown member \"{prefix}{key}\" (did you mean \"{meant}\"?): a misspelled member would silently take its default"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_are_refused_and_unrelated_members_pass() {
        let hf = serde_json::json!({"num_key_vlaue_heads": 8, "hiden_size": 4096, "my_custom_setting": 1});
        let err = check_checkpoint(&hf).unwrap_err().0;
        assert!(err.contains("did you mean"), "{err}");
        let fine = serde_json::json!({"num_key_value_heads": 8, "rope_scaling": null, "my_custom_setting": 1});
        assert!(check_checkpoint(&fine).is_ok());
        let engine = serde_json::json!({"pretrained_config": {"num_atention_heads": 8}, "build_config": {}});
        let err = check_engine(&engine).unwrap_err().0;
        assert!(
            err.contains("\"pretrained_config.num_atention_heads\" (did you mean \"num_attention_heads\"?)"),
            "{err}"
        );
        let engine = serde_json::json!({"pretrained_config": {}, "build_config": {"max_batch_szie": 8}});
        assert!(check_engine(&engine).unwrap_err().0.contains("max_batch_size"));
    }
}
