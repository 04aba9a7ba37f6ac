//! Running the search: each configuration's engine built into the results directory, its load
//! points run on the virtual clock from the lowest load up until one misses an SLO, and every
//! finished configuration stored so that a re-run skips it.

use std::path::Path;
use std::time::Instant;

use futures::StreamExt;
use serde::Serialize;

use super::result::{ConfigResult, PointResult, ResultStore, ResultStoreError};
use super::slo::SloSet;
use super::space::{Candidate, Pruned, RuntimeKnobs, SearchSpace, WorkloadShape};
use crate::ExecutorConfig;
use crate::bench::planning::virtual_clock::{VirtualRunOptions, run_virtual_point_with};
use crate::bench::{Load, LoadPlan, RequestRecord, Workload};

/// What one load point's run gave back.
struct PointRun {
    /// The records, in simulated time.
    records: Vec<RequestRecord>,
    /// Wall seconds.
    wall_s: f64,
    /// Iteration statistics lost to the collector or missing from the log (0 on the virtual
    /// clock, which waits for the reader).
    lost_statistics: u64,
}

/// The one call into the virtual-clock runner: `plan` on the engine in `engine_dir` with the
/// executor started with `runtime` (passed as its settings).
async fn run_point(
    engine_dir: &Path,
    workload: &Workload,
    point: u64,
    plan: &LoadPlan,
    runtime: RuntimeKnobs,
) -> Result<PointRun, crate::bench::PlanningError> {
    let options = VirtualRunOptions { executor: Some(runtime.apply(ExecutorConfig::default())), ..Default::default() };
    let (run, clock) = run_virtual_point_with(engine_dir, workload, point, plan, &options, |_| {}).await?;
    let lost_statistics = run.iterations.as_ref().map_or(0, |log| log.lagged + log.missing_iterations());
    Ok(PointRun { records: run.records, wall_s: clock.wall_s, lost_statistics })
}

/// One value of the load axis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadStep {
    /// Closed loop with this many users.
    Concurrency(usize),
    /// Open loop at this many requests per second.
    Rate(f64),
}

impl LoadStep {
    /// `c16` or `r2.5`.
    pub fn name(&self) -> String {
        match self {
            LoadStep::Concurrency(c) => format!("c{c}"),
            LoadStep::Rate(r) => format!("r{r}"),
        }
    }
}

/// What every configuration is measured on.
#[derive(Debug, Clone)]
pub struct Study {
    /// The requests.
    pub workload: Workload,
    /// A description of the workload that changes whenever its requests do (lengths, dataset
    /// and its size, seed): part of the study's fingerprint.
    pub workload_id: String,
    /// What one request needs.
    pub shape: WorkloadShape,
    /// The load axis, lowest first.
    pub loads: Vec<LoadStep>,
    /// Measured requests per point at least (a closed-loop point runs at least twice its
    /// concurrency, after as many warmup requests as users).
    pub min_prompts: usize,
    /// Gamma shape of open-loop arrivals.
    pub burstiness: f64,
    /// The objectives.
    pub slos: SloSet,
}

impl Study {
    /// The fingerprint stored with every result: results of another study are not reused.
    pub fn fingerprint(&self, space: &SearchSpace) -> serde_json::Value {
        serde_json::json!({
            "model": space.model,
            "gpu": space.gpu,
            "gpu_overrides": space.gpu_overrides,
            "workload": self.workload_id,
            "loads": self.loads,
            "min_prompts": self.min_prompts,
            "burstiness": self.burstiness,
            "slos": self.slos.to_string(),
        })
    }

    fn plan(&self, step: LoadStep) -> LoadPlan {
        match step {
            LoadStep::Concurrency(c) => LoadPlan { warmup: c, ..LoadPlan::closed(c, self.min_prompts.max(2 * c)) },
            LoadStep::Rate(rate) => LoadPlan {
                load: Load::Open { rate, burstiness: self.burstiness, max_concurrency: None },
                ..LoadPlan::closed(1, self.min_prompts)
            },
        }
    }
}

/// Errors that stop the search (a configuration that fails is recorded, not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The model or GPU preset is unknown, or an engine could not be described.
    #[error(transparent)]
    Sim(#[from] crate::sim::SimError),
    /// The results directory could not be used.
    #[error(transparent)]
    Store(#[from] ResultStoreError),
    /// No configuration is left after pruning.
    #[error("every configuration was pruned; the first reason: {0}")]
    NothingToRun(String),
}

/// What the search did.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// One result per configuration run (or resumed), in search order.
    pub results: Vec<ConfigResult>,
    /// Configurations left out, with the reason.
    pub pruned: Vec<Pruned>,
    /// Results taken from the results directory instead of being run.
    pub resumed: usize,
    /// Wall-clock seconds of the whole search.
    pub wall_s: f64,
}

/// Runs every configuration of `space` not already in `store` for this study, `jobs` at a time,
/// calling `progress` with each finished (or resumed) result and whether it was resumed.
pub async fn run_search(
    space: &SearchSpace,
    study: &Study,
    store: &ResultStore,
    jobs: usize,
    mut progress: impl FnMut(&ConfigResult, bool),
) -> Result<SearchOutcome, SearchError> {
    let started = Instant::now();
    let (candidates, pruned) = space.candidates(&study.shape)?;
    if candidates.is_empty() {
        let reason = pruned.first().map_or_else(|| "the search space is empty".to_string(), |p| p.reason.clone());
        return Err(SearchError::NothingToRun(reason));
    }
    let fingerprint = study.fingerprint(space);
    let mut results: Vec<Option<ConfigResult>> = vec![None; candidates.len()];
    let mut to_run = Vec::new();
    let mut resumed = 0;
    for (i, candidate) in candidates.iter().enumerate() {
        match store.load(&candidate.key(), &fingerprint) {
            Some(done) => {
                progress(&done, true);
                results[i] = Some(done);
                resumed += 1;
            }
            None => to_run.push((i, *candidate)),
        }
    }
    let runs = futures::stream::iter(to_run)
        .map(|(i, candidate)| {
            let fingerprint = fingerprint.clone();
            async move { (i, run_config(space, study, store.root(), candidate, fingerprint).await) }
        })
        .buffer_unordered(jobs.max(1));
    futures::pin_mut!(runs);
    while let Some((i, result)) = runs.next().await {
        store.save(&result)?;
        progress(&result, false);
        results[i] = Some(result);
    }
    Ok(SearchOutcome {
        results: results.into_iter().flatten().collect(),
        pruned,
        resumed,
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// One configuration: its engine in a temporary directory under `root`, then its load points
/// from the lowest up, stopping at the first that misses an SLO (higher loads only add delay)
/// and skipping closed-loop loads above the engine's max_batch_size (they only queue).
async fn run_config(
    space: &SearchSpace,
    study: &Study,
    root: &Path,
    candidate: Candidate,
    fingerprint: serde_json::Value,
) -> ConfigResult {
    let started = Instant::now();
    let mut result = ConfigResult {
        key: candidate.key(),
        study: fingerprint,
        candidate,
        points: Vec::new(),
        error: None,
        wall_s: 0.0,
    };
    let dir = match build_engine(space, study, root, &candidate) {
        Ok(dir) => dir,
        Err(e) => {
            result.error = Some(e);
            return result;
        }
    };
    for (index, &step) in study.loads.iter().enumerate() {
        if let LoadStep::Concurrency(c) = step
            && c > candidate.engine.max_batch_size
            && index > 0
        {
            break;
        }
        match run_point(dir.path(), &study.workload, index as u64, &study.plan(step), candidate.runtime).await {
            Ok(PointRun { records, wall_s, lost_statistics }) => {
                let point = PointResult::from_records(step.name(), &records, candidate.gpus(), &study.slos);
                let met = point.meets_slos();
                if let Some(error) = records.iter().filter(|r| r.is_measured()).find_map(|r| r.error.as_deref()) {
                    result.error = Some(format!("{}: {} requests failed, e.g.: {error}", step.name(), point.failed));
                }
                result.points.push(PointResult { wall_s, lost_statistics, ..point });
                if !met {
                    break;
                }
            }
            Err(e) => {
                result.error = Some(format!("{}: {e}", step.name()));
                break;
            }
        }
    }
    result.wall_s = started.elapsed().as_secs_f64();
    result
}

/// Writes the configuration's virtual-clock engine into a fresh directory under `root`
/// (removed when the returned handle drops).
fn build_engine(
    space: &SearchSpace,
    study: &Study,
    root: &Path,
    candidate: &Candidate,
) -> Result<tempfile::TempDir, String> {
    let engine = space.engine(candidate, &study.shape).map_err(|e| e.to_string())?;
    let dir = tempfile::Builder::new()
        .prefix(&format!("engine-{}-", candidate.key()))
        .tempdir_in(root)
        .map_err(|e| format!("creating an engine directory in {}: {e}", root.display()))?;
    engine.write_to(dir.path()).map_err(|e| format!("writing the engine: {e}"))?;
    Ok(dir)
}
