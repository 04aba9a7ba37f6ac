//! The run summary: every `vllm bench serve` result key with the same meaning, plus our additions.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Value, json};

use super::sections::{ClockSection, SummarySections};
use super::summary_sections::{DetailedArrays, FailedRequest, RunInfo, ServerStats, TokenStats};
use crate::bench::metrics::calibration::Calibration;
use crate::bench::metrics::slo::Slos;
use crate::bench::metrics::stats::Distribution;
use crate::bench::metrics::throughput::Throughput;

/// The result of one benchmark point.
///
/// Serializes (with `serde_json`) to a vLLM-compatible result object: the vLLM keys keep their
/// meaning and types, and everything we add lives under new keys:
/// `{mean,median,std,pNN}_itl_per_token_ms`, `..._client_queue_time_ms` (the same meaning as
/// vLLM's optional client-queue metric), `..._dispatch_delay_ms` (only when requests had a
/// schedule), `..._request_output_tok_s` (output tokens / E2E latency per request),
/// `max_output_tokens_per_s_by_token`, `mean_concurrent_requests`, `inflight_input_tokens`,
/// actual token counts (`mean_prompt_tokens`, `max_output_tokens`, `total_cached_tokens`,
/// `output_len_mismatches`, ...), `streaming`, `goodput_slos`, `goodput_slos_not_applicable`,
/// `warmup_requests`, `ramp_up_requests`, `server`, `calibration`, `arrivals` (how
/// synchronised the sends were), `steady_state` (the figures of the steady window), `sessions`
/// (by turn, multi-turn workloads), `disaggregation` (the TTFT split of disaggregated requests),
/// and the `engine`, `workload`, `kv`, `iter`, `prediction`, `metadata`, `lora`,
/// `executor_settings`, `gpu_telemetry`, `server_metrics` and `repeats` sections (written when
/// set; each a typed struct of [`SummarySections`]).
///
/// Differences from vLLM worth knowing: `failed_requests` is always written (empty when nothing
/// failed); `duration` is the measured window (first send to last completion), which is also
/// the denominator of every rate; latency statistics of a metric without samples are `0.0`, as
/// vLLM writes them. A non-streaming run has no TTFT, TPOT or ITL, so those keys are left out
/// (as vLLM leaves them out of its non-streaming, pooling results); E2E latency and
/// `..._request_output_tok_s` remain, and goodput uses only an `e2el` limit.
///
/// ```rust
/// use trtllm::bench::{Phase, RequestRecord, RunInfo, Slos, Summary};
///
/// let mut records = Vec::new();
/// for i in 0..4 {
///     let mut r = RequestRecord::new(i, Phase::Measure, i as f64 * 0.1);
///     r.prompt_tokens = 32;
///     r.record_chunk(r.send_s + 0.05, 1);
///     r.record_chunk(r.send_s + 0.15, 3);
///     r.finish(r.send_s + 0.15, 4, Some("length".into()));
///     records.push(r);
/// }
/// let summary = Summary::builder(RunInfo { model_id: "tiny".into(), ..RunInfo::default() })
///     .percentiles(&[50.0, 99.9])
///     .slos(Slos::parse("ttft:100").unwrap())
///     .build(&records)
///     .unwrap();
/// let json = summary.to_json();
/// assert_eq!(json["completed"], 4);
/// assert_eq!(json["request_rate"], "inf");
/// assert!((json["mean_ttft_ms"].as_f64().unwrap() - 50.0).abs() < 1e-9);
/// assert!(json.get("p99.9_tpot_ms").is_some());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Setup keys.
    pub run: RunInfo,
    /// Counts and rates.
    pub throughput: Throughput,
    /// Time to first token, ms.
    pub ttft: Distribution,
    /// Time per output token, ms (requests with more than one output token).
    pub tpot: Distribution,
    /// Per-chunk inter-token latency pooled over requests, ms.
    pub itl: Distribution,
    /// End-to-end latency, ms.
    pub e2el: Distribution,
    /// Inter-token latency attributed per token, pooled, ms.
    pub itl_per_token: Distribution,
    /// Output tokens per second of each request (output tokens / E2E latency).
    pub request_output_throughput: Distribution,
    /// Whether the measured requests streamed (false: TTFT, TPOT and ITL do not exist).
    pub streaming: bool,
    /// Actual prompt, output and cached token counts.
    pub tokens: TokenStats,
    /// In-flight input-token pressure: concurrency (or, without a cap, the mean number of
    /// requests in flight) × mean actual prompt tokens.
    pub inflight_input_tokens: f64,
    /// Time waiting for a concurrency slot, ms.
    pub client_queue: Distribution,
    /// Actual − scheduled send, ms (open-loop requests only).
    pub dispatch_delay: Distribution,
    /// Executor-side statistics, when any request carried them.
    pub server: Option<ServerStats>,
    /// Failed measured requests.
    pub failed_requests: Vec<FailedRequest>,
    /// Per-request arrays, when detailed output was asked for.
    pub detailed: Option<DetailedArrays>,
    /// SLOs used for goodput (the applicable ones).
    pub slos: Option<Slos>,
    /// SLOs given but not applicable to the run (TTFT and TPOT without streaming).
    pub slos_not_applicable: Option<Slos>,
    /// Warmup requests that were run (and excluded).
    pub warmup_requests: u64,
    /// Requests sent during a ramp-up (and excluded).
    pub ramp_up_requests: u64,
    /// The runner's measurement error against the executor's stamps.
    pub calibration: Option<Calibration>,
    /// Which clock the times come from, and details (written as `clock` when set).
    pub clock: Option<ClockSection>,
    /// Speculative-decoding figures, when requests proposed draft tokens.
    pub speculative: Option<crate::bench::metrics::speculative::SpeculativeSummary>,
    /// The named sections (`engine`, `workload`, `prediction`, `steady_state`,
    /// `disaggregation`, ...), each written when set.
    pub sections: SummarySections,
}

impl Summary {
    /// Mean prompt tokens of the successful measured requests (0 without any).
    pub fn mean_prompt_tokens(&self) -> f64 {
        self.tokens.prompt.mean().unwrap_or(0.0)
    }

    /// Mean output tokens of the successful measured requests (0 without any).
    pub fn mean_output_tokens(&self) -> f64 {
        self.tokens.output.mean().unwrap_or(0.0)
    }

    /// The result object as `(key, value)` pairs in file order.
    pub fn entries(&self) -> Vec<(String, Value)> {
        let run = &self.run;
        let t = &self.throughput;
        let mut e: Vec<(String, Value)> = Vec::with_capacity(96);
        let mut put = |k: &str, v: Value| e.push((k.to_owned(), v));
        put("date", run.date.clone().into());
        put("endpoint_type", run.endpoint_type.clone().into());
        put("backend", run.backend.clone().into());
        put("label", json!(run.label));
        put("model_id", run.model_id.clone().into());
        put("tokenizer_id", json!(run.tokenizer_id));
        put("num_prompts", json!(run.num_prompts));
        put("max_model_len", json!(run.max_model_len));
        put("request_rate", if run.request_rate.is_finite() { json!(run.request_rate) } else { json!("inf") });
        put("burstiness", json!(run.burstiness));
        put("max_concurrency", json!(run.max_concurrency));
        put("duration", json!(t.duration_s));
        put("completed", json!(t.completed));
        put("failed", json!(t.failed));
        put("total_input_tokens", json!(t.total_input_tokens));
        put("total_output_tokens", json!(t.total_output_tokens));
        put("request_throughput", json!(t.request_throughput));
        put("request_goodput", json!(t.request_goodput));
        put("input_throughput", json!(t.input_throughput));
        put("output_throughput", json!(t.output_throughput));
        put("total_token_throughput", json!(t.total_token_throughput));
        put("max_output_tokens_per_s", json!(t.max_output_tokens_per_s));
        put("max_concurrent_requests", json!(t.max_concurrent_requests));
        put("failed_requests", json!(self.failed_requests));
        if let Some(Value::Object(arrays)) = self.detailed.as_ref().map(|d| json!(d)) {
            e.extend(arrays);
        }
        let mut stats = |d: &Distribution, name: &str| {
            e.extend(d.ms_entries(name).into_iter().map(|(k, v)| (k, json!(v))));
        };
        if self.streaming {
            stats(&self.ttft, "ttft");
            stats(&self.tpot, "tpot");
            stats(&self.itl, "itl");
        }
        stats(&self.e2el, "e2el");
        if self.streaming {
            stats(&self.itl_per_token, "itl_per_token");
        }
        stats(&self.client_queue, "client_queue_time");
        if !self.dispatch_delay.is_empty() {
            stats(&self.dispatch_delay, "dispatch_delay");
        }
        e.extend(
            self.request_output_throughput
                .unit_entries("request_output", "tok_s")
                .into_iter()
                .map(|(k, v)| (k, json!(v))),
        );
        self.tokens.entries(&mut e);
        let mut put = |k: &str, v: Value| e.push((k.to_owned(), v));
        put("max_output_tokens_per_s_by_token", json!(t.max_output_tokens_per_s_by_token));
        put("mean_concurrent_requests", json!(t.mean_concurrent_requests));
        put("inflight_input_tokens", json!(self.inflight_input_tokens));
        put("streaming", json!(self.streaming));
        put("goodput_slos", json!(self.slos.map(|s| s.to_string())));
        if let Some(dropped) = self.slos_not_applicable {
            put("goodput_slos_not_applicable", json!(dropped.to_string()));
        }
        put("warmup_requests", json!(self.warmup_requests));
        put("ramp_up_requests", json!(self.ramp_up_requests));
        if let Some(clock) = self.clock.as_ref().and_then(|c| serde_json::to_value(c).ok()) {
            put("clock", clock);
        }
        if let Some(server) = &self.server {
            put("server", server.to_json());
        }
        if let Some(calibration) = &self.calibration {
            put("calibration", calibration.to_json());
        }
        if let Some(speculative) = &self.speculative {
            put("speculative", speculative.to_json());
        }
        e.extend(self.sections.entries());
        e
    }

    /// The result object as a JSON value (key order is `serde_json`'s map order; serialize the
    /// summary itself to keep file order).
    pub fn to_json(&self) -> Value {
        Value::Object(self.entries().into_iter().collect())
    }
}

impl Serialize for Summary {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entries = self.entries();
        let mut map = serializer.serialize_map(Some(entries.len()))?;
        for (k, v) in &entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}
