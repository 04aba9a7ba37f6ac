//! Command-line flags for the LoRA adapter caches (`PeftCacheConfig`), shared by `serve` and `bench`.

use trtllm::lora::PeftCacheConfig;

/// LoRA adapter cache sizes; unset flags keep the executor's defaults.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "LoRA adapter caches")]
pub struct PeftCacheArgs {
    /// Share of GPU memory for the device adapter cache, in (0, 1] (default 0.02).
    #[arg(long)]
    lora_device_cache_percent: Option<f32>,
    /// Device adapter cache size in module-layers (one module of one layer at the optimal
    /// adapter size); overrides the percentage.
    #[arg(long)]
    lora_device_module_layers: Option<u32>,
    /// Host adapter cache size, bytes (default 1 GiB).
    #[arg(long)]
    lora_host_cache_size: Option<u64>,
    /// Host adapter cache size in module-layers; overrides the byte size.
    #[arg(long)]
    lora_host_module_layers: Option<u32>,
    /// The rank cache pages are sized for (default 8).
    #[arg(long)]
    lora_optimal_adapter_size: Option<u32>,
    /// The largest adapter rank the caches accept (default 64).
    #[arg(long)]
    lora_max_adapter_size: Option<u32>,
    /// A directory of adapters the executor loads at start (TensorRT-LLM 1.1 and later).
    #[arg(long)]
    lora_prefetch_dir: Option<String>,
}

impl PeftCacheArgs {
    /// The cache configuration, or `None` when no flag was given.
    pub fn config(&self) -> Option<PeftCacheConfig> {
        let config = PeftCacheConfig {
            num_host_module_layer: self.lora_host_module_layers.unwrap_or(0),
            num_device_module_layer: self.lora_device_module_layers.unwrap_or(0),
            optimal_adapter_size: self.lora_optimal_adapter_size,
            max_adapter_size: self.lora_max_adapter_size,
            device_cache_percent: self.lora_device_cache_percent,
            host_cache_size: self.lora_host_cache_size,
            lora_prefetch_dir: self.lora_prefetch_dir.clone(),
        };
        (config != PeftCacheConfig::default()).then_some(config)
    }
}
