//! The simulated GPU's telemetry: what each iteration the timing model times would show on a
//! real GPU (memory traffic, tensor FLOPs, memory in use), accumulated for a sampler to read,
//! so the bench's GPU telemetry path runs without a GPU.

use std::sync::Mutex;

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

static ACTIVITY: Mutex<Option<SimGpuActivity>> = Mutex::new(None);

/// Adds one timed iteration of `model` doing `work` in `total_ms` (the bridge calls it per
/// iteration; a few multiplications and one uncontended lock).
pub fn record_iteration(model: &PerfModel, work: &BatchWork, total_ms: f64) {
    let spec = model.spec();
    let kv = model.kv_bytes_per_token_per_gpu();
    let weights = model.weight_bytes_per_gpu();
    let params = weights / spec.weights.bytes_per_param.max(f64::MIN_POSITIVE);
    let ran = work.tokens > 0.0;
    let gpu = model.gpu();
    let mut activity = ACTIVITY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let a = activity.get_or_insert_with(SimGpuActivity::default);
    a.iterations += 1;
    a.busy_ms += total_ms;
    if ran {
        a.bytes += model.streamed_weight_bytes_per_gpu() + kv * (work.kv_tokens_read + work.kv_tokens_written);
        a.flops += 2.0 * params * work.tokens;
    }
    a.memory_used_bytes = weights + kv * (work.kv_tokens_read + work.context_tokens);
    a.memory_total_bytes = gpu.memory_bytes();
    a.peak_bytes_per_s = gpu.bandwidth_gb_s * 1e9;
    a.peak_flops = gpu.bf16_tflops * 1e12;
}

/// What the iterations added up to since the last call (`None` when none ran), starting over.
pub fn take() -> Option<SimGpuActivity> {
    let mut activity = ACTIVITY.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let taken = activity.take();
    // Memory in use and the peaks carry over to the next window.
    if let Some(a) = &taken {
        *activity = Some(SimGpuActivity {
            memory_used_bytes: a.memory_used_bytes,
            memory_total_bytes: a.memory_total_bytes,
            peak_bytes_per_s: a.peak_bytes_per_s,
            peak_flops: a.peak_flops,
            ..SimGpuActivity::default()
        });
    }
    taken
}
