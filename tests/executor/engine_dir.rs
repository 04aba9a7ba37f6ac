//! Loading engine directories: missing or malformed configs, version checks, limits.

use crate::common;

use common::sim::{config, engine_dir};
use trtllm::{EngineConfig, Error, Executor};

#[test]
fn a_missing_engine_dir_is_reported_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    match Executor::load(&missing, config().build().unwrap()) {
        Err(Error::EngineDir { path, .. }) => assert_eq!(path, missing),
        other => panic!("expected EngineDir, got {other:?}"),
    }
}

#[test]
fn a_malformed_config_names_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config.json"), "{ not json").unwrap();
    let err = EngineConfig::from_dir(dir.path()).unwrap_err();
    assert!(matches!(err, Error::EngineConfig { .. }));
    assert!(err.to_string().contains("not valid JSON"), "{err}");

    std::fs::write(dir.path().join("config.json"), r#"{"version": "1.2.0", "pretrained_config": {}}"#).unwrap();
    let err = EngineConfig::from_dir(dir.path()).unwrap_err().to_string();
    assert!(err.contains("pretrained_config.num_attention_heads is missing"), "{err}");
}

#[test]
fn engine_limits_are_read_before_enqueue() {
    let dir = engine_dir(|b| b.max_input_len(100).max_seq_len(300).max_batch_size(7));
    let engine = EngineConfig::from_dir(dir.path()).unwrap();
    assert_eq!((engine.max_input_len(), engine.max_seq_len(), engine.max_batch_size()), (100, 300, 7));
    assert_eq!(engine.vocab_size(), 1000);
    assert_eq!(engine.model_name(), "test-model");
}

#[test]
fn a_version_mismatch_is_refused_unless_overridden() {
    let dir = engine_dir(|b| b.version("1.1.0"));
    match Executor::load(dir.path(), config().build().unwrap()) {
        Err(Error::UnsupportedVersion(message)) => {
            assert!(message.contains("1.1.0") && message.contains("allow_version_mismatch"), "{message}")
        }
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    }
    let executor = Executor::load(dir.path(), config().allow_version_mismatch(true).build().unwrap()).unwrap();
    assert!(executor.is_healthy());
}

#[test]
fn config_over_engine_limits_is_refused() {
    let dir = engine_dir(|b| b.max_batch_size(8));
    let err = Executor::load(dir.path(), config().max_batch_size(9).build().unwrap()).unwrap_err();
    assert!(matches!(err, Error::InvalidConfig(_)));
    assert!(err.to_string().contains("max_batch_size 9 exceeds the engine's build limit of 8"), "{err}");
}

#[test]
fn the_backend_is_reported() {
    let backend = trtllm::Backend::current();
    assert!(backend.kind == "simulated" || backend.kind == "tensorrt-llm");
    assert!(trtllm::SUPPORTED_LINES.iter().any(|line| backend.version.starts_with(line)));
}
