//! Builds the list of operations of one forward pass (src/sim/ops.rs) from an engine's timing view:
//! the layer's attention, its dense MLP or Mixture-of-Experts pipeline (as TensorRT-LLM's MoE plugin
//! runs it), the all-reduces, the output head and sampling, pipeline hand-offs, LoRA and the drafter (whose
//! layers take the same widths).

use super::gpu::GpuPreset;
use super::kernels::WeightFormat;
use super::ops::{Block, GroupedGemm, Held, Kernel, Op, Part, Rows};
use super::timing_spec::{Drafter, TimingSpec};
use crate::engine::speculative::SpeculativeDecodingMode;

/// Host -> device copy bandwidth for LoRA adapters (pinned host memory over PCIe Gen5 x16, effective), B/s.
const HOST_TO_DEVICE_B_S: f64 = 25.0e9;

/// Bytes of one routing decision per token and expert: the router's float32 logit, read and written by
/// the top-k softmax.
const ROUTER_LOGIT_BYTES: f64 = 8.0;

/// The operations of `spec` on `gpu`, in execution order; per-layer operations run once per layer.
pub(crate) fn build(spec: &TimingSpec, gpu: &GpuPreset) -> Vec<Op> {
    let s = spec.shape();
    let LayerWidths { tp, h, q, kv, inter, vocab_per_gpu } = LayerWidths::of(spec);
    let act = spec.activation_bytes();
    let w = spec.weights();
    let layers = s.num_layers as f64;
    let mut ops = OpList::default();
    let gemm = |k: f64, n: f64, weights: WeightFormat| Kernel::Gemm { rows: Rows::Tokens, k, n, weights };
    let pass = |bytes_per_row: f64| Kernel::MemoryPass { rows: Rows::Tokens, bytes_per_row };
    let norm_weights = h * act;

    // ---- Attention ----
    // Fused residual-add + RMSNorm (read x and the residual, write both), twice per layer.
    ops.op("residual add + RMSNorm", Part::MemoryPasses, 2.0 * layers, pass(4.0 * h * act), norm_weights, None);
    let qkv_bias = if s.qkv_bias { (q + 2.0 * kv) * act } else { 0.0 };
    ops.op(
        "QKV projection",
        Part::Gemm,
        layers,
        gemm(h, q + 2.0 * kv, w),
        h * (q + 2.0 * kv) * w.bytes_per_param + qkv_bias,
        Some((Block::Attention, q + 2.0 * kv)),
    );
    if s.qk_norm {
        // Qwen3: an RMS norm over every query and key head (read and write).
        ops.op(
            "Q/K RMSNorm",
            Part::MemoryPasses,
            layers,
            pass(2.0 * (q + kv) * act),
            2.0 * s.head_size as f64 * act,
            None,
        );
    }
    // The attention's preprocessing reads the QKV rows and writes rotated Q plus K/V into the cache.
    ops.op("RoPE and KV-cache write", Part::MemoryPasses, layers, pass(2.0 * (q + 2.0 * kv) * act), 0.0, None);
    ops.op(
        "context attention",
        Part::ContextAttention,
        layers,
        Kernel::ContextAttention { flops_per_pair: 4.0 * q },
        0.0,
        Some((Block::Attention, q)),
    );
    let kv_bytes_per_token = 2.0 * kv * spec.kv_bytes_per_element();
    ops.op(
        "decode attention",
        Part::DecodeAttention,
        layers,
        Kernel::DecodeAttention { bytes_per_token: kv_bytes_per_token },
        0.0,
        None,
    );
    ops.op("attention output", Part::Gemm, layers, gemm(q, h, w), q * h * w.bytes_per_param, None);
    let allreduce = Kernel::AllReduce { rows: Rows::Tokens, bytes_per_row: h * act, ranks: tp };
    ops.op("all-reduce", Part::AllReduce, 2.0 * layers, allreduce, 0.0, None);

    // ---- MLP: dense, or experts ----
    // A Mixture-of-Experts model may keep a dense MLP in some layers (Qwen2-MoE's mlp_only_layers).
    let (dense_layers, layers_with_experts) = s.mlp_layers();
    let (dense_layers, sparse) = (dense_layers as f64, layers_with_experts as f64);
    // GEMM inputs FP8 math quantizes, with the layers that have them.
    let mut quantized_inputs = vec![(h, layers), (q, layers)];
    ops.op(
        "gate/up projection",
        Part::Gemm,
        dense_layers,
        gemm(h, 2.0 * inter, w),
        h * 2.0 * inter * w.bytes_per_param,
        Some((Block::DenseMlp, 2.0 * inter)),
    );
    // SiLU-and-multiply: read gate and up, write one.
    ops.op(
        "SiLU and multiply",
        Part::MemoryPasses,
        dense_layers,
        pass(3.0 * inter * act),
        0.0,
        Some((Block::DenseMlp, inter)),
    );
    ops.op("down projection", Part::Gemm, dense_layers, gemm(inter, h, w), inter * h * w.bytes_per_param, None);
    if dense_layers > 0.0 {
        quantized_inputs.extend([(h, dense_layers), (inter, dense_layers)]);
    }
    if let Some(moe) = &s.moe {
        let experts = moe.num_experts as f64;
        let top_k = moe.top_k as f64;
        let (moe_tp, ep) = (spec.moe_tp() as f64, spec.moe_ep() as f64);
        let inter = moe.expert_intermediate_size as f64 / moe_tp;
        let router = WeightFormat { bytes_per_param: act, fp8_math: false };
        ops.op("MoE router", Part::Moe, sparse, gemm(h, experts, router), h * experts * act, None);
        ops.op("MoE top-k softmax", Part::Moe, sparse, pass(experts * ROUTER_LOGIT_BYTES), 0.0, None);
        // Rows copied into expert order, k copies of each.
        ops.op("MoE permute", Part::Moe, sparse, pass(2.0 * top_k * h * act), 0.0, Some((Block::Experts, top_k * h)));
        let grouped = |k: f64, n: f64| {
            Kernel::GroupedGemm(GroupedGemm { k, n, experts, top_k, ep, imbalance: spec.moe_imbalance(), weights: w })
        };
        let rank_experts = experts / ep;
        ops.op(
            "expert gate/up (grouped)",
            Part::Moe,
            sparse,
            grouped(h, 2.0 * inter),
            rank_experts * h * 2.0 * inter * w.bytes_per_param,
            Some((Block::Experts, top_k * 2.0 * inter)),
        );
        // SiLU-and-multiply over the rank's routed rows (k per token, split over the expert-parallel ranks).
        ops.op(
            "expert SiLU and multiply",
            Part::Moe,
            sparse,
            pass(3.0 * inter * act * top_k / ep),
            0.0,
            Some((Block::Experts, top_k * inter)),
        );
        ops.op(
            "expert down (grouped)",
            Part::Moe,
            sparse,
            grouped(inter, h),
            rank_experts * inter * h * w.bytes_per_param,
            Some((Block::Experts, top_k * h)),
        );
        // Finalize: un-permute and the weighted sum of the k expert outputs.
        ops.op("MoE finalize", Part::Moe, sparse, pass((top_k + 1.0) * h * act), 0.0, None);
        if moe.shared_expert_intermediate_size > 0 {
            let shared = moe.shared_expert_intermediate_size as f64 / tp;
            ops.op(
                "shared expert gate/up",
                Part::Gemm,
                sparse,
                gemm(h, 2.0 * shared, w),
                h * 2.0 * shared * w.bytes_per_param,
                Some((Block::Experts, 2.0 * shared)),
            );
            ops.op(
                "shared expert SiLU and multiply",
                Part::MemoryPasses,
                sparse,
                pass(3.0 * shared * act),
                0.0,
                Some((Block::Experts, shared)),
            );
            ops.op("shared expert down", Part::Gemm, sparse, gemm(shared, h, w), shared * h * w.bytes_per_param, None);
            quantized_inputs.extend([(h, sparse), (shared, sparse)]);
        }
        quantized_inputs.extend([(h * top_k / ep, sparse), (inter * top_k / ep, sparse)]);
    }
    if w.fp8_math {
        // FP8 math: one quantization pass per GEMM input (read 16-bit, write 8-bit).
        for (width, count) in quantized_inputs {
            ops.op("FP8 activation quantization", Part::MemoryPasses, count, pass(width * (act + 1.0)), 0.0, None);
        }
    }

    // ---- Embedding lookup, final norm, output head, logits gather, sampling ----
    // The input embedding table: its rows are looked up, never streamed; with a tied output head the
    // head's weights are the table.
    let embedding_table = if s.tie_word_embeddings {
        0.0
    } else {
        let vocab = spec.description().vocab_size_padded() as f64;
        vocab * h * act / if spec.parallel_embedding() { tp } else { 1.0 }
    };
    if let Some(lookup) = ops.op("embedding lookup", Part::MemoryPasses, 1.0, pass(h * act), 0.0, None) {
        lookup.table_bytes = embedding_table;
    }
    let sampled = |bytes_per_row| Kernel::MemoryPass { rows: Rows::Sampled, bytes_per_row };
    ops.op("final RMSNorm", Part::MemoryPasses, 1.0, sampled(2.0 * h * act), norm_weights, None);
    // The output head stays in 16 bits (quantization recipes leave it out).
    let head = WeightFormat { bytes_per_param: act, fp8_math: false };
    let head_gemm = Kernel::Gemm { rows: Rows::Sampled, k: h, n: vocab_per_gpu, weights: head };
    ops.op("output head", Part::Logits, 1.0, head_gemm, vocab_per_gpu * h * act, None);
    let logits_per_row = vocab_per_gpu * tp * 4.0;
    if spec.tp() > 1 {
        let gather = Kernel::AllReduce { rows: Rows::Sampled, bytes_per_row: logits_per_row / 2.0, ranks: tp };
        ops.op("logits gather", Part::Logits, 1.0, gather, 0.0, None);
    }
    ops.op("sampling", Part::Logits, 1.0, sampled(2.0 * logits_per_row), 0.0, None);

    // ---- Pipeline: one micro-batch goes through the stages one after another ----
    ops.op(
        "pipeline hand-off",
        Part::Pipeline,
        spec.pp() as f64 - 1.0,
        Kernel::Send { bytes_per_row: h * act },
        0.0,
        None,
    );
    // ---- LoRA: adapter weights streamed once, their FLOPs at the 16-bit rate, split like the base ----
    let bandwidth = gpu.bandwidth_gb_s * 1e9 * gpu.bandwidth_efficiency;
    ops.op(
        "LoRA adapters",
        Part::Lora,
        1.0,
        Kernel::Lora { ranks: tp, bandwidth, host_bandwidth: HOST_TO_DEVICE_B_S },
        0.0,
        None,
    );
    let d = drafter(spec);
    let drafter = Kernel::Drafter { params: d.params_per_gpu, bytes: d.bytes_per_gpu, passes: d.passes, bandwidth };
    ops.op("speculative drafter", Part::Drafter, 1.0, drafter, 0.0, None);
    ops.0
}

/// One GPU's widths of a layer's tensors, which the op list and the drafter's layers both take.
struct LayerWidths {
    /// Tensor-parallel ranks.
    tp: f64,
    /// Hidden size (not split).
    h: f64,
    /// Query width on one rank.
    q: f64,
    /// K (or V) width on one rank: with more ranks than KV heads each rank keeps a copy of one head.
    kv: f64,
    /// Dense MLP width on one rank.
    inter: f64,
    /// Output-head rows on one rank (the padded vocabulary / tp).
    vocab_per_gpu: f64,
}

impl LayerWidths {
    fn of(spec: &TimingSpec) -> Self {
        let s = spec.shape();
        let tp = spec.tp() as f64;
        LayerWidths {
            tp,
            h: s.hidden_size as f64,
            q: s.q_width() as f64 / tp,
            kv: (spec.kv_heads_per_rank() * s.head_size) as f64,
            inter: s.intermediate_size as f64 / tp,
            vocab_per_gpu: spec.vocab_rows_per_rank() as f64,
        }
    }
}

/// The speculative drafter's work per step, in the target's layer widths (zero for modes whose drafts
/// cost only the verified rows).
pub(crate) fn drafter(spec: &TimingSpec) -> Drafter {
    let LayerWidths { tp, h, q, kv, inter, vocab_per_gpu } = LayerWidths::of(spec);
    let speculative = spec.description().speculative();
    let max_draft = speculative.max_draft_len as f64;
    let (act, w) = (spec.activation_bytes(), spec.weights().bytes_per_param);
    // Each head's LM head: the output head's rows on this rank.
    let head = vocab_per_gpu * h;
    match speculative.mode {
        // Each Medusa head: a hidden x hidden residual block and its own LM head in 16 bits; the heads read
        // the same last hidden state, so one pass.
        SpeculativeDecodingMode::Medusa => {
            let heads = Some(speculative.num_medusa_heads as f64).filter(|n| *n > 0.0).unwrap_or(max_draft);
            let params = heads * (h * h / tp + head);
            Drafter { params_per_gpu: params, bytes_per_gpu: params * act, passes: 1.0 }
        }
        // One decoder layer of the target's widths (QKV, attention output, gate/up, down) over [embedding,
        // hidden] projected back by a 2h x h fc, then the target's LM head, once per tree level.
        SpeculativeDecodingMode::Eagle => {
            let layer = h * (q + 2.0 * kv) + q * h + h * 2.0 * inter + inter * h;
            let fc = 2.0 * h * h / tp;
            Drafter {
                params_per_gpu: layer + fc + head,
                bytes_per_gpu: layer * w + (fc + head) * act,
                passes: max_draft,
            }
        }
        _ => Drafter::default(),
    }
}

/// The operations built so far.
#[derive(Default)]
struct OpList(Vec<Op>);

impl OpList {
    /// Adds an operation that runs (`count` > 0); `holds`: the activations its output keeps alive while its
    /// block runs. Returns the operation added.
    fn op(
        &mut self,
        name: &'static str,
        part: Part,
        count: f64,
        kernel: Kernel,
        weight_bytes: f64,
        holds: Option<(Block, f64)>,
    ) -> Option<&mut Op> {
        if count <= 0.0 {
            return None;
        }
        let holds = holds.map(|(block, width)| Held { block, width });
        self.0.push(Op { name, part, count, kernel, weight_bytes, holds, table_bytes: 0.0 });
        self.0.last_mut()
    }
}
