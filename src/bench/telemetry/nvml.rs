//! NVML as a telemetry source: libnvidia-ml is loaded at run time, so a build (and a run) on a
//! machine without the driver works and simply has no NVML figures.

use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};

use super::source::{GpuSample, TelemetryError, TelemetrySource};

/// Samples the GPUs NVML sees (or those named) through the NVIDIA Management Library.
pub struct NvmlSource {
    nvml: Nvml,
    indices: Vec<u32>,
    names: Vec<String>,
}

impl std::fmt::Debug for NvmlSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvmlSource").field("indices", &self.indices).field("names", &self.names).finish()
    }
}

impl NvmlSource {
    /// Loads NVML and opens GPUs `indices` (all it sees when `None`); an error when the library
    /// or a GPU is missing.
    pub fn open(indices: Option<&[u32]>) -> Result<Self, TelemetryError> {
        let nvml = Nvml::init().map_err(|e| TelemetryError::Nvml(e.to_string()))?;
        let indices: Vec<u32> = match indices {
            Some(list) => list.to_vec(),
            None => (0..nvml.device_count().map_err(|e| TelemetryError::Nvml(e.to_string()))?).collect(),
        };
        let mut names = Vec::with_capacity(indices.len());
        for &i in &indices {
            let device = nvml.device_by_index(i).map_err(|e| TelemetryError::Nvml(format!("GPU {i}: {e}")))?;
            names.push(device.name().unwrap_or_else(|_| "unknown".into()));
        }
        Ok(NvmlSource { nvml, indices, names })
    }

    /// The GPUs' names, in index order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The driver version, when NVML reports it.
    pub fn driver_version(&self) -> Option<String> {
        self.nvml.sys_driver_version().ok()
    }
}

impl TelemetrySource for NvmlSource {
    fn kind(&self) -> &'static str {
        "nvml"
    }

    fn sample(&mut self, t_s: f64) -> Vec<GpuSample> {
        self.indices
            .iter()
            .filter_map(|&gpu| {
                // A GPU that stops answering drops out of this round; the others still count.
                let d = self.nvml.device_by_index(gpu).ok()?;
                let utilization = d.utilization_rates().ok();
                let memory = d.memory_info().ok();
                Some(GpuSample {
                    t_s,
                    gpu,
                    power_w: d.power_usage().ok().map(|mw| f64::from(mw) / 1e3),
                    sm_clock_mhz: d.clock_info(Clock::SM).ok().map(f64::from),
                    mem_clock_mhz: d.clock_info(Clock::Memory).ok().map(f64::from),
                    gpu_util_pct: utilization.as_ref().map(|u| f64::from(u.gpu)),
                    mem_util_pct: utilization.as_ref().map(|u| f64::from(u.memory)),
                    memory_used_bytes: memory.as_ref().map(|m| m.used as f64),
                    memory_total_bytes: memory.as_ref().map(|m| m.total as f64),
                    temperature_c: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
                    throttle_reasons: d
                        .current_throttle_reasons()
                        .map(|r| r.iter_names().map(|(name, _)| name.to_owned()).collect())
                        .unwrap_or_default(),
                })
            })
            .collect()
    }
}
