//! The benchmark: workloads, load shapes, the runner, vLLM-compatible summaries, result files, plots.
//!
//! The runner side:
//!
//! - [`Workload`] says what each request asks for: random prompts of exact lengths (with an
//!   optional shared prefix), or a dataset ([`load_jsonl`], [`load_sharegpt`],
//!   [`tokenize_entries`]); fixed output lengths or natural stopping; streaming or not. Each
//!   point and phase draws its own seeded prompt stream ([`Workload::sampler`]).
//! - [`LoadPlan`] says how requests are offered: closed-loop concurrency, open-loop gamma
//!   arrivals ([`arrival_schedule`]) with an optional cap, or users ramped up over a time and
//!   sustained for a duration.
//! - [`run_point`] drives a [`BenchTarget`] (an executor in process, or a gRPC server) and
//!   records every request; in process it also collects the executor's iteration statistics
//!   as they come ([`IterationCollector`], [`IterationLog`]).
//!
//! The metrics side is pure: the runner stamps each request on one monotonic clock
//! ([`RunClock`]) into a [`RequestRecord`], then calls:
//!
//! - [`Summary::builder`] → [`Summary`]: every `vllm bench serve` result key with the same
//!   meaning (TTFT, TPOT, ITL, E2EL statistics with numpy-style percentiles, throughput over
//!   the measured window, goodput against [`Slos`]), plus per-token ITL, client queue time,
//!   dispatch delay, executor-side (`server`) statistics, the runner's measurement error
//!   ([`Calibration`]) and open-ended sections;
//! - [`ResultFiles`] to write `<stem>.json`, `<stem>.requests.jsonl`/`.csv` and
//!   `<stem>.iters.jsonl`; [`SweepRow`], [`sweep_csv`] and [`console_table`] for sweeps;
//! - [`plot_ttft_vs_inflight_tokens`], [`plot_latency_vs_throughput`] and [`plot_time_series`]
//!   for SVG charts; [`compare`] for `bench compare A.json B.json`.
//!
//! The modules follow the stages, each using only those before it: `traffic` (workloads, datasets,
//! load shapes) and `metrics` (records and the pure computations over them) stand alone;
//! `runner` offers traffic to a target and writes records; `report` builds summaries and files
//! from the metrics; `planning` (virtual-clock runs, predictions) uses the runner, the report
//! and `simulation` (what a simulated engine directory says about its timing).
//!
//! Conventions: times in records are `f64` seconds since the run start; statistics in
//! summaries are milliseconds; warmup requests are recorded but excluded from every statistic;
//! only successful measured requests enter latency statistics.
//!
//! ```rust
//! use trtllm::bench::{console_table, Phase, RequestRecord, RunInfo, Summary, SweepRow};
//!
//! let mut records = Vec::new();
//! for i in 0..8 {
//!     let send = i as f64 * 0.05;
//!     let mut r = RequestRecord::new(i, if i < 2 { Phase::Warmup } else { Phase::Measure }, send);
//!     r.prompt_tokens = 128;
//!     for k in 0..16 {
//!         r.record_chunk(send + 0.02 + k as f64 * 0.01, 1);
//!     }
//!     r.finish(send + 0.17, 16, Some("length".into()));
//!     records.push(r);
//! }
//! let run = RunInfo { max_concurrency: Some(4), ..RunInfo::default() };
//! let summary = Summary::builder(run).build(&records).unwrap();
//! assert_eq!(summary.throughput.completed, 6);
//! assert!((summary.tpot.mean().unwrap() - 10.0).abs() < 1e-6);
//! let table = console_table(&[SweepRow::from_summary(&summary).with_shape(128, 16)]);
//! assert!(table.contains("c=4"));
//! ```

pub mod lora;
mod metrics;
mod observer;
mod planning;
mod report;
mod runner;
mod simulation;
mod telemetry;
mod traffic;

pub use metrics::calibration::{Calibration, itl_errors_s};
pub use metrics::disagg::{DisaggTimes, TtftSplit};
pub use metrics::disagg_summary::{
    DisaggregationSection, PoolWorker, PoolsSection, TokenCheck, TokenMismatch, record_split, split_section,
};
pub use metrics::failures::{FailureBudget, FailureBudgetError, FailureReason, FailureSummary};
pub use metrics::iteration_summary::{Availability, IterFigures, IterSection, KvFigures, KvSection};
pub use metrics::iterations::{IterationCollector, IterationLog, WallAnchor, parse_iteration_timestamp};
pub use metrics::live::{LiveSnapshot, LiveStats};
pub use metrics::load_shape::{
    ArrivalSync, LatencyFigures, OverSaturated, SessionsByTurn, SteadyState, SteadyWindow, TOGETHER_S, TurnFigures,
    arrival_sync, sessions_by_turn,
};
pub use metrics::record::{Phase, RecordedChunk, RequestRecord, RunClock, ServerTimes, UNSUCCESSFUL_FINISH_REASONS};
pub use metrics::repeats::{
    HEADLINE_FIGURES, NoiseVerdict, RepeatFigures, RepeatStats, RepeatsSection, repeats_section, t_quantile_975,
};
pub use metrics::saturation::{BacklogWatch, over_saturated_at};
pub use metrics::slo::Slos;
pub use metrics::slo_set::{
    DEFAULT_SLO_PERCENTILE, MAX_SLO_PERCENTILE, MIN_SLO_PERCENTILE, PercentileSlo, PercentileTable, SloError,
    SloMetric, SloSet, SloVerdict,
};
pub use metrics::speculative::{SpecCounts, SpeculativeSummary};
pub use metrics::stats::{
    DEFAULT_PERCENTILES, Distribution, StatsError, mean, median, parse_percentiles, percentile, percentile_key,
    percentile_label, percentile_nearest_rank, std_dev, validate_percentile,
};
pub use metrics::throughput::{
    Throughput, mean_concurrency, measured_window, peak_concurrency, peak_output_tokens_per_s,
    peak_output_tokens_per_s_by_token,
};
pub use metrics::timer_jitter::TimerJitter;
pub use metrics::timeseries::{MAX_SAMPLES, TimeSample, TimeSeriesError, fill_kv_utilization, time_series};
pub use observer::spawn_observer;
/// The configuration search under SLOs (`trtllm plan`).
pub use planning::budget;
pub use planning::disagg_prediction::DisaggPrediction;
pub use planning::prediction::Prediction;
pub use planning::search;
pub use planning::twin::{TwinError, UNDER_LOAD_FIGURES, under_load_section, write_virtual_twin};
pub use planning::virtual_clock::{
    GRPC_CLIENT_LATENCY, IN_PROCESS_CLIENT_LATENCY, PlanningError, VirtualClockRun, VirtualRunOptions,
    iteration_latencies_ms, run_virtual_point, run_virtual_point_with, to_simulated_time,
};
pub use planning::virtual_engine::VirtualEngine;
pub use report::compare::{
    CompareError, CompareOptions, Comparison, Difference, DifferenceKind, compare, compare_files, compare_with,
    differences,
};
pub use report::engine_section::{DisaggSetup, DisaggWorkerInfo, DraftTargetSetup, EngineSection};
pub use report::html::{HtmlReport, compare_html};
pub use report::layers::{LAYER_CSV_COLUMNS, LayerComparison, LayerFigures, layers_csv};
pub use report::lengths::{AskedDrawn, DrawnLengths, LengthSection, length_section};
pub use report::live::{LIVE_VIEW_HEIGHT, draw_live_view, progress_line};
pub use report::output::{
    OutputError, REQUEST_CSV_COLUMNS, ResultFiles, requests_csv, requests_jsonl, write_sweep_csv,
};
pub use report::plot::{
    PlotError, plot_gpu_telemetry, plot_latency_vs_throughput, plot_time_series, plot_ttft_vs_inflight_tokens,
    write_svg,
};
pub use report::sections::{
    ClockSection, ExecutorSettings, OutputLen, PredictedMeasured, PredictionSection, PromptText, Rate, RunMetadata,
    SummarySections, UnderLoad, WorkloadSection,
};
pub use report::summary::Summary;
pub use report::summary_builder::{SummaryBuilder, SummaryError};
pub use report::summary_sections::{ClockKind, DetailedArrays, FailedRequest, RunInfo, ServerStats};
pub use report::sweep::{SweepRow, console_table, sweep_csv};
pub use report::sweep_points::{LatencyMetric, LatencyThroughputPoint, PressurePoint};
pub use runner::disagg::{DisaggBench, DisaggWorker};
pub use runner::draft_target::DraftTargetBench;
pub use runner::openai::{HttpOptions, OpenAiApi, OpenAiError, OpenAiTarget};
pub use runner::point::{PointRun, run_point, run_point_live};
pub use runner::target::{BenchTarget, GrpcTarget};
pub use simulation::{EngineSimulation, SimulationError};
pub use telemetry::{
    CounterChange, EndpointFigures, EndpointLog, GaugeFigures, Scraped, SeriesKind, ServerMetricsError,
    ServerMetricsSection, ServerMetricsWatch, parse_prometheus, scrape, server_metrics_rows, server_metrics_section,
};
pub use telemetry::{
    GpuFigures, GpuSample, GpuTelemetry, NvmlSource, SimulatedSource, TelemetryError, TelemetrySampler,
    TelemetrySource, telemetry_line, telemetry_section,
};
pub use traffic::dataset::{
    DatasetEntry, DatasetError, PromptInput, TokenizeOptions, load_jsonl, load_sharegpt, load_sharegpt_sessions,
    tokenize_entries, tokenize_sessions,
};
pub use traffic::lengths::{LengthDistribution, LengthError, LengthShape, LengthSpread};
pub use traffic::load::{ArrivalProcess, Load, LoadError, LoadPlan, UserStart, arrival_schedule, ramp_start_s};
pub use traffic::session::{
    Answer, Session, SessionError, SessionPlan, SessionScript, SessionTurn, TurnPrompt, UserMessage,
};
pub use traffic::trace::{MOONCAKE_BLOCK_SIZE, Trace, TraceError, TraceOptions, TraceRecord, TraceReplay};
pub use traffic::words::WordVocabulary;
pub use traffic::workload::{PromptSampler, PromptSource, RequestSpec, SampledPrompt, Workload, WorkloadPhase};
