//! The search's report: the ranking by goodput per GPU, the Pareto front (JSON and SVG), and
//! the recommended configuration with the command lines that build and serve it.

use std::path::PathBuf;

use serde::Serialize;

use super::answer::{ConfigCounts, PrecisionNote, UnexploredConfig, edge_of_search, precision_note, unexplored};
use super::pareto::{FrontPoint, all_points, pareto_front, rank, recommend};
use super::plot::{FrontPlotError, plot_front};
use super::result::ResultStore;
use super::result::ResultStoreError;
use super::run::{SearchOutcome, Study};
use super::slo::PercentileTable;
use super::space::{Candidate, SearchSpace, shell_word};

/// The recommended configuration and how to run it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// [`Candidate::key`].
    pub key: String,
    /// The configuration.
    pub candidate: Candidate,
    /// Its label.
    pub label: String,
    /// The load point its goodput comes from.
    pub load: String,
    /// Goodput per GPU: output tokens/s within the SLOs.
    pub goodput_tokens_per_s_per_gpu: f64,
    /// Goodput per GPU: requests/s within the SLOs.
    pub goodput_requests_per_s_per_gpu: f64,
    /// Decode speed per user at that point, tokens/s.
    pub tokens_per_s_per_user: f64,
    /// The latency percentiles at that point (`p95_ttft_ms` style), the objectives' among them.
    pub percentiles: PercentileTable,
    /// Set when the configuration uses FP8: what it quantizes and the best BF16 configuration.
    pub precision: Option<PrecisionNote>,
    /// Set when the point is the highest load the search could try for the configuration.
    pub edge_of_search: Option<String>,
    /// `trtllm sim build ...` for its engine.
    pub sim_build: String,
    /// `trtllm serve ...` with its runtime knobs.
    pub serve: String,
    /// `trtllm bench ...` that measures it in process: the same runtime settings, workload,
    /// load point and SLOs.
    pub bench: String,
}

impl Recommendation {
    /// The console lines under the recommendation: its latencies against the objectives, the
    /// precision note and the edge-of-search warning when they apply.
    pub fn notes(&self, slos: &super::slo::SloSet) -> Vec<String> {
        let mut lines = vec![format!("at {}: {}", self.load, super::answer::latencies_at(slos, &self.percentiles))];
        if let Some(note) = &self.precision {
            let bf16 = match &note.best_bf16 {
                Some(alt) => format!(
                    "the best BF16 configuration is {} at {}: {:.1} output tokens/s per GPU ({:.0}% of this)",
                    alt.label,
                    alt.load,
                    alt.goodput_tokens_per_s_per_gpu,
                    100.0 * alt.goodput_tokens_per_s_per_gpu / self.goodput_tokens_per_s_per_gpu.max(f64::MIN_POSITIVE)
                ),
                None => "no BF16 configuration met the SLOs".to_string(),
            };
            lines.push(format!(
                "precision: it uses {}, which changes the model's outputs (the simulator does not model that): \
                 check accuracy before serving; {bf16}",
                note.fp8
            ));
        }
        if let Some(warning) = &self.edge_of_search {
            lines.push(format!("warning: {warning}"));
        }
        lines
    }
}

/// One row of the ranking.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankedConfig {
    /// [`Candidate::key`].
    pub key: String,
    /// Its label.
    pub label: String,
    /// Goodput per GPU, output tokens/s (0 when no point meets the SLOs).
    pub goodput_tokens_per_s_per_gpu: f64,
    /// Goodput per GPU, requests/s.
    pub goodput_requests_per_s_per_gpu: f64,
    /// The load point of the goodput.
    pub best_load: Option<String>,
    /// Points run.
    pub points: usize,
    /// What stopped the configuration, if anything failed.
    pub error: Option<String>,
}

/// Everything the report says, as written to `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct SearchReport {
    /// The study's fingerprint (model, GPU, workload, loads, SLOs).
    pub study: serde_json::Value,
    /// How every configuration of the space was accounted for.
    pub counts: ConfigCounts,
    /// Configurations run (or resumed).
    pub configurations: usize,
    /// Of those, taken from earlier runs.
    pub resumed: usize,
    /// Configurations not run: those that cannot run, and those whose steady-state bound could
    /// not reach the best (`bounded`).
    pub pruned: usize,
    /// Of `pruned`, those skipped by their bound.
    pub bounded: usize,
    /// Load points run over all configurations.
    pub points: usize,
    /// Wall-clock seconds of this run.
    pub wall_s: f64,
    /// Iteration statistics lost over every point (0: each point's log covers every iteration).
    pub lost_statistics: u64,
    /// The recommendation, if any configuration met the SLOs.
    pub recommendation: Option<Recommendation>,
    /// The Pareto front of the points within the SLOs.
    pub pareto_front: Vec<FrontPoint>,
    /// Every configuration run at a load that could meet the SLOs, best first.
    pub ranking: Vec<RankedConfig>,
    /// Configurations never run at a load that could meet the SLOs (not ranked).
    pub unexplored: Vec<UnexploredConfig>,
    /// Pruned configurations and why.
    pub pruned_configurations: Vec<super::space::Pruned>,
}

/// Errors writing the report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A file could not be written.
    #[error(transparent)]
    Store(#[from] ResultStoreError),
    /// The chart could not be drawn.
    #[error(transparent)]
    Plot(#[from] FrontPlotError),
}

/// Builds the report of `outcome`; the recommended engine's directory in the commands is
/// `engine_dir`.
pub fn build_report(space: &SearchSpace, study: &Study, outcome: &SearchOutcome, engine_dir: &str) -> SearchReport {
    let results = &outcome.results;
    let recommendation = recommend(results).and_then(|r| {
        let best = r.best_point()?;
        Some(Recommendation {
            key: r.key.clone(),
            candidate: r.candidate,
            label: r.candidate.label(),
            load: best.load.clone(),
            goodput_tokens_per_s_per_gpu: r.goodput_tokens_per_s_per_gpu(),
            goodput_requests_per_s_per_gpu: r.goodput_requests_per_s_per_gpu(),
            tokens_per_s_per_user: best.tokens_per_s_per_user,
            percentiles: best.percentiles.clone(),
            precision: precision_note(r, results),
            edge_of_search: edge_of_search(&study.loads, space.max_batch_size.iter().copied().max().unwrap_or(0), r),
            sim_build: space.sim_build_command(&r.candidate, &study.shape, engine_dir),
            serve: SearchSpace::serve_command(&r.candidate, engine_dir),
            bench: bench_command(&r.candidate, engine_dir, study, &best.load),
        })
    });
    let unexplored: Vec<UnexploredConfig> = results.iter().filter_map(|r| unexplored(r, &study.loads)).collect();
    let ranking = rank(results)
        .into_iter()
        .filter(|r| !unexplored.iter().any(|u| u.key == r.key))
        .map(|r| RankedConfig {
            key: r.key.clone(),
            label: r.candidate.label(),
            goodput_tokens_per_s_per_gpu: r.goodput_tokens_per_s_per_gpu(),
            goodput_requests_per_s_per_gpu: r.goodput_requests_per_s_per_gpu(),
            best_load: r.best_point().map(|p| p.load.clone()),
            points: r.points.len(),
            error: r.error.clone(),
        })
        .collect();
    let counts = ConfigCounts {
        space: results.len() + outcome.pruned.len(),
        pruned_before: outcome.pruned.len() - outcome.bounded,
        bounded: outcome.bounded,
        run: results.len(),
        resumed: outcome.resumed,
    };
    SearchReport {
        study: study.fingerprint(space),
        counts,
        configurations: results.len(),
        resumed: outcome.resumed,
        pruned: outcome.pruned.len(),
        bounded: outcome.bounded,
        points: results.iter().map(|r| r.points.len()).sum(),
        wall_s: outcome.wall_s,
        lost_statistics: results.iter().flat_map(|r| &r.points).map(|p| p.lost_statistics).sum(),
        recommendation,
        pareto_front: pareto_front(&all_points(results)),
        ranking,
        unexplored,
        pruned_configurations: outcome.pruned.clone(),
    }
}

/// Writes `summary.json` and `pareto.svg` into the results directory; returns their paths.
pub fn write_report(
    store: &ResultStore,
    report: &SearchReport,
    outcome: &SearchOutcome,
) -> Result<(PathBuf, PathBuf), ReportError> {
    let points = all_points(&outcome.results);
    let recommended = report
        .recommendation
        .as_ref()
        .and_then(|rec| report.pareto_front.iter().chain(&points).find(|p| p.key == rec.key && p.load == rec.load));
    let svg = plot_front(&points, &report.pareto_front, recommended)?;
    Ok(write_summary(store, report, &svg)?)
}

/// Writes `report` as `summary.json` and `svg` as `pareto.svg` into `store`'s directory; returns
/// their paths.
pub(crate) fn write_summary(
    store: &ResultStore,
    report: &impl Serialize,
    svg: &str,
) -> Result<(PathBuf, PathBuf), ResultStoreError> {
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf, ResultStoreError> {
        let path = store.root().join(name);
        std::fs::write(&path, bytes).map_err(|source| ResultStoreError::Io { path: path.clone(), source })?;
        Ok(path)
    };
    let json = serde_json::to_vec_pretty(report)
        .map_err(|source| ResultStoreError::Json { path: store.root().join("summary.json"), source })?;
    Ok((write("summary.json", &json)?, write("pareto.svg", svg.as_bytes())?))
}

/// The `trtllm bench` line that measures `candidate` in process at `load` (`c16` or
/// `r2.5`) on `study`'s workload, with the same runtime settings as its serve line and the
/// SLOs as goodput limits.
pub(crate) fn bench_command(candidate: &Candidate, engine_dir: &str, study: &Study, load: &str) -> String {
    let mut cmd = format!("trtllm bench --engine-dir {}{}", shell_word(engine_dir), candidate.runtime.flags());
    match &study.workload.source {
        crate::bench::PromptSource::Random { input_len, shared_prefix, .. } => {
            cmd += &format!(" --input-len {input_len}");
            if *shared_prefix > 0 {
                cmd += &format!(" --shared-prefix {shared_prefix}");
            }
        }
        _ => cmd += &format!(" --input-len {}", study.shape.max_input_len),
    }
    cmd += &format!(" --output-len {}", study.workload.output_len.map_or(study.shape.max_output_len, |n| n as usize));
    if let Some(c) = load.strip_prefix('c') {
        cmd += &format!(" --concurrency {c}");
    } else if let Some(r) = load.strip_prefix('r') {
        cmd += &format!(" --request-rate {r} --burstiness {}", study.burstiness);
    }
    // The same objectives: bench reads `--slo` in the same grammar.
    cmd += &format!(" --slo {}", study.slos);
    cmd += &format!(" --seed {} --repeats 3", study.workload.seed);
    cmd
}
