//! The simulated GPU's timing model in Rust: predicted iteration times, single-stream TTFT and TPOT, the
//! bandwidth bound and KV capacity, computed with the same formulas as the C++ simulator.
//!
//! The benchmark puts these predictions next to measured figures; tests check them against the simulator
//! run in virtual-clock mode. docs/simulator.md derives every formula.

use serde::Serialize;

use super::error::SimError;
use super::gpu::{GIB, GpuPreset};
use super::model::{KvCacheDtype, ModelShape, WeightDtype};
use super::simulated_engine::SimulatedEngine;

/// CUDA context, cuBLAS/NCCL workspaces and runtime buffers every GPU keeps besides activations.
const RUNTIME_BYTES: f64 = GIB;

/// TensorRT-LLM's default `free_gpu_memory_fraction`, as the single-precision value the executor holds.
pub const DEFAULT_FREE_GPU_MEMORY_FRACTION: f64 = 0.9f32 as f64;

/// The work of one iteration, reduced to the sums the model needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BatchWork {
    /// Rows through the linear layers: context tokens plus one per beam of each generation request.
    pub tokens: f64,
    /// Rows through the output head: one per generation beam, one per prompt completed.
    pub sampled_rows: f64,
    /// Query-key pairs attention computes.
    pub attention_pairs: f64,
    /// Tokens of cached K/V read by attention.
    pub kv_tokens_read: f64,
    /// Tokens of K/V written.
    pub kv_tokens_written: f64,
}

impl BatchWork {
    /// Adds a context chunk of `new_tokens` after `past_tokens` already cached; `samples` when it completes
    /// the prompt.
    pub fn add_context(&mut self, new_tokens: f64, past_tokens: f64, samples: bool) -> &mut Self {
        self.tokens += new_tokens;
        self.sampled_rows += if samples { 1.0 } else { 0.0 };
        self.attention_pairs += new_tokens * past_tokens + new_tokens * (new_tokens + 1.0) / 2.0;
        self.kv_tokens_read += past_tokens;
        self.kv_tokens_written += new_tokens;
        self
    }

    /// Adds one decoding step of a request with `beam_width` beams over `past_tokens` cached tokens each.
    pub fn add_generation(&mut self, past_tokens: f64, beam_width: f64) -> &mut Self {
        self.tokens += beam_width;
        self.sampled_rows += beam_width;
        self.attention_pairs += beam_width * (past_tokens + 1.0);
        self.kv_tokens_read += beam_width * past_tokens;
        self.kv_tokens_written += beam_width;
        self
    }
}

/// One iteration's time and its parts, milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IterationTime {
    /// Fixed per-iteration overhead.
    pub overhead_ms: f64,
    /// Streaming weights and KV cache at the achieved bandwidth.
    pub memory_ms: f64,
    /// Tensor math at the achieved FLOP rate.
    pub compute_ms: f64,
    /// Tensor-parallel all-reduces.
    pub allreduce_ms: f64,
    /// overhead + max(memory, compute) + all-reduce.
    pub total_ms: f64,
}

/// Predicted single-user figures for one prompt length.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SingleStream {
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Generated tokens.
    pub output_tokens: usize,
    /// Executor time to first token: the prefill iterations of an idle executor.
    pub ttft_ms: f64,
    /// Mean time per output token after the first.
    pub tpot_ms: f64,
    /// 1000 / TPOT.
    pub decode_tokens_per_s: f64,
    /// Prompt tokens / TTFT.
    pub prefill_tokens_per_s: f64,
}

/// The timing and memory model of one engine (model shape, precision, tensor parallelism) on one GPU.
///
/// ```
/// use trtllm::sim::{GpuPreset, KvCacheDtype, ModelPreset, PerfModel, WeightDtype};
/// let qwen = ModelPreset::by_id("qwen2.5-7b")?;
/// let a6000 = GpuPreset::by_id("rtx-a6000")?;
/// let model = PerfModel::new(&qwen.shape, a6000, WeightDtype::Bf16, KvCacheDtype::Auto, 1)?;
/// // Streaming 14 GB of weights at 768 GB/s bounds decode at ~54 tokens/s; the calibrated model says ~44.
/// assert!((model.bandwidth_bound_tokens_per_s() - 54.3).abs() < 0.5);
/// let single = model.single_stream(360, 256, 8192, 32);
/// assert!((single.decode_tokens_per_s - 44.0).abs() < 0.5);
/// # Ok::<(), trtllm::sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerfModel {
    gpu: GpuPreset,
    tp: f64,
    layers: f64,
    hidden: f64,
    activation_bytes: f64,
    intermediate_per_gpu: f64,
    vocab_per_gpu: f64,
    linear_params_per_gpu: f64,
    lm_head_params_per_gpu: f64,
    attention_flops_per_pair: f64,
    linear_flops_per_s: f64,
    half_flops_per_s: f64,
    resident_weight_bytes: f64,
    streamed_weight_bytes: f64,
    kv_bytes_per_token: f64,
}

impl PerfModel {
    /// The model of `shape` in `weights`/`kv_cache` precision split over `tp` GPUs of type `gpu`.
    ///
    /// Fails when FP8 is asked of a GPU without FP8 tensor cores, or the shape or `tp` cannot work.
    pub fn new(
        shape: &ModelShape,
        gpu: &GpuPreset,
        weights: WeightDtype,
        kv_cache: KvCacheDtype,
        tp: usize,
    ) -> Result<Self, SimError> {
        if tp == 0 || shape.num_heads == 0 || !shape.num_heads.is_multiple_of(tp) {
            return Err(SimError::Invalid(format!(
                "tensor parallelism {tp} must be at least 1 and divide the {} attention heads",
                shape.num_heads
            )));
        }
        let fp8_unsupported =
            |what| SimError::Fp8Unsupported { what, gpu: gpu.id.clone(), architecture: gpu.architecture.clone() };
        if weights == WeightDtype::Fp8 && !gpu.has_fp8() {
            return Err(fp8_unsupported("FP8 weights"));
        }
        if kv_cache == KvCacheDtype::Fp8 && !gpu.has_fp8() {
            return Err(fp8_unsupported("an FP8 KV cache"));
        }
        let tp_f = tp as f64;
        let layers = shape.num_layers as f64;
        let hidden = shape.hidden_size as f64;
        let activation_bytes = 2.0;
        let (weight_bytes, fp8_math) = match weights {
            WeightDtype::Bf16 | WeightDtype::Fp16 => (2.0, false),
            WeightDtype::Fp8 => (1.0, true),
        };
        let kv_bytes = match kv_cache {
            KvCacheDtype::Auto => activation_bytes,
            KvCacheDtype::Fp8 | KvCacheDtype::Int8 => 1.0,
        };
        let q_width = (shape.num_heads * shape.head_size) as f64;
        let kv_width = (shape.num_kv_heads * shape.head_size) as f64;
        let intermediate = shape.intermediate_size as f64;
        let linear_per_layer =
            hidden * q_width + 2.0 * hidden * kv_width + q_width * hidden + 3.0 * hidden * intermediate;
        // The engine pads the vocabulary to a multiple of the tensor-parallel size.
        let vocab = shape.vocab_size.div_ceil(tp) as f64 * tp_f;
        let linear_params_per_gpu = linear_per_layer * layers / tp_f;
        let lm_head_params_per_gpu = vocab * hidden / tp_f;
        let half = gpu.bf16_tflops * 1e12;
        let linear_flops_per_s = if fp8_math { gpu.fp8_tflops.unwrap_or(gpu.bf16_tflops) * 1e12 } else { half };

        let norms = (2.0 * layers + 1.0) * hidden * activation_bytes;
        let lm_head_bytes = lm_head_params_per_gpu * activation_bytes;
        let linear_bytes = linear_params_per_gpu * weight_bytes;
        let embedding_bytes = if shape.tie_word_embeddings { 0.0 } else { vocab * hidden * activation_bytes };
        let kv_heads_per_gpu = (shape.num_kv_heads as f64 / tp_f).ceil();
        Ok(PerfModel {
            gpu: gpu.clone(),
            tp: tp_f,
            layers,
            hidden,
            activation_bytes,
            intermediate_per_gpu: intermediate / tp_f,
            vocab_per_gpu: vocab / tp_f,
            linear_params_per_gpu,
            lm_head_params_per_gpu,
            attention_flops_per_pair: 4.0 * q_width * layers / tp_f,
            linear_flops_per_s,
            half_flops_per_s: half,
            resident_weight_bytes: (linear_bytes * tp_f + lm_head_bytes * tp_f + norms) / tp_f + embedding_bytes,
            streamed_weight_bytes: linear_bytes + lm_head_bytes + norms,
            kv_bytes_per_token: 2.0 * layers * kv_heads_per_gpu * shape.head_size as f64 * kv_bytes,
        })
    }

    /// The model of a simulated engine: its shape, precision, tp, GPU preset and GPU overrides.
    pub fn for_engine(engine: &SimulatedEngine) -> Result<Self, SimError> {
        let mut gpu = GpuPreset::by_id(&engine.gpu)?.clone();
        for (name, value) in &engine.gpu_overrides {
            gpu.set_figure(name, *value)?;
        }
        Self::new(&engine.shape(), &gpu, engine.weight_dtype, engine.kv_cache_dtype, engine.tp_size)
    }

    /// The GPU (with any overrides).
    pub fn gpu(&self) -> &GpuPreset {
        &self.gpu
    }

    /// The time of an iteration doing `work`.
    pub fn iteration(&self, work: &BatchWork) -> IterationTime {
        let gpu = &self.gpu;
        let mut time = IterationTime { overhead_ms: gpu.iteration_overhead_ms, ..IterationTime::default() };
        if work.tokens <= 0.0 {
            time.total_ms = time.overhead_ms;
            return time;
        }
        let bytes =
            self.streamed_weight_bytes + self.kv_bytes_per_token * (work.kv_tokens_read + work.kv_tokens_written);
        time.memory_ms = bytes / (gpu.bandwidth_gb_s * 1e9 * gpu.bandwidth_efficiency) * 1e3;
        let linear_seconds = 2.0 * self.linear_params_per_gpu * work.tokens / self.linear_flops_per_s;
        let half_seconds = (2.0 * self.lm_head_params_per_gpu * work.sampled_rows
            + self.attention_flops_per_pair * work.attention_pairs)
            / self.half_flops_per_s;
        time.compute_ms = (linear_seconds + half_seconds) / gpu.mfu * 1e3;
        if self.tp > 1.0 {
            let payload = work.tokens * self.hidden * self.activation_bytes;
            let transfer = 2.0 * (self.tp - 1.0) / self.tp * payload / (gpu.interconnect_gb_s * 1e9);
            time.allreduce_ms = 2.0 * self.layers * (gpu.allreduce_latency_us * 1e-6 + transfer) * 1e3;
        }
        time.total_ms = time.overhead_ms + time.memory_ms.max(time.compute_ms) + time.allreduce_ms;
        time
    }

    /// Weight bytes each GPU holds.
    pub fn weight_bytes_per_gpu(&self) -> f64 {
        self.resident_weight_bytes
    }

    /// Weight bytes each GPU reads per forward pass (all but the input embedding table).
    pub fn streamed_weight_bytes_per_gpu(&self) -> f64 {
        self.streamed_weight_bytes
    }

    /// KV-cache bytes per token on each GPU.
    pub fn kv_bytes_per_token_per_gpu(&self) -> f64 {
        self.kv_bytes_per_token
    }

    /// The single-stream bandwidth bound: one pass over the weights at peak bandwidth per token, tokens/s.
    pub fn bandwidth_bound_tokens_per_s(&self) -> f64 {
        self.gpu.bandwidth_gb_s * 1e9 / self.streamed_weight_bytes
    }

    /// One decoding step of a single request whose cache holds `context` tokens, milliseconds.
    pub fn decode_step_ms(&self, context: usize) -> f64 {
        self.iteration(BatchWork::default().add_generation(context as f64, 1.0)).total_ms
    }

    /// Time to first token of one `prompt`-token request on an idle executor: its prefill iterations, the
    /// prompt split into chunks of at most `max_num_tokens` (whole blocks of `tokens_per_block` unless the
    /// chunk ends the prompt), as the scheduler splits it.
    pub fn ttft_ms(&self, prompt: usize, max_num_tokens: usize, tokens_per_block: usize) -> f64 {
        let mut position = 0;
        let mut total = 0.0;
        while position < prompt {
            let remaining = prompt - position;
            let mut chunk = remaining.min(max_num_tokens.max(1));
            if chunk < remaining && chunk >= tokens_per_block {
                chunk = chunk / tokens_per_block * tokens_per_block;
            }
            let samples = position + chunk >= prompt;
            total += self.iteration(BatchWork::default().add_context(chunk as f64, position as f64, samples)).total_ms;
            position += chunk;
        }
        total
    }

    /// Single-user figures: TTFT, and TPOT averaged over `output` tokens (the steps after the first token).
    pub fn single_stream(
        &self,
        prompt: usize,
        output: usize,
        max_num_tokens: usize,
        tokens_per_block: usize,
    ) -> SingleStream {
        let ttft_ms = self.ttft_ms(prompt, max_num_tokens, tokens_per_block);
        let steps = output.saturating_sub(1);
        let tpot_ms = if steps == 0 {
            0.0
        } else {
            (1..=steps).map(|i| self.decode_step_ms(prompt + i - 1)).sum::<f64>() / steps as f64
        };
        SingleStream {
            prompt_tokens: prompt,
            output_tokens: output,
            ttft_ms,
            tpot_ms,
            decode_tokens_per_s: if tpot_ms > 0.0 { 1000.0 / tpot_ms } else { f64::INFINITY },
            prefill_tokens_per_s: prompt as f64 / (ttft_ms / 1000.0),
        }
    }

    /// Memory each GPU keeps for activations of `max_num_tokens`, float32 logits of the largest batch and the
    /// CUDA runtime.
    pub fn runtime_reserve_bytes(&self, max_num_tokens: usize, max_batch_size: usize, max_beam_width: usize) -> f64 {
        let activations =
            max_num_tokens as f64 * (4.0 * self.hidden + 2.0 * self.intermediate_per_gpu) * self.activation_bytes;
        let logits = max_batch_size as f64 * max_beam_width as f64 * self.vocab_per_gpu * 4.0;
        RUNTIME_BYTES + activations + logits
    }

    /// KV-cache tokens that fit: (memory − weights − reserve) × `free_fraction` / KV bytes per token.
    pub fn kv_capacity_tokens(&self, free_fraction: f64, reserve_bytes: f64) -> Result<u64, SimError> {
        let free = self.gpu.memory_bytes() - self.resident_weight_bytes - reserve_bytes;
        if free <= 0.0 {
            return Err(SimError::DoesNotFit {
                gpu: self.gpu.id.clone(),
                weights_gib: self.resident_weight_bytes / GIB,
                reserve_gib: reserve_bytes / GIB,
                memory_gib: self.gpu.memory_gib,
            });
        }
        Ok((free * free_fraction / self.kv_bytes_per_token).floor() as u64)
    }
}

impl SimulatedEngine {
    /// The timing and memory model of this engine on its GPU; fails as the simulator would refuse to load it
    /// (FP8 without FP8 tensor cores, weights that do not fit, an unknown GPU).
    pub fn perf_model(&self) -> Result<PerfModel, SimError> {
        let model = PerfModel::for_engine(self)?;
        let reserve = model.runtime_reserve_bytes(self.max_num_tokens, self.max_batch_size, self.max_beam_width);
        model.kv_capacity_tokens(DEFAULT_FREE_GPU_MEMORY_FRACTION, reserve)?;
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::ModelPreset;

    fn model(id: &str, gpu: &str, weights: WeightDtype, tp: usize) -> PerfModel {
        let shape = ModelPreset::by_id(id).unwrap().shape;
        PerfModel::new(&shape, GpuPreset::by_id(gpu).unwrap(), weights, KvCacheDtype::Auto, tp).unwrap()
    }

    #[test]
    fn decode_is_bandwidth_bound_and_grows_with_context() {
        let m = model("llama-3.1-8b", "h100-sxm", WeightDtype::Bf16, 1);
        let short = m.iteration(BatchWork::default().add_generation(100.0, 1.0));
        assert!(short.memory_ms > 10.0 * short.compute_ms);
        assert!(m.decode_step_ms(32_000) > m.decode_step_ms(100));
        // The model never beats the bound.
        assert!(1000.0 / m.decode_step_ms(1) < m.bandwidth_bound_tokens_per_s());
    }

    #[test]
    fn fp8_and_tensor_parallelism_cut_decode_time() {
        let bf16 = model("llama-3.1-70b", "h100-sxm", WeightDtype::Bf16, 4);
        let fp8 = model("llama-3.1-70b", "h100-sxm", WeightDtype::Fp8, 4);
        assert!(fp8.decode_step_ms(1000) < 0.6 * bf16.decode_step_ms(1000));
        let tp8 = model("llama-3.1-70b", "h100-sxm", WeightDtype::Bf16, 8);
        assert!(tp8.decode_step_ms(1000) < bf16.decode_step_ms(1000));
        assert!(tp8.iteration(BatchWork::default().add_generation(1000.0, 1.0)).allreduce_ms > 0.0);
    }

    #[test]
    fn prefill_chunks_follow_the_token_budget() {
        let m = model("qwen2.5-7b", "rtx-a6000", WeightDtype::Bf16, 1);
        // 5000 tokens in a 2048 budget: 2048 + 2048 + 904, each chunk attending to the ones before.
        let chunked = m.ttft_ms(5000, 2048, 32);
        let mut expected = 0.0;
        for (chunk, past) in [(2048.0, 0.0), (2048.0, 2048.0), (904.0, 4096.0)] {
            expected += m.iteration(BatchWork::default().add_context(chunk, past, past + chunk >= 5000.0)).total_ms;
        }
        assert!((chunked - expected).abs() < 1e-9);
        assert!(chunked > m.ttft_ms(5000, 8192, 32));
    }

    #[test]
    fn refuses_fp8_on_ampere_and_models_that_do_not_fit() {
        let shape = ModelPreset::by_id("llama-3.1-70b").unwrap().shape;
        let a100 = GpuPreset::by_id("a100-sxm-80gb").unwrap();
        let err = PerfModel::new(&shape, a100, WeightDtype::Fp8, KvCacheDtype::Auto, 4).unwrap_err();
        assert!(matches!(err, SimError::Fp8Unsupported { .. }), "{err}");
        assert!(err.to_string().contains("Ampere"), "{err}");
        let one = PerfModel::new(&shape, a100, WeightDtype::Bf16, KvCacheDtype::Auto, 1).unwrap();
        let reserve = one.runtime_reserve_bytes(8192, 256, 1);
        assert!(matches!(one.kv_capacity_tokens(0.9, reserve), Err(SimError::DoesNotFit { .. })));
        assert!(PerfModel::new(&shape, a100, WeightDtype::Bf16, KvCacheDtype::Auto, 3).is_err());
    }
}
