//! GPU telemetry beside the latencies: one interface for what a GPU reports while a run goes
//! (power, clocks, utilization, memory, temperature, throttle reasons), a sampler that reads a
//! source on its own thread, and the summary's averages. NVML is one source ([`NvmlSource`]).

mod nvml;
mod server_metrics;
mod simulated;
mod source;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use self::nvml::NvmlSource;
pub use self::server_metrics::{
    CounterChange, EndpointFigures, EndpointLog, GaugeFigures, Scraped, SeriesKind, ServerMetricsError,
    ServerMetricsSection, ServerMetricsWatch, parse_prometheus, scrape, server_metrics_rows, server_metrics_section,
};
pub use self::simulated::SimulatedSource;
pub use self::source::{GpuSample, TelemetryError, TelemetrySource};

/// Reads a source every `interval` on its own thread until [`TelemetrySampler::finish`].
#[derive(Debug)]
pub struct TelemetrySampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<GpuSample>>>,
    kind: &'static str,
}

impl TelemetrySampler {
    /// Starts sampling `source`; `each` sees every round of samples (for a live view).
    pub fn start(
        mut source: Box<dyn TelemetrySource>,
        interval: Duration,
        mut each: impl FnMut(&[GpuSample]) + Send + 'static,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let kind = source.kind();
        let flag = stop.clone();
        let thread = crate::bench::observer::spawn_observer("gpu-telemetry", move || {
            let start = Instant::now();
            let mut samples = Vec::new();
            loop {
                let round = source.sample(start.elapsed().as_secs_f64());
                each(&round);
                samples.extend(round);
                // Sleep in short steps so finishing does not wait a whole interval.
                let next = Instant::now() + interval;
                while Instant::now() < next {
                    if flag.load(Ordering::Relaxed) {
                        return samples;
                    }
                    std::thread::sleep(Duration::from_millis(10).min(interval));
                }
            }
        })
        .ok();
        TelemetrySampler { stop, thread, kind }
    }

    /// Stops sampling and returns every sample, in time order.
    pub fn finish(mut self) -> Vec<GpuSample> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok()).unwrap_or_default()
    }

    /// The source's kind.
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

impl Drop for TelemetrySampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The summary's `gpu_telemetry`: what the source was, how many samples it gave, and per GPU
/// the mean and max of each figure it reported ([`telemetry_section`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GpuTelemetry {
    /// The source's kind (`nvml`, `simulated`).
    pub source: String,
    /// Samples over every GPU.
    pub samples: usize,
    /// One entry per GPU, by index.
    pub gpus: Vec<GpuFigures>,
}

/// One GPU's figures in [`GpuTelemetry`]: the mean and max of each figure over its samples
/// (absent when the source did not report it), and the throttle reasons seen.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[allow(missing_docs)] // Each figure is named by its unit: watts, MHz, percent, bytes, degrees C.
pub struct GpuFigures {
    /// GPU index.
    pub gpu: u32,
    /// Samples of this GPU.
    pub samples: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_power_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_power_w: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_sm_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_sm_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_mem_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mem_clock_mhz: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_gpu_util_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_gpu_util_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_mem_util_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mem_util_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_memory_used_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_memory_used_bytes: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_temperature_c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_temperature_c: Option<f64>,
    /// Samples that named each throttle reason.
    pub throttle_reason_samples: std::collections::BTreeMap<String, usize>,
}

/// Computes the summary's [`GpuTelemetry`] from a point's samples.
///
/// ```rust
/// use trtllm::bench::{GpuSample, telemetry_section};
///
/// let s = |t_s, w| GpuSample { t_s, power_w: Some(w), ..Default::default() };
/// let section = telemetry_section("nvml", &[s(0.0, 100.0), s(0.5, 300.0)]);
/// assert_eq!(section.gpus[0].mean_power_w, Some(200.0));
/// assert_eq!(section.gpus[0].max_power_w, Some(300.0));
/// assert_eq!(section.gpus[0].mean_gpu_util_pct, None);
/// ```
pub fn telemetry_section(kind: &str, samples: &[GpuSample]) -> GpuTelemetry {
    let mut gpus: Vec<u32> = samples.iter().map(|s| s.gpu).collect();
    gpus.sort_unstable();
    gpus.dedup();
    let per_gpu = gpus
        .iter()
        .map(|&gpu| {
            let mine: Vec<&GpuSample> = samples.iter().filter(|s| s.gpu == gpu).collect();
            let mut out = GpuFigures { gpu, samples: mine.len(), ..GpuFigures::default() };
            type Pick = fn(&GpuSample) -> Option<f64>;
            type Slots = fn(&mut GpuFigures) -> (&mut Option<f64>, &mut Option<f64>);
            let figures: [(Pick, Slots); 7] = [
                (|s| s.power_w, |f| (&mut f.mean_power_w, &mut f.max_power_w)),
                (|s| s.sm_clock_mhz, |f| (&mut f.mean_sm_clock_mhz, &mut f.max_sm_clock_mhz)),
                (|s| s.mem_clock_mhz, |f| (&mut f.mean_mem_clock_mhz, &mut f.max_mem_clock_mhz)),
                (|s| s.gpu_util_pct, |f| (&mut f.mean_gpu_util_pct, &mut f.max_gpu_util_pct)),
                (|s| s.mem_util_pct, |f| (&mut f.mean_mem_util_pct, &mut f.max_mem_util_pct)),
                (|s| s.memory_used_bytes, |f| (&mut f.mean_memory_used_bytes, &mut f.max_memory_used_bytes)),
                (|s| s.temperature_c, |f| (&mut f.mean_temperature_c, &mut f.max_temperature_c)),
            ];
            for (get, slots) in figures {
                let values: Vec<f64> = mine.iter().filter_map(|s| get(s)).filter(|v| v.is_finite()).collect();
                if !values.is_empty() {
                    let (mean, max) = slots(&mut out);
                    *mean = Some(values.iter().sum::<f64>() / values.len() as f64);
                    *max = Some(values.iter().copied().fold(f64::MIN, f64::max));
                }
            }
            for reason in mine.iter().flat_map(|s| &s.throttle_reasons) {
                *out.throttle_reason_samples.entry(reason.clone()).or_default() += 1;
            }
            out
        })
        .collect();
    GpuTelemetry { source: kind.to_owned(), samples: samples.len(), gpus: per_gpu }
}

/// A short line of the latest figures for a live view, e.g. `287 W 93% 41.2 GiB`.
pub fn telemetry_line(round: &[GpuSample]) -> Option<String> {
    let first = round.first()?;
    let mut parts = Vec::new();
    if let Some(w) = first.power_w {
        parts.push(format!("{w:.0} W"));
    }
    if let Some(u) = first.gpu_util_pct {
        parts.push(format!("{u:.0}%"));
    }
    if let Some(m) = first.memory_used_bytes {
        parts.push(format!("{:.1} GiB", m / (1u64 << 30) as f64));
    }
    if round.len() > 1 {
        parts.push(format!("(gpu 0 of {})", round.len()));
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Counting(u32);

    impl TelemetrySource for Counting {
        fn kind(&self) -> &'static str {
            "counting"
        }
        fn sample(&mut self, t_s: f64) -> Vec<GpuSample> {
            self.0 += 1;
            vec![GpuSample { t_s, power_w: Some(f64::from(self.0)), ..Default::default() }]
        }
    }

    #[test]
    fn the_sampler_reads_its_source_until_finished() {
        let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = seen.clone();
        let sampler = TelemetrySampler::start(Box::new(Counting(0)), Duration::from_millis(20), move |_| {
            counter.fetch_add(1, Ordering::Relaxed);
        });
        // The sampler is an idle-priority observer: on a busy host its samples come late, not never.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while seen.load(Ordering::Relaxed) < 3 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(sampler.kind(), "counting");
        let samples = sampler.finish();
        assert!(samples.len() >= 3, "{}", samples.len());
        assert_eq!(samples.len(), seen.load(Ordering::Relaxed));
        assert!(samples.windows(2).all(|w| w[0].t_s <= w[1].t_s));
        let section = telemetry_section("counting", &samples);
        assert_eq!(section.gpus[0].max_power_w, Some(samples.len() as f64));
        assert_eq!(telemetry_line(&samples[..1]).as_deref(), Some("1 W"));
    }
}
