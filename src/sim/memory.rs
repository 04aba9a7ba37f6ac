//! What each GPU holds when TensorRT-LLM 1.2's runtime has loaded an engine: the weights, the engine's
//! activation memory for its build limits, the decoder's and sampler's buffers, the CUDA context and
//! library workspaces, and the KV-cache pool sized from what is left (docs/simulator.md, "Memory").

use serde::Serialize;

use super::error::SimError;
use super::gpu::GIB;
use super::ops::{Block, Op};
use super::perf_model::PerfModel;
use crate::engine::description::BuildLimits;

const MIB: f64 = 1024.0 * 1024.0;

/// The CUDA context with the engine's kernels loaded (TensorRT's engine code, the plugins' and cuBLAS's
/// modules), per GPU. An estimate, not from TensorRT-LLM's source: the context is the driver's, and its size
/// depends on the driver, the GPU and lazy module loading (a few hundred MiB on Hopper before any module
/// loads); the loaded kernels come on top.
const CUDA_CONTEXT_BYTES: f64 = GIB;

/// The cuBLAS(Lt) workspace the GEMM plugin's handle keeps: 32 MiB (`CUBLAS_WORKSPACE_SIZE` in
/// cpp/include/tensorrt_llm/common/cudaUtils.h).
const CUBLAS_WORKSPACE_BYTES: f64 = 32.0 * MIB;

/// NCCL's communicator buffers between tensor- or pipeline-parallel ranks (its default 4 MiB per channel
/// and direction, over the channels NVLink systems open). An estimate: NCCL sizes them at run time.
const NCCL_BYTES: f64 = 256.0 * MIB;

/// Bytes the decoder state keeps per sequence slot and position (runtime/decoderState.cpp): output ids and
/// parent ids (int32) and log-probabilities in two layouts (float32), each [max_batch, max_beam, max_seq_len].
const DECODER_BYTES_PER_POSITION: f64 = 16.0;

/// With beam search the decoder also keeps the gathered ids (int32) per slot and position.
const BEAM_GATHER_BYTES_PER_POSITION: f64 = 4.0;

/// The custom all-reduce's ceiling on one rank's share of a ping or pong buffer
/// (`getMaxRequiredWorkspaceSize` in cpp/tensorrt_llm/common/customAllReduceUtils.h): 16 MB up to two
/// ranks, 8 MB beyond.
fn allreduce_share_cap(tp: usize) -> f64 {
    if tp <= 2 { 16e6 } else { 8e6 }
}

/// Tokens the fused all-reduce's Lamport buffers hold (`kLamportTokenNumThreshold`).
const LAMPORT_TOKENS: f64 = 16.0;

/// One line of the budget.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetLine {
    /// What holds the memory.
    pub what: &'static str,
    /// Bytes per GPU.
    pub bytes: f64,
}

/// The memory budget of one GPU, line by line, and the KV-cache pool it leaves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryBudget {
    /// The GPU preset id.
    pub gpu: String,
    /// The GPU's memory, bytes.
    pub gpu_bytes: f64,
    /// Everything held before the KV cache, in the order the runtime allocates it.
    pub lines: Vec<BudgetLine>,
    /// What is left after them (negative when they do not fit).
    pub free_bytes: f64,
    /// The fraction of the free memory the KV-cache pool takes (`free_gpu_memory_fraction`).
    pub free_fraction: f64,
    /// The KV-cache pool, bytes.
    pub kv_pool_bytes: f64,
    /// KV-cache bytes one token takes on this GPU.
    pub kv_bytes_per_token: f64,
    /// Tokens the pool holds.
    pub kv_tokens: u64,
    /// Sequences of max_seq_len (or the attention window, if shorter) the pool holds at once.
    pub max_full_sequences: f64,
}

impl MemoryBudget {
    /// The bytes held before the KV cache besides the weights.
    pub fn runtime_bytes(&self) -> f64 {
        self.lines.iter().filter(|l| l.what != "weights").map(|l| l.bytes).sum()
    }

    /// The weights' line.
    pub fn weight_bytes(&self) -> f64 {
        self.lines.iter().filter(|l| l.what == "weights").map(|l| l.bytes).sum()
    }

    /// The budget, or why the engine would not load: no memory left for the KV cache.
    pub fn check(self) -> Result<Self, SimError> {
        if self.free_bytes > 0.0 && self.kv_tokens > 0 {
            return Ok(self);
        }
        Err(SimError::DoesNotFit {
            gpu: self.gpu.clone(),
            weights_gib: self.weight_bytes() / GIB,
            reserve_gib: self.runtime_bytes() / GIB,
            memory_gib: self.gpu_bytes / GIB,
            budget: self.to_string(),
        })
    }
}

impl std::fmt::Display for MemoryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let gib = |b: f64| b / GIB;
        writeln!(f, "  memory per GPU ({}, {:.1} GiB):", self.gpu, gib(self.gpu_bytes))?;
        for line in &self.lines {
            writeln!(f, "    {:44}{:9.2} GiB", line.what, gib(line.bytes))?;
        }
        writeln!(f, "    {:44}{:9.2} GiB", "free", gib(self.free_bytes))?;
        write!(
            f,
            "    {:44}{:9.2} GiB = {} tokens ({:.0} KiB/token), {:.1} sequences of full length",
            format!("KV-cache pool ({:.0}% of free)", self.free_fraction * 100.0),
            gib(self.kv_pool_bytes),
            self.kv_tokens,
            self.kv_bytes_per_token / 1024.0,
            self.max_full_sequences
        )
    }
}

/// Activation elements per token the widest block of a layer holds: the sum of what its operations' outputs
/// hold, the attention, the dense MLP or the experts, whichever is widest.
fn widest_block(ops: &[Op]) -> f64 {
    let held = |block: Block| -> f64 {
        ops.iter().filter_map(|op| op.holds).filter(|held| held.block == block).map(|held| held.width).sum()
    };
    [Block::Attention, Block::DenseMlp, Block::Experts].into_iter().map(held).fold(0.0, f64::max)
}

impl PerfModel {
    /// What each GPU holds with the runtime sized for `limits` (the engine's build limits, or the lower ones
    /// an executor config sets), and the KV-cache pool `free_fraction` of the rest gives.
    pub fn memory_budget(&self, limits: &BuildLimits, free_fraction: f64) -> MemoryBudget {
        let spec = self.spec();
        let s = spec.shape();
        let (tp, act) = (spec.tp() as f64, spec.activation_bytes());
        let h = s.hidden_size as f64;
        let tokens = limits.max_num_tokens as f64;
        let slots = (limits.max_batch_size * limits.max_beam_width) as f64;
        let vocab = spec.description().vocab_size_padded() as f64;
        // The engine's activation memory, TensorRT's `device_memory_size` for the largest profile: TensorRT
        // computes it at build time from the optimized graph, so this is an estimate. It follows what the
        // graph holds at a layer's widest point for max_num_tokens rows (the residual stream, the normed input
        // and a block's output, plus what the widest block's operations hold: the attention's QKV and output,
        // the MLP's gate/up and activation, or the experts' routed rows), with FP8 inputs beside the 16-bit
        // ones.
        let fp8_copies = if spec.weights().fp8_math { 1.5 } else { 1.0 };
        let activations = tokens * (3.0 * h + widest_block(self.ops())) * act * fp8_copies;
        // Logits of every slot in float32, the default `logits_dtype` (every prompt row with
        // gather_context_logits): the runtime buffers' logits (batch_manager/runtimeBuffers.cpp).
        let logit_rows = if limits.gather_context_logits { tokens.max(slots) } else { slots };
        let logits = logit_rows * vocab * 4.0;
        // The decoder state (runtime/decoderState.cpp): per-position ids and log-probabilities, and an
        // embedding bias of max_batch x vocab in the model's dtype.
        let per_position =
            DECODER_BYTES_PER_POSITION + if limits.max_beam_width > 1 { BEAM_GATHER_BYTES_PER_POSITION } else { 0.0 };
        let decoder = slots * limits.max_seq_len as f64 * per_position + limits.max_batch_size as f64 * vocab * act;
        // Sampling (layers/penaltyLayer.cpp, kernels/samplingTopPKernels.cu): the penalty layer's occurrence
        // workspace, an int32 per slot and vocabulary entry, and the Air top-P sort's buffers per slot: two
        // value/index pairs of vocab / 32 entries (4 + 4 B each) and two 2048-bucket histograms.
        let top_p = 2.0 * 8.0 * (vocab / 32.0) + 2.0 * 4.0 * 2048.0;
        let sampling = slots * (vocab * 4.0 + top_p);
        let ranks = spec.tp() * spec.pp();
        // The custom all-reduce's peer-visible buffers (runtime/ipcUtils.cpp, AllReduceBuffers): a ping and a
        // pong buffer of tp shares, each the smaller of max_batch x beam x max_seq_len rows of this rank's
        // hidden slice in float32 and the workspace cap, and three Lamport buffers of tp x 16 tokens of the
        // full hidden width in 16-bit.
        let allreduce = if spec.tp() > 1 {
            let share = (slots * limits.max_seq_len as f64 * (h / tp) * 4.0).min(allreduce_share_cap(spec.tp()));
            2.0 * tp * share + 3.0 * tp * LAMPORT_TOKENS * h * 2.0
        } else {
            0.0
        };
        let mut lines = vec![
            BudgetLine { what: "CUDA context and kernels", bytes: CUDA_CONTEXT_BYTES },
            BudgetLine { what: "weights", bytes: self.weight_bytes_per_gpu() },
            BudgetLine { what: "engine activations (max_num_tokens)", bytes: activations },
            BudgetLine { what: "logits (float32)", bytes: logits },
            BudgetLine { what: "decoder buffers (max_batch x max_seq_len)", bytes: decoder },
            BudgetLine { what: "sampling workspace", bytes: sampling },
            BudgetLine { what: "cuBLAS workspace", bytes: CUBLAS_WORKSPACE_BYTES },
        ];
        if spec.tp() > 1 {
            lines.push(BudgetLine { what: "custom all-reduce buffers", bytes: allreduce });
        }
        if ranks > 1 {
            lines.push(BudgetLine { what: "NCCL communicator buffers", bytes: NCCL_BYTES });
        }
        let gpu_bytes = self.gpu().memory_bytes();
        let free_bytes = gpu_bytes - lines.iter().map(|l| l.bytes).sum::<f64>();
        let kv_pool_bytes = free_bytes.max(0.0) * free_fraction;
        let kv_bytes_per_token = self.kv_bytes_per_token_per_gpu();
        let kv_tokens = (kv_pool_bytes / kv_bytes_per_token).floor() as u64;
        let sequence = s.sliding_window.map_or(limits.max_seq_len, |w| w.min(limits.max_seq_len)) as f64;
        MemoryBudget {
            gpu: self.gpu().id.clone(),
            gpu_bytes,
            lines,
            free_bytes,
            free_fraction,
            kv_pool_bytes,
            kv_bytes_per_token,
            kv_tokens,
            max_full_sequences: kv_tokens as f64 / sequence,
        }
    }

    /// Memory each GPU keeps besides the weights and the KV cache, with the runtime sized for
    /// `max_num_tokens`, `max_batch_size` and `max_beam_width` (the engine's max_seq_len).
    pub fn runtime_reserve_bytes(&self, max_num_tokens: usize, max_batch_size: usize, max_beam_width: usize) -> f64 {
        let limits = BuildLimits { max_num_tokens, max_batch_size, max_beam_width, ..*self.spec().limits() };
        self.memory_budget(&limits, 1.0).runtime_bytes()
    }

    /// KV-cache tokens that fit: (memory − weights − reserve) × `free_fraction` / KV bytes per token.
    pub fn kv_capacity_tokens(&self, free_fraction: f64, reserve_bytes: f64) -> Result<u64, SimError> {
        let mut budget = self.memory_budget(self.spec().limits(), free_fraction);
        let weights = budget.weight_bytes();
        budget.lines =
            vec![BudgetLine { what: "weights", bytes: weights }, BudgetLine { what: "runtime", bytes: reserve_bytes }];
        budget.free_bytes = budget.gpu_bytes - weights - reserve_bytes;
        budget.kv_pool_bytes = budget.free_bytes.max(0.0) * free_fraction;
        budget.kv_tokens = (budget.kv_pool_bytes / budget.kv_bytes_per_token).floor() as u64;
        Ok(budget.check()?.kv_tokens)
    }
}
