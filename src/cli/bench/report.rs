//! Result files of each point (summary, requests, iterations, time series) and of the sweep.

use std::path::{Path, PathBuf};

use serde_json::Value;
use trtllm::bench::lora::{CacheCounts, LoraSection};
use trtllm::bench::{
    Availability, ClockSection, ExecutorSettings, GpuSample, GpuTelemetry, LatencyMetric, LatencyThroughputPoint,
    LengthSection, OverSaturated, Phase, PointRun, Prediction, PredictionSection, PressurePoint, RequestRecord,
    ResultFiles, RunClock, RunInfo, RunMetadata, Slos, Summary, SweepRow, TimerJitter, UnderLoad, VirtualClockRun,
    WallAnchor, fill_kv_utilization, plot_gpu_telemetry, plot_latency_vs_throughput, plot_time_series,
    plot_ttft_vs_inflight_tokens, telemetry_section, time_series, write_svg, write_sweep_csv,
};

use super::args::RunArgs;
use super::plan::Point;
use super::target_info::Setup;

/// Default seconds per time-series sample.
const DEFAULT_SAMPLE_INTERVAL_S: f64 = 5.0;

const NO_ITERATION_STATS: &str =
    "iteration statistics are not exposed over trtllm.TrtllmService; run in process to see them";

/// What was watched beside the requests during a point.
pub struct Observed {
    /// GPU telemetry: the source's kind and its samples.
    pub gpu: Option<(&'static str, Vec<GpuSample>)>,
    /// The `--metrics-url` endpoints' scrapes.
    pub servers: Vec<trtllm::bench::EndpointLog>,
}

/// What every point's files share.
pub struct Report<'a> {
    args: &'a RunArgs,
    setup: &'a Setup,
    date: String,
    output_dir: PathBuf,
    percentiles: Vec<f64>,
    slos: Option<Slos>,
    metadata: RunMetadata,
    /// The host's timer jitter, measured before a real-time run (`clock.host_timer_jitter`).
    pub timer_jitter: Option<TimerJitter>,
    /// The executor's runtime settings of the run (`executor_settings`).
    executor_settings: ExecutorSettings,
}

impl<'a> Report<'a> {
    pub fn new(
        args: &'a RunArgs,
        setup: &'a Setup,
        date: &str,
        output_dir: &Path,
        percentiles: &[f64],
        slos: Option<Slos>,
        tokenizer_loaded: bool,
    ) -> Self {
        let metadata = RunMetadata {
            command_line: std::env::args().collect(),
            crate_version: env!("CARGO_PKG_VERSION").into(),
            target: args.target.clone(),
            backend: setup.backend.clone(),
            gpu: setup.gpu.clone(),
            engine_dir: setup.engine_dir.as_ref().map(|d| d.display().to_string()),
            label: args.label.clone(),
            tokenizer_id: setup.tokenizer_id().map(str::to_owned),
            tokenizer_loaded,
        };
        Report {
            args,
            setup,
            date: date.to_owned(),
            output_dir: output_dir.to_owned(),
            percentiles: percentiles.to_vec(),
            slos,
            metadata,
            timer_jitter: None,
            executor_settings: executor_settings(args, setup),
        }
    }

    /// Writes the point's summary, request and iteration files (and its time series when it
    /// ran for a duration); returns its sweep row and lines for the console.
    #[allow(clippy::too_many_arguments)]
    pub fn write_point(
        &self,
        point: &Point,
        run: &PointRun,
        clock: &RunClock,
        anchor: &WallAnchor,
        virtual_run: Option<&VirtualClockRun>,
        twin: Option<&PointRun>,
        observed: Observed,
    ) -> anyhow::Result<(SweepRow, Vec<String>, Value)> {
        let run_info = RunInfo {
            date: self.date.clone(),
            label: self.args.label.clone(),
            model_id: self.setup.model_id.clone(),
            tokenizer_id: self.setup.tokenizer_id().map(str::to_owned),
            num_prompts: point.plan.duration.is_none().then_some(point.plan.num_prompts as u64),
            max_model_len: Some(self.setup.max_seq_len as u64),
            request_rate: point.request_rate,
            burstiness: self.args.burstiness,
            max_concurrency: point.plan.load.concurrency().map(|c| c as u64),
            ..RunInfo::default()
        };
        let (kv, iter) = match &run.iterations {
            Some(log) => (log.kv_summary(), log.iter_summary()),
            None => (
                Availability::Unavailable(NO_ITERATION_STATS.into()),
                Availability::Unavailable(NO_ITERATION_STATS.into()),
            ),
        };
        let mut builder = Summary::builder(run_info)
            .percentiles(&self.percentiles)
            .detailed(self.args.save_detailed)
            .engine(self.setup.engine.clone())
            .workload(point.describe(self.args, self.setup.tokenizer_id()))
            .kv(kv)
            .iter(iter)
            .metadata(self.metadata.clone());
        let mut notes = Vec::new();
        // Said once, here: a wall-clock collector that fell behind the executor (the summary's
        // `iter.lost_iterations`); the virtual clock waits for it and loses none.
        if let Some(lost) = run.iterations.as_ref().map(|log| log.lagged).filter(|&n| n > 0) {
            notes.push(format!(
                "{}: {lost} iteration statistics lost (the collector fell behind the executor; iteration figures cover the rest)",
                point.stem
            ));
        }
        match virtual_run {
            Some(v) => {
                notes.push(format!(
                    "virtual clock {}: {:.1} s simulated in {:.2} s of wall time ({:.0}x)",
                    point.stem,
                    v.simulated_s,
                    v.wall_s,
                    if v.wall_s > 0.0 { v.simulated_s / v.wall_s } else { 0.0 }
                ));
                builder = builder.clock(ClockSection::virtual_clock(
                    v.client_latency_s,
                    v.simulated_s,
                    v.wall_s,
                    v.itl_unmapped_requests,
                ));
            }
            None => {
                builder = builder.clock(ClockSection::wall(self.timer_jitter));
                if let Some(log) = &run.iterations {
                    builder = builder.iteration_end_times(log.end_times_s(clock, anchor));
                }
            }
        }
        if let Some(slos) = self.slos {
            builder = builder.slos(slos);
        }
        let mut summary = builder.build(&run.records)?;
        // ---- LoRA: adapters, cache counters and latency by how adapters were sent ----
        if let Some(traffic) = self.setup.target.lora() {
            let section = traffic.section(&run.records);
            notes.push(lora_console_line(&point.stem, &section));
            summary.sections.lora = Some(section);
        }
        // The timing model's expectation, on a simulated engine whose iterations it times.
        if let Some(sim) = &self.setup.simulation {
            let concurrency = point.plan.load.concurrency();
            if let Some(prediction) = Prediction::for_summary(sim, &summary, concurrency) {
                let section = prediction.section(sim, &summary, run.iterations.as_ref());
                // Under load, the twin's run is the like-for-like prediction; the unloaded
                // figures stay in the file.
                if twin.is_none() {
                    notes.push(prediction.console_line(&point.stem, &section));
                }
                let model = match section {
                    Value::Object(map) => map,
                    _ => Default::default(),
                };
                summary.sections.prediction = Some(PredictionSection { under_load: None, model });
            }
        }
        if let trtllm::bench::BenchTarget::Disaggregated(pools) = &self.setup.target {
            let check = pools.take_token_check();
            notes.extend(super::disagg::complete_section(pools, check, self.setup, &mut summary, &point.stem));
        }
        if let Some(twin) = twin {
            let predicted = Summary::builder(RunInfo::default()).percentiles(&self.percentiles).build(&twin.records)?;
            let section = trtllm::bench::under_load_section(&predicted.to_json(), &summary.to_json());
            notes.push(under_load_line(&point.stem, &section));
            summary.sections.prediction.get_or_insert_with(PredictionSection::default).under_load = Some(section);
        }

        if let Some(at) = run.over_saturated_s {
            let flag = OverSaturated {
                after_s: at,
                stopped_sending: point.plan.stop_when_saturated,
                reading: "the backlog of requests sent and not finished kept growing: the target could not keep up with the offered rate".into(),
            };
            if let Some(arrivals) = &mut summary.sections.arrivals {
                arrivals.over_saturated = Some(flag);
            }
            notes.push(format!(
                "over-saturated {}: the backlog kept growing from {at:.1} s{}",
                point.stem,
                if point.plan.stop_when_saturated { "; stopped sending" } else { "" }
            ));
        }
        summary.sections.executor_settings = Some(self.executor_settings.clone());
        // Prompt tokens as the target counted them beside those asked for.
        if let (Some(requested), None) = (point.input_len, &summary.sections.sessions) {
            let actual = summary.mean_prompt_tokens();
            if let Some(workload) = &mut summary.sections.workload {
                workload.prompt_tokens_requested = Some(requested);
                workload.prompt_tokens_actual_mean = Some(actual);
            }
            if summary.throughput.completed > 0 && (actual - requested as f64).abs() > 0.5 {
                notes.push(format!(
                    "prompts {}: {actual:.1} prompt tokens per request as the target counted them, {requested} requested",
                    point.stem
                ));
            }
        }
        // Drawn lengths (`--input-dist`, `--output-dist`): what was asked beside what was sent.
        if let Some(section) = trtllm::bench::length_section(&point.workload.lengths, &run.records, &self.percentiles)
            && let Some(workload) = &mut summary.sections.workload
        {
            notes.push(length_line(&point.stem, &section));
            workload.length_distribution = Some(section);
        }
        notes.extend(load_shape_lines(&point.stem, &summary));

        let files = ResultFiles::new(self.output_dir.join(&point.stem));
        if !observed.servers.is_empty() {
            summary.sections.server_metrics = Some(trtllm::bench::server_metrics_section(&observed.servers));
            let rows: String =
                trtllm::bench::server_metrics_rows(&observed.servers).iter().map(|r| r.to_string() + "\n").collect();
            std::fs::write(self.output_dir.join(format!("{}.server_metrics.jsonl", point.stem)), rows)?;
        }
        if let Some((kind, samples)) = &observed.gpu {
            let section = telemetry_section(kind, samples);
            files.write_gpu_telemetry(samples)?;
            if let Ok(svg) = plot_gpu_telemetry(samples, &output_rate(&run.records)) {
                write_svg(&files.gpu_svg_path(), &svg)?;
            }
            notes.push(gpu_line(&point.stem, &section));
            summary.sections.gpu_telemetry = Some(section);
        }
        files.write_summary(&summary)?;
        files.write_requests(&run.records)?;
        let iterations: Vec<Value> = match &run.iterations {
            Some(log) => log.iterations.iter().map(serde_json::to_value).collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        files.write_iterations(&iterations)?;
        if point.plan.duration.is_some() || self.args.sample_interval.is_some() {
            self.write_time_series(&files, run, clock, anchor)?;
        }
        let mut row = SweepRow::from_summary(&summary);
        row.input_len = point.input_len.map(|n| n as u64);
        row.output_len = point.output_len.map(|n| n as u64);
        Ok((row, notes, summary.to_json()))
    }

    fn write_time_series(
        &self,
        files: &ResultFiles,
        run: &PointRun,
        clock: &RunClock,
        anchor: &WallAnchor,
    ) -> anyhow::Result<()> {
        let interval = self.args.sample_interval.unwrap_or(DEFAULT_SAMPLE_INTERVAL_S);
        // The load after warmup: ramp-up and measured requests.
        let records: Vec<RequestRecord> = run.records.iter().filter(|r| r.phase != Phase::Warmup).cloned().collect();
        let mut samples = time_series(&records, interval)?;
        if let Some(log) = &run.iterations {
            fill_kv_utilization(&mut samples, &log.kv_points(clock, anchor));
        }
        files.write_time_series(&samples)?;
        if !samples.is_empty() {
            write_svg(&files.timeseries_svg_path(), &plot_time_series(&samples)?)?;
        }
        Ok(())
    }

    /// Writes `report.html`: the run's settings, every point's summary and sections, every SVG
    /// plot in the output directory inline, and the console notes; returns its path.
    pub fn write_html(&self, points: &[(String, Value)], notes: &[String]) -> anyhow::Result<PathBuf> {
        let mut svgs: Vec<PathBuf> = std::fs::read_dir(&self.output_dir)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "svg"))
            .collect();
        svgs.sort();
        let plots = svgs
            .iter()
            .map(|p| {
                Ok((p.file_name().unwrap_or_default().to_string_lossy().into_owned(), std::fs::read_to_string(p)?))
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        let settings = vec![
            ("date".to_owned(), self.date.clone()),
            ("command line".to_owned(), std::env::args().collect::<Vec<_>>().join(" ")),
            ("target".to_owned(), self.args.target.clone()),
            ("backend".to_owned(), self.metadata.backend.clone()),
            ("gpu".to_owned(), self.metadata.gpu.clone().unwrap_or_default()),
            ("model".to_owned(), self.setup.model_id.clone()),
            ("label".to_owned(), self.args.label.clone().unwrap_or_default()),
            ("host timer jitter".to_owned(), self.timer_jitter.as_ref().map(TimerJitter::describe).unwrap_or_default()),
        ];
        let page = trtllm::bench::HtmlReport {
            title: format!("trtllm bench {} {}", self.args.target, self.date),
            settings,
            points: points.to_vec(),
            plots,
            notes: notes.to_vec(),
        };
        let path = self.output_dir.join("report.html");
        std::fs::write(&path, page.render())?;
        Ok(path)
    }

    /// Writes the aggregate CSV and the sweep plots.
    pub fn write_sweep(&self, rows: &[SweepRow]) -> anyhow::Result<()> {
        let dir = &self.output_dir;
        write_sweep_csv(&dir.join("sweep.csv"), rows)?;
        let pressure = PressurePoint::from_rows(rows);
        if !pressure.is_empty() {
            write_svg(&dir.join("ttft_vs_inflight_tokens.svg"), &plot_ttft_vs_inflight_tokens(&pressure)?)?;
        }
        // TPOT needs streaming; a non-streaming sweep plots its E2E latency instead.
        let metric =
            if rows.iter().any(|r| r.p50_tpot_ms.is_some()) { LatencyMetric::P50Tpot } else { LatencyMetric::P50E2el };
        let latency = LatencyThroughputPoint::from_rows(rows, metric);
        if !latency.is_empty() {
            write_svg(&dir.join("latency_vs_throughput.svg"), &plot_latency_vs_throughput(&latency, metric)?)?;
        }
        Ok(())
    }
}

/// Writes `bench compare`'s HTML report beside B, `<B stem>.compare.html`; returns its path.
pub fn write_compare_html(a: &Path, b: &Path, comparison: &str) -> anyhow::Result<PathBuf> {
    let read = |p: &Path| -> anyhow::Result<Value> { Ok(serde_json::from_str(&std::fs::read_to_string(p)?)?) };
    let name = |p: &Path| p.file_stem().unwrap_or_default().to_string_lossy().into_owned();
    let html = trtllm::bench::compare_html(
        &a.display().to_string(),
        &read(a)?,
        &b.display().to_string(),
        &read(b)?,
        comparison,
    );
    let path = b.with_file_name(format!("{}.compare.html", name(b)));
    std::fs::write(&path, html)?;
    Ok(path)
}

/// One console line comparing the twin's predicted figures with the measured ones.
fn under_load_line(stem: &str, section: &UnderLoad) -> String {
    let parts: Vec<String> = [
        ("p50_ttft_ms", "TTFT p50 ms"),
        ("mean_tpot_ms", "TPOT mean ms"),
        ("mean_e2el_ms", "E2E mean ms"),
        ("output_throughput", "out tok/s"),
    ]
    .iter()
    .filter_map(|(key, label)| {
        let f = section.figures.get(*key)?;
        Some(format!("{label} {:.2} predicted, {:.2} measured ({:.2}x)", f.predicted, f.measured, f.ratio?))
    })
    .collect();
    format!("prediction {stem} (the simulator's virtual-clock run of the same load): {}", parts.join("; "))
}

/// The `executor_settings` section: the executor flags given (the same as `trtllm serve`'s),
/// the `trtllm serve` line with them, and the configuration the in-process executor ran with.
fn executor_settings(args: &RunArgs, setup: &Setup) -> ExecutorSettings {
    let argv: Vec<String> = std::env::args().collect();
    let flags = crate::cli::executor_args::ExecutorArgs::given_flags(&argv);
    let in_process = setup.target.executor().is_some();
    ExecutorSettings {
        applies_to: if in_process {
            "the in-process executor"
        } else {
            "nothing: the target's server was started with its own settings"
        }
        .into(),
        serve_equivalent: in_process.then(|| {
            let dir = args.engine_dir.as_ref().map_or("<engine dir>".to_string(), |d| d.display().to_string());
            format!("trtllm serve --engine-dir {dir}{}", flags.iter().map(|f| format!(" {f}")).collect::<String>())
        }),
        flags,
        config: setup.engine.executor.clone().unwrap_or(Value::Null),
    }
}

/// Adds the `repeats` section (each headline figure's mean, std, CV and 95% CI over the runs)
/// to the first run's summary file and returns the console line.
pub fn write_repeats(output_dir: &Path, stem: &str, summaries: &[Value]) -> anyhow::Result<String> {
    let section = trtllm::bench::repeats_section(summaries);
    let path = ResultFiles::new(output_dir.join(stem)).summary_path();
    let mut first: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)?;
    // The first run's file gains the section last, after everything it was written with.
    if let Value::Object(map) = &mut first {
        map.insert("repeats".into(), serde_json::to_value(&section)?);
    }
    std::fs::write(&path, serde_json::to_string_pretty(&first)? + "\n")?;
    let figure = |key: &str, label: &str| -> Option<String> {
        let f = section.figure(key)?;
        let (low, high) = f.ci95()?;
        let cv = f.cv().unwrap_or(0.0) * 100.0;
        Some(format!("{label} {:.2} (95% CI {low:.2}-{high:.2}, CV {cv:.1}%)", f.mean))
    };
    let parts: Vec<String> = [
        ("output_throughput", "out tok/s"),
        ("p50_ttft_ms", "p50 TTFT ms"),
        ("p99_ttft_ms", "p99 TTFT ms"),
        ("p50_tpot_ms", "p50 TPOT ms"),
        ("p50_e2el_ms", "p50 E2E ms"),
    ]
    .iter()
    .filter_map(|(k, l)| figure(k, l))
    .collect();
    Ok(format!("repeats {stem} ({} runs): {}", summaries.len(), parts.join("; ")))
}

/// Console lines for the load's shape: TTFT and cache hits by session turn, the steady window
/// beside the whole run, and a warning when users sent in lockstep.
fn load_shape_lines(stem: &str, summary: &trtllm::bench::Summary) -> Vec<String> {
    let mut lines = Vec::new();
    let f = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
    let sections = &summary.sections;
    if let Some(sessions) = &sections.sessions {
        let turns: Vec<String> = sessions
            .turns
            .iter()
            .map(|t| {
                format!(
                    "turn {}: {} req, {:.0} prompt tok, TTFT p50 {} ms, ITL mean {} ms, cache hit {:.0}%",
                    t.turn,
                    t.requests,
                    t.mean_prompt_tokens.unwrap_or(0.0),
                    f(t.latency.get("p50_ttft_ms")),
                    f(t.latency.get("mean_itl_ms")),
                    t.cache_hit_rate * 100.0
                )
            })
            .collect();
        lines.push(format!("sessions {stem}: {} sessions\n  {}", sessions.sessions, turns.join("\n  ")));
    }
    if let Some(steady) = &sections.steady_state {
        lines.push(format!(
            "steady {stem}: {:.2}-{:.2} s at {} in flight, {} req ({:.0}% of measured): TTFT p50 {} ms (whole run {}), TPOT p50 {} ms (whole run {})",
            steady.start_s,
            steady.end_s,
            steady.in_flight_level,
            steady.requests,
            steady.share_of_measured * 100.0,
            f(steady.latency.get("p50_ttft_ms")),
            f(summary.ttft.median()),
            f(steady.latency.get("p50_tpot_ms")),
            f(summary.tpot.median()),
        ));
    }
    if let Some(arrivals) = sections.arrivals.as_ref().filter(|a| a.is_lockstep()) {
        lines.push(format!(
            "arrivals {stem}: {:.0}% of requests were sent within {} ms of another (lockstep); figures depend on it",
            arrivals.sent_together_share.unwrap_or(0.0) * 100.0,
            arrivals.together_within_ms.unwrap_or(0.0)
        ));
    }
    lines
}

/// Output tokens per second in each whole second of the run (the measured and ramp-up requests'
/// chunks), as `(mid-second, tokens/s)`, for the GPU telemetry plot.
fn output_rate(records: &[RequestRecord]) -> Vec<(f64, f64)> {
    let mut buckets: std::collections::BTreeMap<i64, f64> = Default::default();
    for chunk in records.iter().filter(|r| r.phase != Phase::Warmup).flat_map(|r| &r.chunks) {
        *buckets.entry(chunk.t_s.floor() as i64).or_default() += chunk.tokens as f64;
    }
    buckets.into_iter().map(|(s, tokens)| (s as f64 + 0.5, tokens)).collect()
}

/// One console line of a point's GPU telemetry averages (the first GPU's).
fn gpu_line(stem: &str, section: &GpuTelemetry) -> String {
    let gpu = section.gpus.first().cloned().unwrap_or_default();
    let figure = |value: Option<f64>, label: &str, scale: f64, unit: &str| {
        value.map(|v| format!("{label} {:.1}{unit}", v / scale))
    };
    let parts: Vec<String> = [
        figure(gpu.mean_power_w, "power", 1.0, " W"),
        figure(gpu.mean_gpu_util_pct, "compute", 1.0, "%"),
        figure(gpu.mean_mem_util_pct, "memory bandwidth", 1.0, "%"),
        figure(gpu.mean_memory_used_bytes, "memory", f64::from(1u32 << 30), " GiB"),
        figure(gpu.mean_sm_clock_mhz, "SM clock", 1.0, " MHz"),
        figure(gpu.mean_temperature_c, "temperature", 1.0, " C"),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!(
        "gpu {stem} ({}, mean over the point): {}",
        section.source,
        if parts.is_empty() { "no samples".into() } else { parts.join(", ") }
    )
}

/// One console line for a point's `length_distribution` section.
fn length_line(stem: &str, section: &LengthSection) -> String {
    let part = |name: &str| -> Option<String> {
        let s = section.get(name)?;
        let d = &s.drawn;
        Some(format!("{name} {} drew mean {:.1} sd {:.1} over {}..={}", s.describe, d.mean?, d.std?, d.min?, d.max?))
    };
    let parts: Vec<String> = ["input", "output"].iter().filter_map(|n| part(n)).collect();
    format!("lengths {stem}: {}", parts.join("; "))
}

/// One console line for a point's `lora` section.
fn lora_console_line(stem: &str, section: &LoraSection) -> String {
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |x| format!("{x:.1}"));
    let cache = |pick: fn(&CacheCounts) -> u64| {
        section.device_cache.as_ref().map_or_else(|| "null".to_string(), |c| pick(&c.counters).to_string())
    };
    let (weights, by_id) = (&section.sent_with_weights, &section.sent_by_task_id);
    format!(
        "lora {stem}: {} adapters used; TTFT mean {} ms with weights ({} req), {} ms by id ({} req); device cache hits {} misses {} evictions {}",
        section.adapters_used,
        ms(weights.mean_ttft_ms),
        weights.requests,
        ms(by_id.mean_ttft_ms),
        by_id.requests,
        cache(|c| c.hits),
        cache(|c| c.misses),
        cache(|c| c.evictions),
    )
}
