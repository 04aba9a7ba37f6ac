//! The executor's LoRA adapter caches as plain data: their sizes (`PeftCacheConfig`) and the counters
//! the simulated executor keeps (`LoraCacheStats`); their bridge forms are `types::lora`'s.

use serde::Serialize;

use crate::error::{Error, Result};

/// Sizes of the executor's LoRA adapter caches (TensorRT-LLM's `PeftCacheConfig`). Adapters live in
/// a host cache and a device cache, both least-recently-used; a request whose adapter is not on the
/// device waits for a host → device copy. `None` fields keep the executor's defaults.
///
/// ```
/// use trtllm::ExecutorConfig;
/// use trtllm::lora::PeftCacheConfig;
/// let peft = PeftCacheConfig { device_cache_percent: Some(0.05), ..PeftCacheConfig::default() };
/// let config = ExecutorConfig::builder().peft_cache(peft).build()?;
/// assert_eq!(config.peft_cache.unwrap().device_cache_percent, Some(0.05));
/// # Ok::<(), trtllm::Error>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PeftCacheConfig {
    /// Host cache size in module-layers (one module of one layer at `optimal_adapter_size`); 0: use
    /// `host_cache_size`.
    pub num_host_module_layer: u32,
    /// Device cache size in module-layers; 0: use `device_cache_percent`.
    pub num_device_module_layer: u32,
    /// The rank cache pages are sized for (default 8).
    pub optimal_adapter_size: Option<u32>,
    /// The largest rank the caches accept (default 64).
    pub max_adapter_size: Option<u32>,
    /// Share of GPU memory for the device cache, in (0, 1] (default 0.02).
    pub device_cache_percent: Option<f32>,
    /// Host cache size in bytes (default 1 GiB).
    pub host_cache_size: Option<u64>,
    /// A directory of adapters the executor loads at start (`loraPrefetchDir`, 1.1 and later).
    pub lora_prefetch_dir: Option<String>,
}

impl PeftCacheConfig {
    /// Checks the ranges that do not depend on the engine.
    pub fn validate(&self) -> Result<()> {
        if let Some(p) = self.device_cache_percent
            && !(p > 0.0 && p <= 1.0)
        {
            return Err(Error::InvalidConfig(format!("peft device_cache_percent {p} is outside (0, 1]")));
        }
        if self.optimal_adapter_size == Some(0) || self.max_adapter_size == Some(0) {
            return Err(Error::InvalidConfig("peft optimal/max adapter size must be at least 1".into()));
        }
        if self.host_cache_size == Some(0) {
            return Err(Error::InvalidConfig("peft host_cache_size must be positive".into()));
        }
        Ok(())
    }
}

/// LoRA device-cache counters since the executor started. The simulated executor keeps these
/// itself (TensorRT-LLM reports no LoRA cache figures), so a real executor has none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LoraCacheStats {
    /// Requests whose adapter was already on the device.
    pub hits: u64,
    /// Requests whose adapter was copied host → device first.
    pub misses: u64,
    /// Adapters evicted from the device cache to make room.
    pub evictions: u64,
}
