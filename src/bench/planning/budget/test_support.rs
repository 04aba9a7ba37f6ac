//! What the budget's unit tests share: a one-configuration space and a workload shape.

use std::collections::BTreeMap;

use crate::bench::search::{SchedulerChoice, SearchSpace, WorkloadShape};

/// Llama-3.1-8B on one H100, one engine shape (max_batch_size 256, max_num_tokens 8192).
pub(super) fn space() -> SearchSpace {
    SearchSpace {
        model: crate::sim::ModelPreset::by_id("llama-3.1-8b").unwrap().clone(),
        gpu: "h100-sxm".into(),
        gpu_overrides: BTreeMap::new(),
        tp: vec![1],
        ep: vec![1],
        try_fp8: false,
        max_batch_size: vec![256],
        max_num_tokens: vec![8192],
        kv_fraction: vec![0.9],
        block_reuse: vec![true],
        chunked_context: vec![true],
        scheduler: vec![SchedulerChoice::GuaranteedNoEvict],
    }
}

/// 2,000-token prompts, 200 tokens out.
pub(super) const SHAPE: WorkloadShape =
    WorkloadShape { min_input_len: 2000, max_input_len: 2000, max_output_len: 200, shared_prefixes: false };
