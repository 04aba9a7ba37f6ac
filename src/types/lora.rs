//! LoRA on the executor: the bridge form of the adapter caches' configuration, of the simulator's cache
//! counters and of a request's adapter (the plain data is `lora`'s).

use crate::ffi::sys;
use crate::lora::cache::{LoraCacheStats, PeftCacheConfig};
use crate::lora::dtype::LoraDtype;
use crate::lora::weights::LoraConfig;

impl PeftCacheConfig {
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
