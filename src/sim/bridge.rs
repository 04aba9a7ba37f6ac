//! The sim-only cxx bridge through which the C++ simulator loads an engine directory (config.json and
//! simulation.json, read and checked here: src/sim/executor_files.rs) and asks the Rust timing and memory
//! model (src/sim/perf_model.rs) for each iteration's time and the engine's memory; the real TensorRT-LLM
//! build never compiles it.
//!
//! The engine is described once, at construction, as plain structs; the per-iteration call takes and
//! returns plain structs too (no allocation, no JSON). Every function catches panics, so no Rust unwind
//! crosses into C++.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::error::SimError;
use super::executor_files::check_simulation;
use super::perf_model::{BatchWork, PerfModel};
use super::telemetry::SimTelemetry;
use crate::engine::simulation_json::{ClockMode, SimulationJson};
use crate::engine::speculative::SpeculativeDecodingMode;
use crate::lora::EngineLoraSettings;

#[cxx::bridge(namespace = "trtllm::sim::timing")]
#[allow(missing_docs)]
mod ffi {
    /// One iteration's work, as the C++ scheduler planned it (see `BatchWork`).
    #[derive(Default)]
    struct SimBatchWork {
        tokens: f64,
        context_tokens: f64,
        sampled_rows: f64,
        context_pairs: f64,
        attention_pairs: f64,
        kv_tokens_read: f64,
        kv_tokens_written: f64,
        lora_flops: f64,
        lora_weight_bytes: f64,
        lora_copy_bytes: f64,
        drafter_requests: f64,
    }

    /// The iteration's simulated time and the drafter's share of it, milliseconds.
    struct SimIterationTime {
        total_ms: f64,
        drafter_ms: f64,
    }

    /// config.json's `build_config.speculative_decoding_mode`.
    enum SimSpecMode {
        None,
        DraftTokensExternal,
        Medusa,
        Lookahead,
        ExplicitDraftTokens,
        Eagle,
    }

    /// simulation.json's `faults.throw_in`: the executor method that throws (`None` for none),
    /// mapped by name on both sides.
    enum SimFaultMethod {
        None,
        Constructor,
        EnqueueRequest,
        AwaitResponses,
        CancelRequest,
        GetLatestIterationStats,
        GetLatestRequestStats,
        Shutdown,
    }

    /// config.json as the simulated executor enforces it: the engine's description, defaults applied.
    struct SimEngineLimits {
        vocab_size_padded: i32,
        hidden_size: i32,
        num_layers: i32,
        num_heads: i32,
        num_kv_heads: i32,
        head_size: i32,
        intermediate_size: i32,
        dtype_bytes: i32,
        max_input_len: i32,
        max_seq_len: i32,
        max_batch_size: i32,
        max_beam_width: i32,
        max_num_tokens: i32,
        gather_context_logits: bool,
        tokens_per_block: i32,
        attention_window: i32,
        paged_kv_cache: bool,
        paged_context_fmha: bool,
        speculative_mode: SimSpecMode,
        max_draft_len: i32,
        num_medusa_heads: i32,
        lora_enabled: bool,
        max_lora_rank: i32,
    }

    /// simulation.json's executor settings, checked; each `has_x` says whether the optional `x` is set.
    struct SimSettings {
        has_iteration_ms: bool,
        iteration_ms: f64,
        time_scale: f64,
        virtual_clock: bool,
        has_kv_cache_max_tokens: bool,
        kv_cache_max_tokens: i64,
        seed: u64,
        throw_in: SimFaultMethod,
        throw_after_calls: u64,
        throw_non_std: bool,
        has_fail_prompt_token: bool,
        fail_prompt_token: i32,
        has_fail_all_from_iteration: bool,
        fail_all_from_iteration: u64,
        has_stall_iteration: bool,
        stall_iteration: u64,
        stall_ms: f64,
        draft_acceptance: Vec<f64>,
        context_tokens: bool,
        has_draft_agreement: bool,
        draft_agreement: f64,
    }

    /// One LoRA module the engine adapts: TensorRT-LLM's module id and the adapter's widths
    /// (`LoraModule::dims`, as `createLoraModules` computes them).
    struct SimLoraModule {
        id: i32,
        in_dim: i32,
        out_dim: i32,
    }

    /// The engine's LoRA modules and the width one adapter-cache slot holds (`EngineLoraSettings`).
    struct SimLoraWidths {
        modules: Vec<SimLoraModule>,
        slot_width: i32,
    }

    extern "Rust" {
        type SimTiming;

        fn load_timing(engine_dir: &str, cuda_graphs: bool) -> Result<Box<SimTiming>>;
        fn engine_limits(timing: &SimTiming) -> SimEngineLimits;
        fn sim_settings(timing: &SimTiming) -> SimSettings;
        fn lora_widths(timing: &SimTiming) -> SimLoraWidths;
        fn iteration_time(timing: &SimTiming, work: &SimBatchWork) -> SimIterationTime;
        fn weight_bytes_per_gpu(timing: &SimTiming) -> f64;
        fn kv_bytes_per_token_per_gpu(timing: &SimTiming) -> f64;
        fn gpu_memory_bytes(timing: &SimTiming) -> f64;
        fn runtime_reserve_bytes(
            timing: &SimTiming,
            max_num_tokens: i32,
            max_batch_size: i32,
            max_beam_width: i32,
        ) -> f64;
        fn kv_capacity_tokens(timing: &SimTiming, free_fraction: f64, reserve_bytes: f64) -> Result<i64>;
        /// The key under which the executor's GPU telemetry is found (never 0).
        fn telemetry_key(timing: &SimTiming) -> u64;
    }
}

/// The engine as the C++ simulator holds it: its timing model (which holds the engine's description)
/// and its checked simulation.json.
pub struct SimTiming {
    model: PerfModel,
    simulation: SimulationJson,
    /// The executor's GPU telemetry, and the key that finds it (`SimTelemetry::of`).
    telemetry: SimTelemetry,
    telemetry_key: u64,
    /// The LoRA modules' widths; `None` for an engine without LoRA.
    lora: Option<EngineLoraSettings>,
}

fn guarded<T>(f: impl FnOnce() -> Result<T, SimError>) -> Result<T, SimError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(SimError::Invalid("the timing model panicked".into())))
}

/// Loads the engine in `engine_dir`; `cuda_graphs` is the executor's CUDA graph mode, which turns graphs on
/// as simulation.json's `cuda_graphs` does.
fn load_timing(engine_dir: &str, cuda_graphs: bool) -> Result<Box<SimTiming>, SimError> {
    guarded(|| {
        let files = super::held_engine::open(engine_dir)?;
        let lora = files.description.lora_settings().map_err(|e| SimError::Invalid(e.to_string()))?;
        check_simulation(&files.simulation)?;
        let model = PerfModel::from_description(&files.description, &files.simulation)?;
        let model = model.with_cuda_graphs(files.simulation.cuda_graphs || cuda_graphs);
        let (telemetry, telemetry_key) = SimTelemetry::register(&model);
        Ok(Box::new(SimTiming { model, simulation: files.simulation, telemetry, telemetry_key, lora }))
    })
}

fn engine_limits(timing: &SimTiming) -> ffi::SimEngineLimits {
    let d = timing.model.spec().description();
    let (shape, limits, speculative) = (d.shape(), d.limits(), d.speculative());
    // The description's sizes were checked to fit the executor's ints when it was resolved.
    let int = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
    let lora = d.lora();
    ffi::SimEngineLimits {
        vocab_size_padded: int(d.vocab_size_padded()),
        hidden_size: int(shape.hidden_size),
        num_layers: int(shape.num_layers),
        num_heads: int(shape.num_heads),
        num_kv_heads: int(shape.num_kv_heads),
        head_size: int(shape.head_size),
        intermediate_size: int(shape.intermediate_size),
        dtype_bytes: d.precision().activation_bytes as i32,
        max_input_len: int(limits.max_input_len),
        max_seq_len: int(limits.max_seq_len),
        max_batch_size: int(limits.max_batch_size),
        max_beam_width: int(limits.max_beam_width),
        max_num_tokens: int(limits.max_num_tokens),
        gather_context_logits: limits.gather_context_logits,
        tokens_per_block: int(limits.tokens_per_block),
        attention_window: int(d.attention_window()),
        paged_kv_cache: limits.paged_kv_cache,
        paged_context_fmha: limits.paged_context_fmha,
        speculative_mode: match speculative.mode {
            SpeculativeDecodingMode::None => ffi::SimSpecMode::None,
            SpeculativeDecodingMode::DraftTokensExternal => ffi::SimSpecMode::DraftTokensExternal,
            SpeculativeDecodingMode::Medusa => ffi::SimSpecMode::Medusa,
            SpeculativeDecodingMode::LookaheadDecoding => ffi::SimSpecMode::Lookahead,
            SpeculativeDecodingMode::ExplicitDraftTokens => ffi::SimSpecMode::ExplicitDraftTokens,
            SpeculativeDecodingMode::Eagle => ffi::SimSpecMode::Eagle,
        },
        max_draft_len: int(speculative.max_draft_len),
        num_medusa_heads: int(speculative.num_medusa_heads),
        lora_enabled: lora.is_some(),
        max_lora_rank: lora.map_or(0, |l| i32::try_from(l.max_rank).unwrap_or(i32::MAX)),
    }
}

fn lora_widths(timing: &SimTiming) -> ffi::SimLoraWidths {
    let int = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
    let Some(lora) = &timing.lora else { return ffi::SimLoraWidths { modules: Vec::new(), slot_width: 0 } };
    ffi::SimLoraWidths {
        modules: lora
            .module_widths()
            .iter()
            .map(|(module, dims)| ffi::SimLoraModule {
                id: module.id(),
                in_dim: int(dims.in_dim),
                out_dim: int(dims.out_dim),
            })
            .collect(),
        slot_width: int(lora.widest_module_width()),
    }
}

/// The bridge's fault method for simulation.json's `faults.throw_in` (one of `FAULT_METHODS`,
/// which `check_simulation` enforced at load).
fn fault_method_of(name: Option<&str>) -> ffi::SimFaultMethod {
    use ffi::SimFaultMethod as M;
    match name {
        Some("constructor") => M::Constructor,
        Some("enqueueRequest") => M::EnqueueRequest,
        Some("awaitResponses") => M::AwaitResponses,
        Some("cancelRequest") => M::CancelRequest,
        Some("getLatestIterationStats") => M::GetLatestIterationStats,
        Some("getLatestRequestStats") => M::GetLatestRequestStats,
        Some("shutdown") => M::Shutdown,
        _ => M::None,
    }
}

fn sim_settings(timing: &SimTiming) -> ffi::SimSettings {
    let s = &timing.simulation;
    let f = &s.faults;
    let speculative = s.speculative.as_ref();
    // check_simulation ran at load: the fault method is known and the prompt token fits an i32.
    ffi::SimSettings {
        has_iteration_ms: s.iteration_ms.is_some(),
        iteration_ms: s.iteration_ms.unwrap_or(0.0),
        time_scale: s.time_scale,
        virtual_clock: s.clock == ClockMode::Virtual,
        has_kv_cache_max_tokens: s.kv_cache_max_tokens.is_some(),
        kv_cache_max_tokens: s.kv_cache_max_tokens.map_or(0, |t| i64::try_from(t).unwrap_or(i64::MAX)),
        seed: s.seed,
        throw_in: fault_method_of(f.throw_in.as_deref()),
        throw_after_calls: f.throw_after_calls,
        throw_non_std: f.throw_non_std,
        has_fail_prompt_token: f.fail_prompt_token.is_some(),
        fail_prompt_token: f.fail_prompt_token.and_then(|t| i32::try_from(t).ok()).unwrap_or(0),
        has_fail_all_from_iteration: f.fail_all_from_iteration.is_some(),
        fail_all_from_iteration: f.fail_all_from_iteration.unwrap_or(0),
        has_stall_iteration: f.stall_iteration.is_some(),
        stall_iteration: f.stall_iteration.unwrap_or(0),
        stall_ms: f.stall_ms,
        draft_acceptance: speculative
            .map_or_else(crate::engine::speculative::default_acceptance, |sp| sp.acceptance.clone()),
        context_tokens: speculative.is_some_and(|sp| sp.context_tokens),
        has_draft_agreement: speculative.and_then(|sp| sp.draft_agreement).is_some(),
        draft_agreement: speculative.and_then(|sp| sp.draft_agreement).unwrap_or(0.0),
    }
}

fn iteration_time(timing: &SimTiming, w: &ffi::SimBatchWork) -> ffi::SimIterationTime {
    let work = BatchWork {
        tokens: w.tokens,
        context_tokens: w.context_tokens,
        sampled_rows: w.sampled_rows,
        context_pairs: w.context_pairs,
        attention_pairs: w.attention_pairs,
        kv_tokens_read: w.kv_tokens_read,
        kv_tokens_written: w.kv_tokens_written,
        lora_flops: w.lora_flops,
        lora_weight_bytes: w.lora_weight_bytes,
        lora_copy_bytes: w.lora_copy_bytes,
        drafter_requests: w.drafter_requests,
    };
    // Arithmetic on plain numbers: nothing here can panic.
    let (time, load) = timing.model.iteration_load(&work);
    timing.telemetry.record_iteration(&work, time.total_ms, load);
    ffi::SimIterationTime { total_ms: time.total_ms, drafter_ms: time.drafter_ms }
}

fn telemetry_key(timing: &SimTiming) -> u64 {
    timing.telemetry_key
}

fn weight_bytes_per_gpu(timing: &SimTiming) -> f64 {
    timing.model.weight_bytes_per_gpu()
}

fn kv_bytes_per_token_per_gpu(timing: &SimTiming) -> f64 {
    timing.model.kv_bytes_per_token_per_gpu()
}

fn gpu_memory_bytes(timing: &SimTiming) -> f64 {
    timing.model.gpu().memory_bytes()
}

fn runtime_reserve_bytes(timing: &SimTiming, max_num_tokens: i32, max_batch_size: i32, max_beam_width: i32) -> f64 {
    let size = |v: i32| usize::try_from(v).unwrap_or(0);
    timing.model.runtime_reserve_bytes(size(max_num_tokens), size(max_batch_size), size(max_beam_width))
}

fn kv_capacity_tokens(timing: &SimTiming, free_fraction: f64, reserve_bytes: f64) -> Result<i64, SimError> {
    guarded(|| {
        let tokens = timing.model.kv_capacity_tokens(free_fraction, reserve_bytes)?;
        Ok(i64::try_from(tokens).unwrap_or(i64::MAX))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::executor_files::FAULT_METHODS;

    #[test]
    fn every_fault_method_name_crosses_as_its_own_variant() {
        let crossed: Vec<ffi::SimFaultMethod> = FAULT_METHODS.iter().map(|name| fault_method_of(Some(name))).collect();
        for (i, method) in crossed.iter().enumerate() {
            assert!(*method != ffi::SimFaultMethod::None, "{} crosses as none", FAULT_METHODS[i]);
            assert!(!crossed[..i].contains(method), "{} crosses as an earlier method", FAULT_METHODS[i]);
        }
        assert!(fault_method_of(None) == ffi::SimFaultMethod::None);
    }
}
