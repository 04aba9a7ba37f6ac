//! The summary's named sections (`workload`, `clock`, `prediction`, ...) as typed structs: the
//! library assembles them, the result file writes them, and the console lines, the HTML report
//! and `bench compare` read them by field.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::engine_section::EngineSection;
use super::lengths::LengthSection;
use crate::bench::lora::LoraSection;
use crate::bench::metrics::disagg_summary::DisaggregationSection;
use crate::bench::metrics::iteration_summary::{IterSection, KvSection};
use crate::bench::metrics::load_shape::{ArrivalSync, SessionsByTurn, SteadyState};
use crate::bench::metrics::repeats::RepeatsSection;
use crate::bench::metrics::timer_jitter::TimerJitter;
use crate::bench::telemetry::{GpuTelemetry, ServerMetricsSection};

/// A request rate in requests per second, written as vLLM writes it: a number, or the string
/// `"inf"` for no limit (send everything at once).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(pub f64);

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() { serializer.serialize_f64(self.0) } else { serializer.serialize_str("inf") }
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Number(n) => Ok(Rate(n.as_f64().unwrap_or(f64::INFINITY))),
            Value::String(s) if s == "inf" => Ok(Rate(f64::INFINITY)),
            other => Err(serde::de::Error::custom(format!("a rate is a number or \"inf\", not {other}"))),
        }
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_finite() { write!(f, "{}/s", self.0) } else { f.write_str("unlimited") }
    }
}

/// The named sections of a summary, in the order the result file writes them (each only when
/// set), each a struct the library fills and the console, the HTML report and `bench compare`
/// read by field. What stays JSON is what another program owns: the engine's and the executor's
/// own configurations (`engine.config`, `engine.executor`, `executor_settings.config`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SummarySections {
    /// The engine description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineSection>,
    /// What was sent, and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadSection>,
    /// KV-cache statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv: Option<KvSection>,
    /// Iteration statistics.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iter: Option<IterSection>,
    /// The performance model's expectation and the virtual-clock twin beside the measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prediction: Option<PredictionSection>,
    /// Who ran what, where.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<RunMetadata>,
    /// LoRA adapters, cache counters and latency by how the adapter was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<LoraSection>,
    /// The executor's runtime settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor_settings: Option<ExecutorSettings>,
    /// GPU telemetry averages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_telemetry: Option<GpuTelemetry>,
    /// Scraped Prometheus endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<ServerMetricsSection>,
    /// How synchronised the measured sends were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<ArrivalSync>,
    /// The steady part of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyState>,
    /// Figures by session turn (multi-turn workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionsByTurn>,
    /// Prefill/decode disaggregation: the TTFT split and transfer figures, the pools and the
    /// token check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disaggregation: Option<DisaggregationSection>,
    /// The spread of the headline figures over repeated runs (`--repeats N`), in the first
    /// run's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<RepeatsSection>,
}

impl SummarySections {
    /// The sections that are set, as `(key, value)` in file order.
    pub(crate) fn entries(&self) -> Vec<(String, Value)> {
        fn put<T: Serialize>(e: &mut Vec<(String, Value)>, key: &str, section: &Option<T>) {
            if let Some(v) = section.as_ref().and_then(|s| serde_json::to_value(s).ok()) {
                e.push((key.to_owned(), v));
            }
        }
        let mut e = Vec::new();
        put(&mut e, "engine", &self.engine);
        put(&mut e, "workload", &self.workload);
        put(&mut e, "kv", &self.kv);
        put(&mut e, "iter", &self.iter);
        put(&mut e, "prediction", &self.prediction);
        put(&mut e, "metadata", &self.metadata);
        put(&mut e, "lora", &self.lora);
        put(&mut e, "executor_settings", &self.executor_settings);
        put(&mut e, "gpu_telemetry", &self.gpu_telemetry);
        put(&mut e, "server_metrics", &self.server_metrics);
        put(&mut e, "arrivals", &self.arrivals);
        put(&mut e, "steady_state", &self.steady_state);
        put(&mut e, "sessions", &self.sessions);
        put(&mut e, "disaggregation", &self.disaggregation);
        put(&mut e, "repeats", &self.repeats);
        e
    }

    /// The sections of a result object (a `<stem>.json` read back), each read on its own: a
    /// section this version cannot read (an older file, another tool's) is left out rather than
    /// failing the rest.
    ///
    /// ```rust
    /// use trtllm::bench::SummarySections;
    ///
    /// let file = serde_json::json!({"completed": 4, "steady_state": "?", "engine": {"model_id": "tiny"}});
    /// let sections = SummarySections::from_result(&file);
    /// assert_eq!(sections.engine.unwrap().model_id, "tiny");
    /// assert!(sections.steady_state.is_none());
    /// ```
    pub fn from_result(result: &Value) -> Self {
        let Some(map) = result.as_object() else { return Self::default() };
        let mut kept = Map::new();
        for key in [
            "engine",
            "workload",
            "kv",
            "iter",
            "prediction",
            "metadata",
            "lora",
            "executor_settings",
            "gpu_telemetry",
            "server_metrics",
            "arrivals",
            "steady_state",
            "sessions",
            "disaggregation",
            "repeats",
        ] {
            let Some(value) = map.get(key).filter(|v| !v.is_null()) else { continue };
            let mut one = Map::new();
            one.insert(key.to_owned(), value.clone());
            if serde_json::from_value::<SummarySections>(Value::Object(one)).is_ok() {
                kept.insert(key.to_owned(), value.clone());
            }
        }
        serde_json::from_value(Value::Object(kept)).unwrap_or_default()
    }
}

/// The summary's `clock`: which clock the times were taken on, and its details.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClockSection {
    /// `wall` or `virtual`.
    pub kind: super::summary_sections::ClockKind,
    /// What the figures are.
    pub figures: String,
    /// Virtual clock: how arrivals are stamped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<String>,
    /// Virtual clock: the client latency added between a user's requests, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_latency_s: Option<f64>,
    /// Virtual clock: simulated seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated_s: Option<f64>,
    /// Virtual clock: wall seconds the simulation took.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    /// Virtual clock: simulated seconds per wall second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated_per_wall: Option<f64>,
    /// Virtual clock: requests whose ITL could not be mapped to iterations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub itl_unmapped_requests: Option<u64>,
    /// Wall clock: how late the host's timers woke up before the run (`null` when not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_timer_jitter: Option<Option<TimerJitter>>,
}

impl ClockSection {
    /// The wall clock, with the host's timer jitter when it was measured.
    pub fn wall(host_timer_jitter: Option<TimerJitter>) -> Self {
        ClockSection {
            kind: super::summary_sections::ClockKind::Wall,
            figures: "measured by the runner on this process's monotonic clock".into(),
            arrivals: None,
            client_latency_s: None,
            simulated_s: None,
            wall_s: None,
            simulated_per_wall: None,
            itl_unmapped_requests: None,
            host_timer_jitter: Some(host_timer_jitter),
        }
    }

    /// The simulated executor's virtual clock: `simulated_s` of simulated time in `wall_s`.
    pub fn virtual_clock(client_latency_s: f64, simulated_s: f64, wall_s: f64, itl_unmapped_requests: u64) -> Self {
        ClockSection {
            kind: super::summary_sections::ClockKind::Virtual,
            figures: "simulated executor time: every latency, duration and rate is what the simulated GPU would take, not what the run took".into(),
            arrivals: Some("stamped in simulated time: a closed-loop user's next request arrives client_latency_s after its previous one ended; open-loop requests at their scheduled times; each joins the first iteration starting at or after its arrival".into()),
            client_latency_s: Some(client_latency_s),
            simulated_s: Some(simulated_s),
            wall_s: Some(wall_s),
            simulated_per_wall: Some(if wall_s > 0.0 { simulated_s / wall_s } else { 0.0 }),
            itl_unmapped_requests: Some(itl_unmapped_requests),
            host_timer_jitter: None,
        }
    }

    /// The host's timer jitter, when measured.
    pub fn timer_jitter(&self) -> Option<&TimerJitter> {
        self.host_timer_jitter.as_ref().and_then(Option::as_ref)
    }
}

/// The summary's `prediction`: the performance model's expectation (its keys follow the
/// model: `single_stream`, `measured`, `ratio`, ...) and, under load, the virtual-clock twin.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PredictionSection {
    /// The simulator's own virtual-clock run of the same load beside the measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_load: Option<UnderLoad>,
    /// The unloaded model's figures.
    #[serde(flatten)]
    pub model: Map<String, Value>,
}

/// `prediction.under_load`: figures of the twin run beside the measured ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnderLoad {
    /// Where the predicted figures come from.
    pub source: String,
    /// Per summary key (`p50_ttft_ms`, `output_throughput`, ...).
    pub figures: std::collections::BTreeMap<String, PredictedMeasured>,
}

/// One figure predicted and measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PredictedMeasured {
    /// The twin's figure.
    pub predicted: f64,
    /// The run's figure.
    pub measured: f64,
    /// measured / predicted (`null` when predicted is 0).
    pub ratio: Option<f64>,
}

/// The summary's `metadata`: the command line, versions and where the run went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMetadata {
    /// The command line, word by word.
    pub command_line: Vec<String>,
    /// This crate's version.
    pub crate_version: String,
    /// `--target`.
    pub target: String,
    /// The backend and its version.
    pub backend: String,
    /// The GPU, or the simulated preset.
    pub gpu: Option<String>,
    /// The engine directory, when in process.
    pub engine_dir: Option<String>,
    /// `--label`.
    pub label: Option<String>,
    /// The tokenizer's id, when one is known.
    pub tokenizer_id: Option<String>,
    /// Whether a tokenizer was loaded.
    pub tokenizer_loaded: bool,
}

/// The summary's `executor_settings`: the executor flags given, the `trtllm serve` line with
/// them, and the configuration the in-process executor ran with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExecutorSettings {
    /// What the flags applied to.
    pub applies_to: String,
    /// The flags given, as typed.
    pub flags: Vec<String>,
    /// The `trtllm serve` command with the same settings (in process only).
    pub serve_equivalent: Option<String>,
    /// The executor's whole configuration (in process only).
    pub config: Value,
}

/// The summary's `workload`: what was sent, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)] // The fields are the bench command's options of the same names.
pub struct WorkloadSection {
    /// `random`, `jsonl`, `sharegpt` or `trace`.
    pub dataset: String,
    pub dataset_path: Option<String>,
    /// Configured prompt length (random prompts).
    pub input_len: Option<usize>,
    /// Configured output length, or `"dataset"`.
    pub output_len: OutputLen,
    pub shared_prefix: usize,
    /// `warm` with a shared prefix, else `cold`.
    pub prefix_cache: String,
    pub chat_template: bool,
    pub seed: u64,
    pub ignore_eos: bool,
    /// `fixed length` or `natural (end id)`.
    pub stopping: String,
    pub end_id: Option<i32>,
    pub streaming: bool,
    pub tokenizer_id: Option<String>,
    /// `closed` or `open`.
    pub load: String,
    /// Closed loop: the users.
    pub concurrency: Option<usize>,
    pub request_rate: Rate,
    pub burstiness: f64,
    /// Open loop: the cap.
    pub max_concurrency: Option<usize>,
    pub num_prompts: Option<usize>,
    pub warmup: usize,
    pub ramp_up_s: Option<f64>,
    pub duration_s: Option<f64>,
    /// How random prompts were made as text (`null` for token ids).
    pub prompt_text: Option<PromptText>,
    pub turns: Option<u32>,
    pub think_time_s: Option<f64>,
    pub turn_input_len: Option<usize>,
    /// How users' first requests were spread.
    pub user_start: String,
    /// The configured prompt length, beside `prompt_tokens_actual_mean`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_requested: Option<usize>,
    /// Mean prompt tokens as the target counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_actual_mean: Option<f64>,
    /// Drawn lengths: what was asked beside what was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length_distribution: Option<LengthSection>,
}

impl Default for WorkloadSection {
    fn default() -> Self {
        WorkloadSection {
            dataset: "random".into(),
            dataset_path: None,
            input_len: None,
            output_len: OutputLen::Dataset,
            shared_prefix: 0,
            prefix_cache: "cold".into(),
            chat_template: false,
            seed: 0,
            ignore_eos: true,
            stopping: "fixed length".into(),
            end_id: None,
            streaming: true,
            tokenizer_id: None,
            load: "closed".into(),
            concurrency: None,
            request_rate: Rate(f64::INFINITY),
            burstiness: 1.0,
            max_concurrency: None,
            num_prompts: None,
            warmup: 0,
            ramp_up_s: None,
            duration_s: None,
            prompt_text: None,
            turns: None,
            think_time_s: None,
            turn_input_len: None,
            user_start: "together".into(),
            prompt_tokens_requested: None,
            prompt_tokens_actual_mean: None,
            length_distribution: None,
        }
    }
}

/// A configured output length: a token count, or each prompt's own (`"dataset"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputLen {
    /// Every request asks for this many tokens.
    Tokens(usize),
    /// Each request asks for its dataset entry's length.
    Dataset,
}

impl Serialize for OutputLen {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            OutputLen::Tokens(n) => serializer.serialize_u64(*n as u64),
            OutputLen::Dataset => serializer.serialize_str("dataset"),
        }
    }
}

impl<'de> Deserialize<'de> for OutputLen {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Number(n) if n.as_u64().is_some() => Ok(OutputLen::Tokens(n.as_u64().unwrap_or(0) as usize)),
            Value::String(s) if s == "dataset" => Ok(OutputLen::Dataset),
            other => Err(serde::de::Error::custom(format!("an output length is a count or \"dataset\", not {other}"))),
        }
    }
}

impl std::fmt::Display for OutputLen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputLen::Tokens(n) => write!(f, "{n}"),
            OutputLen::Dataset => f.write_str("dataset"),
        }
    }
}

/// `workload.prompt_text`: random prompts sent as text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptText {
    /// How the text was made.
    pub kind: String,
    /// Tokens of content.
    pub content_tokens: usize,
    /// Tokens the server adds (a chat template), when the configured length is known.
    pub server_added_tokens: Option<usize>,
}
