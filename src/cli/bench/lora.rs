//! `--lora-adapters`: builds the run's LoRA traffic for the loaded engine and installs it.

use std::sync::Arc;

use anyhow::{Context, bail};
use trtllm::bench::lora::{DEFAULT_HOST_CACHE_BYTES, LoraTraffic, LoraTrafficSpec};
use trtllm::{AsyncExecutor, PeftCacheConfig};

use super::args::RunArgs;

/// Installs the LoRA traffic `args` ask for (or none); errors when the engine has no LoRA.
pub fn install(args: &RunArgs, executor: &AsyncExecutor, peft_cache: Option<PeftCacheConfig>) -> anyhow::Result<()> {
    if args.lora_adapters == 0 {
        trtllm::bench::lora::install(None);
        return Ok(());
    }
    let engine = executor.executor().engine();
    let Some(settings) = engine.lora.clone() else {
        bail!(
            "--lora-adapters needs an engine built with LoRA (build_config.lora_config and plugin_config.lora_plugin)"
        );
    };
    if args.lora_zipf.is_nan() || args.lora_zipf < 0.0 {
        bail!("--lora-zipf must be 0 (uniform) or positive, not {}", args.lora_zipf);
    }
    let host_cache_bytes = peft_cache.as_ref().and_then(|p| p.host_cache_size).unwrap_or(DEFAULT_HOST_CACHE_BYTES);
    let spec = LoraTrafficSpec {
        adapters: args.lora_adapters,
        rank: args.lora_rank,
        zipf: args.lora_zipf,
        seed: args.seed,
        host_cache_bytes,
        peft_cache,
    };
    let traffic = LoraTraffic::new(settings, spec).context("--lora-adapters")?;
    eprintln!(
        "lora: {} adapters of rank {} ({:.1} MB each), Zipf {}",
        args.lora_adapters,
        args.lora_rank,
        traffic.adapter_bytes() as f64 / 1e6,
        args.lora_zipf
    );
    traffic.watch(executor.clone());
    trtllm::bench::lora::install(Some(Arc::new(traffic)));
    Ok(())
}
