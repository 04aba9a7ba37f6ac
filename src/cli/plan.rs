//! `trtllm plan`: search engine and runtime knobs on the virtual clock for the most goodput per
//! GPU under latency SLOs, and print the recommended configuration's command lines.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};
use trtllm::bench::search::{
    ConfigCounts, LoadStep, Loads, ProgressLines, ResultStore, SchedulerChoice, SearchOptions, SearchReport,
    SearchSpace, SloSet, Study, WorkloadShape, build_report, default_expert_parallel, default_tensor_parallel,
    expert_parallel_refusal, run_search, write_report,
};
use trtllm::bench::{
    PromptSource, SampledPrompt, TokenizeOptions, Workload, load_jsonl, load_sharegpt, tokenize_entries,
};
use trtllm::sim::ModelPreset;
use trtllm::sim::calibrate::GpuCalibration;
use trtllm::text::Tokenizer;

#[path = "plan_budget.rs"]
mod budget;

/// Dataset file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum DatasetFormat {
    /// One JSON object per line (`prompt` or `prompt_token_ids`, optional `output_len`).
    Jsonl,
    /// A ShareGPT conversation array.
    Sharegpt,
}

/// Arguments of `trtllm plan`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The model: a preset id (see `trtllm sim presets`), a config.json (Hugging Face or
    /// TensorRT-LLM form) or a directory holding one.
    #[arg(long)]
    model: String,
    /// GPU preset (see `trtllm sim presets`).
    #[arg(long)]
    gpu: String,
    /// Objectives every point must meet, the grammar `trtllm bench` takes: METRIC:pPERCENTILE:MS
    /// or METRIC:MS, which means METRIC:p95:MS (metrics ttft, tpot, itl, e2el; percentiles p50 to
    /// p99.99), e.g. `ttft:p95:500,tpot:p95:50`.
    #[arg(long)]
    slo: String,
    /// The results directory: one JSON per configuration (a re-run skips finished ones),
    /// summary.json and pareto.svg.
    #[arg(long)]
    output_dir: PathBuf,
    /// Random prompts of this many tokens (without --dataset-path).
    #[arg(long, default_value_t = 512)]
    input_len: usize,
    /// Output tokens per request (a dataset's own lengths when it has them).
    #[arg(long, default_value_t = 128)]
    output_len: usize,
    /// Tokens every random prompt shares (makes block reuse worth searching).
    #[arg(long, default_value_t = 0)]
    shared_prefix: usize,
    /// Dataset file instead of random prompts.
    #[arg(long)]
    dataset_path: Option<PathBuf>,
    /// Format of --dataset-path.
    #[arg(long, value_enum, default_value_t = DatasetFormat::Jsonl, requires = "dataset_path")]
    dataset: DatasetFormat,
    /// Tokenizer directory for text datasets.
    #[arg(long, requires = "dataset_path")]
    tokenizer: Option<PathBuf>,
    /// Closed-loop users per point, lowest first (default: 1, 2, 4, ... up to each engine's
    /// max_batch_size, until a point misses an SLO or goodput falls twice, then one point
    /// halfway between the best and the next load above it).
    #[arg(long, value_delimiter = ',', conflicts_with = "request_rate")]
    concurrency: Option<Vec<usize>>,
    /// Open-loop request rates per point instead, lowest first.
    #[arg(long, value_delimiter = ',')]
    request_rate: Option<Vec<f64>>,
    /// Gamma shape of open-loop arrivals (1: Poisson).
    #[arg(long, default_value_t = 1.0, requires = "request_rate")]
    burstiness: f64,
    /// Measured requests per point at least (closed loop: at least twice the users, after one
    /// warmup request per user). Users start together: enough requests let them spread out, so
    /// the tail is the steady state's rather than the first wave's (docs/tuning.md).
    #[arg(long, default_value_t = 256)]
    num_prompts: usize,
    /// Seed of the prompts.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Tensor-parallel sizes to try (default: 1, 2, 4 and 8 where they divide the model's
    /// attention heads; those whose GPUs cannot hold the model are pruned).
    #[arg(long, value_delimiter = ',')]
    tp: Option<Vec<usize>>,
    /// Expert-parallel sizes to try, `moe_ep` (Mixture-of-Experts models; each with the TPs it
    /// divides, the expert split over tp / ep ranks; default: 1, 2, 4 and 8 where they divide the
    /// model's experts; a dense model takes only 1).
    #[arg(long, value_delimiter = ',')]
    ep: Option<Vec<usize>>,
    /// Engine max_batch_size values to try.
    #[arg(long, value_delimiter = ',', default_value = "16,64,256,1024")]
    max_batch_size: Vec<usize>,
    /// Engine max_num_tokens values to try.
    #[arg(long, value_delimiter = ',', default_value = "2048,8192")]
    max_num_tokens: Vec<usize>,
    /// KV-cache free-memory fractions to try.
    #[arg(long, value_delimiter = ',', default_value = "0.9")]
    kv_fraction: Vec<f64>,
    /// Block reuse settings to try (on, off); only searched when prompts share prefixes.
    #[arg(long, value_delimiter = ',', default_value = "on,off", value_parser = parse_switch)]
    block_reuse: Vec<bool>,
    /// Chunked context settings to try (on, off).
    #[arg(long, value_delimiter = ',', default_value = "on,off", value_parser = parse_switch)]
    chunked_context: Vec<bool>,
    /// Capacity scheduler policies to try.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "guaranteed-no-evict,max-utilization")]
    scheduler_policy: Vec<SchedulerArg>,
    /// Do not try FP8 weights and KV cache (they are tried where the GPU has FP8).
    #[arg(long)]
    no_fp8: bool,
    /// Configurations run at once (default: one per core; the results do not depend on it).
    #[arg(long)]
    jobs: Option<usize>,
    /// Engine directory named in the printed command lines (default: OUTPUT_DIR/engine).
    #[arg(long)]
    engine_dir: Option<PathBuf>,
    /// Print only the result (no progress bar, no search outline).
    #[arg(long)]
    quiet: bool,
    /// Run every configuration that can run. By default a configuration is skipped when the
    /// timing model's steady-state bound on its goodput lies below the fifth best goodput already
    /// measured: the recommendation and the five best are the same, the front may lack points
    /// of skipped configurations.
    #[arg(long)]
    exhaustive: bool,
    /// A calibration file (from `trtllm sim calibrate`, as `trtllm sim build --calibration` takes):
    /// its fitted figures replace the GPU preset's for the pruning and for every run.
    #[arg(long)]
    calibration: Option<PathBuf>,
    /// A GPU budget: compare aggregated workers with disaggregated prefill and decode pools on
    /// this many GPUs, and recommend the deployment with the most goodput (needs a TTFT objective).
    #[arg(long)]
    gpus: Option<usize>,
    /// The link a prompt's KV cache crosses from a prefill worker to a decode worker (with
    /// --gpus; default: the GPU's own interconnect, nvlink4 on H100/H200 SXM).
    #[arg(long, value_enum, requires = "gpus")]
    kv_link: Option<trtllm::KvLinkPreset>,
    /// With --gpus: print the estimate without running the best deployment of each architecture on
    /// the virtual clock.
    #[arg(long, requires = "gpus")]
    estimate_only: bool,
    /// With --gpus: wall-clock seconds one confirming run may take before the plan stops with an
    /// error naming the deployment.
    #[arg(long, requires = "gpus", default_value = "600", value_parser = parse_seconds)]
    confirm_limit: std::time::Duration,
}

fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    let seconds: f64 = text.parse().map_err(|e| format!("expected seconds, got {text:?}: {e}"))?;
    std::time::Duration::try_from_secs_f64(seconds).map_err(|e| format!("expected seconds, got {text:?}: {e}"))
}

/// `--scheduler-policy` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum SchedulerArg {
    GuaranteedNoEvict,
    MaxUtilization,
}

fn parse_switch(text: &str) -> Result<bool, String> {
    match text {
        "on" | "true" => Ok(true),
        "off" | "false" => Ok(false),
        _ => Err(format!("expected on or off, got {text:?}")),
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let slos = SloSet::parse(&args.slo).context("--slo")?;
    let model = ModelPreset::from_arg(&args.model)?;
    let gpu_overrides = match &args.calibration {
        Some(path) => GpuCalibration::overrides_from_file(path, &args.gpu)?,
        None => Default::default(),
    };
    let ep = args.ep.clone().unwrap_or_else(|| default_expert_parallel(&model));
    if let Some(reason) = ep.iter().find_map(|&ep| expert_parallel_refusal(&model, ep)) {
        eprintln!("error: --ep: {reason}");
        return Ok(ExitCode::from(2));
    }
    let study = study(&args, &model, slos)?;
    let space = SearchSpace {
        tp: args.tp.clone().unwrap_or_else(|| default_tensor_parallel(&model)),
        model,
        gpu: args.gpu.clone(),
        gpu_overrides,
        ep,
        try_fp8: !args.no_fp8,
        max_batch_size: args.max_batch_size.clone(),
        max_num_tokens: args.max_num_tokens.clone(),
        kv_fraction: args.kv_fraction.clone(),
        block_reuse: args.block_reuse.clone(),
        chunked_context: args.chunked_context.clone(),
        scheduler: args
            .scheduler_policy
            .iter()
            .map(|s| match s {
                SchedulerArg::GuaranteedNoEvict => SchedulerChoice::GuaranteedNoEvict,
                SchedulerArg::MaxUtilization => SchedulerChoice::MaxUtilization,
            })
            .collect(),
    };
    if let Some(gpus) = args.gpus {
        return budget::run(&args, &space, &study, gpus).await;
    }
    let (candidates, pruned) = space.candidates(&study.shape)?;
    let store = ResultStore::open(&args.output_dir)?;
    if !args.quiet {
        let outline = ConfigCounts::outline(candidates.len() + pruned.len(), pruned.len());
        let model = if space.model.is_preset() { &space.model.id } else { &space.model.name };
        eprintln!("{model} on {}: {outline}; loads {}", args.gpu, study.loads.describe());
    }
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(candidates.len() as u64)
            .with_style(ProgressStyle::with_template("{bar:40} {pos}/{len} configurations {elapsed} eta {eta} {msg}")?)
    };
    let jobs = args.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let options = SearchOptions { jobs, exact_top: if args.exhaustive { 0 } else { TOP } };
    // Without a terminal the bar draws nothing: a log gets progress lines instead.
    let mut lines = (!args.quiet && !std::io::stderr().is_terminal())
        .then(|| ProgressLines::new(candidates.len(), std::time::Duration::from_secs(10)));
    let outcome = run_search(&space, &study, &store, options, |result, resumed| {
        if let Some(line) = lines.as_mut().and_then(|l| l.finished(result)) {
            eprintln!("{line}");
        }
        bar.inc(1);
        bar.set_message(if resumed { "(resumed)".to_string() } else { result.candidate.label() });
    })
    .await?;
    bar.finish_and_clear();
    let engine_dir = args.engine_dir.clone().unwrap_or_else(|| args.output_dir.join("engine"));
    let report = build_report(&space, &study, &outcome, &engine_dir.to_string_lossy());
    let (summary, svg) = write_report(&store, &report, &outcome)?;
    print!("{}", render(&report, &study, args.exhaustive));
    println!("wrote {} and {}", summary.display(), svg.display());
    Ok(if report.recommendation.is_some() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The workload, loads and objectives every configuration is measured on.
fn study(args: &Args, model: &ModelPreset, slos: SloSet) -> anyhow::Result<Study> {
    let loads = match (&args.request_rate, &args.concurrency) {
        (Some(rates), _) => {
            if rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
                bail!("--request-rate values must be positive and finite");
            }
            Loads::Listed(rates.iter().map(|&r| LoadStep::Rate(r)).collect())
        }
        (None, Some(users)) => {
            if users.contains(&0) {
                bail!("--concurrency values must be at least 1");
            }
            Loads::Listed(users.iter().map(|&c| LoadStep::Concurrency(c)).collect())
        }
        (None, None) => Loads::UntilPeak,
    };
    if args.num_prompts == 0 {
        bail!("--num-prompts must be at least 1");
    }
    if args.output_len == 0 {
        bail!("--output-len must be at least 1");
    }
    let vocab_size = model.shape.vocab_size;
    let (source, shape, workload_id) = match &args.dataset_path {
        None => {
            if args.input_len == 0 || args.shared_prefix > args.input_len {
                bail!("--input-len must be at least 1 and at least --shared-prefix");
            }
            let source =
                PromptSource::Random { vocab_size, input_len: args.input_len, shared_prefix: args.shared_prefix };
            let shape = WorkloadShape {
                min_input_len: args.input_len,
                max_input_len: args.input_len,
                max_output_len: args.output_len,
                shared_prefixes: args.shared_prefix > 0,
            };
            let id = format!("random in={} out={} prefix={}", args.input_len, args.output_len, args.shared_prefix);
            (source, shape, id)
        }
        Some(path) => {
            let entries = match args.dataset {
                DatasetFormat::Jsonl => load_jsonl(path)?,
                DatasetFormat::Sharegpt => load_sharegpt(path)?,
            };
            let tokenizer = args.tokenizer.as_deref().map(Tokenizer::from_dir).transpose()?;
            let options =
                TokenizeOptions { tokenizer: tokenizer.as_ref(), chat_template: false, reply_output_len: true };
            let prompts: Vec<SampledPrompt> = tokenize_entries(&entries, options)?;
            if prompts.is_empty() {
                bail!("{} holds no prompts", path.display());
            }
            let max_input_len = prompts.iter().map(|p| p.token_ids.len()).max().unwrap_or(1).max(1);
            let min_input_len = prompts.iter().map(|p| p.token_ids.len()).min().unwrap_or(1).max(1);
            let max_output_len =
                prompts.iter().filter_map(|p| p.output_len).map(|n| n as usize).max().unwrap_or(args.output_len);
            let tokens: usize = prompts.iter().map(|p| p.token_ids.len()).sum();
            let id = format!("{} {} prompts {tokens} tokens out={}", path.display(), prompts.len(), args.output_len);
            let shape = WorkloadShape {
                min_input_len,
                max_input_len,
                max_output_len: max_output_len.max(1),
                shared_prefixes: true,
            };
            (PromptSource::Dataset(Arc::from(prompts)), shape, id)
        }
    };
    let workload = Workload {
        source,
        output_len: args.dataset_path.is_none().then_some(args.output_len as u32),
        fallback_output_len: args.output_len as u32,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: args.seed,
        guide: None,
        lengths: Default::default(),
    };
    Ok(Study {
        workload,
        workload_id: format!("{workload_id} seed={}", args.seed),
        shape,
        loads,
        min_prompts: args.num_prompts,
        burstiness: args.burstiness,
        slos,
    })
}

/// The best configurations a pruned search gets exactly right, and the rows the console shows.
const TOP: usize = 5;

/// The console report: the top of the ranking, the front, the recommendation and its commands.
fn render(report: &SearchReport, study: &Study, exhaustive: bool) -> String {
    let mut out = format!(
        "{}; {} load points, {:.1} s wall; SLOs {}\n",
        report.counts.summary(),
        report.points,
        report.wall_s,
        study.slos
    );
    if report.lost_statistics > 0 {
        out += &format!("{} iteration statistics lost: those points' figures miss them\n", report.lost_statistics);
    }
    out += "\n";
    out +=
        &format!("{:<60} {:>17} {:>10} {:>5}\n", "configuration (best first)", "goodput tok/s/GPU", "req/s/GPU", "at");
    for row in report.ranking.iter().take(if exhaustive { 2 * TOP } else { TOP }) {
        out += &format!(
            "{:<60} {:>17.1} {:>10.2} {:>5}{}\n",
            row.label,
            row.goodput_tokens_per_s_per_gpu,
            row.goodput_requests_per_s_per_gpu,
            row.best_load.as_deref().unwrap_or("-"),
            row.error.as_ref().map(|e| format!("  error: {e}")).unwrap_or_default()
        );
    }
    if !report.unexplored.is_empty() {
        out += &format!(
            "{} configurations unexplored, not ranked: their climb started above one user and missed there \
             (summary.json's unexplored)\n",
            report.unexplored.len()
        );
    }
    out += &format!(
        "\nPareto front ({} points, tokens/s/user -> tokens/s/GPU{}):\n",
        report.pareto_front.len(),
        if report.bounded > 0 { ", of the configurations run" } else { "" }
    );
    for p in &report.pareto_front {
        out += &format!(
            "  {:>8.1} -> {:>9.1}  {} at {}\n",
            p.tokens_per_s_per_user, p.tokens_per_s_per_gpu, p.label, p.load
        );
    }
    match &report.recommendation {
        Some(rec) => {
            out += &format!(
                "\nrecommended: {} at {}: {:.1} output tokens/s per GPU ({:.2} requests/s per GPU) within the SLOs, {:.1} tokens/s per user\n",
                rec.label,
                rec.load,
                rec.goodput_tokens_per_s_per_gpu,
                rec.goodput_requests_per_s_per_gpu,
                rec.tokens_per_s_per_user
            );
            for note in rec.notes(&study.slos) {
                out += &format!("  {note}\n");
            }
            out += &format!("  build: {}\n  serve: {}\n  bench: {}\n", rec.sim_build, rec.serve, rec.bench);
        }
        None => out += "\nno configuration meets the SLOs at any load: relax --slo or widen the search\n",
    }
    out
}
