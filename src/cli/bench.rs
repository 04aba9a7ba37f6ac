//! `trtllm bench`: latency profiling over a sweep, in process or over gRPC, and `trtllm bench compare`.

mod args;
mod disagg;
mod draft_target;
mod http_setup;
mod layers;
mod lengths;
mod limits;
mod live;
mod lora;
mod plan;
mod report;
mod saturate;
mod setup;
mod target_info;
mod verdict;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use trtllm::bench::{
    FailureSummary, RunClock, RunInfo, SloSet, SweepRow, WallAnchor, console_table, parse_percentiles, run_point_live,
    run_virtual_point_with,
};

use self::args::{DatasetKind, RunArgs};
use self::report::Report;
use self::target_info::Setup;

/// Arguments of `trtllm bench`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    compare: Option<Compare>,
    // Boxed: the run options are many, and this is one variant of the command enum.
    #[command(flatten)]
    run: Box<RunArgs>,
}

#[derive(Debug, clap::Subcommand)]
enum Compare {
    /// Headline metrics of two summary JSON files side by side, with ratios B/A.
    Compare {
        /// Baseline summary.
        a: PathBuf,
        /// Candidate summary.
        b: PathBuf,
        /// Print the speedup of B over A even when the two runs' workloads differ (the
        /// differences are listed beside it); without it such a comparison exits with status 3.
        #[arg(long)]
        allow_different_workloads: bool,
    },
}

/// `bench compare`'s exit status when the workloads differ and no speedup was printed.
const WORKLOADS_DIFFER: u8 = 3;

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(Compare::Compare { a, b, allow_different_workloads }) = args.compare {
        let options = trtllm::bench::CompareOptions { allow_different_workloads };
        let comparison = trtllm::bench::compare_files(&a, &b, options)?;
        print!("{}", comparison.text);
        let path = self::report::write_compare_html(&a, &b, &comparison.text)?;
        println!("report in {}", path.display());
        if comparison.refused {
            let what: Vec<&str> = comparison
                .differences
                .iter()
                .filter(|d| d.kind == trtllm::bench::DifferenceKind::Workload)
                .map(|d| d.what.as_str())
                .collect();
            eprintln!(
                "error: the two runs' workloads differ ({}): no speedup printed; pass --allow-different-workloads to print it anyway",
                what.join(", ")
            );
            return Ok(ExitCode::from(WORKLOADS_DIFFER));
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Layers side by side: `--target a,b,c` runs each target in turn (see layers.rs).
    if layers::is_layer_list(&args.run.target) {
        // Boxed: the single-target run is this function, called back for each target.
        return layers::run(*args.run, |one| Box::pin(run(Args { compare: None, run: Box::new(one) }))).await;
    }
    let args = *args.run;
    // Everything the options alone decide is checked before the engine loads (minutes, on a
    // real one).
    let percentiles = parse_percentiles(&args.percentiles)?;
    let slo_set = args.slo.as_deref().map(SloSet::parse).transpose().context("--slo")?;
    let slos = slo_set.as_ref().map(SloSet::request_limits);
    if !(args.metrics_interval.is_finite() && args.metrics_interval > 0.0) {
        anyhow::bail!("--metrics-interval must be a positive number of seconds");
    }
    if !(args.gpu_sample_interval.is_finite() && args.gpu_sample_interval > 0.0) {
        anyhow::bail!("--gpu-sample-interval must be a positive number of seconds");
    }
    if let Some(interval) = args.sample_interval
        && !(interval.is_finite() && interval > 0.0)
    {
        anyhow::bail!("--sample-interval must be a positive number of seconds");
    }
    plan::check_options(&args)?;
    lengths::check(&args)?;
    if args.saturate.saturate {
        args.saturate.validate()?;
        if plan::workloads(&args) != 1 {
            anyhow::bail!("--saturate sweeps the rate of one workload: give one --input-len and one --output-len");
        }
    }
    let date = RunInfo::now_date();
    let output_dir = args.output_dir.clone().unwrap_or_else(|| PathBuf::from("bench-results").join(&date));

    let setup = Setup::new(&args).await?;
    // A virtual-clock engine plans rather than measures: points run in simulated time.
    let planning_dir = match (&setup.simulation, &setup.loaded_dir) {
        (Some(sim), Some(dir)) if sim.is_virtual() => {
            if !args.quiet {
                eprintln!("virtual clock: latencies, durations and rates are simulated executor time");
            }
            Some(dir.clone())
        }
        _ => None,
    };
    // A tokenizer only when the workload needs one: text prompts, a chat template, or the end
    // id for natural stopping in process (a server applies its own).
    let required = args.chat_template || (!args.ignore_eos && setup.target.executor().is_some());
    // Sessions keep their history as text too; an HTTP target is sent text prompts.
    let needs_text = args.turns.is_some() || args.target.starts_with("http");
    let tokenizer = match required || needs_text || !matches!(args.dataset, DatasetKind::Random | DatasetKind::Trace) {
        true => setup.tokenizer().await?,
        false => None,
    };
    if required && tokenizer.is_none() {
        anyhow::bail!("--chat-template and --ignore-eos false need a tokenizer: pass --tokenizer DIR");
    }
    let end_id = tokenizer.as_ref().and_then(|t| t.eos_token_ids().first()).map(|&id| id as i32);
    let sources = plan::prompt_sources(&args, setup.vocab_size, tokenizer.as_ref())?;
    let mut points = plan::points(&args, sources, end_id)?;
    lengths::apply(&args, &mut points)?;
    // The workload against the engine's limits, before the first request.
    let engine_limits = limits::EngineLimits { max_input_len: setup.max_input_len, max_seq_len: setup.max_seq_len };
    let mut notes: Vec<String> = limits::check(&mut points, engine_limits, args.clip_lengths)?;
    if !args.quiet {
        notes.iter().for_each(|note| eprintln!("{note}"));
    }
    std::fs::create_dir_all(&output_dir).with_context(|| format!("creating {}", output_dir.display()))?;

    let live = self::live::LiveOutput::start(args.live, args.quiet);

    // Real-time figures are read against the host's noise: measure it next to them.
    let jitter = match &planning_dir {
        Some(_) => None,
        None => tokio::task::spawn_blocking(|| {
            trtllm::bench::TimerJitter::measure(100, std::time::Duration::from_millis(1))
        })
        .await
        .ok(),
    };
    let mut report = Report::new(&args, &setup, &date, &output_dir, &percentiles, slos, tokenizer.is_some());
    report.timer_jitter = jitter;
    let mut rows: Vec<SweepRow> = Vec::new();
    let mut summaries: Vec<(String, serde_json::Value)> = Vec::new();
    let mut succeeded = 0_usize;
    // Points whose failed requests are beyond --max-failed: (stem, failed, measured).
    let mut over_budget: Vec<(String, usize, usize)> = Vec::new();
    let mut tally = |stem: &str, failures: &FailureSummary| {
        succeeded += failures.measured - failures.failed;
        if !args.max_failed.allows(failures.failed, failures.measured) {
            over_budget.push((stem.to_string(), failures.failed, failures.measured));
        }
    };
    // A virtual-clock point loads its own executor: with the same settings as a real one.
    let virtual_options = trtllm::bench::VirtualRunOptions {
        executor: Some(args.executor.apply(trtllm::ExecutorConfig::builder()).build()?),
        lora: setup.target.lora().cloned(),
        ..Default::default()
    };
    // A simulated engine run in real time gets its virtual-clock twin: the same workload run on
    // it is the prediction under load, beside the measurement.
    let twin_dir = match (&planning_dir, &setup.simulation, &setup.loaded_dir) {
        // Only where the GPU timing model times the engine (a fixed iteration time predicts nothing).
        (None, Some(sim), Some(dir)) if sim.perf_model().is_some() => {
            let twin = tempfile::tempdir()?;
            trtllm::bench::write_virtual_twin(dir, twin.path())?.then_some(twin)
        }
        _ => None,
    };
    let one = OnePoint {
        twin_dir: twin_dir.as_ref().map(|d| d.path()),
        setup: &setup,
        planning_dir: planning_dir.as_deref(),
        virtual_options: &virtual_options,
        report: &report,
        live: &live,
        target: &args.target,
        gpu_telemetry: args.gpu_telemetry,
        gpu_sample_interval: args.gpu_sample_interval,
        metrics_urls: &args.metrics_url,
        metrics_interval: args.metrics_interval,
        slos: slo_set.as_ref(),
    };
    if args.saturate.saturate {
        let start = args.request_rate.as_ref().and_then(|r| r.first().copied()).unwrap_or(1.0);
        if !(start.is_finite() && start > 0.0) {
            anyhow::bail!("--saturate starts from a finite --request-rate");
        }
        let mut judged: Vec<self::saturate::Judged> = Vec::new();
        let mut rate = Some(start);
        while let Some(r) = rate {
            let mut point = points[0].clone();
            let n = args.num_prompts.unwrap_or(((r * args.saturate.saturate_seconds).ceil() as usize).max(32));
            point.plan.load = trtllm::bench::Load::Open { rate: r, burstiness: args.burstiness, max_concurrency: None };
            point.plan.num_prompts = n;
            point.plan.warmup = args.warmup.unwrap_or(1);
            point.plan.stop_when_saturated = true;
            point.request_rate = r;
            point.stem = format!("sat_r{r}_{}", points[0].stem.split_once('_').map_or("", |s| s.1));
            let (row, point_notes, summary, failures) = one.run(&point, judged.len()).await?;
            tally(&point.stem, &failures);
            summaries.push((point.stem.clone(), summary.clone()));
            rows.push(row);
            notes.extend(point_notes);
            judged.push(self::saturate::judge(r, &point.stem, &summary, args.saturate.slo_attainment));
            rate = self::saturate::next_rate(&args.saturate, &judged);
        }
        let slo_text = args.slo.clone().unwrap_or_default();
        notes.extend(self::saturate::write(&output_dir, &args.saturate, &slo_text, &judged)?);
    }
    for (index, base) in points.iter().enumerate().filter(|_| !args.saturate.saturate) {
        let mut repeats = Vec::new();
        for repeat in 0..args.repeats as usize {
            let point = base.repeat(repeat);
            let (row, point_notes, summary, failures) = one.run(&point, index).await?;
            tally(&point.stem, &failures);
            if repeat == 0 {
                summaries.push((point.stem.clone(), summary.clone()));
                rows.push(row);
                notes.extend(point_notes);
            }
            repeats.push(summary);
        }
        if repeats.len() > 1 {
            notes.push(self::report::write_repeats(&output_dir, &base.stem, &repeats)?);
        }
    }
    live.stop();
    report.write_sweep(&rows)?;
    println!("{}", console_table(&rows));
    for note in &notes {
        println!("{note}");
    }
    if let Some(jitter) = &jitter {
        println!("{}", jitter.console_line());
    }
    let html = report.write_html(&summaries, &notes)?;
    println!("results in {} (report: {})", output_dir.display(), html.display());
    if let Some(executor) = setup.target.executor() {
        executor.shutdown(trtllm::ShutdownMode::Cancel).await?;
    }
    if !over_budget.is_empty() {
        eprintln!("error: {}", verdict::over_budget(&over_budget, &args.max_failed));
        return Ok(ExitCode::FAILURE);
    }
    Ok(if succeeded == 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// What running one point needs: the target, the virtual-clock engine (planning), the report
/// and the live view.
struct OnePoint<'a> {
    setup: &'a Setup,
    planning_dir: Option<&'a std::path::Path>,
    /// The simulated engine's virtual-clock twin (a real-time run on a simulated engine).
    twin_dir: Option<&'a std::path::Path>,
    virtual_options: &'a trtllm::bench::VirtualRunOptions,
    report: &'a Report<'a>,
    live: &'a self::live::LiveOutput,
    /// `--target` as given, naming the target in the live view.
    target: &'a str,
    /// `--gpu-telemetry`.
    gpu_telemetry: Option<bool>,
    /// `--gpu-sample-interval`, seconds.
    gpu_sample_interval: f64,
    /// `--metrics-url`: Prometheus endpoints to scrape.
    metrics_urls: &'a [String],
    /// `--metrics-interval`, seconds.
    metrics_interval: f64,
    /// `--slo`: judged on each point's console lines.
    slos: Option<&'a SloSet>,
}

impl OnePoint<'_> {
    /// Runs `point` (sweep index `index`) and writes its files: its sweep row, console notes,
    /// summary and failed measured requests.
    async fn run(
        &self,
        point: &self::plan::Point,
        index: usize,
    ) -> anyhow::Result<(SweepRow, Vec<String>, serde_json::Value, FailureSummary)> {
        let total = point.plan.duration.is_none().then_some(point.plan.num_prompts as u64);
        self.live.start_point(&format!("{} {}", self.target, point.stem), total);
        let clock = RunClock::start();
        let anchor = WallAnchor::now();
        let stats = &self.live.stats;
        let count = |r: &trtllm::bench::RequestRecord| stats.record(r);
        let scrapes = match self.metrics_urls.is_empty() {
            true => None,
            false => {
                let interval = std::time::Duration::from_secs_f64(self.metrics_interval);
                Some(trtllm::bench::ServerMetricsWatch::start(self.metrics_urls, interval).await)
            }
        };
        let sampler = self.telemetry_source().map(|source| {
            let live = stats.clone();
            let interval = std::time::Duration::from_secs_f64(self.gpu_sample_interval);
            trtllm::bench::TelemetrySampler::start(source, interval, move |round| {
                live.set_gpu(trtllm::bench::telemetry_line(round));
            })
        });
        let (run, virtual_run) = match self.planning_dir {
            Some(dir) => {
                // The live view follows the point as it runs, in simulated time.
                let options =
                    trtllm::bench::VirtualRunOptions { live: Some(stats.clone()), ..self.virtual_options.clone() };
                let (run, v) =
                    run_virtual_point_with(dir, &point.workload, index as u64, &point.plan, &options, |_| {}).await?;
                (run, Some(v))
            }
            None => {
                let target = &self.setup.target;
                let run = run_point_live(target, &point.workload, index as u64, &point.plan, &clock, count, stats);
                (run.await?, None)
            }
        };
        self.live.finish_point();
        let telemetry = sampler.map(|s| (s.kind(), s.finish()));
        let servers = match scrapes {
            Some(watch) => watch.finish().await,
            None => Vec::new(),
        };
        let observed = self::report::Observed { gpu: telemetry, servers };
        let failures = FailureSummary::of(&run.records);
        let twin = match self.twin_dir {
            Some(dir) => {
                let options = self.virtual_options;
                let twin = run_virtual_point_with(dir, &point.workload, index as u64, &point.plan, options, |_| {});
                Some(twin.await?.0)
            }
            None => None,
        };
        // Disaggregated in process: the first requests rerun aggregated, their tokens compared.
        if let trtllm::bench::BenchTarget::Disaggregated(pools) = &self.setup.target {
            pools.token_check().await;
        }
        let (row, mut notes, summary) =
            self.report.write_point(point, &run, &clock, &anchor, virtual_run.as_ref(), twin.as_ref(), observed)?;
        notes.extend(verdict::point_lines(&point.stem, self.slos, &run.records, &summary, &failures));
        Ok((row, notes, summary, failures))
    }

    /// Where GPU figures come from for this run, if anywhere: a simulated engine's timing model
    /// in process (real time), else NVML when it loads (in process by default, any target with
    /// `--gpu-telemetry true`).
    fn telemetry_source(&self) -> Option<Box<dyn trtllm::bench::TelemetrySource>> {
        let in_process = self.setup.target.executor().is_some();
        if self.planning_dir.is_some() || !self.gpu_telemetry.unwrap_or(in_process) {
            return None;
        }
        if let Some(executor) = self.setup.target.executor().filter(|_| self.setup.simulation.is_some()) {
            return trtllm::bench::SimulatedSource::of(executor.executor())
                .map(|source| Box::new(source) as Box<dyn trtllm::bench::TelemetrySource>);
        }
        match trtllm::bench::NvmlSource::open(None) {
            Ok(nvml) => Some(Box::new(nvml)),
            Err(e) => {
                if self.gpu_telemetry == Some(true) {
                    eprintln!("GPU telemetry: {e}; running without it");
                }
                None
            }
        }
    }
}
