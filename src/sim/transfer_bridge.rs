//! The sim-only cxx bridge through which the simulated executor's cache transceiver
//! (cpp/sim/src/cache_transceiver.cpp) learns an engine's fingerprint, its KV bytes per token per rank
//! and simulation.json's link, and times each transfer with [`super::transfer::kv_transfer`]; the real
//! build never compiles it. Every function catches panics, so no Rust unwind crosses into C++.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::error::SimError;
use super::executor_files::check_simulation;
use super::perf_model::PerfModel;
use super::transfer::kv_transfer;
use crate::engine::kv_link::KvLink;
use crate::types::handoff::EngineFingerprint;

#[cxx::bridge(namespace = "trtllm::sim::transfer")]
#[allow(missing_docs)]
mod ffi {
    /// A link's figures per GPU and direction.
    struct SimKvLink {
        bandwidth_gb_s: f64,
        latency_us: f64,
        efficiency: f64,
    }

    /// One transfer's duration and the bytes each rank moves.
    struct SimKvTransfer {
        ms: f64,
        bytes_per_rank: f64,
    }

    extern "Rust" {
        type SimTransferModel;

        fn load_transfer_model(engine_dir: &str) -> Result<Box<SimTransferModel>>;
        fn transfer_fingerprint(model: &SimTransferModel) -> String;
        fn transfer_default_link(model: &SimTransferModel) -> SimKvLink;
        fn transfer_time(
            model: &SimTransferModel,
            prompt_tokens: i64,
            buffer_tokens: i64,
            link: &SimKvLink,
        ) -> SimKvTransfer;
    }
}

/// What the cache transceiver needs of an engine.
pub struct SimTransferModel {
    fingerprint: String,
    kv_bytes_per_token_per_gpu: f64,
    link: KvLink,
}

fn load_transfer_model(engine_dir: &str) -> Result<Box<SimTransferModel>, SimError> {
    catch_unwind(AssertUnwindSafe(|| {
        let files = super::held_engine::open(engine_dir)?;
        check_simulation(&files.simulation)?;
        let model = PerfModel::from_description(&files.description, &files.simulation)?;
        Ok(Box::new(SimTransferModel {
            fingerprint: EngineFingerprint::of(&files.description).to_string(),
            kv_bytes_per_token_per_gpu: model.kv_bytes_per_token_per_gpu(),
            link: files.simulation.kv_transfer.link(),
        }))
    }))
    .unwrap_or_else(|_| Err(SimError::Invalid("the transfer model panicked".into())))
}

fn transfer_fingerprint(model: &SimTransferModel) -> String {
    model.fingerprint.clone()
}

fn transfer_default_link(model: &SimTransferModel) -> ffi::SimKvLink {
    let l = &model.link;
    ffi::SimKvLink { bandwidth_gb_s: l.bandwidth_gb_s, latency_us: l.latency_us, efficiency: l.efficiency }
}

fn transfer_time(
    model: &SimTransferModel,
    prompt_tokens: i64,
    buffer_tokens: i64,
    link: &ffi::SimKvLink,
) -> ffi::SimKvTransfer {
    let link = KvLink { bandwidth_gb_s: link.bandwidth_gb_s, latency_us: link.latency_us, efficiency: link.efficiency };
    let buffer = u64::try_from(buffer_tokens).ok().filter(|&b| b > 0);
    // Arithmetic on plain numbers: nothing here can panic.
    let t = kv_transfer(u64::try_from(prompt_tokens).unwrap_or(0), model.kv_bytes_per_token_per_gpu, buffer, &link);
    ffi::SimKvTransfer { ms: t.ms, bytes_per_rank: t.bytes_per_rank }
}
