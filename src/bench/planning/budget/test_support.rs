//! What the budget's unit tests share: a one-configuration space and a workload shape.

use crate::bench::search::{SearchSpace, WorkloadShape};

/// Llama-3.1-8B on one H100, one engine shape (max_batch_size 256, max_num_tokens 8192).
pub(super) fn space() -> SearchSpace {
    SearchSpace::llama_8b("h100-sxm")
}

/// 2,000-token prompts, 200 tokens out.
pub(super) const SHAPE: WorkloadShape =
    WorkloadShape { min_input_len: 2000, max_input_len: 2000, max_output_len: 200, shared_prefixes: false };
