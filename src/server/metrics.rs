//! Prometheus metrics: request outcomes and latencies, and the executor's iteration stats under the
//! family names and labels of Triton's TensorRT-LLM backend, so existing dashboards carry over.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::output::FinalOutput;
use crate::stats::IterationStats;

type Labels = Vec<(String, String)>;
type F64Gauge = Gauge<f64, AtomicU64>;

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
}

impl ServerMetrics {
    /// Metrics for `model`; `version` labels the Triton-compatible families.
    pub fn new(model: &str, version: &str) -> Arc<Self> {
        let mut registry = Registry::default();
        let requests = Family::<Labels, Counter>::default();
        registry.register(
            "trtllm_requests",
            "Finished requests by outcome (finish reason or gRPC code)",
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
        Arc::new(ServerMetrics {
            registry,
            model: model.to_string(),
            version: version.to_string(),
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
        })
    }

    fn labels(&self, key: &str, value: &str) -> Labels {
        vec![("model".into(), self.model.clone()), ("version".into(), self.version.clone()), (key.into(), value.into())]
    }

    /// A request that finished with a final output.
    pub fn record_final(&self, done: &FinalOutput) {
        self.requests.get_or_create(&self.labels("outcome", done.finish_reason.as_openai_str())).inc();
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
        self.requests.get_or_create(&self.labels("outcome", &format!("{code:?}").to_lowercase())).inc();
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

    /// The registry as Prometheus/OpenMetrics text.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}
