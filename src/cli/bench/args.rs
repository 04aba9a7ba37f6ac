//! The options of `trtllm bench`.

use std::path::PathBuf;

use clap::ArgAction;
use trtllm::bench::LengthShape;

/// Which prompts to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DatasetKind {
    /// Random token ids of exact lengths (`--input-len`).
    Random,
    /// A JSONL file (`--dataset-path`): `{"prompt": text}` or `{"prompt_token_ids": [...]}` per
    /// line, optionally with `"output_len"`.
    Jsonl,
    /// A ShareGPT-style JSON file (`--dataset-path`): the first human turn of each conversation
    /// is the prompt; the reply's token count is its output length.
    Sharegpt,
    /// A Mooncake-style JSONL request trace (`--dataset-path`): `timestamp` (ms), `input_length`,
    /// `output_length` and `hash_ids` (one per block of shared prefix) per line, replayed at its
    /// timestamps (`--trace-time-scale`) with prompts synthesised block by block.
    Trace,
}

impl DatasetKind {
    pub fn name(self) -> &'static str {
        match self {
            DatasetKind::Random => "random",
            DatasetKind::Jsonl => "jsonl",
            DatasetKind::Sharegpt => "sharegpt",
            DatasetKind::Trace => "trace",
        }
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Where to send the load: `inprocess` (an executor in this process), `grpc://HOST:PORT`
    /// (a running `trtllm serve`) or `http(s)://HOST:PORT/v1` (any OpenAI-compatible endpoint,
    /// e.g. the smg gateway), with identical workloads and reports. A comma list runs the same
    /// workload against each in turn and writes a table of what each layer adds to TTFT and ITL
    /// over the first (layers.md/.csv/.json; each target's files in a subdirectory).
    #[arg(long, default_value = "inprocess")]
    pub target: String,
    /// HTTP target: send text completions (`/v1/completions`) instead of chat completions.
    #[arg(long)]
    pub completions: bool,
    /// HTTP target: the model id to ask for (default: the first one `/v1/models` lists).
    #[arg(long)]
    pub model: Option<String>,
    /// HTTP target: bearer token sent as `Authorization: Bearer ...`.
    #[arg(long, env = "TRTLLM_BENCH_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// HTTP target: speak HTTP/2 to a plain `http://` endpoint without negotiating it (h2c prior
    /// knowledge). `https://` endpoints negotiate HTTP/2 through ALPN without this.
    #[arg(long)]
    pub http2: bool,
    /// The engine directory; without it the built-in simulated engine is used (TinyLlama-1.1B-shaped,
    /// BF16, on a simulated RTX A6000, in real time).
    #[arg(long, env = "TRTLLM_ENGINE_DIR")]
    pub engine_dir: Option<PathBuf>,
    /// Tokenizer directory for text datasets, chat templates and the end id (default: the
    /// engine's; over gRPC, the server's via GetTokenizer).
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Constrain every request's output to the JSON Schema in FILE (guided decoding), to measure a
    /// structured workload; in process, guided decoding is enabled from the tokenizer.
    #[arg(long, value_name = "FILE")]
    pub json_schema: Option<PathBuf>,

    /// Prompts: random token ids, a JSONL prompt file or ShareGPT-style conversations.
    #[arg(long, value_enum, default_value_t = DatasetKind::Random)]
    pub dataset: DatasetKind,
    /// The dataset file (jsonl, sharegpt, trace).
    #[arg(long)]
    pub dataset_path: Option<PathBuf>,
    // ---- Trace replay (--dataset trace) ----
    /// Prompt tokens per trace hash id (Mooncake's traces: 512).
    #[arg(long, default_value_t = trtllm::bench::MOONCAKE_BLOCK_SIZE)]
    pub trace_block_size: usize,
    /// Multiplies the trace's arrival gaps: 0.5 replays twice as fast, 2 half as fast.
    #[arg(long, default_value_t = 1.0)]
    pub trace_time_scale: f64,
    // ---- end trace replay
    /// Render text prompts with the tokenizer's chat template (one user message).
    #[arg(long)]
    pub chat_template: bool,
    /// Prompt lengths in tokens to sweep (random dataset) [default: 128,1024].
    #[arg(long, value_delimiter = ',')]
    pub input_len: Option<Vec<usize>>,
    /// Output lengths in tokens to sweep [default: 128; for datasets, each entry's own length].
    #[arg(long, value_delimiter = ',')]
    pub output_len: Option<Vec<usize>>,
    /// How prompt lengths are drawn per request around each `--input-len` (its mean; random
    /// prompts): fixed, uniform (`--input-min`..=`--input-max`), normal or lognormal (with
    /// `--input-stddev`, kept within the bounds); seeded by `--seed`.
    #[arg(long, default_value = "fixed", value_parser = parse_shape)]
    pub input_dist: LengthShape,
    /// Standard deviation of drawn prompt lengths, in tokens.
    #[arg(long)]
    pub input_stddev: Option<f64>,
    /// Shortest drawn prompt [default: mean − 3 stddev (uniform: √3), at least 1].
    #[arg(long)]
    pub input_min: Option<u32>,
    /// Longest drawn prompt [default: mean + 3 stddev (uniform: √3)].
    #[arg(long)]
    pub input_max: Option<u32>,
    /// How output lengths are drawn per request around each `--output-len` (its mean): fixed,
    /// uniform, normal or lognormal, as `--input-dist`.
    #[arg(long, default_value = "fixed", value_parser = parse_shape)]
    pub output_dist: LengthShape,
    /// Standard deviation of drawn output lengths, in tokens.
    #[arg(long)]
    pub output_stddev: Option<f64>,
    /// Shortest drawn output length [default: mean − 3 stddev (uniform: √3), at least 1].
    #[arg(long)]
    pub output_min: Option<u32>,
    /// Longest drawn output length [default: mean + 3 stddev (uniform: √3)].
    #[arg(long)]
    pub output_max: Option<u32>,
    /// Draw lengths only within the engine's limits: the upper bound of `--input-dist` lowered
    /// to max_input_len and that of `--output-dist` to what max_seq_len leaves after the longest
    /// prompt. Without it a distribution that can draw beyond them is refused before the first
    /// request.
    #[arg(long)]
    pub clip_lengths: bool,
    /// Tokens shared by every random prompt (a warm prefix the KV cache can reuse); 0 sends
    /// fully distinct prompts (cold).
    #[arg(long, default_value_t = 0)]
    pub shared_prefix: usize,
    /// true: fixed output length (end id ignored, min_tokens = max_tokens); false: stop
    /// naturally at the end id, capped at the output length.
    #[arg(long, default_value_t = true, action = ArgAction::Set)]
    pub ignore_eos: bool,
    /// Multi-turn sessions: each session sends N turns, every turn's prompt the previous
    /// prompt, the previous answer and a new user message (so the KV cache can reuse the
    /// history). Random prompts: synthetic conversations (`--input-len` first message,
    /// `--turn-input-len` later ones); `--dataset sharegpt`: up to N human turns of each
    /// conversation. Closed loop: each user runs sessions one after another; open loop: the
    /// rate is of session starts.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub turns: Option<u32>,
    /// Seconds a session's user waits after an answer before sending the next turn.
    #[arg(long, default_value_t = 0.0, requires = "turns")]
    pub think_time: f64,
    /// Tokens of each later user message of a synthetic session [default: --input-len].
    #[arg(long, requires = "turns")]
    pub turn_input_len: Option<usize>,
    /// Seed for prompts and arrivals (each point and phase draws its own stream from it).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Send non-streaming requests: E2E latency and per-request tokens/s only.
    #[arg(long)]
    pub non_streaming: bool,

    /// Spread requests over N synthetic LoRA adapters (in process; 0: none). Each adapter goes
    /// with its weights when the executor's host cache does not hold it, by task id otherwise.
    #[arg(long, default_value_t = 0)]
    pub lora_adapters: usize,
    /// Rank of the synthetic adapters (on every module the engine adapts).
    #[arg(long, default_value_t = 16)]
    pub lora_rank: u32,
    /// Zipf exponent of adapter popularity (0: uniform).
    #[arg(long, default_value_t = 1.0)]
    pub lora_zipf: f64,
    /// The in-process executor's runtime settings: the same flags, names and meaning as
    /// `trtllm serve` (KV-cache fraction and size, block reuse, scheduler and chunking policy,
    /// chunked context, runtime max batch size and tokens, CUDA graphs, LoRA caches, ...),
    /// recorded in each summary's `executor_settings`.
    #[command(flatten)]
    pub executor: crate::cli::executor_args::ExecutorArgs,
    /// Draft-target speculative decoding through the Rust loop.
    #[command(flatten)]
    pub draft_target: super::draft_target::DraftTargetArgs,
    /// Prefill/decode disaggregation, in process or over gRPC.
    #[command(flatten)]
    pub disagg: super::disagg::DisaggArgs,

    /// Closed-loop concurrencies to sweep [default: 1,4,16].
    #[arg(long, value_delimiter = ',', conflicts_with = "request_rate")]
    pub concurrency: Option<Vec<usize>>,
    /// Open-loop request rates (requests/s) to sweep instead of concurrencies; `inf` sends all
    /// at once.
    #[arg(long, value_delimiter = ',')]
    pub request_rate: Option<Vec<f64>>,
    /// Gamma shape of open-loop inter-arrival times: 1 is Poisson, inf constant spacing.
    #[arg(long, default_value_t = 1.0, requires = "request_rate")]
    pub burstiness: f64,
    /// Cap on requests in flight in open-loop mode (`--request-rate` or `--dataset trace`):
    /// arrivals beyond it wait in the runner for a slot.
    #[arg(long)]
    pub max_concurrency: Option<usize>,
    /// Measured requests per point [default: 2 × concurrency, at least 4; open loop: 10 s of
    /// arrivals, 8 to 1000]. Ignored with --duration.
    #[arg(long)]
    pub num_prompts: Option<usize>,
    /// Warmup requests per point, recorded and excluded [default: the concurrency; open loop:
    /// the cap, else 1].
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Closed loop: start all users at once. By default they start spread evenly over one
    /// request cycle (the warmup's mean request latency), as independent users do; started
    /// together with fixed output lengths they stay in lockstep for the whole run.
    #[arg(long, conflicts_with = "start_spread")]
    pub users_start_together: bool,
    /// Closed loop: seconds over which to spread the users' first requests instead of the
    /// warmup's mean request latency.
    #[arg(long)]
    pub start_spread: Option<f64>,
    /// Seconds over which closed-loop users are added linearly before the --duration.
    #[arg(long, requires = "duration")]
    pub ramp_up: Option<f64>,
    /// Seconds of sustained load per point (after any ramp-up) instead of a request count;
    /// writes a time series and its plot.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Seconds per time-series sample (duration runs; giving it writes a series for every run).
    #[arg(long)]
    pub sample_interval: Option<f64>,

    /// Run every point N times (each with its own prompt and arrival draws) and report each
    /// headline figure's mean, standard deviation, CV and 95% confidence interval (the
    /// `repeats` section of `<stem>.json`; the other runs in `<stem>.repN.*`), which
    /// `trtllm bench compare` uses to say whether a difference is beyond noise.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: u32,
    /// The saturation sweep (`--saturate`).
    #[command(flatten)]
    pub saturate: super::saturate::SaturateArgs,
    /// Percentiles to report.
    #[arg(long, default_value = "50,90,95,99")]
    pub percentiles: String,
    /// Latency objectives, the grammar `trtllm plan` takes: METRIC:pPERCENTILE:MS or METRIC:MS,
    /// which means METRIC:p95:MS (metrics ttft, tpot, itl, e2el; percentiles p50 to p99.99),
    /// e.g. ttft:500,tpot:p99:50. Goodput counts the requests within each metric's limit (only
    /// e2el applies without streaming; itl is judged on its percentile only); the console
    /// prints each point's goodput, the share of requests within every limit, and each
    /// objective's percentile against its limit.
    #[arg(long)]
    pub slo: Option<String>,
    /// Failed requests a point may have, as a count (3) or a share of its measured requests
    /// (5%), before `trtllm bench` exits with an error; by default any failure does.
    #[arg(long, default_value = "0", value_name = "N|P%")]
    pub max_failed: trtllm::bench::FailureBudget,
    /// A label for the results (vLLM's `label`).
    #[arg(long)]
    pub label: Option<String>,
    /// Add the per-request arrays (input_lens, output_lens, ttfts, itls, ...) to each summary.
    #[arg(long)]
    pub save_detailed: bool,
    /// Where to write results (default bench-results/<date>).
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// The live view while the run goes (requests done, in flight and queued, token rate, TTFT
    /// and ITL percentiles, KV use, GPU figures) [default: true when stdout is a terminal].
    /// Without it, a plain progress line every few seconds on stderr.
    #[arg(long, action = ArgAction::Set)]
    pub live: Option<bool>,
    /// Sample GPU telemetry during each point: power, clocks, utilization, memory, temperature
    /// and throttle reasons through NVML, or on a simulated engine in process the timing
    /// model's counterparts. [default: in process; other targets only when given true, sampling
    /// this host's GPUs through NVML, as for a local server].
    #[arg(long, action = ArgAction::Set)]
    pub gpu_telemetry: Option<bool>,
    /// Seconds between GPU telemetry samples.
    #[arg(long, default_value_t = 0.5)]
    pub gpu_sample_interval: f64,
    /// Prometheus endpoints to scrape before, during and after each point (e.g. a `trtllm
    /// serve --metrics-port` worker's `http://HOST:PORT/metrics`, the smg gateway's
    /// `--prometheus-port`): counter deltas and gauge series in the summary's `server_metrics`.
    #[arg(long, value_delimiter = ',')]
    pub metrics_url: Vec<String>,
    /// Seconds between scrapes of `--metrics-url` during a point.
    #[arg(long, default_value_t = 1.0)]
    pub metrics_interval: f64,
    /// No live view and no setup lines: plain progress lines on stderr while a point runs, then
    /// the table and notes.
    #[arg(long)]
    pub quiet: bool,
}

fn parse_shape(text: &str) -> Result<LengthShape, String> {
    text.parse()
}

impl RunArgs {
    /// When closed-loop users start (`--users-start-together`, `--start-spread`).
    pub fn user_start(&self) -> trtllm::bench::UserStart {
        match (self.users_start_together, self.start_spread) {
            (true, _) => trtllm::bench::UserStart::Together,
            (false, Some(s)) if s.is_finite() && s >= 0.0 => {
                trtllm::bench::UserStart::Spread(std::time::Duration::from_secs_f64(s))
            }
            _ => trtllm::bench::UserStart::Auto,
        }
    }
}
