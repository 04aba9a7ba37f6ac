//! The simulated GPU's telemetry: what each iteration the timing model times would show on a
//! real GPU (memory traffic, tensor FLOPs, memory in use), accumulated per simulated executor
//! for a sampler to read, so the bench's GPU telemetry path runs without a GPU.
//!
//! Each simulated executor owns one [`SimTelemetry`] (made when it loads its engine, through the
//! sim-only bridge); [`SimTelemetry::of`] finds an executor's, so executors in one process never
//! mix their activity. The FLOPs and bytes are the ones the timing model prices the iteration
//! from ([`PerfModel::iteration_load`]): a fold over the engine's operations, in which an MoE layer
//! reads the experts the batch touches.
// The real build has no bridge to record iterations: what only the simulator calls is unused there.
#![cfg_attr(trtllm_real, allow(dead_code))]

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::kernels::OpLoad;
use super::perf_model::{BatchWork, PerfModel};
use crate::executor::Executor;

/// What an executor's iterations added up to since the last [`SimTelemetry::take`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SimGpuActivity {
    /// Iterations timed.
    pub iterations: u64,
    /// Their simulated time, milliseconds (the GPU's busy time).
    pub busy_ms: f64,
    /// Bytes they moved through device memory per GPU: weights read (an MoE layer's touched
    /// experts), activations, KV-cache reads and writes.
    pub bytes: f64,
    /// Tensor FLOPs per GPU: linear layers (an MoE layer's routed rows), attention, LoRA, drafter.
    pub flops: f64,
    /// Device memory in use per GPU at the window's last iteration (weights plus the KV cache its
    /// requests held), bytes; `None` when no iteration ran in the window.
    pub memory_used_bytes: Option<f64>,
}

/// One simulated executor's GPU telemetry: running sums of its iterations and its GPU's figures.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use trtllm::sim::SimulatedEngine;
/// use trtllm::sim::telemetry::SimTelemetry;
/// use trtllm::{Executor, ExecutorConfig, GenerationRequest};
///
/// let dir = tempfile::tempdir()?;
/// SimulatedEngine::builder().time_scale(0.0).build().write_to(dir.path())?;
/// let executor = Executor::load(dir.path(), ExecutorConfig::default())?;
/// let telemetry = SimTelemetry::of(&executor).expect("a simulated executor");
/// executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 4))?.blocking_iter().for_each(drop);
/// let activity = telemetry.take();
/// assert_eq!(activity.iterations, 4);
/// assert!(activity.flops > 0.0 && activity.bytes > 0.0);
/// // Taken: the next window starts empty.
/// assert_eq!(telemetry.take().iterations, 0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SimTelemetry {
    shared: Arc<Accumulated>,
}

/// The running sums, in atomics rather than behind a lock: the sampler reading them may run at
/// idle priority (`trtllm::bench::spawn_observer`), and a lock it held while preempted would
/// stall the executor's iteration loop behind it.
#[derive(Debug)]
struct Accumulated {
    iterations: AtomicU64,
    busy_ms: AtomicF64,
    bytes: AtomicF64,
    flops: AtomicF64,
    /// Memory in use at the last iteration since the last take; NaN when none ran.
    memory_used_bytes: AtomicF64,
    figures: GpuFigures,
}

/// What the executor's GPU is: fixed when the engine loads.
#[derive(Debug, Clone, Copy)]
struct GpuFigures {
    weight_bytes: f64,
    kv_bytes_per_token: f64,
    pipeline_stages: f64,
    memory_total_bytes: f64,
    peak_bytes_per_s: f64,
    peak_flops: f64,
}

/// An `f64` in an `AtomicU64`'s bits.
#[derive(Debug)]
struct AtomicF64(AtomicU64);

impl AtomicF64 {
    fn new(x: f64) -> AtomicF64 {
        AtomicF64(AtomicU64::new(x.to_bits()))
    }

    fn add(&self, x: f64) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| Some((f64::from_bits(bits) + x).to_bits()));
    }

    fn store(&self, x: f64) {
        self.0.store(x.to_bits(), Ordering::Relaxed);
    }

    fn swap(&self, x: f64) -> f64 {
        f64::from_bits(self.0.swap(x.to_bits(), Ordering::Relaxed))
    }
}

/// Every live executor's telemetry by the key the executor hands out (`ExecutorHandle::sim_telemetry_key`):
/// a lookup table only, the sums live in each handle.
fn registry() -> &'static Mutex<HashMap<u64, Weak<Accumulated>>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u64, Weak<Accumulated>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

impl SimTelemetry {
    /// A new, empty telemetry for an executor running `model`, and the key that finds it.
    pub(crate) fn register(model: &PerfModel) -> (SimTelemetry, u64) {
        static NEXT_KEY: AtomicU64 = AtomicU64::new(1);
        let gpu = model.gpu();
        let figures = GpuFigures {
            weight_bytes: model.weight_bytes_per_gpu(),
            kv_bytes_per_token: model.kv_bytes_per_token_per_gpu(),
            pipeline_stages: model.spec().pp().max(1) as f64,
            memory_total_bytes: gpu.memory_bytes(),
            peak_bytes_per_s: gpu.bandwidth_gb_s * 1e9,
            peak_flops: gpu.bf16_tflops * 1e12,
        };
        let shared = Arc::new(Accumulated {
            iterations: AtomicU64::new(0),
            busy_ms: AtomicF64::new(0.0),
            bytes: AtomicF64::new(0.0),
            flops: AtomicF64::new(0.0),
            memory_used_bytes: AtomicF64::new(f64::NAN),
            figures,
        });
        let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut map) = registry().lock() {
            map.retain(|_, live| live.strong_count() > 0);
            map.insert(key, Arc::downgrade(&shared));
        }
        (SimTelemetry { shared }, key)
    }

    /// The telemetry of `executor`: `Some` for a simulated executor that is still loaded, `None` on
    /// TensorRT-LLM.
    pub fn of(executor: &Executor) -> Option<SimTelemetry> {
        let key = executor.sim_telemetry_key()?;
        let shared = registry().lock().ok()?.get(&key)?.upgrade()?;
        Some(SimTelemetry { shared })
    }

    /// Adds one iteration that did `work` in `total_ms`, moving and computing `load` over the
    /// pipeline's stages (the bridge calls it per iteration; a few atomic adds).
    pub(crate) fn record_iteration(&self, work: &BatchWork, total_ms: f64, load: OpLoad) {
        let a = &*self.shared;
        let f = &a.figures;
        a.busy_ms.add(total_ms);
        // Each stage's GPU runs its share of the layers.
        a.bytes.add(load.bytes / f.pipeline_stages);
        a.flops.add(load.flops / f.pipeline_stages);
        a.memory_used_bytes.store(f.weight_bytes + f.kv_bytes_per_token * (work.kv_tokens_read + work.context_tokens));
        // Counted last: a reader that sees the count sees the figures the iteration added.
        a.iterations.fetch_add(1, Ordering::Release);
    }

    /// What the iterations added up to since the last call, starting over. An iteration recorded
    /// while this reads may land in this window or the next, in part: a sampler's periods are long
    /// enough for that not to show.
    pub fn take(&self) -> SimGpuActivity {
        let a = &*self.shared;
        let iterations = a.iterations.swap(0, Ordering::Acquire);
        let memory = a.memory_used_bytes.swap(f64::NAN);
        SimGpuActivity {
            iterations,
            busy_ms: a.busy_ms.swap(0.0),
            bytes: a.bytes.swap(0.0),
            flops: a.flops.swap(0.0),
            memory_used_bytes: (!memory.is_nan()).then_some(memory),
        }
    }

    /// Device memory an idle executor holds per GPU: its weights, bytes.
    pub fn idle_memory_bytes(&self) -> f64 {
        self.shared.figures.weight_bytes
    }

    /// Device memory per GPU, bytes.
    pub fn memory_total_bytes(&self) -> f64 {
        self.shared.figures.memory_total_bytes
    }

    /// Peak memory bandwidth, bytes per second.
    pub fn peak_bytes_per_s(&self) -> f64 {
        self.shared.figures.peak_bytes_per_s
    }

    /// Peak dense 16-bit tensor FLOP/s.
    pub fn peak_flops(&self) -> f64 {
        self.shared.figures.peak_flops
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{GpuPreset, KvCacheDtype, ModelPreset, MoeShape, WeightDtype};

    /// Mixtral-8x7B decoding a small batch: the telemetry's FLOPs are those of the experts each token is
    /// routed to (not every expert), its bytes the touched experts' weights and the KV cache, the figures
    /// the timing model prices the iteration from.
    #[test]
    fn mixtral_telemetry_counts_the_experts_a_small_batch_touches() {
        let shape = ModelPreset::by_id("mixtral-8x7b").unwrap().shape;
        let h100 = GpuPreset::by_id("h100-sxm").unwrap();
        let model = PerfModel::new(&shape, h100, WeightDtype::Bf16, KvCacheDtype::Auto, 1).unwrap();
        let (rows, past) = (4.0, 500.0);
        let mut work = BatchWork::default();
        for _ in 0..4 {
            work.add_generation(past, 1.0);
        }
        let (time, load) = model.iteration_load(&work);
        let (telemetry, _) = SimTelemetry::register(&model);
        telemetry.record_iteration(&work, time.total_ms, load);
        let activity = telemetry.take();
        assert_eq!(activity.iterations, 1);
        assert_eq!((activity.flops, activity.bytes), (load.flops, load.bytes));

        // By hand: every token through attention, the router, its top_k experts and the output head.
        let moe = shape.moe.unwrap();
        let (h, layers) = (shape.hidden_size as f64, shape.num_layers as f64);
        let (q, kv) = (shape.q_width() as f64, shape.kv_width() as f64);
        let (experts, top_k, inter) = (moe.num_experts as f64, moe.top_k as f64, moe.expert_intermediate_size as f64);
        let vocab = shape.vocab_size as f64;
        let per_token = layers * (h * (q + 2.0 * kv) + q * h + h * experts + top_k * 3.0 * h * inter) + h * vocab;
        let flops = 2.0 * rows * per_token;
        assert!((activity.flops / flops - 1.0).abs() < 1e-12, "{} vs {flops}", activity.flops);

        // Weights read: the dense parts, and the distinct experts four tokens touch (about 5.5 of 8).
        let touched = MoeShape::distinct_experts(experts, top_k, rows);
        assert!(touched > 5.0 && touched < 6.0, "{touched}");
        let weights = 2.0 * (per_token - layers * top_k * 3.0 * h * inter + layers * touched * 3.0 * h * inter);
        let kv_cache = model.kv_bytes_per_token_per_gpu() * (rows * past + rows);
        let rest = activity.bytes - weights - kv_cache;
        // What is left is the activations in and out of every operation (about 0.6 MB per token and layer):
        // never negative, and far below the 30% every expert would add.
        assert!(rest > 0.0 && rest < 2e-3 * activity.bytes, "{rest} of {}", activity.bytes);
        // Every expert would be a third more.
        assert!(activity.bytes < 0.8 * model.streamed_weight_bytes_per_gpu());
        // Memory in use: the weights and the four sequences' cache.
        let used = model.weight_bytes_per_gpu() + model.kv_bytes_per_token_per_gpu() * rows * past;
        assert_eq!(activity.memory_used_bytes, Some(used));
        assert_eq!(telemetry.take(), SimGpuActivity::default());
    }
}
