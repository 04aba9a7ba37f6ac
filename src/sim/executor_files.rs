//! What the simulated executor reads from an engine directory: config.json's build limits, speculative
//! decoding and LoRA settings, and simulation.json's clock, capacity, seed, faults and acceptance, with
//! TensorRT-LLM's defaults and every check, so that the C++ simulator receives them as plain data.
// The real build reads the documents (the planner's timing) but runs no simulated executor.
#![cfg_attr(trtllm_real, allow(dead_code))]

use std::path::Path;

use serde::de::DeserializeOwned;

use super::error::SimError;
use crate::engine::EngineDescription;
use crate::engine::config_json::ConfigJson;
pub(crate) use crate::engine::description::LoraLimits;
use crate::engine::simulation_json::SimulationJson;
use crate::engine::speculative::SpeculativeDecodingMode;

/// The executor methods simulation.json's `faults.throw_in` may name, in the order the bridge numbers them.
pub(crate) const FAULT_METHODS: [&str; 7] = [
    "constructor",
    "enqueueRequest",
    "awaitResponses",
    "cancelRequest",
    "getLatestIterationStats",
    "getLatestRequestStats",
    "shutdown",
];

/// An engine directory's two documents, read once.
#[derive(Debug, Clone)]
pub(crate) struct EngineFiles {
    /// config.json.
    pub config: ConfigJson,
    /// simulation.json, or its defaults when the file does not exist.
    pub simulation: SimulationJson,
}

impl EngineFiles {
    /// Reads `<dir>/config.json` and `<dir>/simulation.json`; errors name the file and the member.
    pub fn read(dir: &Path) -> Result<Self, SimError> {
        if !dir.is_dir() {
            return Err(file_error(dir, "the engine directory does not exist or is not a directory".into()));
        }
        let config_path = dir.join("config.json");
        if !config_path.is_file() {
            return Err(file_error(
                &config_path,
                "not found: the engine directory must hold the config.json written by trtllm-build".into(),
            ));
        }
        let config = read_document(&config_path)?;
        let simulation_path = dir.join("simulation.json");
        let simulation = crate::engine::read_json_or_default(&simulation_path)
            .map_err(|e| file_error(&simulation_path, e.to_string()))?;
        Ok(EngineFiles { config, simulation })
    }
}

fn file_error(path: &Path, message: String) -> SimError {
    SimError::EngineFile { path: path.to_path_buf(), message }
}

fn read_document<T: DeserializeOwned>(path: &Path) -> Result<T, SimError> {
    crate::engine::read_json(path).map_err(|e| file_error(path, e.to_string()))
}

/// config.json as the simulated executor enforces it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExecutorLimits {
    /// The vocabulary rounded up to a multiple of the tensor-parallel size, as the engine pads it.
    pub vocab_size_padded: i32,
    /// `hidden_size`.
    pub hidden_size: i32,
    /// `num_hidden_layers`.
    pub num_layers: i32,
    /// `num_attention_heads`.
    pub num_heads: i32,
    /// `num_key_value_heads` (defaults to the attention heads).
    pub num_kv_heads: i32,
    /// `head_size` (defaults to hidden / heads).
    pub head_size: i32,
    /// `intermediate_size` (defaults to 4 × hidden).
    pub intermediate_size: i32,
    /// Bytes per element of the weights' dtype.
    pub dtype_bytes: i32,
    /// `max_input_len` (default 1024).
    pub max_input_len: i32,
    /// `max_seq_len`.
    pub max_seq_len: i32,
    /// `max_batch_size` (default 2048).
    pub max_batch_size: i32,
    /// `max_beam_width` (default 1).
    pub max_beam_width: i32,
    /// `max_num_tokens` (default 8192).
    pub max_num_tokens: i32,
    /// `gather_context_logits`.
    pub gather_context_logits: bool,
    /// `plugin_config.tokens_per_block` (default 32).
    pub tokens_per_block: i32,
    /// The attention window a sequence's KV cache keeps: the sliding window when shorter than max_seq_len,
    /// else max_seq_len.
    pub attention_window: i32,
    /// `plugin_config.paged_kv_cache` (default true).
    pub paged_kv_cache: bool,
    /// `plugin_config.use_paged_context_fmha` (default true).
    pub paged_context_fmha: bool,
    /// `speculative_decoding_mode` (default none).
    pub speculative_mode: SpeculativeDecodingMode,
    /// `max_draft_len`: draft tokens verified per step.
    pub max_draft_len: i32,
    /// `num_medusa_heads`, 0 when absent.
    pub num_medusa_heads: i32,
    /// The engine was built with the LoRA plugin, target modules and a positive rank.
    pub lora: Option<LoraLimits>,
}

impl ExecutorLimits {
    /// The view of `description` the C++ simulator enforces.
    pub fn of(description: &EngineDescription) -> Self {
        let int = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
        let (shape, limits, spec) = (&description.shape, &description.limits, &description.speculative);
        ExecutorLimits {
            vocab_size_padded: int(description.vocab_size_padded()),
            hidden_size: int(shape.hidden_size),
            num_layers: int(shape.num_layers),
            num_heads: int(shape.num_heads),
            num_kv_heads: int(shape.num_kv_heads),
            head_size: int(shape.head_size),
            intermediate_size: int(shape.intermediate_size),
            dtype_bytes: description.precision.activation_bytes as i32,
            max_input_len: int(limits.max_input_len),
            max_seq_len: int(limits.max_seq_len),
            max_batch_size: int(limits.max_batch_size),
            max_beam_width: int(limits.max_beam_width),
            max_num_tokens: int(limits.max_num_tokens),
            gather_context_logits: limits.gather_context_logits,
            tokens_per_block: int(limits.tokens_per_block),
            attention_window: int(shape.sliding_window.map_or(limits.max_seq_len, |w| w.min(limits.max_seq_len))),
            paged_kv_cache: limits.paged_kv_cache,
            paged_context_fmha: limits.paged_context_fmha,
            speculative_mode: spec.mode,
            max_draft_len: int(spec.max_draft_len),
            num_medusa_heads: int(spec.num_medusa_heads),
            lora: description.lora.clone(),
        }
    }

    /// Resolves `config` and takes the simulator's view (tests).
    #[cfg(test)]
    fn from_config(config: &ConfigJson) -> Result<Self, SimError> {
        Ok(Self::of(&EngineDescription::resolve(config)?))
    }
}

/// Checks what serde's schema leaves open in simulation.json: value ranges and fault method names.
pub(crate) fn check_simulation(sim: &SimulationJson) -> Result<(), SimError> {
    let fail = |message: String| Err(SimError::Invalid(format!("simulation.json: {message}")));
    let non_negative = [
        ("time_scale", Some(sim.time_scale)),
        ("iteration_ms", sim.iteration_ms),
        ("faults.stall_ms", Some(sim.faults.stall_ms)),
    ];
    for (name, value) in non_negative {
        if let Some(value) = value.filter(|v| !(v.is_finite() && *v >= 0.0)) {
            return fail(format!("{name} must be at least 0, got {value}"));
        }
    }
    if let Some(factor) = sim.moe_imbalance.filter(|f| !(f.is_finite() && *f >= 1.0)) {
        return fail(format!("moe_imbalance must be at least 1, got {factor}"));
    }
    if sim.kv_cache_max_tokens == Some(0) {
        return fail("kv_cache_max_tokens must be at least 1".into());
    }
    if let Some(name) = &sim.faults.throw_in
        && fault_method(name).is_none()
    {
        return fail(format!(
            "faults.throw_in names an unknown method \"{name}\" (known: {})",
            FAULT_METHODS.join(", ")
        ));
    }
    if let Some(token) = sim.faults.fail_prompt_token
        && i32::try_from(token).is_err()
    {
        return fail(format!("faults.fail_prompt_token ({token}) is not a token id"));
    }
    if let Some(agreement) = sim.speculative.as_ref().and_then(|s| s.draft_agreement)
        && !(0.0..=1.0).contains(&agreement)
    {
        return fail(format!("speculative.draft_agreement must be a probability in [0, 1], got {agreement}"));
    }
    if let Err(e) = sim.kv_transfer.link().validate() {
        return fail(format!("kv_transfer: {e}"));
    }
    Ok(())
}

/// The position of `name` in [`FAULT_METHODS`].
pub(crate) fn fault_method(name: &str) -> Option<usize> {
    FAULT_METHODS.iter().position(|m| *m == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(json: serde_json::Value) -> ConfigJson {
        serde_json::from_value(json).unwrap()
    }

    fn base() -> serde_json::Value {
        serde_json::json!({"version": "1.2.0",
            "pretrained_config": {"vocab_size": 100, "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4},
            "build_config": {}})
    }

    #[test]
    fn defaults_follow_tensorrt_llm() {
        let mut json = base();
        json["pretrained_config"]["mapping"] = serde_json::json!({"tp_size": 2});
        json["build_config"] = serde_json::json!({"max_input_len": 10, "max_seq_len": 20,
            "plugin_config": {"tokens_per_block": 8}});
        let limits = ExecutorLimits::from_config(&config(json)).unwrap();
        assert_eq!((limits.num_kv_heads, limits.head_size, limits.intermediate_size), (4, 16, 256));
        assert_eq!((limits.max_input_len, limits.max_seq_len, limits.tokens_per_block), (10, 20, 8));
        assert_eq!((limits.max_beam_width, limits.max_batch_size, limits.max_num_tokens), (1, 2048, 8192));
        assert_eq!((limits.vocab_size_padded, limits.dtype_bytes), (100, 2));
        assert!(limits.paged_kv_cache && limits.paged_context_fmha && limits.lora.is_none());

        let limits = ExecutorLimits::from_config(&config(base())).unwrap();
        assert_eq!((limits.max_input_len, limits.max_seq_len), (1024, 2048));
        let mut odd = base();
        odd["pretrained_config"]["vocab_size"] = 101.into();
        odd["pretrained_config"]["mapping"] = serde_json::json!({"tp_size": 4});
        assert_eq!(ExecutorLimits::from_config(&config(odd)).unwrap().vocab_size_padded, 104);
    }

    #[test]
    fn bad_limits_name_the_member() {
        let error = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut json = base();
            edit(&mut json);
            ExecutorLimits::from_config(&config(json)).unwrap_err().to_string()
        };
        let e = error(&|j| j["pretrained_config"]["vocab_size"] = serde_json::Value::Null);
        assert!(e.contains("config.json: pretrained_config.vocab_size is missing"), "{e}");
        let e = error(&|j| j["build_config"]["max_batch_size"] = 0.into());
        assert!(e.contains("build_config.max_batch_size must be in [1, 2147483647], got 0"), "{e}");
        let e = error(&|j| j["build_config"]["max_num_tokens"] = (1u64 << 40).into());
        assert!(e.contains("build_config.max_num_tokens must be in [1, 2147483647]"), "{e}");
        let e = error(&|j| {
            j["build_config"]["max_input_len"] = 30.into();
            j["build_config"]["max_seq_len"] = 20.into();
        });
        assert!(e.contains("max_input_len (30) must not exceed max_seq_len (20)"), "{e}");
        let e = error(&|j| j["pretrained_config"]["mapping"] = serde_json::json!({"tp_size": 2, "world_size": 4}));
        assert!(e.contains("world_size (4) must equal tp_size * pp_size * cp_size (2)"), "{e}");
        let e = error(&|j| j["build_config"]["speculative_decoding_mode"] = "medusa".into());
        assert!(e.contains("max_draft_len must be positive for speculative_decoding_mode medusa"), "{e}");
    }

    #[test]
    fn tensor_parallelism_must_split_the_heads() {
        let with_tp = |heads: usize, kv: usize, tp: usize| {
            let mut json = base();
            json["pretrained_config"]["hidden_size"] = 512.into();
            json["pretrained_config"]["num_attention_heads"] = heads.into();
            json["pretrained_config"]["num_key_value_heads"] = kv.into();
            json["pretrained_config"]["mapping"] = serde_json::json!({"tp_size": tp});
            ExecutorLimits::from_config(&config(json))
        };
        for tp in [1, 2, 4, 8, 16, 32] {
            assert!(with_tp(32, 4, tp).is_ok(), "tp {tp}");
        }
        let e = with_tp(32, 4, 3).unwrap_err().to_string();
        assert!(e.contains("tp_size (3) must divide pretrained_config.num_attention_heads (32)"), "{e}");
        let e = with_tp(24, 6, 4).unwrap_err().to_string();
        assert!(
            e.contains("tp_size (4) must divide pretrained_config.num_key_value_heads (6), or be a multiple"),
            "{e}"
        );
    }

    #[test]
    fn lora_needs_the_plugin_modules_and_a_rank() {
        let with = |plugin: serde_json::Value, modules: serde_json::Value, rank: u64| {
            let mut json = base();
            json["build_config"] = serde_json::json!({"plugin_config": {"lora_plugin": plugin},
                "lora_config": {"lora_target_modules": modules, "max_lora_rank": rank}});
            ExecutorLimits::from_config(&config(json)).unwrap().lora
        };
        let on = with("auto".into(), serde_json::json!(["attn_q", "attn_v"]), 8).unwrap();
        assert_eq!((on.target_modules.len(), on.max_rank), (2, 8));
        assert!(with(false.into(), serde_json::json!(["attn_q"]), 8).is_none());
        assert!(with("auto".into(), serde_json::json!([]), 8).is_none());
        assert!(with("auto".into(), serde_json::json!(["attn_q"]), 0).is_none());
    }

    #[test]
    fn simulation_values_are_checked() {
        let check = |json: &str| check_simulation(&serde_json::from_str(json).unwrap()).map_err(|e| e.to_string());
        assert!(check("{}").is_ok());
        assert!(check(r#"{"faults": {"throw_in": "cancelRequest", "stall_ms": 300}, "time_scale": 0}"#).is_ok());
        let e = check(r#"{"faults": {"throw_in": "enqueue"}}"#).unwrap_err();
        assert!(
            e.contains("simulation.json: faults.throw_in names an unknown method \"enqueue\" (known: constructor"),
            "{e}"
        );
        let e = check(r#"{"time_scale": -1}"#).unwrap_err();
        assert!(e.contains("simulation.json: time_scale must be at least 0"), "{e}");
        let e = check(r#"{"moe_imbalance": 0.5}"#).unwrap_err();
        assert!(e.contains("moe_imbalance must be at least 1, got 0.5"), "{e}");
        let e = check(r#"{"kv_cache_max_tokens": 0}"#).unwrap_err();
        assert!(e.contains("kv_cache_max_tokens must be at least 1"), "{e}");
        let e = check(r#"{"speculative": {"draft_agreement": 1.5}}"#).unwrap_err();
        assert!(e.contains("draft_agreement must be a probability"), "{e}");
        assert_eq!(fault_method("shutdown"), Some(6));
    }

    #[test]
    fn reading_names_the_file_and_member() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        let e = EngineFiles::read(&missing).unwrap_err().to_string();
        assert!(e.contains(&missing.display().to_string()) && e.contains("does not exist"), "{e}");
        let e = EngineFiles::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("config.json") && e.contains("not found"), "{e}");
        std::fs::write(dir.path().join("config.json"), "{\"version\": 1.2.0}").unwrap();
        let e = EngineFiles::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("config.json: not valid JSON") && e.contains("line 1 column"), "{e}");
        // Hostile nesting is refused by the parser's depth limit, not by exhausting the stack.
        std::fs::write(dir.path().join("config.json"), "[".repeat(100_000) + &"]".repeat(100_000)).unwrap();
        let e = EngineFiles::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("recursion limit exceeded"), "{e}");
        std::fs::write(dir.path().join("config.json"), base().to_string()).unwrap();
        std::fs::write(dir.path().join("simulation.json"), r#"{"iteration_msec": 2}"#).unwrap();
        let e = EngineFiles::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("simulation.json") && e.contains("unknown field `iteration_msec`"), "{e}");
        std::fs::write(dir.path().join("simulation.json"), r#"{"clock": "sundial"}"#).unwrap();
        let e = EngineFiles::read(dir.path()).unwrap_err().to_string();
        assert!(e.contains("simulation.json: clock: unknown variant `sundial`"), "{e}");
    }
}
