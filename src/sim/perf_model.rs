//! The simulated GPU's timing and memory model, the only one: the C++ simulator asks it for every
//! iteration's time through a sim-only bridge (src/sim/bridge.rs), `trtllm plan` prunes with it and
//! the benchmark puts its predictions next to measured figures.
//!
//! An iteration is a fold over the engine's list of operations (src/sim/ops.rs, built once by
//! src/sim/op_list.rs from the engine's description): per layer the norms, projections, attention and
//! the dense MLP or the Mixture-of-Experts pipeline, the all-reduces; then the output head, the logits
//! gather and sampling; pipeline hand-offs, LoRA, the speculative drafter, plus a fixed per-iteration
//! host overhead. docs/simulator.md derives every term and says which figures are measured.

use serde::Serialize;

pub use super::batch_work::BatchWork;
use super::error::SimError;
use super::gpu::GpuPreset;
use super::kernels::{Kernels, OpLoad};
use super::model::{KvCacheDtype, ModelShape, WeightDtype};
use super::ops::{Kernel, Op, Part};
use super::simulated_engine::SimulatedEngine;
pub use super::timing_spec::{DEFAULT_MOE_IMBALANCE, Drafter, TimingSpec};
use crate::engine::EngineDescription;

/// TensorRT-LLM's default `free_gpu_memory_fraction`, as the single-precision value the executor holds.
pub const DEFAULT_FREE_GPU_MEMORY_FRACTION: f64 = 0.9f32 as f64;

/// One iteration's time and its parts, milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct IterationTime {
    /// Fixed per-iteration host overhead.
    pub overhead_ms: f64,
    /// The dense linear layers' GEMMs.
    pub gemm_ms: f64,
    /// Mixture-of-Experts layers: router, permutation, grouped expert GEMMs and finalize.
    pub moe_ms: f64,
    /// Context (flash) attention.
    pub context_attention_ms: f64,
    /// Decode attention (KV-cache reads).
    pub decode_attention_ms: f64,
    /// Norms, residual adds, activations, FP8 activation quantization and the embedding lookup.
    pub memory_passes_ms: f64,
    /// The output head, the logits gather and sampling.
    pub logits_ms: f64,
    /// Tensor-parallel all-reduces (two per layer).
    pub allreduce_ms: f64,
    /// Pipeline-parallel hand-offs between stages.
    pub pipeline_ms: f64,
    /// LoRA adapters' GEMMs and host -> device adapter copies.
    pub lora_ms: f64,
    /// Speculative decoding: the drafter's own passes.
    pub drafter_ms: f64,
    /// The sum: overhead + every operation.
    pub total_ms: f64,
}

impl IterationTime {
    /// The forward pass alone (everything but the fixed host overhead), milliseconds.
    pub fn forward_ms(&self) -> f64 {
        self.total_ms - self.overhead_ms
    }
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

/// The timing and memory model of one engine (model shape, precision, parallelism) on one GPU.
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
    spec: TimingSpec,
    ops: Vec<Op>,
    /// Weight bytes each GPU holds.
    resident_weight_bytes: f64,
    /// KV-cache bytes one token occupies on each GPU (its stage's layers, its KV heads).
    kv_bytes_per_token: f64,
}

impl PerfModel {
    /// The model of `shape` in `weights`/`kv_cache` precision split over `tp` GPUs of type `gpu`, with
    /// trtllm-build's default build limits.
    ///
    /// Fails when FP8 is asked of a GPU without FP8 tensor cores, or the shape or `tp` cannot work (the
    /// description's rules: [`EngineDescription::resolve`]).
    pub fn new(
        shape: &ModelShape,
        gpu: &GpuPreset,
        weights: WeightDtype,
        kv_cache: KvCacheDtype,
        tp: usize,
    ) -> Result<Self, SimError> {
        let engine = SimulatedEngine {
            architecture: shape.family.architecture().to_string(),
            shape: *shape,
            weight_dtype: weights,
            kv_cache_dtype: kv_cache,
            tp_size: tp,
            ..SimulatedEngine::default()
        };
        let mut config = engine.config_json();
        // The model, its precision and its split only: the build limits take trtllm-build's defaults.
        config.build_config = Default::default();
        config.pretrained_config.max_position_embeddings = None;
        Self::from_spec(TimingSpec::from_description(&EngineDescription::resolve(&config)?)?, gpu)
    }

    /// The model of an engine described by `spec` on `gpu`. The description's rules were checked when it
    /// was resolved; what is left is the GPU's: FP8 needs FP8 tensor cores.
    pub fn from_spec(spec: TimingSpec, gpu: &GpuPreset) -> Result<Self, SimError> {
        let fp8_unsupported =
            |what| SimError::Fp8Unsupported { what, gpu: gpu.id.clone(), architecture: gpu.architecture.clone() };
        if spec.weights().fp8_math && !gpu.has_fp8() {
            return Err(fp8_unsupported("FP8 weights"));
        }
        if spec.kv_cache_fp8() && !gpu.has_fp8() {
            return Err(fp8_unsupported("an FP8 KV cache"));
        }
        let ops = super::op_list::build(&spec, gpu);
        let pp = spec.pp() as f64;
        let streamed: f64 = ops.iter().map(Op::streamed_bytes).sum();
        let tables: f64 = ops.iter().map(|op| op.table_bytes).sum();
        // Each stage keeps its layers' K/V: what decode attention reads per cached token, over the stages.
        let kv_bytes_per_token: f64 = ops
            .iter()
            .map(|op| match op.kernel {
                Kernel::DecodeAttention { bytes_per_token } => bytes_per_token * op.count,
                _ => 0.0,
            })
            .sum();
        Ok(PerfModel {
            gpu: gpu.clone(),
            resident_weight_bytes: streamed / pp + tables,
            kv_bytes_per_token: kv_bytes_per_token / pp,
            ops,
            spec,
        })
    }

    /// The model of a simulated engine, from the description its config.json resolves to and its
    /// simulation.json (exactly what the simulator will load).
    pub fn for_engine(engine: &SimulatedEngine) -> Result<Self, SimError> {
        Self::from_description(&engine.description()?, &engine.simulation_json())
    }

    /// The GPU (with any overrides).
    pub fn gpu(&self) -> &GpuPreset {
        &self.gpu
    }

    /// The engine description.
    pub fn spec(&self) -> &TimingSpec {
        &self.spec
    }

    /// The operations of one forward pass, in order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The same model with kernels launched from CUDA graphs (`true`) or one host enqueue each.
    pub fn with_cuda_graphs(mut self, cuda_graphs: bool) -> Self {
        self.spec = self.spec.with_cuda_graphs(cuda_graphs);
        self
    }

    /// Each operation's milliseconds in an iteration doing `work` (for `trtllm sim predict`).
    pub fn op_times(&self, work: &BatchWork) -> Vec<(&Op, f64)> {
        let k = Kernels::new(&self.gpu, self.spec.cuda_graphs());
        self.ops.iter().map(|op| (op, if work.tokens > 0.0 { op.seconds(&k, work) * 1e3 } else { 0.0 })).collect()
    }

    /// The time of an iteration doing `work`.
    pub fn iteration(&self, work: &BatchWork) -> IterationTime {
        self.iteration_load(work).0
    }

    /// The time of an iteration doing `work`, and what its operations compute and move through device
    /// memory on one GPU (the FLOPs and bytes the time is priced from; the pipeline's stages summed).
    pub fn iteration_load(&self, work: &BatchWork) -> (IterationTime, OpLoad) {
        let mut time = IterationTime { overhead_ms: self.gpu.iteration_overhead_ms, ..IterationTime::default() };
        let mut load = OpLoad::default();
        if work.tokens <= 0.0 {
            // Nothing scheduled: no forward pass.
            time.total_ms = time.overhead_ms;
            return (time, load);
        }
        let k = Kernels::new(&self.gpu, self.spec.cuda_graphs());
        let mut total = 0.0;
        for op in &self.ops {
            let (seconds, op_load) = op.cost(&k, work);
            let ms = seconds * 1e3;
            total += ms;
            load += op_load;
            *match op.part {
                Part::Gemm => &mut time.gemm_ms,
                Part::Moe => &mut time.moe_ms,
                Part::ContextAttention => &mut time.context_attention_ms,
                Part::DecodeAttention => &mut time.decode_attention_ms,
                Part::MemoryPasses => &mut time.memory_passes_ms,
                Part::Logits => &mut time.logits_ms,
                Part::AllReduce => &mut time.allreduce_ms,
                Part::Pipeline => &mut time.pipeline_ms,
                Part::Lora => &mut time.lora_ms,
                Part::Drafter => &mut time.drafter_ms,
            } += ms;
        }
        time.total_ms = time.overhead_ms + total;
        (time, load)
    }

    /// Weight bytes each GPU holds.
    pub fn weight_bytes_per_gpu(&self) -> f64 {
        self.resident_weight_bytes
    }

    /// Weight bytes each GPU reads per forward pass (all but the input embedding table; every expert).
    pub fn streamed_weight_bytes_per_gpu(&self) -> f64 {
        self.ops.iter().map(Op::streamed_bytes).sum()
    }

    /// KV-cache bytes per token on each GPU.
    pub fn kv_bytes_per_token_per_gpu(&self) -> f64 {
        self.kv_bytes_per_token
    }

    /// The single-stream bandwidth bound: one pass over the weights a token reads (MoE: its experts) at peak
    /// bandwidth per token, tokens/s.
    pub fn bandwidth_bound_tokens_per_s(&self) -> f64 {
        self.gpu.bandwidth_gb_s * 1e9 / self.ops.iter().map(Op::single_token_bytes).sum::<f64>()
    }

    /// One decoding step of a single request whose cache holds `context` tokens, milliseconds.
    pub fn decode_step_ms(&self, context: usize) -> f64 {
        // A sliding window (Mistral) attends to at most its width of cached tokens.
        let context = self.spec.shape().sliding_window.map_or(context, |window| context.min(window));
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
}

impl SimulatedEngine {
    /// The timing and memory model of this engine on its GPU; fails as the simulator would refuse to load it
    /// (FP8 without FP8 tensor cores, a memory budget with no room for the KV cache, an unknown GPU).
    pub fn perf_model(&self) -> Result<PerfModel, SimError> {
        let model = PerfModel::for_engine(self)?;
        model.memory_budget(model.spec().limits(), DEFAULT_FREE_GPU_MEMORY_FRACTION).check()?;
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
        assert!(short.gemm_ms > 10.0 * short.decode_attention_ms);
        assert!(m.decode_step_ms(32_000) > m.decode_step_ms(100));
        // The model never beats the bound.
        assert!(1000.0 / m.decode_step_ms(1) < m.bandwidth_bound_tokens_per_s());
    }

    #[test]
    fn fp8_and_tensor_parallelism_cut_decode_time() {
        let bf16 = model("llama-3.1-70b", "h100-sxm", WeightDtype::Bf16, 4);
        let fp8 = model("llama-3.1-70b", "h100-sxm", WeightDtype::Fp8, 4);
        // FP8 halves the weights the GEMMs stream; launches, all-reduces and the 16-bit head do not shrink.
        let step = |m: &PerfModel| m.iteration(BatchWork::default().add_generation(1000.0, 1.0));
        assert!(step(&fp8).gemm_ms < 0.6 * step(&bf16).gemm_ms);
        assert!(fp8.decode_step_ms(1000) < 0.8 * bf16.decode_step_ms(1000));
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
        let budget = one.memory_budget(one.spec().limits(), 0.9);
        assert!(matches!(budget.check(), Err(SimError::DoesNotFit { .. })));
        assert!(PerfModel::new(&shape, a100, WeightDtype::Bf16, KvCacheDtype::Auto, 3).is_err());
    }
}
