//! The sim-only cxx bridge through which the C++ simulator asks the Rust timing and memory model
//! (src/sim/perf_model.rs) for each iteration's time and the engine's memory; the real TensorRT-LLM
//! build never compiles it.
//!
//! The per-iteration call takes and returns plain structs (no allocation, no JSON). Every function
//! catches panics, so no Rust unwind crosses into C++.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use super::error::SimError;
use super::perf_model::{BatchWork, PerfModel};

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

    extern "Rust" {
        type SimTiming;

        fn load_timing(engine_dir: &str) -> Result<Box<SimTiming>>;
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
    }
}

/// The engine's timing model, owned by the C++ simulator.
pub struct SimTiming(PerfModel);

fn guarded<T>(f: impl FnOnce() -> Result<T, SimError>) -> Result<T, SimError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| Err(SimError::Invalid("the timing model panicked".into())))
}

fn load_timing(engine_dir: &str) -> Result<Box<SimTiming>, SimError> {
    guarded(|| Ok(Box::new(SimTiming(PerfModel::from_engine_dir(Path::new(engine_dir))?))))
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
    let time = timing.0.iteration(&work);
    ffi::SimIterationTime { total_ms: time.total_ms, drafter_ms: time.drafter_ms }
}

fn weight_bytes_per_gpu(timing: &SimTiming) -> f64 {
    timing.0.weight_bytes_per_gpu()
}

fn kv_bytes_per_token_per_gpu(timing: &SimTiming) -> f64 {
    timing.0.kv_bytes_per_token_per_gpu()
}

fn gpu_memory_bytes(timing: &SimTiming) -> f64 {
    timing.0.gpu().memory_bytes()
}

fn runtime_reserve_bytes(timing: &SimTiming, max_num_tokens: i32, max_batch_size: i32, max_beam_width: i32) -> f64 {
    let size = |v: i32| usize::try_from(v).unwrap_or(0);
    timing.0.runtime_reserve_bytes(size(max_num_tokens), size(max_batch_size), size(max_beam_width))
}

fn kv_capacity_tokens(timing: &SimTiming, free_fraction: f64, reserve_bytes: f64) -> Result<i64, SimError> {
    guarded(|| {
        let tokens = timing.0.kv_capacity_tokens(free_fraction, reserve_bytes)?;
        Ok(i64::try_from(tokens).unwrap_or(i64::MAX))
    })
}
