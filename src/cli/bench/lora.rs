//! `--lora-adapters`: builds the run's LoRA traffic for the loaded engine.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use trtllm::AsyncExecutor;
use trtllm::bench::lora::{DEFAULT_HOST_CACHE_BYTES, LoraTraffic, LoraTrafficSpec};
use trtllm::lora::EngineLoraSettings;
use trtllm::lora::PeftCacheConfig;

use super::args::RunArgs;

/// The LoRA traffic `args` ask for (or none); errors when the engine has no LoRA.
pub fn traffic(
    args: &RunArgs,
    executor: &AsyncExecutor,
    peft_cache: Option<PeftCacheConfig>,
    engine_dir: &Path,
) -> anyhow::Result<Option<Arc<LoraTraffic>>> {
    if args.lora_adapters == 0 {
        return Ok(None);
    }
    let engine = executor.executor().engine();
    let Some(settings) = engine.lora().cloned() else {
        bail!(
            "--lora-adapters needs an engine built with LoRA (build_config.lora_config and plugin_config.lora_plugin)"
        );
    };
    if args.lora_zipf.is_nan() || args.lora_zipf < 0.0 {
        bail!("--lora-zipf must be 0 (uniform) or positive, not {}", args.lora_zipf);
    }
    let host_cache_bytes = peft_cache.as_ref().and_then(|p| p.host_cache_size).unwrap_or(DEFAULT_HOST_CACHE_BYTES);
    let device_bytes = device_cache_bytes(&settings, peft_cache.as_ref(), engine_dir);
    let spec = LoraTrafficSpec {
        adapters: args.lora_adapters,
        rank: args.lora_rank,
        zipf: args.lora_zipf,
        seed: args.seed,
        host_cache_bytes,
        peft_cache,
    };
    let mut traffic = LoraTraffic::new(settings, spec).context("--lora-adapters")?;
    if let Some(bytes) = device_bytes {
        traffic = traffic.with_device_cache_bytes(bytes);
    }
    eprintln!(
        "lora: {} adapters of rank {} ({:.1} MB each), Zipf {}",
        args.lora_adapters,
        args.lora_rank,
        traffic.adapter_bytes() as f64 / 1e6,
        args.lora_zipf
    );
    traffic.watch(executor.clone());
    Ok(Some(Arc::new(traffic)))
}

/// The device adapter cache's size as the PeftCacheConfig sets it: `numDeviceModuleLayer` slots of
/// one module-layer at `optimalAdapterSize` for the widest module, else `deviceCachePercent` (2 %
/// by default) of the GPU's memory, known only for a simulated engine (its simulation.json names
/// the GPU preset). `None` when unknown: the summary then classes no request by device hit or miss.
fn device_cache_bytes(settings: &EngineLoraSettings, peft: Option<&PeftCacheConfig>, engine_dir: &Path) -> Option<f64> {
    let peft = peft.cloned().unwrap_or_default();
    if peft.num_device_module_layer > 0 {
        let dims = settings.model_dims();
        let attention = f64::from(dims.num_heads + 2 * dims.num_kv_heads) * f64::from(dims.head_size);
        let widest = f64::from(dims.hidden_size) + f64::from(dims.intermediate_size).max(attention);
        let slot = f64::from(peft.optimal_adapter_size.unwrap_or(8)) * widest * settings.dtype().size() as f64;
        return Some(f64::from(peft.num_device_module_layer) * slot);
    }
    let text = std::fs::read_to_string(engine_dir.join("simulation.json")).ok()?;
    let sim: trtllm::sim::SimulationJson = serde_json::from_str(&text).ok()?;
    let mut gpu = trtllm::sim::GpuPreset::by_id(&sim.gpu).ok()?.clone();
    for (name, value) in &sim.gpu_overrides {
        gpu.set_figure(name, *value).ok()?;
    }
    Some(gpu.memory_bytes() * f64::from(peft.device_cache_percent.unwrap_or(0.02)))
}
