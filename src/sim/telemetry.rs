//! The simulated GPU's telemetry: what each iteration the timing model times would show on a
//! real GPU (memory traffic, tensor FLOPs, memory in use), accumulated for a sampler to read,
//! so the bench's GPU telemetry path runs without a GPU.

use std::sync::atomic::{AtomicU64, Ordering};

use super::perf_model::{BatchWork, PerfModel};

/// What the simulated executors' iterations added up to since the last [`take`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SimGpuActivity {
    /// Iterations timed.
    pub iterations: u64,
    /// Their simulated time, milliseconds (the GPU's busy time).
    pub busy_ms: f64,
    /// Bytes they moved through device memory per GPU: streamed weights and KV-cache reads and writes.
    pub bytes: f64,
    /// Tensor FLOPs per GPU of their linear layers.
    pub flops: f64,
    /// Device memory in use per GPU at the last iteration: weights plus the KV cache its
    /// requests hold, bytes.
    pub memory_used_bytes: f64,
    /// Device memory per GPU, bytes.
    pub memory_total_bytes: f64,
    /// Peak memory bandwidth, bytes per second.
    pub peak_bytes_per_s: f64,
    /// Peak dense 16-bit tensor FLOP/s.
    pub peak_flops: f64,
}

/// The running sums, in atomics rather than behind a lock: the sampler reading them may run at
/// idle priority (`trtllm::bench::spawn_observer`), and a lock it held while preempted would
/// stall the executor's iteration loop behind it.
struct Accumulated {
    iterations: AtomicU64,
    busy_ms: AtomicF64,
    bytes: AtomicF64,
    flops: AtomicF64,
    memory_used_bytes: AtomicF64,
    memory_total_bytes: AtomicF64,
    peak_bytes_per_s: AtomicF64,
    peak_flops: AtomicF64,
}

static ACTIVITY: Accumulated = Accumulated {
    iterations: AtomicU64::new(0),
    busy_ms: AtomicF64::zero(),
    bytes: AtomicF64::zero(),
    flops: AtomicF64::zero(),
    memory_used_bytes: AtomicF64::zero(),
    memory_total_bytes: AtomicF64::zero(),
    peak_bytes_per_s: AtomicF64::zero(),
    peak_flops: AtomicF64::zero(),
};

/// An `f64` in an `AtomicU64`'s bits.
struct AtomicF64(AtomicU64);

impl AtomicF64 {
    const fn zero() -> AtomicF64 {
        AtomicF64(AtomicU64::new(0)) // 0.0's bits
    }

    fn add(&self, x: f64) {
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| Some((f64::from_bits(bits) + x).to_bits()));
    }

    fn store(&self, x: f64) {
        self.0.store(x.to_bits(), Ordering::Relaxed);
    }

    fn load(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }

    fn take(&self) -> f64 {
        f64::from_bits(self.0.swap(0, Ordering::Relaxed))
    }
}

/// Adds one timed iteration of `model` doing `work` in `total_ms` (the bridge calls it per
/// iteration; a few multiplications and atomic adds).
pub fn record_iteration(model: &PerfModel, work: &BatchWork, total_ms: f64) {
    let spec = model.spec();
    let kv = model.kv_bytes_per_token_per_gpu();
    let weights = model.weight_bytes_per_gpu();
    let params = weights / spec.weights().bytes_per_param.max(f64::MIN_POSITIVE);
    let gpu = model.gpu();
    let a = &ACTIVITY;
    a.busy_ms.add(total_ms);
    if work.tokens > 0.0 {
        a.bytes.add(model.streamed_weight_bytes_per_gpu() + kv * (work.kv_tokens_read + work.kv_tokens_written));
        a.flops.add(2.0 * params * work.tokens);
    }
    a.memory_used_bytes.store(weights + kv * (work.kv_tokens_read + work.context_tokens));
    a.memory_total_bytes.store(gpu.memory_bytes());
    a.peak_bytes_per_s.store(gpu.bandwidth_gb_s * 1e9);
    a.peak_flops.store(gpu.bf16_tflops * 1e12);
    // Counted last: a reader that sees the count sees the figures the iteration added.
    a.iterations.fetch_add(1, Ordering::Release);
}

/// What the iterations added up to since the last call (`None` while none has ever run),
/// starting over; memory in use and the peaks carry over to the next window. An iteration
/// recorded while this reads may land in this window or the next, in part: a sampler's periods
/// are long enough for that not to show.
pub fn take() -> Option<SimGpuActivity> {
    let a = &ACTIVITY;
    let iterations = a.iterations.swap(0, Ordering::Acquire);
    if iterations == 0 && a.memory_total_bytes.load() == 0.0 {
        return None;
    }
    Some(SimGpuActivity {
        iterations,
        busy_ms: a.busy_ms.take(),
        bytes: a.bytes.take(),
        flops: a.flops.take(),
        memory_used_bytes: a.memory_used_bytes.load(),
        memory_total_bytes: a.memory_total_bytes.load(),
        peak_bytes_per_s: a.peak_bytes_per_s.load(),
        peak_flops: a.peak_flops.load(),
    })
}
