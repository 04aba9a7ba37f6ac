//! LoRA on the executor: the adapter caches' configuration (`PeftCacheConfig`) and the bridge form
//! of a request's adapter and of the simulator's cache counters.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::ffi::sys;
use crate::lora::dtype::LoraDtype;
use crate::lora::weights::LoraConfig;

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

    pub(crate) fn to_ffi(config: Option<&Self>) -> sys::PeftCacheOptions {
        let Some(c) = config else { return sys::PeftCacheOptions::default() };
        let clamp = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        sys::PeftCacheOptions {
            set: true,
            num_host_module_layer: clamp(c.num_host_module_layer),
            num_device_module_layer: clamp(c.num_device_module_layer),
            optimal_adapter_size: c.optimal_adapter_size.map_or(0, clamp),
            max_adapter_size: c.max_adapter_size.map_or(0, clamp),
            device_cache_percent: sys::OptF32 {
                set: c.device_cache_percent.is_some(),
                value: c.device_cache_percent.unwrap_or(0.0),
            },
            host_cache_size: sys::OptU64 { set: c.host_cache_size.is_some(), value: c.host_cache_size.unwrap_or(0) },
            lora_prefetch_dir: c.lora_prefetch_dir.clone().unwrap_or_default(),
        }
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

impl LoraCacheStats {
    pub(crate) fn from_ffi(item: sys::LoraCacheCountsItem) -> Option<Self> {
        item.available.then_some(Self { hits: item.hits, misses: item.misses, evictions: item.evictions })
    }
}

/// A request's adapter in bridge form: the task id, and on first use the config rows and the
/// weights' bytes (copied by the shim into owned host tensors).
pub(crate) fn to_ffi_spec(lora: &LoraConfig) -> sys::LoraSpec {
    let Some(weights) = &lora.weights else {
        return sys::LoraSpec { set: true, task_id: lora.task_id, ..Default::default() };
    };
    sys::LoraSpec {
        set: true,
        task_id: lora.task_id,
        has_weights: true,
        dtype: match weights.dtype() {
            LoraDtype::F16 => sys::LoraWeightKind::F16,
            LoraDtype::Bf16 => sys::LoraWeightKind::Bf16,
            LoraDtype::F32 => sys::LoraWeightKind::F32,
        },
        row_len: i64::try_from(weights.row_len()).unwrap_or(i64::MAX),
        config: weights.config_i32(),
        weights: weights.data().to_vec(),
    }
}
