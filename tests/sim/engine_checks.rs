//! Simulated engines the executor refuses at construction, with the simulator's message reaching Rust as an error.

use crate::common;

use common::sim::{config, engine_dir};
use trtllm::{Error, Executor};

#[test]
fn tensor_parallelism_that_does_not_split_the_attention_heads_is_refused() {
    // 32 attention heads cannot be split over 3 ranks.
    let dir = engine_dir(|b| b.num_heads(32).num_kv_heads(4).tensor_parallel(3));
    let err = Executor::load(dir.path(), config().build().unwrap()).unwrap_err();
    // The engine's description refuses it when config.json is read, before the executor starts.
    assert!(matches!(err, Error::EngineConfig { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message
            .contains("pretrained_config.mapping.tp_size (3) must divide pretrained_config.num_attention_heads (32)"),
        "{message}"
    );
}

#[test]
fn tensor_parallelism_that_does_not_split_the_kv_heads_is_refused() {
    // 4 ranks split 24 query heads, but 6 KV heads neither split over 4 ranks nor replicate evenly on them.
    let dir = engine_dir(|b| b.hidden_size(3072).num_heads(24).num_kv_heads(6).tensor_parallel(4));
    let err = Executor::load(dir.path(), config().build().unwrap()).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("tp_size (4) must divide pretrained_config.num_key_value_heads (6), or be a multiple of it"),
        "{message}"
    );
}

#[test]
fn tensor_parallelism_over_more_ranks_than_kv_heads_replicates_them() {
    // 8 ranks over 4 KV heads: each KV head lives on two ranks, as TensorRT-LLM builds such engines.
    let dir = engine_dir(|b| b.num_heads(32).num_kv_heads(4).tensor_parallel(8));
    let executor = Executor::load(dir.path(), config().build().unwrap()).expect("tp 8 over 4 KV heads loads");
    assert_eq!(executor.engine().tp_size(), 8);
}

/// The message of loading `dir` after `edit` rewrote one of its documents.
fn load_error(file: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let dir = engine_dir(|b| b);
    let path = dir.path().join(file);
    let mut json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut json);
    std::fs::write(&path, json.to_string()).unwrap();
    Executor::load(dir.path(), config().build().unwrap()).unwrap_err().to_string()
}

#[test]
fn a_bad_simulation_json_is_refused_naming_the_member() {
    let message = load_error("simulation.json", |j| j["faults"] = serde_json::json!({"throw_in": "enqueue"}));
    assert!(message.contains("faults.throw_in names an unknown method \"enqueue\" (known: constructor"), "{message}");
    let message = load_error("simulation.json", |j| j["time_scale"] = (-1.0).into());
    assert!(message.contains("time_scale must be at least 0"), "{message}");
    let message = load_error("simulation.json", |j| j["iteration_msec"] = 2.into());
    assert!(message.contains("simulation.json") && message.contains("unknown field `iteration_msec`"), "{message}");
}

#[test]
fn a_bad_config_json_is_refused_naming_the_member() {
    let message =
        load_error("config.json", |j| j["pretrained_config"]["mapping"] = serde_json::json!({"world_size": 3}));
    assert!(message.contains("world_size (3) must equal tp_size * pp_size * cp_size (1)"), "{message}");
    let message = load_error("config.json", |j| {
        j["build_config"]["speculative_decoding_mode"] = "medusa".into();
        j["build_config"]["max_draft_len"] = serde_json::Value::Null;
    });
    assert!(message.contains("max_draft_len must be positive for speculative_decoding_mode medusa"), "{message}");
}
