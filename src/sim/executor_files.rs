//! What the simulated executor reads from an engine directory: config.json's description (resolved once,
//! by `EngineDescription::from_dir`) and simulation.json's clock, capacity, seed, faults and acceptance,
//! checked, so that the C++ simulator receives them as plain data.
// The real build reads the documents (the planner's timing) but runs no simulated executor.
#![cfg_attr(trtllm_real, allow(dead_code))]

use std::path::Path;

use super::error::SimError;
use crate::engine::simulation_json::SimulationJson;
use crate::engine::{ConfigFileError, EngineDescription};

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

/// An engine directory's two documents, read once: config.json resolved, simulation.json as written.
#[derive(Debug, Clone)]
pub(crate) struct EngineFiles {
    /// config.json, resolved.
    pub description: EngineDescription,
    /// simulation.json, or its defaults when the file does not exist.
    pub simulation: SimulationJson,
}

impl EngineFiles {
    /// Reads `<dir>/config.json` and `<dir>/simulation.json`; errors name the file and the member.
    pub fn read(dir: &Path) -> Result<Self, SimError> {
        let description = EngineDescription::from_dir(dir)?;
        let simulation_path = dir.join("simulation.json");
        let simulation = crate::engine::read_json_or_default(&simulation_path)
            .map_err(|e| SimError::EngineFile { path: simulation_path.clone(), message: e.to_string() })?;
        Ok(EngineFiles { description, simulation })
    }
}

impl From<ConfigFileError> for SimError {
    fn from(e: ConfigFileError) -> Self {
        SimError::EngineFile { path: e.path().to_path_buf(), message: e.reason() }
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
    if let Some(Err(e)) = sim.moe_imbalance.map(crate::engine::simulation_json::check_moe_imbalance) {
        return fail(e);
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

    fn describe(json: serde_json::Value) -> Result<EngineDescription, SimError> {
        Ok(EngineDescription::resolve(&serde_json::from_value(json).unwrap())?)
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
        let d = describe(json).unwrap();
        let (shape, limits) = (d.shape(), d.limits());
        assert_eq!((shape.num_kv_heads, shape.head_size, shape.intermediate_size), (4, 16, 256));
        assert_eq!((limits.max_input_len, limits.max_seq_len, limits.tokens_per_block), (10, 20, 8));
        assert_eq!((limits.max_beam_width, limits.max_batch_size, limits.max_num_tokens), (1, 2048, 8192));
        assert_eq!((d.vocab_size_padded(), d.precision().activation_bytes), (100, 2.0));
        assert!(limits.paged_kv_cache && limits.paged_context_fmha && d.lora().is_none());

        let d = describe(base()).unwrap();
        assert_eq!((d.limits().max_input_len, d.limits().max_seq_len), (1024, 2048));
        let mut odd = base();
        odd["pretrained_config"]["vocab_size"] = 101.into();
        odd["pretrained_config"]["mapping"] = serde_json::json!({"tp_size": 4});
        assert_eq!(describe(odd).unwrap().vocab_size_padded(), 104);
    }

    #[test]
    fn bad_limits_name_the_member() {
        let error = |edit: &dyn Fn(&mut serde_json::Value)| {
            let mut json = base();
            edit(&mut json);
            describe(json).unwrap_err().to_string()
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
            json["pretrained_config"]["hidden_size"] = 768.into();
            json["pretrained_config"]["num_attention_heads"] = heads.into();
            json["pretrained_config"]["num_key_value_heads"] = kv.into();
            json["pretrained_config"]["mapping"] = serde_json::json!({"tp_size": tp});
            describe(json)
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
            describe(json).unwrap().lora().cloned()
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
        assert!(e.contains(&missing.display().to_string()) && e.contains("cannot read the directory"), "{e}");
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
