//! The parallel splits a plan searches by default, and the ones it refuses, by the engine's own rules
//! (`check_head_split`, `check_expert_split`) in the planner's words.

use crate::engine::description::{check_expert_split, check_head_split};
use crate::sim::ModelPreset;

/// The tensor-parallel sizes worth searching for `model` by default: 1, 2, 4 and 8 where they
/// split its attention heads as the engine requires (`check_head_split`); those that do not fit the
/// GPUs are pruned with the reason.
///
/// ```rust
/// use trtllm::bench::search::default_tensor_parallel;
/// use trtllm::sim::ModelPreset;
///
/// assert_eq!(default_tensor_parallel(ModelPreset::by_id("llama-3.1-70b")?), [1, 2, 4, 8]);
/// assert_eq!(default_tensor_parallel(ModelPreset::by_id("qwen2.5-7b")?), [1, 2, 4]); // 28 heads
/// # Ok::<(), trtllm::sim::SimError>(())
/// ```
pub fn default_tensor_parallel(model: &ModelPreset) -> Vec<usize> {
    let shape = &model.shape;
    [1, 2, 4, 8].into_iter().filter(|&tp| check_head_split(shape.num_heads, shape.num_kv_heads, tp).is_ok()).collect()
}

/// The expert-parallel sizes worth searching for `model` by default: for a Mixture-of-Experts
/// model 1, 2, 4 and 8 where they divide its experts
/// ([`SearchSpace::candidates`](super::SearchSpace::candidates) pairs each with the TPs it divides),
/// for a dense model only 1.
///
/// ```rust
/// use trtllm::bench::search::default_expert_parallel;
/// use trtllm::sim::ModelPreset;
///
/// assert_eq!(default_expert_parallel(ModelPreset::by_id("mixtral-8x7b")?), [1, 2, 4, 8]);
/// assert_eq!(default_expert_parallel(ModelPreset::by_id("llama-3.1-8b")?), [1]);
/// # Ok::<(), trtllm::sim::SimError>(())
/// ```
pub fn default_expert_parallel(model: &ModelPreset) -> Vec<usize> {
    match model.shape.moe {
        Some(moe) => [1, 2, 4, 8].into_iter().filter(|&ep| check_expert_split(moe.num_experts, ep).is_ok()).collect(),
        None => vec![1],
    }
}

/// Why `model` cannot spread its experts over `ep` ranks, or `None` when it can.
pub fn expert_parallel_refusal(model: &ModelPreset, ep: usize) -> Option<String> {
    match model.shape.moe {
        _ if ep == 0 => Some("ep must be at least 1".into()),
        None if ep > 1 => Some(format!("{} is a dense model: expert parallelism {ep} needs experts", model.id)),
        // The engine's rule, in the planner's words.
        Some(moe) if check_expert_split(moe.num_experts, ep).is_err() => {
            Some(format!("expert parallelism {ep} does not divide the {} experts", moe.num_experts))
        }
        _ => None,
    }
}
