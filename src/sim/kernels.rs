//! The time of each kind of GPU operation in a forward pass (GEMMs, attention, memory passes,
//! all-reduces) from its bytes and FLOPs and a GPU's figures; docs/simulator.md derives each one.

use super::gpu::GpuPreset;

/// Seconds in a microsecond.
const US: f64 = 1e-6;

/// What an operation computes and moves through one GPU's device memory in an iteration: the figures its
/// time is priced from, and what the simulated GPU telemetry reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct OpLoad {
    /// Tensor FLOPs (linear layers, attention, LoRA, the drafter).
    pub flops: f64,
    /// Bytes read or written in device memory (weights, activations, KV cache); link traffic is not here.
    pub bytes: f64,
}

impl OpLoad {
    /// `rows` rows of `k` 16-bit activations by the `k` x `n` weights of `experts` distinct matrices (1 for a
    /// dense GEMM), 16-bit out: every weight read once, the activations in and out.
    pub(crate) fn gemm(rows: f64, experts: f64, k: f64, n: f64, weights: WeightFormat) -> OpLoad {
        if rows <= 0.0 || k <= 0.0 || n <= 0.0 {
            return OpLoad::default();
        }
        OpLoad { flops: 2.0 * rows * k * n, bytes: experts * k * n * weights.bytes_per_param + rows * (k + n) * 2.0 }
    }

    /// Only bytes (a memory-bound pass).
    pub(crate) fn bytes(bytes: f64) -> OpLoad {
        OpLoad { flops: 0.0, bytes }
    }

    /// This load `times` over.
    pub(crate) fn times(self, times: f64) -> OpLoad {
        OpLoad { flops: self.flops * times, bytes: self.bytes * times }
    }
}

impl std::ops::AddAssign for OpLoad {
    fn add_assign(&mut self, other: OpLoad) {
        self.flops += other.flops;
        self.bytes += other.bytes;
    }
}

/// How the linear layers' weights are stored and multiplied.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct WeightFormat {
    /// Bytes per weight parameter (2 for 16-bit, 1 for FP8/INT8, 0.5 for INT4).
    pub bytes_per_param: f64,
    /// The GEMMs run on FP8 tensor cores (FP8 weights and activations); otherwise at the 16-bit rate.
    pub fp8_math: bool,
}

/// One GPU's operation costs, with or without CUDA graphs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kernels<'a> {
    gpu: &'a GpuPreset,
    /// The least time a kernel takes: its launch (host enqueue, or graph replay) or its ramp-up.
    floor_s: f64,
}

impl<'a> Kernels<'a> {
    pub(crate) fn new(gpu: &'a GpuPreset, cuda_graphs: bool) -> Self {
        let launch = if cuda_graphs { gpu.graph_launch_us } else { gpu.launch_us };
        Kernels { gpu, floor_s: launch.max(gpu.kernel_floor_us) * US }
    }

    fn bandwidth(&self, efficiency: f64) -> f64 {
        self.gpu.bandwidth_gb_s * 1e9 * efficiency
    }

    /// Achieved tensor rate of large GEMMs, FLOP/s.
    pub(crate) fn gemm_rate(&self, fp8_math: bool) -> f64 {
        match (fp8_math, self.gpu.fp8_tflops) {
            (true, Some(fp8)) => fp8 * 1e12 * self.gpu.fp8_gemm_efficiency,
            _ => self.gpu.bf16_tflops * 1e12 * self.gpu.mfu,
        }
    }

    /// A GEMM of `rows` x `k` activations (16-bit in, 16-bit out) by a `k` x `n` weight (see
    /// [`Kernels::gemm_load`]).
    pub(crate) fn gemm(&self, rows: f64, k: f64, n: f64, weights: WeightFormat) -> f64 {
        self.gemm_load(OpLoad::gemm(rows, 1.0, k, n, weights), weights.fp8_math)
    }

    /// A GEMM (or one rank's grouped expert GEMM) that moves `load.bytes` and computes `load.flops`
    /// ([`OpLoad::gemm`]): streaming the weights and the activations bounds it at few rows, the tensor rate at
    /// many; the two blend smoothly (a 4-norm: the tile pipeline overlaps loads and math only partly near the
    /// knee), plus the floor.
    pub(crate) fn gemm_load(&self, load: OpLoad, fp8_math: bool) -> f64 {
        if load.flops <= 0.0 {
            return 0.0;
        }
        let memory = load.bytes / self.bandwidth(self.gpu.bandwidth_efficiency);
        let compute = load.flops / self.gemm_rate(fp8_math);
        self.floor_s + (memory.powi(4) + compute.powi(4)).powf(0.25)
    }

    /// A memory-bound pass (norm, activation, residual add, quantization, sampling) moving `bytes`.
    pub(crate) fn memory_pass(&self, bytes: f64) -> f64 {
        if bytes <= 0.0 {
            return 0.0;
        }
        self.floor_s + bytes / self.bandwidth(self.gpu.elementwise_efficiency)
    }

    /// Context (flash) attention: `flops` over `rows` query rows; the rate grows with the rows as the
    /// query tiles fill the GPU, approaching `attention_efficiency` of the 16-bit peak.
    pub(crate) fn context_attention(&self, rows: f64, flops: f64) -> f64 {
        if rows <= 0.0 {
            return 0.0;
        }
        let peak = self.gpu.bf16_tflops * 1e12 * self.gpu.attention_efficiency;
        let rate = peak * rows / (rows + self.gpu.attention_rows_half);
        self.floor_s + flops / rate
    }

    /// Decode attention reading `kv_bytes` of cache: bandwidth-bound. TensorRT-LLM's multi-block mode
    /// splits long contexts across thread blocks, so few long sequences read at the same rate as many
    /// short ones.
    pub(crate) fn decode_attention(&self, kv_bytes: f64) -> f64 {
        if kv_bytes <= 0.0 {
            return 0.0;
        }
        self.floor_s + kv_bytes / self.bandwidth(self.gpu.decode_attention_efficiency)
    }

    /// One all-reduce of `bytes` across `ranks` GPUs, not overlapped with compute. Each rank sends and
    /// receives 2(n-1)/n of the payload at the achieved bus bandwidth; the fixed cost is paid once with
    /// TensorRT-LLM's custom all-reduce (peer memory over NVLink), once per ring step with NCCL.
    pub(crate) fn allreduce(&self, bytes: f64, ranks: f64) -> f64 {
        if ranks <= 1.0 || bytes <= 0.0 {
            return 0.0;
        }
        let link = self.gpu.interconnect_gb_s * 1e9 * self.gpu.interconnect_efficiency;
        let steps = if self.gpu.custom_allreduce { 1.0 } else { 2.0 * (ranks - 1.0) };
        steps * self.gpu.allreduce_latency_us * US + 2.0 * (ranks - 1.0) / ranks * bytes / link
    }

    /// Sending `bytes` of activations to the next pipeline stage.
    pub(crate) fn send(&self, bytes: f64) -> f64 {
        let link = self.gpu.interconnect_gb_s * 1e9 * self.gpu.interconnect_efficiency;
        self.gpu.allreduce_latency_us * US + bytes / link
    }
}
