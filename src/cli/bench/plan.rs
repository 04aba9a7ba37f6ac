//! The sweep: one point per load (concurrency or rate) × prompt shape × output length.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use trtllm::bench::{
    Load, LoadPlan, OutputLen, PromptSource, PromptText, Rate, SampledPrompt, SessionPlan, SessionScript,
    TokenizeOptions, Trace, TraceOptions, WordVocabulary, Workload, WorkloadSection, load_jsonl, load_sharegpt,
    load_sharegpt_sessions, tokenize_entries, tokenize_sessions,
};
use trtllm::text::Tokenizer;

use super::args::{DatasetKind, RunArgs};

/// Prompt lengths of the default sweep (random prompts).
pub const DEFAULT_INPUT_LENS: [usize; 2] = [128, 1024];
/// Output length of the default sweep (random prompts).
pub const DEFAULT_OUTPUT_LEN: usize = 128;

/// One point of the sweep.
#[derive(Clone)]
pub struct Point {
    /// File stem: `c4_in128_out128`, `r2.5_in128_out128`, `c4_jsonl_outds`, ...
    pub stem: String,
    pub plan: LoadPlan,
    pub workload: Workload,
    /// Configured prompt length (random prompts).
    pub input_len: Option<usize>,
    /// Configured output length (`None`: each dataset entry's own).
    pub output_len: Option<usize>,
    /// Open-loop rate (`inf` for all at once).
    pub request_rate: f64,
}

impl Point {
    /// Repeat `repeat` (from 0) of this point: the same load with its own prompt and arrival
    /// draws (the seed mixed with the repeat), written as `<stem>.rep<N>` after the first.
    pub fn repeat(&self, repeat: usize) -> Point {
        let mut point = self.clone();
        if repeat > 0 {
            point.stem = format!("{}.rep{}", self.stem, repeat + 1);
            point.workload.seed = self.workload.seed ^ (repeat as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
        point
    }

    /// The `workload` object of the summary.
    pub fn describe(&self, args: &RunArgs, tokenizer_id: Option<&str>) -> WorkloadSection {
        let (load, concurrency, max_concurrency) = match self.plan.load {
            Load::Closed { concurrency } => ("closed", Some(concurrency), None),
            Load::Open { max_concurrency, .. } => ("open", None, max_concurrency),
        };
        WorkloadSection {
            dataset: args.dataset.name().into(),
            dataset_path: args.dataset_path.as_ref().map(|p| p.display().to_string()),
            input_len: self.input_len,
            output_len: self.output_len.map_or(OutputLen::Dataset, OutputLen::Tokens),
            shared_prefix: args.shared_prefix,
            prefix_cache: if args.shared_prefix > 0 { "warm" } else { "cold" }.into(),
            chat_template: args.chat_template,
            seed: args.seed,
            ignore_eos: self.workload.ignore_eos,
            stopping: if self.workload.ignore_eos { "fixed length" } else { "natural (end id)" }.into(),
            end_id: self.workload.end_id,
            streaming: self.workload.streaming,
            tokenizer_id: tokenizer_id.map(str::to_owned),
            load: load.into(),
            concurrency,
            request_rate: Rate(self.request_rate),
            burstiness: args.burstiness,
            max_concurrency,
            num_prompts: self.plan.duration.is_none().then_some(self.plan.num_prompts),
            warmup: self.plan.warmup,
            ramp_up_s: self.plan.ramp_up.map(|d| d.as_secs_f64()),
            duration_s: self.plan.duration.map(|d| d.as_secs_f64()),
            prompt_text: match &self.workload.source {
                PromptSource::Words { input_len, .. } => Some(PromptText {
                    kind: "whole-word tokens that round-trip through the tokenizer".into(),
                    content_tokens: *input_len,
                    server_added_tokens: self.input_len.map(|n| n.saturating_sub(*input_len)),
                }),
                _ => None,
            },
            turns: args.turns,
            think_time_s: args.turns.map(|_| args.think_time),
            turn_input_len: args.turns.and_then(|_| args.turn_input_len.or(self.input_len)),
            user_start: match self.plan.user_start {
                trtllm::bench::UserStart::Auto => "spread over the warmup's mean request latency".into(),
                trtllm::bench::UserStart::Spread(d) => format!("spread over {:.3} s", d.as_secs_f64()),
                trtllm::bench::UserStart::Together => "together".into(),
            },
            ..WorkloadSection::default()
        }
    }
}

/// The prompt sources of the sweep: one per input length (random), or the dataset's prompts.
pub fn prompt_sources(
    args: &RunArgs,
    vocab_size: usize,
    tokenizer: Option<&Tokenizer>,
) -> anyhow::Result<Vec<(Option<usize>, PromptSource)>> {
    if let Some(turns) = args.turns {
        return session_sources(args, turns, vocab_size, tokenizer);
    }
    if args.dataset == DatasetKind::Random {
        if args.dataset_path.is_some() {
            bail!("--dataset-path needs --dataset jsonl or sharegpt");
        }
        if args.chat_template {
            bail!("--chat-template applies to text datasets (jsonl, sharegpt), not random token ids");
        }
        let lens = args.input_len.clone().unwrap_or_else(|| DEFAULT_INPUT_LENS.to_vec());
        if lens.contains(&0) {
            bail!("--input-len must be at least 1");
        }
        // An HTTP target is sent text: prompts of whole-word tokens that round-trip through the
        // tokenizer, sized so that what the server tokenizes (its chat template included) has
        // the requested length.
        if let (true, Some(tokenizer)) = (args.target.starts_with("http"), tokenizer) {
            let words = WordVocabulary::from_tokenizer(tokenizer);
            if !words.ids().is_empty() {
                let overhead = words.overhead(tokenizer, !args.completions);
                return Ok(lens
                    .into_iter()
                    .map(|input_len| {
                        let content = input_len.saturating_sub(overhead).max(1);
                        let shared_prefix = args.shared_prefix.min(content);
                        (
                            Some(input_len),
                            PromptSource::Words { words: words.clone(), input_len: content, shared_prefix },
                        )
                    })
                    .collect());
            }
        }
        return Ok(lens
            .into_iter()
            .map(|input_len| {
                (Some(input_len), PromptSource::Random { vocab_size, input_len, shared_prefix: args.shared_prefix })
            })
            .collect());
    }
    // ---- Trace replay: prompts synthesised from the trace's blocks, arrivals from its timestamps ----
    if args.dataset == DatasetKind::Trace {
        return trace_source(args, vocab_size);
    }
    if args.input_len.is_some() || args.shared_prefix > 0 {
        bail!("--input-len and --shared-prefix apply to --dataset random; a dataset's prompts are what they are");
    }
    let path = args
        .dataset_path
        .as_deref()
        .with_context(|| format!("--dataset {} needs --dataset-path", args.dataset.name()))?;
    let entries = match args.dataset {
        DatasetKind::Jsonl => load_jsonl(path)?,
        DatasetKind::Sharegpt => load_sharegpt(path)?,
        DatasetKind::Random => bail!("random prompts come from --input-len, not a file"),
        DatasetKind::Trace => bail!("traces are read by trace_source"),
    };
    let options =
        TokenizeOptions { tokenizer, chat_template: args.chat_template, reply_output_len: args.output_len.is_none() };
    let prompts: Vec<SampledPrompt> = tokenize_entries(&entries, options)?;
    let tokens: usize = prompts.iter().map(|p| p.token_ids.len()).sum();
    eprintln!("dataset {}: {} prompts, {tokens} prompt tokens", path.display(), prompts.len());
    Ok(vec![(None, PromptSource::Dataset(Arc::<[SampledPrompt]>::from(prompts)))])
}

/// `--turns N`: multi-turn sessions, synthetic (one source per input length) or ShareGPT's.
fn session_sources(
    args: &RunArgs,
    turns: u32,
    vocab_size: usize,
    tokenizer: Option<&Tokenizer>,
) -> anyhow::Result<Vec<(Option<usize>, PromptSource)>> {
    if !(args.think_time.is_finite() && args.think_time >= 0.0) {
        bail!("--think-time must be a non-negative number of seconds");
    }
    let plan = |script| SessionPlan {
        script,
        turns,
        think_time: Duration::from_secs_f64(args.think_time),
        tokenizer: tokenizer.cloned().map(Arc::new),
        chat_template: args.chat_template,
    };
    if args.chat_template && tokenizer.and_then(Tokenizer::chat_template).is_none() {
        bail!("--chat-template needs a tokenizer with a chat template (pass --tokenizer DIR)");
    }
    match args.dataset {
        DatasetKind::Random => {
            if args.dataset_path.is_some() {
                bail!("--dataset-path needs --dataset sharegpt for sessions");
            }
            let lens = args.input_len.clone().unwrap_or_else(|| DEFAULT_INPUT_LENS.to_vec());
            if lens.contains(&0) || args.turn_input_len == Some(0) {
                bail!("--input-len and --turn-input-len must be at least 1");
            }
            // A text target: words that round-trip, the first message sized so the templated
            // first turn has --input-len tokens.
            let words = match (args.target.starts_with("http"), tokenizer) {
                (true, Some(t)) => Some(WordVocabulary::from_tokenizer(t)).filter(|w| !w.ids().is_empty()),
                _ => None,
            };
            let overhead = match (&words, tokenizer) {
                (Some(w), Some(t)) => w.overhead(t, !args.completions),
                _ => 0,
            };
            Ok(lens
                .into_iter()
                .map(|first_len| {
                    let script = SessionScript::Synthetic {
                        vocab_size,
                        first_len: first_len.saturating_sub(overhead).max(1),
                        turn_len: args.turn_input_len.unwrap_or(first_len),
                        shared_prefix: args.shared_prefix,
                        words: words.clone(),
                    };
                    (Some(first_len), PromptSource::Sessions(Arc::new(plan(script))))
                })
                .collect())
        }
        DatasetKind::Sharegpt => {
            if args.input_len.is_some() || args.shared_prefix > 0 {
                bail!("--input-len and --shared-prefix apply to synthetic sessions, not ShareGPT's");
            }
            let path = args.dataset_path.as_deref().context("--dataset sharegpt needs --dataset-path")?;
            let tokenizer = tokenizer.context("ShareGPT sessions are text: pass --tokenizer DIR")?;
            let sessions = load_sharegpt_sessions(path)?;
            let scripts = tokenize_sessions(&sessions, tokenizer, args.output_len.is_none())?;
            let multi = scripts.iter().filter(|s| s.len() > 1).count();
            eprintln!(
                "dataset {}: {} conversations, {multi} with more than one human turn",
                path.display(),
                scripts.len()
            );
            let script = SessionScript::Conversations(scripts.into());
            Ok(vec![(None, PromptSource::Sessions(Arc::new(plan(script))))])
        }
        other => bail!("--turns runs synthetic (random) or ShareGPT sessions, not --dataset {}", other.name()),
    }
}

/// `--dataset trace`: the trace's prompts and arrivals, one source.
fn trace_source(args: &RunArgs, vocab_size: usize) -> anyhow::Result<Vec<(Option<usize>, PromptSource)>> {
    if args.input_len.is_some() || args.shared_prefix > 0 || args.chat_template {
        bail!(
            "--input-len, --shared-prefix and --chat-template do not apply to a trace: its requests are what they are"
        );
    }
    if args.concurrency.is_some() || args.request_rate.is_some() {
        bail!("a trace brings its own arrival times: drop --concurrency/--request-rate (use --trace-time-scale)");
    }
    let path = args.dataset_path.as_deref().context("--dataset trace needs --dataset-path")?;
    let trace = Trace::load(path)?;
    let options = TraceOptions {
        block_size: args.trace_block_size,
        vocab_size,
        time_scale: args.trace_time_scale,
        seed: args.seed,
    };
    let replay = trace.replay(&options)?;
    let span = replay.offsets_s.last().copied().unwrap_or(0.0);
    eprintln!(
        "trace {}: {} requests over {span:.1} s (time scale {})",
        path.display(),
        trace.records.len(),
        args.trace_time_scale
    );
    Ok(vec![(None, PromptSource::Trace(Arc::new(replay)))])
}

/// One value of the sweep's load axis.
#[derive(Clone, Copy)]
enum LoadAxis {
    Concurrency(usize),
    Rate(f64),
    /// A trace replay: its mean rate and request count.
    Trace(f64, usize),
}

/// The load axis: concurrencies, or rates.
fn load_axis(args: &RunArgs) -> anyhow::Result<Vec<LoadAxis>> {
    let axis: Vec<LoadAxis> = match &args.request_rate {
        Some(rates) => rates.iter().map(|&r| LoadAxis::Rate(r)).collect(),
        None => {
            args.concurrency.clone().unwrap_or_else(|| vec![1, 4, 16]).into_iter().map(LoadAxis::Concurrency).collect()
        }
    };
    for value in &axis {
        match *value {
            LoadAxis::Concurrency(0) => bail!("--concurrency must be at least 1"),
            LoadAxis::Rate(r) if r.is_nan() || r <= 0.0 => bail!("--request-rate must be positive (or inf), got {r}"),
            _ => {}
        }
    }
    if args.max_concurrency == Some(0) {
        bail!("--max-concurrency must be at least 1");
    }
    if args.max_concurrency.is_some() && args.request_rate.is_none() && args.dataset != DatasetKind::Trace {
        bail!("--max-concurrency caps open-loop arrivals: use it with --request-rate or --dataset trace");
    }
    Ok(axis)
}

fn seconds(name: &str, value: Option<f64>) -> anyhow::Result<Option<Duration>> {
    value
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .ok()
                .filter(|d| !d.is_zero())
                .with_context(|| format!("--{name} must be a positive number of seconds"))
        })
        .transpose()
}

/// Checks what the options alone decide, before an engine loads (minutes, on a real one): the
/// load axis, the durations, the burstiness and the lengths asked for.
pub fn check_options(args: &RunArgs) -> anyhow::Result<()> {
    load_axis(args)?;
    seconds("ramp-up", args.ramp_up)?;
    seconds("duration", args.duration)?;
    if args.burstiness.is_nan() || args.burstiness <= 0.0 {
        bail!("--burstiness must be positive (1 = Poisson, inf = constant spacing)");
    }
    if args.input_len.as_ref().is_some_and(|lens| lens.contains(&0)) {
        bail!("--input-len must be at least 1");
    }
    if args.output_len.as_ref().is_some_and(|lens| lens.contains(&0)) {
        bail!("--output-len must be at least 1");
    }
    Ok(())
}

/// How many workloads (prompt shape × output length) the sweep has: one per `--input-len` of
/// random prompts (a dataset or trace is one) times one per `--output-len`.
pub fn workloads(args: &RunArgs) -> usize {
    let inputs = match args.dataset {
        DatasetKind::Random => args.input_len.as_ref().map_or(DEFAULT_INPUT_LENS.len(), Vec::len),
        _ => 1,
    };
    inputs * args.output_len.as_ref().map_or(1, Vec::len)
}

/// The points: load × prompt source × output length, each with its own workload and plan.
pub fn points(
    args: &RunArgs,
    sources: Vec<(Option<usize>, PromptSource)>,
    end_id: Option<i32>,
) -> anyhow::Result<Vec<Point>> {
    check_options(args)?;
    let ramp_up = seconds("ramp-up", args.ramp_up)?;
    let duration = seconds("duration", args.duration)?;
    let guide =
        crate::cli::guided::GuideArgs { json_schema: args.json_schema.clone(), ..Default::default() }.params()?;
    let output_lens: Vec<Option<usize>> = match (&args.output_len, args.dataset) {
        (Some(lens), _) => lens.iter().map(|&n| Some(n)).collect(),
        (None, DatasetKind::Random) => vec![Some(DEFAULT_OUTPUT_LEN)],
        (None, _) => vec![None],
    };
    let mut axis = load_axis(args)?;
    // A trace: one point at the trace's own mean rate (its arrivals come from the trace).
    let trace_requests = sources.iter().find_map(|(_, s)| match s {
        PromptSource::Trace(t) => Some((t.offsets_s.len(), t.offsets_s.last().copied().unwrap_or(0.0))),
        _ => None,
    });
    if let Some((count, span_s)) = trace_requests {
        let rate = if span_s > 0.0 { count as f64 / span_s } else { f64::INFINITY };
        axis = vec![LoadAxis::Trace(rate, count)];
    }
    let mut points = Vec::new();
    for (input_len, source) in &sources {
        for &output_len in &output_lens {
            for &value in &axis {
                // Load, measured requests, warmup, rate, and the load part of the file stem.
                let (load, num_prompts, warmup, request_rate, load_part) = match value {
                    LoadAxis::Concurrency(c) => {
                        let n = args.num_prompts.unwrap_or((2 * c).max(4) * args.turns.unwrap_or(1) as usize);
                        (Load::Closed { concurrency: c }, n, args.warmup.unwrap_or(c), f64::INFINITY, format!("c{c}"))
                    }
                    LoadAxis::Trace(rate, count) => {
                        // Under --max-concurrency a request past the cap waits for a slot.
                        let max_concurrency = args.max_concurrency;
                        let load = Load::Open { rate: rate.min(f64::MAX), burstiness: 1.0, max_concurrency };
                        let n = args.num_prompts.unwrap_or(count).min(count);
                        let stem = max_concurrency.map_or("trace".to_owned(), |c| format!("trace_mc{c}"));
                        (load, n, args.warmup.unwrap_or(0), rate, stem)
                    }
                    LoadAxis::Rate(rate) if rate.is_infinite() => {
                        // Everything at once: a closed loop at the cap, or all requests in flight.
                        let n = args.num_prompts.unwrap_or(8);
                        let c = args.max_concurrency.unwrap_or(n.max(1));
                        let stem = args.max_concurrency.map_or("rinf".to_owned(), |c| format!("rinf_mc{c}"));
                        (Load::Closed { concurrency: c }, n, args.warmup.unwrap_or(1), f64::INFINITY, stem)
                    }
                    LoadAxis::Rate(rate) => {
                        let n = args.num_prompts.unwrap_or(((rate * 10.0).ceil() as usize).clamp(8, 1000));
                        let load =
                            Load::Open { rate, burstiness: args.burstiness, max_concurrency: args.max_concurrency };
                        let stem = args.max_concurrency.map_or(format!("r{rate}"), |c| format!("r{rate}_mc{c}"));
                        (load, n, args.warmup.unwrap_or(args.max_concurrency.unwrap_or(1)), rate, stem)
                    }
                };
                let plan = LoadPlan {
                    load,
                    num_prompts,
                    warmup,
                    ramp_up,
                    duration,
                    user_start: args.user_start(),
                    stop_when_saturated: false,
                };
                plan.validate()?;
                let workload = Workload {
                    source: source.clone(),
                    output_len: output_len.map(|n| n as u32),
                    fallback_output_len: 128,
                    ignore_eos: args.ignore_eos,
                    end_id,
                    streaming: !args.non_streaming,
                    seed: args.seed,
                    guide: guide.clone(),
                    lengths: Default::default(),
                };
                let shape = match input_len {
                    Some(n) => format!("in{n}"),
                    None => args.dataset.name().to_owned(),
                };
                let out = output_len.map_or("outds".to_owned(), |n| format!("out{n}"));
                points.push(Point {
                    stem: format!("{load_part}_{shape}_{out}"),
                    plan,
                    workload,
                    input_len: *input_len,
                    output_len,
                    request_rate,
                });
            }
        }
    }
    Ok(points)
}
