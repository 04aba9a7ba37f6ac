//! Command-line flags for every `ExecutorConfig` setting, shared by `trtllm serve` and
//! `trtllm bench` (same names, same meaning); unset flags keep the library's defaults.

use std::path::PathBuf;
use std::time::Duration;

use trtllm::speculative::{DecodingConfig, DecodingMode, LookaheadConfig};
use trtllm::{ContextChunkingPolicy, ExecutorConfig, ParallelConfig, SchedulerPolicy};

/// Executor settings (see `ExecutorConfig` for what each one does).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Executor")]
pub struct ExecutorArgs {
    /// Largest beam width a request may use (default 1; at most the engine's max_beam_width).
    #[arg(long)]
    max_beam_width: Option<u32>,
    /// Runtime cap on requests per batch (default: the engine's max_batch_size).
    #[arg(long)]
    max_batch_size: Option<u32>,
    /// Runtime cap on tokens per iteration (default: the engine's max_num_tokens).
    #[arg(long)]
    max_num_tokens: Option<u32>,
    /// Capacity scheduler policy (default guaranteed-no-evict).
    #[arg(long, value_enum)]
    scheduler_policy: Option<SchedulerPolicy>,
    /// How long prompts are split into chunks.
    #[arg(long, value_enum)]
    context_chunking_policy: Option<ContextChunkingPolicy>,
    /// Do not split long prompts across iterations.
    #[arg(long)]
    no_chunked_context: bool,
    /// Requests that may wait in the executor's queue; more get RESOURCE_EXHAUSTED.
    #[arg(long)]
    max_queue_size: Option<u32>,
    /// Do not reuse KV blocks of identical prompt prefixes.
    #[arg(long)]
    no_block_reuse: bool,
    /// Do not reuse partially matching KV blocks.
    #[arg(long)]
    no_partial_reuse: bool,
    /// Do not copy partially matching blocks that are in use or that other cached blocks build
    /// on; such tokens are computed again instead.
    #[arg(long)]
    no_copy_on_partial_reuse: bool,
    /// Cap on KV-cache tokens (with a memory fraction too, the smaller allocation wins).
    #[arg(long)]
    kv_cache_max_tokens: Option<u32>,
    /// Fraction of free GPU memory for the KV cache, in (0, 1] (default 0.9).
    #[arg(long)]
    kv_cache_free_gpu_memory_fraction: Option<f32>,
    /// Host (secondary) KV-cache size, bytes.
    #[arg(long)]
    kv_cache_host_cache_size: Option<u64>,
    /// KV-cache events the executor buffers between reads; 0 disables KV events (default 0;
    /// `trtllm serve`: 4096, for SubscribeKvEvents).
    #[arg(long)]
    kv_cache_event_buffer_size: Option<u64>,
    /// Disable multi-block attention.
    #[arg(long)]
    no_multi_block_mode: bool,
    /// FP32 accumulation in context FMHA.
    #[arg(long)]
    context_fmha_fp32_acc: bool,
    /// CUDA graphs for generation steps.
    #[arg(long)]
    cuda_graphs: bool,
    /// CUDA graphs kept in the cache.
    #[arg(long)]
    cuda_graph_cache_size: Option<u32>,
    /// Iterations of iteration statistics the executor buffers (default 1000).
    #[arg(long)]
    iter_stats_max_iterations: Option<u32>,
    /// Iterations of per-request statistics the executor buffers (default 0: off).
    #[arg(long)]
    request_stats_max_iterations: Option<u32>,
    /// Return raw (unnormalised) log probabilities.
    #[arg(long)]
    no_normalize_log_probs: bool,
    /// Fraction of weights kept on the GPU (weight streaming), in (0, 1].
    #[arg(long)]
    gpu_weights_percent: Option<f32>,
    /// Gather generation logits.
    #[arg(long)]
    gather_generation_logits: bool,
    /// Multi-GPU: orchestrator mode (spawns worker processes) instead of leader mode.
    #[arg(long)]
    orchestrator: bool,
    /// Multi-GPU: path of `executorWorker` for orchestrator mode.
    #[arg(long)]
    worker_executable: Option<PathBuf>,
    /// Multi-GPU: GPU ids to run on, comma-separated.
    #[arg(long, value_delimiter = ',')]
    device_ids: Vec<i32>,
    /// Multi-GPU: MPI ranks taking part, comma-separated; the first is the leader.
    #[arg(long, value_delimiter = ',')]
    participant_ids: Vec<i32>,
    /// How long the response thread blocks in awaitResponses, ms (1-1000; default 5).
    #[arg(long)]
    response_poll_interval_ms: Option<u64>,
    /// How often iteration statistics are drained, ms (default 100).
    #[arg(long)]
    stats_poll_interval_ms: Option<u64>,
    /// Responses buffered per request before a slow consumer's request is cancelled (default 1024).
    #[arg(long)]
    stream_buffer: Option<usize>,
    /// Load even if the engine was built by another TensorRT-LLM version than the library's.
    #[arg(long)]
    allow_version_mismatch: bool,
    /// LoRA adapter caches.
    #[command(flatten)]
    peft: super::peft_args::PeftCacheArgs,
    /// Disaggregated serving: the cache transceiver and the simulated KV link.
    #[command(flatten)]
    kv_transfer: super::kv_transfer_args::KvTransferArgs,
    /// Decoding mode (DecodingConfig): auto, top-k-top-p, beam-search, medusa, lookahead,
    /// explicit-draft-tokens, external-draft-tokens or eagle; a speculative one must be the
    /// engine's speculative_decoding_mode.
    #[arg(long, value_parser = parse_decoding_mode)]
    decoding_mode: Option<DecodingMode>,
    /// Lookahead decoding sizes WINDOW,NGRAM,VERIFICATION_SET (implies --decoding-mode lookahead).
    #[arg(long, value_name = "W,N,G", value_parser = parse_lookahead)]
    lookahead: Option<LookaheadConfig>,
}

fn parse_decoding_mode(text: &str) -> Result<DecodingMode, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string())).map_err(|_| {
        format!(
            "unknown decoding mode {text:?} (auto, top-k-top-p, beam-search, medusa, lookahead, \
             explicit-draft-tokens, external-draft-tokens, eagle)"
        )
    })
}

fn parse_lookahead(text: &str) -> Result<LookaheadConfig, String> {
    let sizes: Vec<u32> = text
        .split(',')
        .map(|v| v.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("expected WINDOW,NGRAM,VERIFICATION_SET, got {text:?}: {e}"))?;
    let [window_size, ngram_size, verification_set_size] = sizes[..] else {
        return Err(format!("expected three sizes WINDOW,NGRAM,VERIFICATION_SET, got {text:?}"));
    };
    let config = LookaheadConfig { window_size, ngram_size, verification_set_size };
    config.validate()?;
    Ok(config)
}

impl ExecutorArgs {
    /// `--kv-cache-event-buffer-size`, when given.
    pub fn kv_cache_event_buffer_size(&self) -> Option<u64> {
        self.kv_cache_event_buffer_size
    }

    /// The executor configuration these flags describe (validated).
    pub fn config(&self) -> trtllm::Result<ExecutorConfig> {
        self.apply(ExecutorConfig::builder()).build()
    }

    /// The flags of this struct given on `argv` (each with its value), in order: what a run
    /// set of the executor's settings, as `trtllm serve` would take them.
    pub fn given_flags(argv: &[String]) -> Vec<String> {
        let command = <ExecutorArgs as clap::Args>::augment_args(clap::Command::new("executor"));
        let takes_value = |name: &str| -> Option<bool> {
            let arg = command.get_arguments().find(|a| a.get_long() == Some(name))?;
            Some(arg.get_action().takes_values())
        };
        let mut flags = Vec::new();
        let mut i = 0;
        while i < argv.len() {
            if let Some(long) = argv[i].strip_prefix("--") {
                let (name, inline) = long.split_once('=').map_or((long, false), |(n, _)| (n, true));
                if let Some(value) = takes_value(name) {
                    flags.push(argv[i].clone());
                    if value && !inline && i + 1 < argv.len() {
                        flags.push(argv[i + 1].clone());
                        i += 1;
                    }
                }
            }
            i += 1;
        }
        flags
    }

    /// `base` with these flags' settings (flags not given keep `base`'s values... or the
    /// library's defaults for on/off settings, which have no unset state).
    pub fn apply(&self, base: trtllm::ExecutorConfigBuilder) -> trtllm::ExecutorConfigBuilder {
        let mut c = base
            .enable_chunked_context(!self.no_chunked_context)
            .kv_cache_enable_block_reuse(!self.no_block_reuse)
            .kv_cache_enable_partial_reuse(!self.no_partial_reuse)
            .kv_cache_copy_on_partial_reuse(!self.no_copy_on_partial_reuse)
            .multi_block_mode(!self.no_multi_block_mode)
            .enable_context_fmha_fp32_acc(self.context_fmha_fp32_acc)
            .cuda_graph_mode(self.cuda_graphs)
            .normalize_log_probs(!self.no_normalize_log_probs)
            .gather_generation_logits(self.gather_generation_logits)
            .allow_version_mismatch(self.allow_version_mismatch);
        macro_rules! set {
            ($($field:ident => $setter:ident $(($map:expr))?;)*) => {
                $(if let Some(v) = self.$field { c = c.$setter(set!(@map v $(, $map)?)); })*
            };
            (@map $v:ident) => { $v };
            (@map $v:ident, $map:expr) => { $map($v) };
        }
        set! {
            max_beam_width => max_beam_width;
            max_batch_size => max_batch_size;
            max_num_tokens => max_num_tokens;
            scheduler_policy => scheduler_policy;
            context_chunking_policy => context_chunking_policy;
            max_queue_size => max_queue_size;
            kv_cache_max_tokens => kv_cache_max_tokens;
            kv_cache_free_gpu_memory_fraction => kv_cache_free_gpu_memory_fraction;
            kv_cache_host_cache_size => kv_cache_host_cache_size;
            kv_cache_event_buffer_size => kv_cache_event_buffer_max_size;
            cuda_graph_cache_size => cuda_graph_cache_size;
            iter_stats_max_iterations => iter_stats_max_iterations;
            request_stats_max_iterations => request_stats_max_iterations;
            gpu_weights_percent => gpu_weights_percent;
            response_poll_interval_ms => response_poll_interval (Duration::from_millis);
            stats_poll_interval_ms => stats_poll_interval (Duration::from_millis);
            stream_buffer => stream_buffer;
        }
        if self.orchestrator
            || self.worker_executable.is_some()
            || !self.device_ids.is_empty()
            || !self.participant_ids.is_empty()
        {
            c = c.parallel(ParallelConfig {
                orchestrator: self.orchestrator,
                worker_executable_path: self
                    .worker_executable
                    .as_ref()
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                device_ids: self.device_ids.clone(),
                participant_ids: self.participant_ids.clone(),
            });
        }
        if let Some(peft) = self.peft.config() {
            c = c.peft_cache(peft);
        }
        c = self.kv_transfer.apply(c);
        if self.decoding_mode.is_some() || self.lookahead.is_some() {
            c = c.decoding(DecodingConfig {
                mode: self.decoding_mode.or(self.lookahead.map(|_| DecodingMode::Lookahead)),
                lookahead: self.lookahead,
                ..Default::default()
            });
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::ExecutorArgs;

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        executor: ExecutorArgs,
    }

    fn config(args: &[&str]) -> trtllm::ExecutorConfig {
        let cli = Cli::try_parse_from(std::iter::once("trtllm").chain(args.iter().copied())).unwrap();
        cli.executor.config().unwrap()
    }

    #[test]
    fn decoding_flags_set_the_decoding_config() {
        use trtllm::speculative::{DecodingMode, LookaheadConfig};
        let c = config(&["--lookahead", "5,4,6"]);
        let decoding = c.decoding.expect("a decoding config");
        assert_eq!(decoding.mode, Some(DecodingMode::Lookahead));
        assert_eq!(
            decoding.lookahead,
            Some(LookaheadConfig { window_size: 5, ngram_size: 4, verification_set_size: 6 })
        );
        assert_eq!(config(&["--decoding-mode", "medusa"]).decoding.unwrap().mode, Some(DecodingMode::Medusa));
        assert!(config(&[]).decoding.is_none());
        for bad in [["--lookahead", "5,4"], ["--lookahead", "0,4,4"], ["--decoding-mode", "fast"]] {
            assert!(Cli::try_parse_from(std::iter::once("trtllm").chain(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn given_flags_are_picked_out_of_a_command_line() {
        let argv: Vec<String> = [
            "trtllm",
            "bench",
            "--concurrency",
            "4",
            "--max-batch-size",
            "8",
            "--no-block-reuse",
            "--scheduler-policy=max-utilization",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            ExecutorArgs::given_flags(&argv),
            ["--max-batch-size", "8", "--no-block-reuse", "--scheduler-policy=max-utilization"]
        );
    }

    #[test]
    fn no_flags_keep_the_library_defaults() {
        let defaults = trtllm::ExecutorConfig::default();
        let parsed = config(&[]);
        assert_eq!(parsed.kv_cache_enable_block_reuse, defaults.kv_cache_enable_block_reuse);
        assert_eq!(parsed.kv_cache_enable_partial_reuse, defaults.kv_cache_enable_partial_reuse);
        assert_eq!(parsed.kv_cache_copy_on_partial_reuse, defaults.kv_cache_copy_on_partial_reuse);
        assert_eq!(parsed.max_batch_size, defaults.max_batch_size);
    }

    #[test]
    fn reuse_flags_turn_their_settings_off() {
        let parsed = config(&["--no-block-reuse", "--no-partial-reuse", "--no-copy-on-partial-reuse"]);
        assert!(!parsed.kv_cache_enable_block_reuse);
        assert!(!parsed.kv_cache_enable_partial_reuse);
        assert!(!parsed.kv_cache_copy_on_partial_reuse);
        let parsed = config(&["--no-copy-on-partial-reuse", "--max-batch-size", "8"]);
        assert!(parsed.kv_cache_enable_partial_reuse);
        assert!(!parsed.kv_cache_copy_on_partial_reuse);
        assert_eq!(parsed.max_batch_size, Some(8));
    }
}
