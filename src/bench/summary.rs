//! The run summary: every `vllm bench serve` result key with the same meaning, plus our additions.

use std::collections::BTreeMap;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value, json};

use super::calibration::Calibration;
use super::record::{Phase, RequestRecord};
use super::slo::Slos;
use super::stats::{DEFAULT_PERCENTILES, Distribution, StatsError, validate_percentile};
use super::throughput::Throughput;

/// Errors from building a [`Summary`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummaryError {
    /// A configured percentile is outside 0..=100.
    #[error("invalid percentile: {0}")]
    Percentile(#[from] StatsError),
    /// An open-ended section (`engine`, `workload`, ...) that is not a JSON object.
    #[error("summary section {0:?} must be a JSON object")]
    NotAnObject(&'static str),
}

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
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
    fn to_json(&self) -> Value {
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
    fn compute(ok: &[&RequestRecord]) -> Self {
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

    fn entries(&self, e: &mut Vec<(String, Value)>) {
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
/// `warmup_requests`, `ramp_up_requests`, `server`, `calibration`, and the open-ended `engine`,
/// `workload`, `kv`, `iter`, `prediction` and `metadata` objects (written when set).
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
    pub clock: Option<Value>,
    /// Engine description (filled by the runner).
    pub engine: Option<Value>,
    /// Workload description (filled by the runner).
    pub workload: Option<Value>,
    /// KV-cache statistics (filled by the runner).
    pub kv: Option<Value>,
    /// Iteration statistics (filled by the runner).
    pub iter: Option<Value>,
    /// Performance-model prediction (filled by the runner).
    pub prediction: Option<Value>,
    /// Free-form metadata (filled by the runner).
    pub metadata: Option<Value>,
}

/// Options for [`Summary::builder`].
#[derive(Debug, Clone)]
pub struct SummaryBuilder {
    run: RunInfo,
    percentiles: Vec<f64>,
    slos: Option<Slos>,
    detailed: bool,
    iteration_end_s: BTreeMap<u64, f64>,
    clock: Option<(ClockKind, Value)>,
    sections: [(&'static str, Option<Value>); 6],
}

const SECTION_NAMES: [&str; 6] = ["engine", "workload", "kv", "iter", "prediction", "metadata"];

impl SummaryBuilder {
    /// Percentiles to report (default p50, p90, p95, p99).
    pub fn percentiles(mut self, percentiles: &[f64]) -> Self {
        self.percentiles = percentiles.to_vec();
        self
    }

    /// SLOs for `request_goodput` (without them `request_goodput` is `null`, as in vLLM).
    pub fn slos(mut self, slos: Slos) -> Self {
        self.slos = Some(slos);
        self
    }

    /// Whether to include the per-request arrays (`input_lens`, `ttfts`, `itls`, ...).
    pub fn detailed(mut self, detailed: bool) -> Self {
        self.detailed = detailed;
        self
    }

    /// End time (seconds on the run clock) of each executor iteration, by number, for the
    /// per-response ITL measurement error in `calibration`.
    pub fn iteration_end_times(mut self, iteration_end_s: BTreeMap<u64, f64>) -> Self {
        self.iteration_end_s = iteration_end_s;
        self
    }

    /// Says which clock the records' times come from: written as `clock` (`kind` plus the
    /// entries of the `details` object). On the virtual clock the runner's measurement error
    /// (`calibration`) is not computed: client and executor times are then the same figures.
    pub fn clock(mut self, kind: ClockKind, details: Value) -> Self {
        self.clock = Some((kind, details));
        self
    }

    fn section(mut self, index: usize, value: Value) -> Self {
        self.sections[index].1 = Some(value);
        self
    }

    /// The `engine` object.
    pub fn engine(self, value: Value) -> Self {
        self.section(0, value)
    }

    /// The `workload` object.
    pub fn workload(self, value: Value) -> Self {
        self.section(1, value)
    }

    /// The `kv` object.
    pub fn kv(self, value: Value) -> Self {
        self.section(2, value)
    }

    /// The `iter` object.
    pub fn iter(self, value: Value) -> Self {
        self.section(3, value)
    }

    /// The `prediction` object (the performance model's expectation next to the measurement).
    pub fn prediction(self, value: Value) -> Self {
        self.section(4, value)
    }

    /// The `metadata` object.
    pub fn metadata(self, value: Value) -> Self {
        self.section(5, value)
    }

    /// Computes the summary. Warmup requests are counted but excluded from every statistic;
    /// only successful measured requests enter latency statistics.
    pub fn build(self, records: &[RequestRecord]) -> Result<Summary, SummaryError> {
        for &p in &self.percentiles {
            validate_percentile(p)?;
        }
        for (name, value) in &self.sections {
            if value.as_ref().is_some_and(|v| !v.is_object()) {
                return Err(SummaryError::NotAnObject(name));
            }
        }
        let ps = &self.percentiles;
        let measured: Vec<&RequestRecord> = records.iter().filter(|r| r.is_measured()).collect();
        let ok: Vec<&RequestRecord> = measured.iter().copied().filter(|r| r.is_success()).collect();
        let ms = |f: &dyn Fn(&RequestRecord) -> Option<f64>| -> Distribution {
            Distribution::from_samples(ok.iter().filter_map(|r| f(r)).map(to_ms).collect(), ps)
        };
        let pooled = |f: &dyn Fn(&RequestRecord) -> Vec<f64>| -> Distribution {
            Distribution::from_samples(ok.iter().flat_map(|r| f(r)).map(to_ms).collect(), ps)
        };

        let with_server: Vec<&RequestRecord> = ok.iter().copied().filter(|r| r.server.is_some()).collect();
        let server = (!with_server.is_empty()).then(|| {
            let dist = |f: fn(&RequestRecord) -> Option<f64>| {
                Distribution::from_samples(with_server.iter().filter_map(|r| f(r)).map(to_ms).collect(), ps)
            };
            ServerStats {
                requests: with_server.len() as u64,
                queue: dist(RequestRecord::server_queue_s),
                ttft: dist(RequestRecord::server_ttft_s),
                prefill: dist(RequestRecord::server_prefill_s),
                tpot: dist(RequestRecord::server_tpot_s),
                runner_overhead: dist(RequestRecord::runner_overhead_s),
            }
        });

        let failed_requests = measured
            .iter()
            .filter(|r| !r.is_success())
            .map(|r| FailedRequest {
                index: r.index,
                error: r.error.clone().unwrap_or_default(),
                prompt_len: r.prompt_tokens,
                start_time: r.send_s,
                latency: failure_latency_s(r),
                ttft: r.ttft_s().unwrap_or(0.0),
                output_tokens: r.output_tokens,
                itl: r.itl_s(),
            })
            .collect();

        let detailed = self.detailed.then(|| detailed_arrays(&measured));
        let mut run = self.run;
        run.num_prompts.get_or_insert(measured.len() as u64);
        let [engine, workload, kv, iter, prediction, metadata] = self.sections.map(|(_, v)| v);
        let streaming = measured.iter().all(|r| r.streaming);
        let given = self.slos.filter(|s| !s.is_empty());
        let throughput = Throughput::compute(records, given.as_ref());
        let slos = given.map(|s| s.applicable_to(streaming)).filter(|s| !s.is_empty());
        let slos_not_applicable = given.map(|s| s.not_applicable_to(streaming)).filter(|s| !s.is_empty());
        let tokens = TokenStats::compute(&ok);
        let concurrency = run.max_concurrency.map_or(throughput.mean_concurrent_requests, |c| c as f64);
        let count_phase = |phase: Phase| records.iter().filter(|r| r.phase == phase).count() as u64;

        Ok(Summary {
            ttft: ms(&RequestRecord::ttft_s),
            tpot: ms(&RequestRecord::tpot_s),
            itl: pooled(&RequestRecord::itl_s),
            e2el: ms(&RequestRecord::e2el_s),
            itl_per_token: pooled(&RequestRecord::itl_per_token_s),
            request_output_throughput: Distribution::from_samples(
                ok.iter().filter_map(|r| r.output_tokens_per_s()).collect(),
                ps,
            ),
            streaming,
            inflight_input_tokens: concurrency * tokens.prompt.mean().unwrap_or(0.0),
            tokens,
            client_queue: ms(&|r| Some(r.client_queue_s)),
            dispatch_delay: ms(&RequestRecord::dispatch_delay_s),
            server,
            failed_requests,
            detailed,
            slos,
            slos_not_applicable,
            warmup_requests: count_phase(Phase::Warmup),
            ramp_up_requests: count_phase(Phase::RampUp),
            calibration: match &self.clock {
                Some((ClockKind::Virtual, _)) => None,
                _ => Calibration::compute(records, &self.iteration_end_s, ps),
            },
            clock: self.clock.map(|(kind, details)| {
                let mut section = Map::new();
                section.insert("kind".into(), json!(kind));
                if let Value::Object(details) = details {
                    section.extend(details);
                }
                Value::Object(section)
            }),
            throughput,
            run,
            engine,
            workload,
            kv,
            iter,
            prediction,
            metadata,
        })
    }
}

fn to_ms(seconds: f64) -> f64 {
    seconds * 1000.0
}

/// How long a failed request ran: send to the error (to its last token if no end was stamped).
fn failure_latency_s(r: &RequestRecord) -> f64 {
    r.end_s.map(|e| e - r.send_s).or_else(|| r.e2el_s()).unwrap_or(0.0)
}

fn detailed_arrays(measured: &[&RequestRecord]) -> DetailedArrays {
    let mut d = DetailedArrays::default();
    for r in measured {
        let ok = r.is_success();
        d.input_lens.push(r.prompt_tokens);
        d.output_lens.push(if ok { r.output_tokens } else { 0 });
        d.ttfts.push(r.ttft_s().unwrap_or(0.0));
        d.itls.push(r.itl_s());
        d.latencies.push(if ok { r.e2el_s().unwrap_or(0.0) } else { failure_latency_s(r) });
        d.start_times.push(r.send_s);
        d.queue_times.push(r.client_queue_s);
        d.errors.push(r.error.clone().unwrap_or_default());
    }
    d
}

impl Summary {
    /// Starts a summary for a run described by `run`.
    pub fn builder(run: RunInfo) -> SummaryBuilder {
        SummaryBuilder {
            run,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            slos: None,
            detailed: false,
            iteration_end_s: BTreeMap::new(),
            clock: None,
            sections: SECTION_NAMES.map(|name| (name, None)),
        }
    }

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
        if let Some(clock) = &self.clock {
            put("clock", clock.clone());
        }
        if let Some(server) = &self.server {
            put("server", server.to_json());
        }
        if let Some(calibration) = &self.calibration {
            put("calibration", calibration.to_json());
        }
        let sections = [
            ("engine", &self.engine),
            ("workload", &self.workload),
            ("kv", &self.kv),
            ("iter", &self.iter),
            ("prediction", &self.prediction),
            ("metadata", &self.metadata),
        ];
        for (name, value) in sections {
            if let Some(v) = value {
                put(name, v.clone());
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::record::{Phase, ServerTimes};

    fn ok(index: u64, send: f64, ttft: f64, gaps: &[f64]) -> RequestRecord {
        let mut r = RequestRecord::new(index, Phase::Measure, send);
        r.prompt_tokens = 10;
        let mut t = send + ttft;
        r.record_chunk(t, 1);
        for g in gaps {
            t += g;
            r.record_chunk(t, 1);
        }
        r.finish(t, 1 + gaps.len() as u64, Some("length".into()));
        r
    }

    #[test]
    fn warmup_is_excluded_but_counted() {
        let mut w = ok(0, 0.0, 5.0, &[1.0]);
        w.phase = Phase::Warmup;
        let m = ok(1, 10.0, 0.1, &[0.01]);
        let s = Summary::builder(RunInfo::default()).build(&[w, m]).unwrap();
        assert_eq!(s.warmup_requests, 1);
        assert_eq!(s.throughput.completed, 1);
        assert_eq!(s.ttft.count(), 1);
        assert!((s.ttft.mean().unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(s.run.num_prompts, Some(1));
    }

    #[test]
    fn sections_must_be_objects() {
        let err = Summary::builder(RunInfo::default()).kv(json!([1, 2])).build(&[]).unwrap_err();
        assert!(matches!(err, SummaryError::NotAnObject("kv")));
        let err = Summary::builder(RunInfo::default()).percentiles(&[50.0, 120.0]).build(&[]).unwrap_err();
        assert!(matches!(err, SummaryError::Percentile(_)));
    }

    #[test]
    fn server_block_only_with_server_times() {
        let mut a = ok(0, 0.0, 0.2, &[0.1, 0.1]);
        let s = Summary::builder(RunInfo::default()).build(std::slice::from_ref(&a)).unwrap();
        assert!(s.to_json().get("server").is_none());
        a.server = Some(ServerTimes {
            arrival_s: Some(0.05),
            first_scheduled_s: Some(0.06),
            first_token_s: Some(0.15),
            last_token_s: Some(0.35),
            ..ServerTimes::default()
        });
        let json = Summary::builder(RunInfo::default()).percentiles(&[99.0]).build(&[a]).unwrap().to_json();
        let server = &json["server"];
        assert_eq!(server["requests"], 1);
        assert!((server["mean_queue_ms"].as_f64().unwrap() - 10.0).abs() < 1e-9);
        assert!((server["p99_ttft_ms"].as_f64().unwrap() - 100.0).abs() < 1e-9);
        assert!((server["mean_prefill_ms"].as_f64().unwrap() - 90.0).abs() < 1e-9);
        assert!((server["mean_tpot_ms"].as_f64().unwrap() - 100.0).abs() < 1e-9);
        assert!((server["mean_runner_overhead_ms"].as_f64().unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn finite_rate_is_a_number() {
        let run = RunInfo { request_rate: 2.5, ..RunInfo::default() };
        let json = Summary::builder(run).build(&[]).unwrap().to_json();
        assert_eq!(json["request_rate"], 2.5);
        assert_eq!(json["request_goodput"], Value::Null);
        assert_eq!(json["num_prompts"], 0);
    }

    #[test]
    fn serialized_order_starts_with_setup_keys() {
        let s = Summary::builder(RunInfo::default()).build(&[]).unwrap();
        let text = serde_json::to_string(&s).unwrap();
        let date = text.find("\"date\"").unwrap();
        let duration = text.find("\"duration\"").unwrap();
        let ttft = text.find("\"mean_ttft_ms\"").unwrap();
        assert!(date < duration && duration < ttft);
    }
}
