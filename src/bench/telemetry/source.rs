//! What every telemetry source shares: the sample one GPU reports, the source interface and its error.

use serde::Serialize;

/// A telemetry source that could not be opened or read.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// NVML (libnvidia-ml, loaded at run time) is missing or refused.
    #[error("NVML: {0}")]
    Nvml(String),
}

/// What one GPU reported at one moment; a figure the source does not know is `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuSample {
    /// Seconds since sampling started.
    pub t_s: f64,
    /// The GPU's index (NVML's, or the simulated rank).
    pub gpu: u32,
    /// Board power draw, watts.
    pub power_w: Option<f64>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<f64>,
    /// Memory clock, MHz.
    pub mem_clock_mhz: Option<f64>,
    /// Share of the last sample period a kernel ran (NVML), or the modelled compute
    /// utilization (simulated), percent.
    pub gpu_util_pct: Option<f64>,
    /// Share of the period device memory was read or written (NVML), or the modelled
    /// memory-bandwidth utilization (simulated), percent.
    pub mem_util_pct: Option<f64>,
    /// Device memory in use, bytes.
    pub memory_used_bytes: Option<f64>,
    /// Device memory in all, bytes.
    pub memory_total_bytes: Option<f64>,
    /// Die temperature, °C.
    pub temperature_c: Option<f64>,
    /// Why clocks are held down now (NVML's throttle reason names); empty when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub throttle_reasons: Vec<String>,
}

/// Something that reports GPU figures: NVML on a real GPU, the simulator's model otherwise.
pub trait TelemetrySource: Send {
    /// What the figures are (`nvml`, `simulated`), for the summary.
    fn kind(&self) -> &'static str;
    /// One sample per GPU now, stamped `t_s`.
    fn sample(&mut self, t_s: f64) -> Vec<GpuSample>;
}
