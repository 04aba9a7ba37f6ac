//! The list of operations one forward pass runs, built once from the engine's description: each knows
//! its time for a batch ([`BatchWork`]), priced from the FLOPs and device-memory bytes it reports
//! ([`OpLoad`]), the weight bytes it reads and the activations it holds, so that the iteration time, the
//! streamed bytes, the resident weights, the KV bytes per token, the activation memory and the simulated
//! GPU telemetry are folds over one list (docs/simulator.md derives each).

use serde::Serialize;

use super::batch_work::BatchWork;
use super::kernels::{Kernels, OpLoad, WeightFormat};

/// Which part of [`IterationTime`](super::IterationTime) an operation's time is reported under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// Dense linear layers.
    Gemm,
    /// Mixture-of-Experts: router, permutation, grouped expert GEMMs, finalize.
    Moe,
    /// Context (flash) attention.
    ContextAttention,
    /// Decode attention.
    DecodeAttention,
    /// Norms, activations, quantization, embedding lookup.
    MemoryPasses,
    /// Output head, logits gather, sampling.
    Logits,
    /// Tensor-parallel all-reduces.
    AllReduce,
    /// Pipeline hand-offs.
    Pipeline,
    /// LoRA adapters.
    Lora,
    /// The speculative drafter.
    Drafter,
}

/// Which rows of the batch an operation processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rows {
    /// Every token of the iteration.
    Tokens,
    /// The rows sampled (output head and after).
    Sampled,
}

/// What an operation does, with the sizes it does it on (one GPU's share).
// Each variant's fields are the sizes its doc names.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Kernel {
    /// `rows` x `k` activations by a `k` x `n` weight.
    Gemm { rows: Rows, k: f64, n: f64, weights: WeightFormat },
    /// A memory-bound pass moving `bytes_per_row` per row.
    MemoryPass { rows: Rows, bytes_per_row: f64 },
    /// Context attention: `flops_per_pair` per query-key pair.
    ContextAttention { flops_per_pair: f64 },
    /// Decode attention reading and writing `bytes_per_token` of K/V per cached token.
    DecodeAttention { bytes_per_token: f64 },
    /// An all-reduce of `bytes_per_row` per row over `ranks`.
    AllReduce { rows: Rows, bytes_per_row: f64, ranks: f64 },
    /// Activations to the next pipeline stage.
    Send { bytes_per_row: f64 },
    /// The grouped expert GEMM of one rank: each routed row by its expert's `k` x `n` weight.
    GroupedGemm(GroupedGemm),
    /// The batch's LoRA adapters at the 16-bit rate, split over `ranks`, plus their host copies.
    Lora { ranks: f64, bandwidth: f64, host_bandwidth: f64 },
    /// The drafter's sequential passes.
    Drafter { params: f64, bytes: f64, passes: f64, bandwidth: f64 },
}

/// One rank's grouped expert GEMM (the MoE plugin's CUTLASS kernel).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GroupedGemm {
    /// Input width.
    pub k: f64,
    /// Output width.
    pub n: f64,
    /// Routed experts in the model.
    pub experts: f64,
    /// Experts each token picks.
    pub top_k: f64,
    /// Expert-parallel ranks (each holds experts / ranks whole experts).
    pub ep: f64,
    /// Rows of the busiest rank over the mean (routing imbalance; 1 for uniform).
    pub imbalance: f64,
    /// Weight storage.
    pub weights: WeightFormat,
}

impl GroupedGemm {
    /// Rows the busiest rank computes and the distinct experts whose weights it reads, for `tokens` tokens.
    pub fn rank_load(&self, tokens: f64) -> (f64, f64) {
        let rows = tokens * self.top_k / self.ep * if self.ep > 1.0 { self.imbalance } else { 1.0 };
        let touched = crate::engine::model_shape::MoeShape::distinct_experts(self.experts, self.top_k, tokens);
        (rows, touched / self.ep)
    }
}

/// One operation of the forward pass.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Op {
    /// What it is, e.g. `qkv projection`.
    pub name: &'static str,
    /// Where its time is reported.
    pub part: Part,
    /// Times it runs per iteration (layers x per-layer repeats).
    pub count: f64,
    /// The kernel.
    pub kernel: Kernel,
    /// Weight bytes one run reads on one GPU (all experts for grouped GEMMs: what is resident).
    pub weight_bytes: f64,
    /// The activations this operation's output keeps alive at its layer's widest point, if any.
    #[serde(skip)]
    pub(crate) holds: Option<Held>,
    /// Weight bytes resident on one GPU that no run streams (the input embedding table, read by row).
    #[serde(skip)]
    pub(crate) table_bytes: f64,
}

/// Where in a layer the engine's activation memory peaks: in the attention or in the MLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    /// The attention: QKV and its output.
    Attention,
    /// A dense MLP: gate/up and the activation.
    DenseMlp,
    /// A Mixture-of-Experts MLP: the routed rows through the experts, and any shared expert.
    Experts,
}

/// Activation elements per token one operation's output holds while its block runs (one GPU's share).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Held {
    pub(crate) block: Block,
    pub(crate) width: f64,
}

impl Op {
    /// Seconds of all runs of this operation in an iteration doing `work`.
    pub(crate) fn seconds(&self, k: &Kernels<'_>, work: &BatchWork) -> f64 {
        self.cost(k, work).0
    }

    /// Seconds of all runs of this operation in an iteration doing `work`, and what they compute and move
    /// through device memory: the time is priced from that load, so the telemetry's figures are the timing's.
    pub(crate) fn cost(&self, k: &Kernels<'_>, work: &BatchWork) -> (f64, OpLoad) {
        let rows = |r: Rows| match r {
            Rows::Tokens => work.tokens,
            Rows::Sampled => work.sampled_rows,
        };
        let (one, load) = match self.kernel {
            Kernel::Gemm { rows: r, k: kk, n, weights } => {
                let load = OpLoad::gemm(rows(r), 1.0, kk, n, weights);
                (k.gemm_load(load, weights.fp8_math), load)
            }
            Kernel::MemoryPass { rows: r, bytes_per_row } => {
                let bytes = rows(r) * bytes_per_row;
                (k.memory_pass(bytes), OpLoad::bytes(bytes))
            }
            Kernel::ContextAttention { flops_per_pair } => {
                let flops = flops_per_pair * work.context_pairs;
                let load = if work.context_tokens > 0.0 { OpLoad { flops, bytes: 0.0 } } else { OpLoad::default() };
                (k.context_attention(work.context_tokens, flops), load)
            }
            Kernel::DecodeAttention { bytes_per_token } => {
                let decode_rows = work.tokens - work.context_tokens;
                // Reads the cache, writes the new rows' K/V; the queries' FLOPs hide under the reads.
                if decode_rows > 0.0 {
                    let bytes = bytes_per_token * (work.kv_tokens_read + decode_rows);
                    (k.decode_attention(bytes), OpLoad::bytes(bytes))
                } else {
                    (0.0, OpLoad::default())
                }
            }
            // Link traffic: no device-memory load of its own.
            Kernel::AllReduce { rows: r, bytes_per_row, ranks } => {
                (k.allreduce(rows(r) * bytes_per_row, ranks), OpLoad::default())
            }
            Kernel::Send { bytes_per_row } => (k.send(work.tokens * bytes_per_row), OpLoad::default()),
            Kernel::GroupedGemm(g) => {
                let (rank_rows, experts) = g.rank_load(work.tokens);
                let load = OpLoad::gemm(rank_rows, experts, g.k, g.n, g.weights);
                (k.gemm_load(load, g.weights.fp8_math), load)
            }
            Kernel::Lora { ranks, bandwidth, host_bandwidth } => {
                // The host -> device copies cross the PCIe link.
                let mut s = work.lora_copy_bytes / host_bandwidth;
                let mut load = OpLoad::default();
                if work.lora_flops > 0.0 || work.lora_weight_bytes > 0.0 {
                    load = OpLoad { flops: work.lora_flops / ranks, bytes: work.lora_weight_bytes / ranks };
                    s += load.bytes / bandwidth + load.flops / k.gemm_rate(false);
                }
                (s, load)
            }
            Kernel::Drafter { params, bytes, passes, bandwidth } => {
                if work.drafter_requests <= 0.0 || passes <= 0.0 {
                    (0.0, OpLoad::default())
                } else {
                    let pass = OpLoad { flops: 2.0 * params * work.drafter_requests, bytes };
                    (passes * (pass.bytes / bandwidth).max(pass.flops / k.gemm_rate(false)), pass.times(passes))
                }
            }
        };
        (one * self.count, load.times(self.count))
    }

    /// Weight bytes this operation holds on one GPU (all its runs; every expert).
    pub fn streamed_bytes(&self) -> f64 {
        self.weight_bytes * self.count
    }

    /// Weight bytes this operation reads on one GPU for a single token (an MoE rank reads the experts the
    /// token is routed to, top_k / experts of its own in expectation).
    pub fn single_token_bytes(&self) -> f64 {
        match self.kernel {
            Kernel::GroupedGemm(g) => self.streamed_bytes() * (g.top_k / g.experts).min(1.0),
            _ => self.streamed_bytes(),
        }
    }
}
