//! The parts of a run summary: the setup keys, executor-side statistics, actual token counts,
//! failed requests and the per-request arrays.

use serde_json::{Map, Value, json};

use crate::bench::metrics::record::RequestRecord;
use crate::bench::metrics::stats::Distribution;

/// How the run was configured: the setup keys at the top of a vLLM result file.
///
/// `request_rate` is requests per second; `f64::INFINITY` (the default, "send everything at
/// once", as in closed-loop concurrency mode) is written as the string `"inf"`, exactly as
/// `vllm bench serve` writes it; finite rates are written as numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// Local start time formatted `%Y%m%d-%H%M%S` (see [`RunInfo::now_date`]).
    pub date: String,
    /// Kept equal to `backend` in vLLM for backward compatibility.
    pub endpoint_type: String,
    /// Backend name, e.g. `"trtllm"`.
    pub backend: String,
    /// Free-form result label.
    pub label: Option<String>,
    /// Model identifier.
    pub model_id: String,
    /// Tokenizer identifier.
    pub tokenizer_id: Option<String>,
    /// Number of prompts configured; `None` writes the number of measured requests.
    pub num_prompts: Option<u64>,
    /// Maximum sequence length of the engine, if known.
    pub max_model_len: Option<u64>,
    /// Requests per second (open loop), `f64::INFINITY` for no rate limit.
    pub request_rate: f64,
    /// Gamma shape of inter-arrival times (1 = Poisson).
    pub burstiness: f64,
    /// Concurrency cap (closed loop: the concurrency).
    pub max_concurrency: Option<u64>,
}

impl RunInfo {
    /// The current local time as vLLM formats result dates (`20250131-235959`).
    pub fn now_date() -> String {
        chrono::Local::now().format("%Y%m%d-%H%M%S").to_string()
    }
}

impl Default for RunInfo {
    fn default() -> Self {
        Self {
            date: Self::now_date(),
            endpoint_type: "trtllm".into(),
            backend: "trtllm".into(),
            label: None,
            model_id: String::new(),
            tokenizer_id: None,
            num_prompts: None,
            max_model_len: None,
            request_rate: f64::INFINITY,
            burstiness: 1.0,
            max_concurrency: None,
        }
    }
}

/// Which clock a summary's times were taken on, written as `clock.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockKind {
    /// The process's monotonic clock: what a client saw.
    Wall,
    /// The simulated executor's virtual clock: simulated time, not what the run took.
    Virtual,
}

/// Executor-side statistics from `RequestPerfMetrics` (milliseconds), written under `server`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerStats {
    /// Measured successful requests that carried executor timestamps.
    pub requests: u64,
    /// firstScheduledTime − arrivalTime.
    pub queue: Distribution,
    /// firstTokenTime − arrivalTime.
    pub ttft: Distribution,
    /// firstTokenTime − firstScheduledTime.
    pub prefill: Distribution,
    /// (lastTokenTime − firstTokenTime) / (output_tokens − 1).
    pub tpot: Distribution,
    /// Client TTFT − executor TTFT.
    pub runner_overhead: Distribution,
}

impl ServerStats {
    pub(super) fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("requests".into(), self.requests.into());
        self.queue.write_ms_keys(&mut map, "queue");
        self.ttft.write_ms_keys(&mut map, "ttft");
        self.prefill.write_ms_keys(&mut map, "prefill");
        self.tpot.write_ms_keys(&mut map, "tpot");
        self.runner_overhead.write_ms_keys(&mut map, "runner_overhead");
        Value::Object(map)
    }
}

/// Actual token counts of the successful measured requests: what the engine really processed,
/// whatever the workload's size knobs said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenStats {
    /// Prompt tokens enqueued per request.
    pub prompt: Distribution,
    /// Output tokens the executor returned per request.
    pub output: Distribution,
    /// Prompt tokens served from reused KV blocks per request.
    pub cached: Distribution,
    /// Prompt tokens served from reused KV blocks, in total.
    pub total_cached_tokens: u64,
    /// Requests whose output length differs from the one the workload asked for.
    pub output_len_mismatches: u64,
}

impl TokenStats {
    pub(super) fn compute(ok: &[&RequestRecord]) -> Self {
        let dist =
            |f: fn(&RequestRecord) -> u64| Distribution::from_samples(ok.iter().map(|r| f(r) as f64).collect(), &[]);
        TokenStats {
            prompt: dist(|r| r.prompt_tokens),
            output: dist(|r| r.output_tokens),
            cached: dist(|r| r.cached_tokens),
            total_cached_tokens: ok.iter().map(|r| r.cached_tokens).sum(),
            output_len_mismatches: ok.iter().filter(|r| r.output_len_mismatch()).count() as u64,
        }
    }

    pub(super) fn entries(&self, e: &mut Vec<(String, Value)>) {
        let mut put = |k: &str, v: Value| e.push((k.to_owned(), v));
        for (name, d) in [("prompt", &self.prompt), ("output", &self.output)] {
            put(&format!("mean_{name}_tokens"), json!(d.mean().unwrap_or(0.0)));
            put(&format!("min_{name}_tokens"), json!(d.min().unwrap_or(0.0) as u64));
            put(&format!("max_{name}_tokens"), json!(d.max().unwrap_or(0.0) as u64));
        }
        put("total_cached_tokens", json!(self.total_cached_tokens));
        put("mean_cached_tokens", json!(self.cached.mean().unwrap_or(0.0)));
        put("output_len_mismatches", json!(self.output_len_mismatches));
    }
}

/// One entry of `failed_requests` (same fields as vLLM's: times in seconds, best effort for
/// requests that failed before their first token).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FailedRequest {
    /// The request's [`RequestRecord::index`].
    pub index: u64,
    /// The error message.
    pub error: String,
    /// Prompt tokens enqueued.
    pub prompt_len: u64,
    /// Send time, seconds since the run start.
    pub start_time: f64,
    /// Send to the failure, seconds.
    pub latency: f64,
    /// Time to first token, seconds; 0 when no token arrived.
    pub ttft: f64,
    /// Output tokens reported for the request.
    pub output_tokens: u64,
    /// Chunk gaps received before the failure, seconds.
    pub itl: Vec<f64>,
}

/// Per-request arrays written with detailed output (vLLM `--save-detailed`), one entry per
/// measured request in record order. Times are seconds; failed requests have 0 output tokens,
/// a TTFT of 0 when no token arrived, and their message in `errors` (`""` for successes).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DetailedArrays {
    /// Prompt tokens.
    pub input_lens: Vec<u64>,
    /// Output tokens (0 for failures).
    pub output_lens: Vec<u64>,
    /// TTFT, seconds.
    pub ttfts: Vec<f64>,
    /// Per-chunk gaps, seconds.
    pub itls: Vec<Vec<f64>>,
    /// E2E latency, seconds (for failures: send to the error).
    pub latencies: Vec<f64>,
    /// Send times, seconds since the run start (vLLM writes raw `perf_counter` values).
    pub start_times: Vec<f64>,
    /// Client queue times, seconds.
    pub queue_times: Vec<f64>,
    /// Error messages, `""` for successes.
    pub errors: Vec<String>,
}
