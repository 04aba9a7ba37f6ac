//! The simulated executor as a telemetry source: the timing model's counterparts of NVML's
//! figures (memory in use, memory-bandwidth and compute utilization) over each sample period.

use std::time::Instant;

use super::source::{GpuSample, TelemetrySource};
use crate::executor::Executor;
use crate::sim::telemetry::SimTelemetry;

/// Reads one simulated executor's [`SimTelemetry`] each sample: utilization is the modelled bytes
/// and FLOPs over the period's wall time at the simulated GPU's peaks.
///
/// A source is made per point and carries nothing from before it: its first sample only opens
/// the first period (a rate over no time would be a spike), and memory in use is the point's own
/// last iteration's, or the idle executor's weights before the point's first iteration.
#[derive(Debug)]
pub struct SimulatedSource {
    telemetry: SimTelemetry,
    /// When the current period began; `None` until the first sample opens it.
    period_start: Option<Instant>,
    /// Memory in use at the point's last iteration so far.
    memory_used_bytes: f64,
}

impl SimulatedSource {
    /// The source for `executor`'s GPU; `None` unless it is a simulated executor.
    pub fn of(executor: &Executor) -> Option<Self> {
        let telemetry = SimTelemetry::of(executor)?;
        let memory_used_bytes = telemetry.idle_memory_bytes();
        Some(SimulatedSource { telemetry, period_start: None, memory_used_bytes })
    }
}

impl TelemetrySource for SimulatedSource {
    fn kind(&self) -> &'static str {
        "simulated"
    }

    fn sample(&mut self, t_s: f64) -> Vec<GpuSample> {
        let now = Instant::now();
        let activity = self.telemetry.take();
        let Some(start) = self.period_start.replace(now) else {
            // What ran before the point belongs to no period of it.
            return Vec::new();
        };
        let period_s = now.duration_since(start).as_secs_f64();
        if let Some(used) = activity.memory_used_bytes {
            self.memory_used_bytes = used;
        }
        let share = |amount: f64, peak: f64| {
            (period_s > 0.0 && peak > 0.0).then(|| (amount / (peak * period_s) * 100.0).min(100.0))
        };
        let t = &self.telemetry;
        vec![GpuSample {
            t_s,
            gpu: 0,
            gpu_util_pct: share(activity.flops, t.peak_flops()),
            mem_util_pct: share(activity.bytes, t.peak_bytes_per_s()),
            memory_used_bytes: Some(self.memory_used_bytes),
            memory_total_bytes: Some(t.memory_total_bytes()),
            ..GpuSample::default()
        }]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimulatedEngine;
    use crate::{ExecutorConfig, GenerationRequest};

    #[test]
    fn a_point_starts_with_neither_a_spike_nor_the_last_points_figures() {
        let dir = tempfile::tempdir().unwrap();
        SimulatedEngine::builder().iteration_ms(2.0).build().write_to(dir.path()).unwrap();
        let executor = Executor::load(dir.path(), ExecutorConfig::default()).unwrap();
        let run = |output: u32| {
            let prompt = (1..=64).collect();
            executor.enqueue(GenerationRequest::new(prompt, output)).unwrap().blocking_iter().for_each(drop);
        };
        let weights = SimTelemetry::of(&executor).unwrap().idle_memory_bytes();
        // The previous point: busy, its requests holding KV cache.
        run(16);
        let mut source = SimulatedSource::of(&executor).unwrap();
        // A rate needs a period: the first sample only opens it, whatever ran before.
        assert!(source.sample(0.0).is_empty());
        std::thread::sleep(std::time::Duration::from_millis(30));
        let idle = source.sample(0.03);
        assert_eq!(idle.len(), 1);
        assert_eq!((idle[0].gpu_util_pct, idle[0].mem_util_pct), (Some(0.0), Some(0.0)));
        assert_eq!(idle[0].memory_used_bytes, Some(weights), "an idle executor holds its weights, no cache");
        run(16);
        let busy = &source.sample(0.1)[0];
        let util = busy.mem_util_pct.unwrap();
        assert!(util > 0.0 && util <= 100.0, "{busy:?}");
        assert!(busy.memory_used_bytes.unwrap() > weights, "{busy:?}");
    }
}
