//! Executor configuration: a builder over TensorRT-LLM's `ExecutorConfig` and its sub-configs.

use std::time::Duration;

use serde::Serialize;

use crate::engine::kv_link::KvLink;
use crate::error::{Error, Result};
use crate::ffi::sys;
use crate::lora::PeftCacheConfig;
use crate::types::disagg::CacheTransceiverConfig;
use crate::types::guided::{GuidedDecodingConfig, GuidedVocabulary};
use crate::types::speculative::DecodingConfig;

/// How the scheduler admits requests into the running batch (`CapacitySchedulerPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SchedulerPolicy {
    /// Pack the batch greedily; requests may be paused and resumed when KV blocks run out.
    MaxUtilization,
    /// Admit a request only when KV blocks for its whole length are free; it then always completes.
    #[default]
    GuaranteedNoEvict,
    /// Admit nothing until the current batch has finished.
    StaticBatch,
}

/// How long prompts are split into chunks across iterations (`ContextChunkingPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ContextChunkingPolicy {
    /// Finish the earliest unfinished context first.
    FirstComeFirstServed,
    /// Grow every context request's chunk in turn until the token budget is used.
    EqualProgress,
}

/// Multi-GPU execution (`ParallelConfig`); not needed for one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct ParallelConfig {
    /// Orchestrator mode (spawns worker processes) instead of leader mode (`mpirun`).
    pub orchestrator: bool,
    /// Path of `executorWorker` for orchestrator mode.
    pub worker_executable_path: String,
    /// GPU ids to run on (default `0..tp*pp`).
    pub device_ids: Vec<i32>,
    /// MPI ranks taking part; the first is the leader.
    pub participant_ids: Vec<i32>,
}

/// Configuration of an [`Executor`](crate::Executor): TensorRT-LLM's `ExecutorConfig` plus this
/// crate's own settings (response polling, channel sizes, version checks).
///
/// Unset values keep TensorRT-LLM's defaults. Build with [`ExecutorConfig::builder`].
///
/// ```
/// use trtllm::{ExecutorConfig, SchedulerPolicy};
/// let config = ExecutorConfig::builder()
///     .max_batch_size(64)
///     .scheduler_policy(SchedulerPolicy::MaxUtilization)
///     .kv_cache_free_gpu_memory_fraction(0.85)
///     .build()
///     .unwrap();
/// assert_eq!(config.max_batch_size, Some(64));
/// ```
#[derive(Debug, Clone, Serialize)]
pub struct ExecutorConfig {
    /// Maximum beam width of requests (`maxBeamWidth`, default 1; at most the engine's limit).
    pub max_beam_width: u32,
    /// Runtime cap on requests in the batch (default: the engine's max_batch_size).
    pub max_batch_size: Option<u32>,
    /// Runtime cap on tokens per iteration (default: the engine's max_num_tokens).
    pub max_num_tokens: Option<u32>,
    /// Capacity scheduler policy.
    pub scheduler_policy: SchedulerPolicy,
    /// Context chunking policy (default: TensorRT-LLM chooses first-come-first-served).
    pub context_chunking_policy: Option<ContextChunkingPolicy>,
    /// Split long prompts across iterations (default true; ignored by engines without paged context FMHA).
    pub enable_chunked_context: bool,
    /// Reuse KV blocks of identical prompt prefixes (default true).
    pub kv_cache_enable_block_reuse: bool,
    /// Reuse partially matching blocks (default true).
    pub kv_cache_enable_partial_reuse: bool,
    /// With partial reuse, copy the matching tokens of a partially matching block that is in use (or that
    /// other cached blocks build on) into a fresh block (`copyOnPartialReuse`, default true). When false,
    /// only a partially matching block nobody uses and nothing builds on can be reused: it is taken over.
    pub kv_cache_copy_on_partial_reuse: bool,
    /// Cap on KV-cache tokens; with a memory fraction too, the smaller allocation wins.
    pub kv_cache_max_tokens: Option<u32>,
    /// Fraction of free GPU memory for the KV cache (TensorRT-LLM default 0.9).
    pub kv_cache_free_gpu_memory_fraction: Option<f32>,
    /// Host (secondary) KV-cache size in bytes.
    pub kv_cache_host_cache_size: Option<u64>,
    /// KV-cache event buffer size; 0 disables KV events.
    pub kv_cache_event_buffer_max_size: u64,
    /// Multi-block attention mode (default true).
    pub multi_block_mode: bool,
    /// FP32 accumulation in context FMHA (default false).
    pub enable_context_fmha_fp32_acc: bool,
    /// CUDA graphs for generation steps, the main decode-latency knob (default false).
    pub cuda_graph_mode: bool,
    /// Number of CUDA graphs cached (default 0).
    pub cuda_graph_cache_size: u32,
    /// Requests that may wait in the executor's queue before enqueue fails with
    /// [`Error::QueueFull`]; `None` is unbounded.
    pub max_queue_size: Option<u32>,
    /// Iterations of `IterationStats` the executor buffers (default 1000).
    pub iter_stats_max_iterations: u32,
    /// Iterations of per-request stats the executor buffers (default 0: disabled).
    pub request_stats_max_iterations: u32,
    /// Normalise log probabilities (default true).
    pub normalize_log_probs: bool,
    /// Fraction of weights kept on the GPU for weight streaming (default 1).
    pub gpu_weights_percent: f32,
    /// Gather generation logits (needed before a request may ask for them).
    pub gather_generation_logits: bool,
    /// Multi-GPU configuration, passed through.
    pub parallel: Option<ParallelConfig>,
    /// How long the response thread blocks in `awaitResponses` before checking its stop flag.
    pub response_poll_interval: Duration,
    /// How often the stats thread drains the executor's iteration stats.
    pub stats_poll_interval: Duration,
    /// Responses buffered per request before a slow consumer's request is cancelled.
    pub stream_buffer: usize,
    /// Load even if the engine's TensorRT-LLM version differs from the library's.
    pub allow_version_mismatch: bool,
    /// LoRA adapter caches (`PeftCacheConfig`); `None` keeps the executor's defaults.
    pub peft_cache: Option<PeftCacheConfig>,
    /// Decoding mode and speculative-decoding settings (`DecodingConfig`); `None`: the executor's.
    pub decoding: Option<DecodingConfig>,
    /// Guided decoding (structured output); `None` refuses guided requests.
    pub guided_decoding: Option<GuidedDecodingConfig>,
    /// Disaggregated serving: the cache transceiver (`CacheTransceiverConfig`); `None` runs no
    /// context-only or generation-only request.
    pub cache_transceiver: Option<CacheTransceiverConfig>,
    /// The simulated executor only: the link KV transfers into this executor cross, replacing
    /// simulation.json's `kv_transfer` (a real executor ignores it: its transfers take what they take).
    pub sim_kv_link: Option<KvLink>,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            max_beam_width: 1,
            max_batch_size: None,
            max_num_tokens: None,
            scheduler_policy: SchedulerPolicy::GuaranteedNoEvict,
            context_chunking_policy: None,
            enable_chunked_context: true,
            kv_cache_enable_block_reuse: true,
            kv_cache_enable_partial_reuse: true,
            kv_cache_copy_on_partial_reuse: true,
            kv_cache_max_tokens: None,
            kv_cache_free_gpu_memory_fraction: None,
            kv_cache_host_cache_size: None,
            kv_cache_event_buffer_max_size: 0,
            multi_block_mode: true,
            enable_context_fmha_fp32_acc: false,
            cuda_graph_mode: false,
            cuda_graph_cache_size: 0,
            max_queue_size: None,
            iter_stats_max_iterations: 1000,
            request_stats_max_iterations: 0,
            normalize_log_probs: true,
            gpu_weights_percent: 1.0,
            gather_generation_logits: false,
            parallel: None,
            response_poll_interval: Duration::from_millis(5),
            stats_poll_interval: Duration::from_millis(100),
            stream_buffer: 1024,
            allow_version_mismatch: false,
            peft_cache: None,
            decoding: None,
            guided_decoding: None,
            cache_transceiver: None,
            sim_kv_link: None,
        }
    }
}

impl ExecutorConfig {
    /// Starts a builder with TensorRT-LLM's defaults.
    pub fn builder() -> ExecutorConfigBuilder {
        ExecutorConfigBuilder { config: ExecutorConfig::default() }
    }

    /// Checks ranges that do not depend on the engine.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidConfig(what));
        if self.max_beam_width == 0 {
            return bad("max_beam_width must be at least 1".into());
        }
        if self.max_batch_size == Some(0) || self.max_num_tokens == Some(0) {
            return bad("max_batch_size and max_num_tokens must be at least 1 when set".into());
        }
        if let Some(f) = self.kv_cache_free_gpu_memory_fraction
            && !(f > 0.0 && f <= 1.0)
        {
            return bad(format!("kv_cache_free_gpu_memory_fraction {f} is outside (0, 1]"));
        }
        if !(self.gpu_weights_percent > 0.0 && self.gpu_weights_percent <= 1.0) {
            return bad(format!("gpu_weights_percent {} is outside (0, 1]", self.gpu_weights_percent));
        }
        if self.stream_buffer == 0 {
            return bad("stream_buffer must be at least 1".into());
        }
        if self.response_poll_interval.is_zero() || self.response_poll_interval > Duration::from_secs(1) {
            return bad("response_poll_interval must be between 1 ms and 1 s".into());
        }
        if let Some(Err(e)) = self.decoding.as_ref().map(DecodingConfig::validate) {
            return bad(e);
        }
        if self.stats_poll_interval.is_zero() {
            return bad("stats_poll_interval must be positive".into());
        }
        if let Some(peft) = &self.peft_cache {
            peft.validate()?;
        }
        if let Some(guided) = &self.guided_decoding {
            guided.validate().or_else(bad)?;
        }
        if let Some(Err(e)) = self.cache_transceiver.as_ref().map(CacheTransceiverConfig::validate) {
            return bad(e);
        }
        if let Some(Err(e)) = self.sim_kv_link.as_ref().map(KvLink::validate) {
            return bad(e);
        }
        Ok(())
    }

    pub(crate) fn to_ffi(&self) -> sys::ExecutorOptions {
        let clamp = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        let parallel = match &self.parallel {
            None => sys::ParallelOptions::default(),
            Some(p) => sys::ParallelOptions {
                set: true,
                orchestrator: p.orchestrator,
                worker_executable_path: p.worker_executable_path.clone(),
                device_ids: p.device_ids.clone(),
                participant_ids: p.participant_ids.clone(),
            },
        };
        sys::ExecutorOptions {
            max_beam_width: clamp(self.max_beam_width),
            max_batch_size: self.max_batch_size.map_or(0, clamp),
            max_num_tokens: self.max_num_tokens.map_or(0, clamp),
            capacity_scheduler_policy: match self.scheduler_policy {
                SchedulerPolicy::MaxUtilization => sys::SchedulerPolicyKind::MaxUtilization,
                SchedulerPolicy::GuaranteedNoEvict => sys::SchedulerPolicyKind::GuaranteedNoEvict,
                SchedulerPolicy::StaticBatch => sys::SchedulerPolicyKind::StaticBatch,
            },
            context_chunking_policy: match self.context_chunking_policy {
                None => sys::ChunkingPolicyKind::Unset,
                Some(ContextChunkingPolicy::FirstComeFirstServed) => sys::ChunkingPolicyKind::FirstComeFirstServed,
                Some(ContextChunkingPolicy::EqualProgress) => sys::ChunkingPolicyKind::EqualProgress,
            },
            enable_chunked_context: self.enable_chunked_context,
            kv_enable_block_reuse: self.kv_cache_enable_block_reuse,
            kv_enable_partial_reuse: self.kv_cache_enable_partial_reuse,
            kv_copy_on_partial_reuse: self.kv_cache_copy_on_partial_reuse,
            kv_max_tokens: self.kv_cache_max_tokens.map_or(0, clamp),
            kv_free_gpu_memory_fraction: self.kv_cache_free_gpu_memory_fraction.unwrap_or(-1.0),
            kv_host_cache_size: self.kv_cache_host_cache_size.unwrap_or(0),
            kv_event_buffer_max_size: self.kv_cache_event_buffer_max_size,
            multi_block_mode: self.multi_block_mode,
            enable_context_fmha_fp32_acc: self.enable_context_fmha_fp32_acc,
            cuda_graph_mode: self.cuda_graph_mode,
            cuda_graph_cache_size: clamp(self.cuda_graph_cache_size),
            max_queue_size: self.max_queue_size.map_or(0, clamp),
            iter_stats_max_iterations: clamp(self.iter_stats_max_iterations),
            request_stats_max_iterations: clamp(self.request_stats_max_iterations),
            normalize_log_probs: self.normalize_log_probs,
            gpu_weights_percent: self.gpu_weights_percent,
            gather_generation_logits: self.gather_generation_logits,
            parallel,
            peft_cache: PeftCacheConfig::to_ffi(self.peft_cache.as_ref()),
            decoding: DecodingConfig::to_ffi(self.decoding.as_ref()),
            guided_decoding: GuidedDecodingConfig::to_ffi(self.guided_decoding.as_ref()),
            cache_transceiver: CacheTransceiverConfig::to_ffi(self.cache_transceiver.as_ref()),
        }
    }
}

/// Builder for [`ExecutorConfig`]; `build` validates.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ExecutorConfigBuilder {
    config: ExecutorConfig,
}

macro_rules! setters {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty => $field:ident $(($wrap:path))? ;)*) => {
        impl ExecutorConfigBuilder {
    /// Enables guided decoding with `config` (see [`GuidedDecodingConfig`]).
    pub fn guided_decoding(mut self, config: GuidedDecodingConfig) -> Self {
        self.config.guided_decoding = Some(config);
        self
    }

    /// Enables guided decoding with the vocabulary, tokenizer.json and EOS ids of `tokenizer`
    /// (usually a [`crate::text::Tokenizer`]).
    pub fn guided_decoding_from_tokenizer(self, tokenizer: &impl GuidedVocabulary) -> Self {
        self.guided_decoding(GuidedDecodingConfig::from_vocabulary(tokenizer))
    }

            $(
                $(#[$doc])*
                pub fn $name(mut self, value: $ty) -> Self {
                    self.config.$field = setters!(@wrap value $(, $wrap)?);
                    self
                }
            )*
        }
    };
    (@wrap $v:ident) => { $v };
    (@wrap $v:ident, $wrap:path) => { $wrap($v) };
}

setters! {
    /// Maximum beam width.
    max_beam_width: u32 => max_beam_width;
    /// Runtime cap on requests per batch.
    max_batch_size: u32 => max_batch_size (Some);
    /// Runtime cap on tokens per iteration.
    max_num_tokens: u32 => max_num_tokens (Some);
    /// Capacity scheduler policy.
    scheduler_policy: SchedulerPolicy => scheduler_policy;
    /// Context chunking policy.
    context_chunking_policy: ContextChunkingPolicy => context_chunking_policy (Some);
    /// Enable or disable chunked context.
    enable_chunked_context: bool => enable_chunked_context;
    /// Enable or disable KV block reuse.
    kv_cache_enable_block_reuse: bool => kv_cache_enable_block_reuse;
    /// Enable or disable partial block reuse.
    kv_cache_enable_partial_reuse: bool => kv_cache_enable_partial_reuse;
    /// Copy partially matching blocks that are in use (or have cached successors) instead of skipping
    /// them (`KvCacheConfig::setCopyOnPartialReuse`, default true).
    ///
    /// With `false`, a prompt that shares only part of a block with a cached prompt reuses that block
    /// only when nobody holds it and no cached block follows it; otherwise those tokens are computed.
    ///
    /// ```
    /// use trtllm::ExecutorConfig;
    /// let config = ExecutorConfig::builder()
    ///     .kv_cache_copy_on_partial_reuse(false)
    ///     .build()
    ///     .unwrap();
    /// assert!(!config.kv_cache_copy_on_partial_reuse);
    /// assert!(config.kv_cache_enable_partial_reuse);
    /// ```
    kv_cache_copy_on_partial_reuse: bool => kv_cache_copy_on_partial_reuse;
    /// Cap on KV-cache tokens.
    kv_cache_max_tokens: u32 => kv_cache_max_tokens (Some);
    /// Fraction of free GPU memory for the KV cache.
    kv_cache_free_gpu_memory_fraction: f32 => kv_cache_free_gpu_memory_fraction (Some);
    /// Host KV-cache size in bytes.
    kv_cache_host_cache_size: u64 => kv_cache_host_cache_size (Some);
    /// KV event buffer size (0 disables events).
    kv_cache_event_buffer_max_size: u64 => kv_cache_event_buffer_max_size;
    /// Multi-block attention mode.
    multi_block_mode: bool => multi_block_mode;
    /// FP32 accumulation in context FMHA.
    enable_context_fmha_fp32_acc: bool => enable_context_fmha_fp32_acc;
    /// CUDA graph mode.
    cuda_graph_mode: bool => cuda_graph_mode;
    /// CUDA graph cache size.
    cuda_graph_cache_size: u32 => cuda_graph_cache_size;
    /// Maximum queued requests before enqueue fails.
    max_queue_size: u32 => max_queue_size (Some);
    /// Iteration stats buffer size.
    iter_stats_max_iterations: u32 => iter_stats_max_iterations;
    /// Per-request stats buffer size (0 disables).
    request_stats_max_iterations: u32 => request_stats_max_iterations;
    /// Normalise log probabilities.
    normalize_log_probs: bool => normalize_log_probs;
    /// Weight-streaming fraction.
    gpu_weights_percent: f32 => gpu_weights_percent;
    /// Gather generation logits.
    gather_generation_logits: bool => gather_generation_logits;
    /// Multi-GPU configuration.
    parallel: ParallelConfig => parallel (Some);
    /// Response thread poll interval.
    response_poll_interval: Duration => response_poll_interval;
    /// Stats thread poll interval.
    stats_poll_interval: Duration => stats_poll_interval;
    /// Per-request response buffer.
    stream_buffer: usize => stream_buffer;
    /// Skip the engine/library version check.
    allow_version_mismatch: bool => allow_version_mismatch;
    /// Decoding mode and speculative-decoding settings.
    decoding: DecodingConfig => decoding (Some);
    /// The cache transceiver, for context-only and generation-only requests (disaggregated serving).
    cache_transceiver: CacheTransceiverConfig => cache_transceiver (Some);
    /// The simulated executor's KV transfer link (replaces simulation.json's `kv_transfer`).
    sim_kv_link: KvLink => sim_kv_link (Some);
}

impl ExecutorConfigBuilder {
    /// LoRA adapter cache sizes.
    pub fn peft_cache(mut self, value: PeftCacheConfig) -> Self {
        self.config.peft_cache = Some(value);
        self
    }

    /// Validates and returns the configuration.
    pub fn build(self) -> Result<ExecutorConfig> {
        self.config.validate()?;
        Ok(self.config)
    }
}
