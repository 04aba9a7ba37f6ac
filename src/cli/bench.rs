//! `trtllm bench`: in-process latency profiling over a sweep, and `trtllm bench compare`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use trtllm::bench::{
    BenchTarget, GrpcTarget, LatencyMetric, LatencyThroughputPoint, LoadPoint, PressurePoint, RandomWorkload,
    ResultFiles, RunClock, RunInfo, Slos, Summary, SweepRow, console_table, iter_summary, kv_summary,
    parse_percentiles, plot_latency_vs_throughput, plot_ttft_vs_inflight_tokens, run_point, write_svg, write_sweep_csv,
};
use trtllm::{AsyncExecutor, ExecutorConfig};

/// Arguments of `trtllm bench`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    compare: Option<Compare>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, clap::Subcommand)]
enum Compare {
    /// Headline metrics of two summary JSON files side by side, with ratios B/A.
    Compare {
        /// Baseline summary.
        a: PathBuf,
        /// Candidate summary.
        b: PathBuf,
    },
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Where to send the load: `inprocess` (an executor in this process) or `grpc://HOST:PORT`
    /// (a running `trtllm serve`), with identical workloads and reports.
    #[arg(long, default_value = "inprocess")]
    target: String,
    /// The engine directory; without it the built-in simulated engine is used (TinyLlama-1.1B-shaped, BF16,
    /// on a simulated RTX A6000, in real time).
    #[arg(long, env = "TRTLLM_ENGINE_DIR")]
    engine_dir: Option<PathBuf>,
    /// Closed-loop concurrencies to sweep.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4, 16])]
    concurrency: Vec<usize>,
    /// Prompt lengths in tokens to sweep.
    #[arg(long, value_delimiter = ',', default_values_t = [128usize, 1024])]
    input_len: Vec<usize>,
    /// Output lengths in tokens to sweep (fixed: the end id is ignored).
    #[arg(long, value_delimiter = ',', default_values_t = [128usize])]
    output_len: Vec<usize>,
    /// Measured requests per point (default: 2 × concurrency, at least 8).
    #[arg(long)]
    num_prompts: Option<usize>,
    /// Warmup requests per point (default: the concurrency).
    #[arg(long)]
    warmup: Option<usize>,
    /// Tokens shared by every prompt (warm prefix); 0 for fully random prompts.
    #[arg(long, default_value_t = 0)]
    shared_prefix: usize,
    /// Seed for the prompts.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Send non-streaming requests (E2E latency only).
    #[arg(long)]
    non_streaming: bool,
    /// Percentiles to report.
    #[arg(long, default_value = "50,90,95,99")]
    percentiles: String,
    /// Goodput SLOs, e.g. ttft:1000,tpot:40 (milliseconds).
    #[arg(long)]
    slo: Option<String>,
    /// Where to write results (default bench-results/<date>).
    #[arg(long)]
    output_dir: Option<PathBuf>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Compare::Compare { a, b }) = args.compare {
        print!("{}", trtllm::bench::compare_files(&a, &b)?);
        return Ok(ExitCode::SUCCESS);
    }
    let args = args.run;
    let percentiles = parse_percentiles(&args.percentiles)?;
    let slos = args.slo.as_deref().map(Slos::parse).transpose()?;
    let date = RunInfo::now_date();
    let output_dir = args.output_dir.clone().unwrap_or_else(|| PathBuf::from("bench-results").join(&date));
    std::fs::create_dir_all(&output_dir).with_context(|| format!("creating {}", output_dir.display()))?;

    let scratch = tempfile::tempdir()?;
    let (target, engine_json, model_id, vocab_size, max_seq_len, backend_name) = match args.target.as_str() {
        "inprocess" => {
            let engine_dir = match &args.engine_dir {
                Some(dir) => dir.clone(),
                None => {
                    eprintln!("no --engine-dir: using the {}", trtllm::builtin::BUILTIN_DESCRIPTION);
                    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), scratch.path())?
                }
            };
            let executor = AsyncExecutor::load(&engine_dir, ExecutorConfig::default()).await?;
            let engine = executor.executor().engine().clone();
            let backend = executor.executor().backend().clone();
            eprintln!("engine {} ({}), backend {backend}", engine.model_name, engine_dir.display());
            let json = json!({ "config": engine, "backend": backend, "executor": executor.executor().config() });
            (
                BenchTarget::InProcess(executor),
                json,
                engine.model_name.clone(),
                engine.vocab_size,
                engine.max_seq_len,
                backend.to_string(),
            )
        }
        url => {
            let Some(addr) = url.strip_prefix("grpc://") else {
                anyhow::bail!("--target must be inprocess or grpc://HOST:PORT, not {url:?}");
            };
            let grpc =
                GrpcTarget::connect(format!("http://{addr}")).await.with_context(|| format!("connecting to {url}"))?;
            let model = grpc.client().get_model_info(trtllm::proto::trtllm::GetModelInfoRequest {}).await?.into_inner();
            let server =
                grpc.client().get_server_info(trtllm::proto::trtllm::GetServerInfoRequest {}).await?.into_inner();
            eprintln!("target {url}: model {}, {}", model.model_id, server.version);
            let json = json!({
                "target": url, "model_id": model.model_id, "max_input_len": model.max_input_len,
                "max_seq_len": model.max_seq_len, "max_batch_size": model.max_batch_size, "vocab_size": model.vocab_size,
                "server_version": server.version, "tp_size": server.tensor_parallel_size,
            });
            let vocab = usize::try_from(model.vocab_size).unwrap_or(0);
            let max_seq = usize::try_from(model.max_seq_len).unwrap_or(0);
            (BenchTarget::Grpc(grpc), json, model.model_id, vocab, max_seq, server.version)
        }
    };

    let workload = RandomWorkload {
        vocab_size,
        shared_prefix: args.shared_prefix,
        seed: args.seed,
        streaming: !args.non_streaming,
    };
    let mut points = Vec::new();
    for &input_len in &args.input_len {
        for &output_len in &args.output_len {
            for &concurrency in &args.concurrency {
                let num_prompts = args.num_prompts.unwrap_or((2 * concurrency).max(8));
                let warmup = args.warmup.unwrap_or(concurrency);
                points.push(LoadPoint { concurrency, input_len, output_len, num_prompts, warmup });
            }
        }
    }
    let total: usize = points.iter().map(|p| p.num_prompts).sum();
    let bar = if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        ProgressBar::new(total as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} requests {msg}")?);

    let command_line: Vec<String> = std::env::args().collect();
    let mut rows = Vec::new();
    let mut failures = 0u64;
    for point in &points {
        bar.set_message(format!("c={} in={} out={}", point.concurrency, point.input_len, point.output_len));
        let clock = RunClock::start();
        let done_before = bar.position();
        let run = run_point(&target, &workload, point, &clock, |n| bar.set_position(done_before + n as u64)).await;
        let run_info = RunInfo {
            date: date.clone(),
            model_id: model_id.clone(),
            num_prompts: Some(point.num_prompts as u64),
            max_model_len: Some(max_seq_len as u64),
            request_rate: f64::INFINITY,
            burstiness: 1.0,
            max_concurrency: Some(point.concurrency as u64),
            ..RunInfo::default()
        };
        let mut builder = Summary::builder(run_info)
            .percentiles(&percentiles)
            .engine(engine_json.clone())
            .workload(json!({
                "dataset": "random", "input_len": point.input_len, "output_len": point.output_len,
                "shared_prefix": args.shared_prefix, "seed": args.seed, "ignore_eos": true,
                "streaming": !args.non_streaming, "warmup": point.warmup, "concurrency": point.concurrency,
            }))
            .kv(kv_summary(&run.iterations))
            .iter(iter_summary(&run.iterations))
            .metadata(json!({
                "command_line": command_line, "crate_version": env!("CARGO_PKG_VERSION"),
                "backend": backend_name, "target": args.target,
            }));
        if let Some(slos) = &slos {
            builder = builder.slos(*slos);
        }
        let summary = builder.build(&run.records)?;
        let stem = output_dir.join(format!("c{}_in{}_out{}", point.concurrency, point.input_len, point.output_len));
        let files = ResultFiles::new(&stem);
        files.write_summary(&summary)?;
        files.write_requests(&run.records)?;
        let iterations: Vec<serde_json::Value> =
            run.iterations.iter().map(serde_json::to_value).collect::<Result<_, _>>()?;
        files.write_iterations(&iterations)?;
        failures += run.records.iter().filter(|r| r.is_measured() && !r.is_success()).count() as u64;
        rows.push(SweepRow::from_summary(&summary).with_shape(point.input_len as u64, point.output_len as u64));
    }
    bar.finish_and_clear();
    write_sweep_csv(&output_dir.join("sweep.csv"), &rows)?;
    write_plots(&output_dir, &rows)?;
    println!("{}", console_table(&rows));
    println!("results in {}", output_dir.display());
    if let BenchTarget::InProcess(executor) = &target {
        executor.shutdown(trtllm::ShutdownMode::Cancel).await?;
    }
    Ok(if failures as usize == total { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn write_plots(dir: &Path, rows: &[SweepRow]) -> anyhow::Result<()> {
    let pressure = PressurePoint::from_rows(rows);
    if !pressure.is_empty() {
        write_svg(&dir.join("ttft_vs_inflight_tokens.svg"), &plot_ttft_vs_inflight_tokens(&pressure)?)?;
    }
    let latency = LatencyThroughputPoint::from_rows(rows, LatencyMetric::P50Tpot);
    if !latency.is_empty() {
        write_svg(
            &dir.join("latency_vs_throughput.svg"),
            &plot_latency_vs_throughput(&latency, LatencyMetric::P50Tpot)?,
        )?;
    }
    Ok(())
}
