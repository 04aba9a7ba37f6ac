//! Prometheus metrics: request outcomes and latencies, and the executor's iteration stats under the
//! family names and labels of Triton's TensorRT-LLM backend, so existing dashboards carry over.
//!
//! The Triton families carry `model` and `version` labels plus one category label, as Triton's
//! reporter does; `version` is the model version, which Triton numbers from 1 and this server
//! (one model, one version) always reports as `1`.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::{FinalOutput, IterationStats};

type Labels = Vec<(String, String)>;
type F64Gauge = Gauge<f64, AtomicU64>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// The model version label of the Triton-compatible families.
pub const MODEL_VERSION: &str = "1";

/// Buckets of Triton's `nv_llm_input_token_len` and `nv_llm_output_token_len`.
const TOKEN_LEN_BUCKETS: [f64; 5] = [10.0, 50.0, 100.0, 500.0, 1000.0];

fn token_len_histogram() -> Histogram {
    Histogram::new(TOKEN_LEN_BUCKETS)
}

/// The `outcome` label of a request that ended with an error status: the gRPC code's name in
/// snake case (`invalid_argument`, `deadline_exceeded`, `unavailable`, ...).
pub fn code_outcome(code: tonic::Code) -> &'static str {
    match code {
        tonic::Code::Ok => "ok",
        tonic::Code::Cancelled => "cancelled",
        tonic::Code::Unknown => "unknown",
        tonic::Code::InvalidArgument => "invalid_argument",
        tonic::Code::DeadlineExceeded => "deadline_exceeded",
        tonic::Code::NotFound => "not_found",
        tonic::Code::AlreadyExists => "already_exists",
        tonic::Code::PermissionDenied => "permission_denied",
        tonic::Code::ResourceExhausted => "resource_exhausted",
        tonic::Code::FailedPrecondition => "failed_precondition",
        tonic::Code::Aborted => "aborted",
        tonic::Code::OutOfRange => "out_of_range",
        tonic::Code::Unimplemented => "unimplemented",
        tonic::Code::Internal => "internal",
        tonic::Code::Unavailable => "unavailable",
        tonic::Code::DataLoss => "data_loss",
        tonic::Code::Unauthenticated => "unauthenticated",
    }
}

/// The server's metrics registry.
#[derive(Debug)]
pub struct ServerMetrics {
    registry: Registry,
    model: String,
    version: String,
    requests: Family<Labels, Counter>,
    tokens: Family<Labels, Counter>,
    ttft: Histogram,
    tpot: Histogram,
    e2e: Histogram,
    queue: Histogram,
    request_metrics: Family<Labels, F64Gauge>,
    kv_cache_block_metrics: Family<Labels, F64Gauge>,
    inflight_batcher_metrics: Family<Labels, F64Gauge>,
    runtime_memory_metrics: Family<Labels, F64Gauge>,
    general_metrics: Family<Labels, F64Gauge>,
    input_token_len: HistogramFamily,
    output_token_len: HistogramFamily,
    /// Requests by LoRA adapter (task id).
    lora_requests: Family<Labels, Counter>,
    // Health (issue 18): why the server is not serving, and cancels that failed.
    health_issues: Family<Labels, Gauge>,
    cancel_failures: Gauge,
}

impl ServerMetrics {
    /// Metrics for `model`.
    pub fn new(model: &str) -> Arc<Self> {
        let mut registry = Registry::default();
        let requests = Family::<Labels, Counter>::default();
        registry.register(
            "trtllm_requests",
            "Requests by outcome: finish reason (stop, length, abort, timeout), cancelled (client went away), \
             or the gRPC code of the error (deadline_exceeded, unavailable, invalid_argument, ...)",
            requests.clone(),
        );
        let tokens = Family::<Labels, Counter>::default();
        registry.register("trtllm_tokens", "Prompt (input) and generated (output) tokens", tokens.clone());
        let latency = || Histogram::new(exponential_buckets(0.001, 2.0, 18));
        let (ttft, tpot, e2e, queue) = (latency(), latency(), latency(), latency());
        registry.register("trtllm_time_to_first_token_seconds", "Time to first token, from enqueue", ttft.clone());
        registry.register(
            "trtllm_time_per_output_token_seconds",
            "Time per output token after the first",
            tpot.clone(),
        );
        registry.register("trtllm_e2e_request_latency_seconds", "End-to-end request latency", e2e.clone());
        registry.register(
            "trtllm_queue_time_seconds",
            "Executor queue time (first scheduled - arrival)",
            queue.clone(),
        );
        let gauge = |registry: &mut Registry, name: &str, help: &str| {
            let family = Family::<Labels, F64Gauge>::default();
            registry.register(name, help, family.clone());
            family
        };
        let request_metrics = gauge(&mut registry, "nv_trt_llm_request_metrics", "TRT LLM request metrics");
        let kv_cache_block_metrics =
            gauge(&mut registry, "nv_trt_llm_kv_cache_block_metrics", "TRT LLM KV cache block metrics");
        let inflight_batcher_metrics =
            gauge(&mut registry, "nv_trt_llm_inflight_batcher_metrics", "TRT LLM inflight batcher metrics");
        let runtime_memory_metrics =
            gauge(&mut registry, "nv_trt_llm_runtime_memory_metrics", "TRT LLM runtime memory metrics");
        let general_metrics = gauge(&mut registry, "nv_trt_llm_general_metrics", "General TRT LLM metrics");
        let input_token_len = HistogramFamily::new_with_constructor(token_len_histogram as fn() -> Histogram);
        registry.register("nv_llm_input_token_len", "TRT LLM response metrics", input_token_len.clone());
        let output_token_len = HistogramFamily::new_with_constructor(token_len_histogram as fn() -> Histogram);
        registry.register("nv_llm_output_token_len", "TRT LLM response metrics", output_token_len.clone());
        let lora_requests = Family::<Labels, Counter>::default();
        registry.register("trtllm_lora_requests", "Requests by LoRA adapter (task_id label)", lora_requests.clone());
        let health_issues = Family::<Labels, Gauge>::default();
        registry.register(
            "trtllm_health_issue",
            "1 while the executor has this issue (response_thread, enqueue, stats_poll, requests_failing), else 0; \
             any 1 makes health NOT_SERVING",
            health_issues.clone(),
        );
        let cancel_failures = Gauge::default();
        registry.register(
            "trtllm_cancel_failures",
            "cancelRequest calls that threw since the start: each left a request running",
            cancel_failures.clone(),
        );
        Arc::new(ServerMetrics {
            registry,
            model: model.to_string(),
            version: MODEL_VERSION.to_string(),
            requests,
            tokens,
            ttft,
            tpot,
            e2e,
            queue,
            request_metrics,
            kv_cache_block_metrics,
            inflight_batcher_metrics,
            runtime_memory_metrics,
            general_metrics,
            input_token_len,
            output_token_len,
            lora_requests,
            health_issues,
            cancel_failures,
        })
    }

    fn labels(&self, key: &str, value: &str) -> Labels {
        vec![("model".into(), self.model.clone()), ("version".into(), self.version.clone()), (key.into(), value.into())]
    }

    /// A request that runs LoRA adapter `task_id`.
    pub fn record_lora_request(&self, task_id: u64) {
        self.lora_requests.get_or_create(&self.labels("task_id", &task_id.to_string())).inc();
    }

    /// A request that finished with a final output.
    pub fn record_final(&self, done: &FinalOutput) {
        self.record_outcome(done.finish_reason.as_openai_str());
        self.input_token_len
            .get_or_create(&self.labels("response_metric_type", "total_input_tokens"))
            .observe(f64::from(done.prompt_tokens));
        self.output_token_len
            .get_or_create(&self.labels("response_metric_type", "total_output_tokens"))
            .observe(f64::from(done.completion_tokens));
        self.tokens.get_or_create(&self.labels("direction", "input")).inc_by(u64::from(done.prompt_tokens));
        self.tokens.get_or_create(&self.labels("direction", "output")).inc_by(u64::from(done.completion_tokens));
        if let Some(ttft) = done.ttft() {
            self.ttft.observe(ttft.as_secs_f64());
        }
        if let Some(tpot) = done.tpot() {
            self.tpot.observe(tpot.as_secs_f64());
        }
        self.e2e.observe(done.e2e_latency().as_secs_f64());
        if let Some(queue) = done.perf.and_then(|p| p.queue_time()) {
            self.queue.observe(queue.as_secs_f64());
        }
    }

    /// A request that ended with an error status.
    pub fn record_error(&self, code: tonic::Code) {
        self.record_outcome(code_outcome(code));
    }

    /// A request that ended some other way: `cancelled` when its client went away, or a code name.
    pub fn record_outcome(&self, outcome: &str) {
        self.requests.get_or_create(&self.labels("outcome", outcome)).inc();
    }

    /// The latest executor iteration.
    pub fn record_iteration(&self, s: &IterationStats) {
        let set = |family: &Family<Labels, F64Gauge>, key: &str, value: &str, v: f64| {
            family.get_or_create(&self.labels(key, value)).set(v);
        };
        let batch = s.inflight_batching;
        let scheduled = batch.map_or(0, |b| b.num_scheduled_requests);
        let request_type = "request_type";
        set(&self.request_metrics, request_type, "active", f64::from(s.num_active_requests));
        set(&self.request_metrics, request_type, "max", f64::from(s.max_num_active_requests));
        set(&self.request_metrics, request_type, "scheduled", f64::from(scheduled));
        set(&self.request_metrics, request_type, "context", f64::from(batch.map_or(0, |b| b.num_context_requests)));
        set(&self.request_metrics, request_type, "waiting", f64::from(s.num_active_requests - scheduled));
        if let Some(kv) = s.kv_cache {
            let kind = "kv_cache_block_type";
            set(&self.kv_cache_block_metrics, kind, "max", f64::from(kv.max_num_blocks));
            set(&self.kv_cache_block_metrics, kind, "free", f64::from(kv.free_num_blocks));
            set(&self.kv_cache_block_metrics, kind, "used", f64::from(kv.used_num_blocks));
            set(&self.kv_cache_block_metrics, kind, "tokens_per", f64::from(kv.tokens_per_block));
            set(&self.kv_cache_block_metrics, kind, "reused", f64::from(kv.reused_blocks));
            set(&self.kv_cache_block_metrics, kind, "fraction", kv.utilization());
        }
        if let Some(b) = batch {
            let kind = "inflight_batcher_specific_metric";
            set(&self.inflight_batcher_metrics, kind, "total_context_tokens", f64::from(b.num_ctx_tokens));
            set(&self.inflight_batcher_metrics, kind, "generation_requests", f64::from(b.num_gen_requests));
            set(&self.inflight_batcher_metrics, kind, "micro_batch_id", f64::from(b.micro_batch_id));
            set(&self.inflight_batcher_metrics, kind, "paused_requests", f64::from(b.num_paused_requests));
        }
        let memory = "memory_type";
        set(&self.runtime_memory_metrics, memory, "cpu", s.cpu_mem_usage as f64);
        set(&self.runtime_memory_metrics, memory, "gpu", s.gpu_mem_usage as f64);
        set(&self.runtime_memory_metrics, memory, "pinned", s.pinned_mem_usage as f64);
        let micros = chrono::NaiveDateTime::parse_from_str(&s.timestamp, "%m-%d-%Y %H:%M:%S%.f")
            .ok()
            .and_then(|t| t.and_local_timezone(chrono::Local).single())
            .map_or(0.0, |t| t.timestamp_micros() as f64);
        set(&self.general_metrics, "general_type", "timestamp", micros);
        set(&self.general_metrics, "general_type", "iteration_counter", s.iter as f64);
    }

    /// The executor's health now: 1 for each issue kind it has, 0 for the others.
    pub fn record_health(&self, issues: &[crate::HealthIssue], cancel_failures: u64) {
        for kind in crate::HealthIssue::KINDS {
            let on = issues.iter().any(|i| i.kind() == kind);
            self.health_issues.get_or_create(&self.labels("reason", kind)).set(i64::from(on));
        }
        self.cancel_failures.set(i64::try_from(cancel_failures).unwrap_or(i64::MAX));
    }

    /// The registry as Prometheus/OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}
