//! The simulated executor as a telemetry source: the timing model's counterparts of NVML's
//! figures (memory in use, memory-bandwidth and compute utilization) over each sample period.

use std::time::Instant;

use super::source::{GpuSample, TelemetrySource};

/// Reads [`crate::sim::telemetry`]'s accumulated iterations each sample: utilization is the
/// modelled bytes and FLOPs over the period's wall time at the simulated GPU's peaks.
#[derive(Debug)]
pub struct SimulatedSource {
    last: Instant,
}

impl SimulatedSource {
    /// Starts a window now (what ran before is dropped).
    pub fn new() -> Self {
        let _ = crate::sim::telemetry::take();
        SimulatedSource { last: Instant::now() }
    }
}

impl Default for SimulatedSource {
    fn default() -> Self {
        Self::new()
    }
}

impl TelemetrySource for SimulatedSource {
    fn kind(&self) -> &'static str {
        "simulated"
    }

    fn sample(&mut self, t_s: f64) -> Vec<GpuSample> {
        let period_s = self.last.elapsed().as_secs_f64();
        self.last = Instant::now();
        let Some(a) = crate::sim::telemetry::take() else { return Vec::new() };
        let share = |amount: f64, peak: f64| {
            (period_s > 0.0 && peak > 0.0).then(|| (amount / (peak * period_s) * 100.0).min(100.0))
        };
        vec![GpuSample {
            t_s,
            gpu: 0,
            gpu_util_pct: share(a.flops, a.peak_flops),
            mem_util_pct: share(a.bytes, a.peak_bytes_per_s),
            memory_used_bytes: Some(a.memory_used_bytes),
            memory_total_bytes: Some(a.memory_total_bytes),
            ..GpuSample::default()
        }]
    }
}
