//! [`TimingSpec`]: the view of an engine's description the timing model prices (shape, precisions,
//! parallelism, the drafter, the build limits its buffers are sized for).

use serde::Serialize;

use super::kernels::WeightFormat;
use super::model::{KvCacheDtype, ModelShape, WeightDtype};
use crate::engine::description::BuildLimits;

/// What an engine is, as far as timing and memory go: the view of its description the model needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingSpec {
    /// The model's shape.
    pub shape: ModelShape,
    /// How the linear layers' weights are stored and multiplied.
    pub weights: WeightFormat,
    /// Bytes per KV-cache element.
    pub kv_bytes_per_element: f64,
    /// The KV cache is FP8 (needs FP8 support; INT8 does not).
    pub kv_cache_fp8: bool,
    /// Bytes per activation element (the engine's dtype).
    pub activation_bytes: f64,
    /// Tensor-parallel ranks.
    pub tp: usize,
    /// Pipeline-parallel stages.
    pub pp: usize,
    /// Tensor parallelism inside each expert (MoE; moe_tp x moe_ep = tp).
    pub moe_tp: usize,
    /// Expert parallelism (MoE).
    pub moe_ep: usize,
    /// Routed rows of the busiest expert-parallel rank over the mean (simulation.json `moe_imbalance`).
    pub moe_imbalance: f64,
    /// The embedding table is split across tensor-parallel ranks.
    pub parallel_embedding: bool,
    /// Kernels launch from CUDA graphs (otherwise one host enqueue each).
    pub cuda_graphs: bool,
    /// Speculative drafter: parameters per GPU of one pass, bytes they read, and sequential passes per step.
    pub drafter: Drafter,
    /// The build limits the runtime sizes its buffers for.
    pub limits: BuildLimits,
}

/// The speculative drafter's work per step (zero for modes whose drafts cost only verified rows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Drafter {
    /// Parameters of one pass per GPU.
    pub params_per_gpu: f64,
    /// Bytes those parameters occupy.
    pub bytes_per_gpu: f64,
    /// Sequential passes per step.
    pub passes: f64,
}

impl TimingSpec {
    /// A 16-bit-activation engine of `shape` in `weights`/`kv_cache` precision over `tp` GPUs (trtllm-build's
    /// default limits, all-tensor-parallel experts).
    pub fn new(shape: &ModelShape, weights: WeightDtype, kv_cache: KvCacheDtype, tp: usize) -> Self {
        let weights = match weights {
            WeightDtype::Bf16 | WeightDtype::Fp16 => WeightFormat { bytes_per_param: 2.0, fp8_math: false },
            WeightDtype::Fp8 => WeightFormat { bytes_per_param: 1.0, fp8_math: true },
        };
        let kv_bytes_per_element = match kv_cache {
            KvCacheDtype::Auto => 2.0,
            KvCacheDtype::Fp8 | KvCacheDtype::Int8 => 1.0,
        };
        TimingSpec {
            shape: *shape,
            weights,
            kv_bytes_per_element,
            kv_cache_fp8: kv_cache == KvCacheDtype::Fp8,
            activation_bytes: 2.0,
            tp,
            pp: 1,
            moe_tp: tp,
            moe_ep: 1,
            moe_imbalance: DEFAULT_MOE_IMBALANCE,
            parallel_embedding: false,
            cuda_graphs: false,
            drafter: Drafter::default(),
            limits: BuildLimits {
                max_input_len: 1024,
                max_seq_len: 8192,
                max_batch_size: 2048,
                max_beam_width: 1,
                max_num_tokens: 8192,
                tokens_per_block: 32,
                paged_kv_cache: true,
                paged_context_fmha: true,
                gather_context_logits: false,
                parallel_embedding: false,
            },
        }
    }
}

/// Routing imbalance assumed when simulation.json states none: uniform routing in expectation.
pub const DEFAULT_MOE_IMBALANCE: f64 = 1.0;
