//! Running the search: candidates in order of their steady-state bound, each configuration's
//! engine built into the results directory, its load points run on the virtual clock from the
//! lowest load up until one misses an SLO or goodput has peaked, every finished configuration
//! stored so that a re-run skips it, and candidates whose bound cannot reach the best skipped.

use std::time::Instant;

use super::bound::{Bound, kth_best};
use super::loads::{LoadStep, Loads};
use super::result::{ConfigResult, PointResult, ResultStore, ResultStoreError};
use super::slo::SloSet;
use super::space::{Candidate, Pruned, RuntimeKnobs, SearchSpace, WorkloadShape};
use crate::ExecutorConfig;
use crate::bench::planning::virtual_clock::{VirtualRunOptions, run_virtual_point_with};
use crate::bench::{Load, LoadPlan, RequestRecord, Workload};
use crate::sim::SimulatedEngine;
use futures::StreamExt;

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

/// The one call into the virtual-clock runner: `plan` on `engine` (held, never written to a directory)
/// with the executor started with `runtime` (passed as its settings).
async fn run_point(
    engine: &SimulatedEngine,
    workload: &Workload,
    point: u64,
    plan: &LoadPlan,
    runtime: RuntimeKnobs,
) -> Result<PointRun, crate::bench::PlanningError> {
    let options = VirtualRunOptions { executor: Some(runtime.apply(ExecutorConfig::default())), ..Default::default() };
    let (run, clock) = run_virtual_point_with(engine, workload, point, plan, &options, |_| {}).await?;
    let lost_statistics = run.iterations.as_ref().map_or(0, |log| log.lagged + log.missing_iterations());
    Ok(PointRun { records: run.records, wall_s: clock.wall_s, lost_statistics })
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
    /// The load axis.
    pub loads: Loads,
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
        let mut fingerprint = serde_json::json!({
            "model": space.model.id,
            "gpu": space.gpu,
            "gpu_overrides": space.gpu_overrides,
            "workload": self.workload_id,
            "loads": self.loads.fingerprint(),
            "min_prompts": self.min_prompts,
            "burstiness": self.burstiness,
            "slos": self.slos.to_string(),
        });
        // A model read from a config is known by its shape too: an edited config is another study.
        if !space.model.is_preset() {
            fingerprint["model_shape"] = serde_json::json!(space.model.shape);
        }
        fingerprint
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

/// How the search runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchOptions {
    /// Configurations run at once (the results do not depend on it).
    pub jobs: usize,
    /// The best configurations the search must get exactly right: a candidate whose [`Bound`]
    /// lies below the goodput of the `exact_top`-th best already run is skipped. 0 runs every
    /// candidate (an exhaustive search).
    pub exact_top: usize,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions { jobs: 1, exact_top: 5 }
    }
}

/// What the search did.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// One result per configuration run (or resumed), in search order.
    pub results: Vec<ConfigResult>,
    /// Configurations left out, with the reason: those that cannot run, then those whose bound
    /// could not reach the best.
    pub pruned: Vec<Pruned>,
    /// Of `pruned`, those skipped by their bound.
    pub bounded: usize,
    /// Results taken from the results directory instead of being run.
    pub resumed: usize,
    /// Wall-clock seconds of the whole search.
    pub wall_s: f64,
}

/// Runs the configurations of `space` not already in `store` for this study, `options.jobs` at a
/// time, highest bound first, skipping those whose bound cannot reach the `options.exact_top`
/// best; calls `progress` with each finished (or resumed) result and whether it was resumed.
pub async fn run_search(
    space: &SearchSpace,
    study: &Study,
    store: &ResultStore,
    options: SearchOptions,
    mut progress: impl FnMut(&ConfigResult, bool),
) -> Result<SearchOutcome, SearchError> {
    let started = Instant::now();
    let (candidates, mut pruned) = space.candidates(&study.shape)?;
    if candidates.is_empty() {
        let reason = pruned.first().map_or_else(|| "the search space is empty".to_string(), |p| p.reason.clone());
        return Err(SearchError::NothingToRun(reason));
    }
    let fingerprint = study.fingerprint(space);
    let max_users = study.loads.max_concurrency();
    let step_limit_ms = study.slos.step_limit_ms();
    let mut bounds = Vec::with_capacity(candidates.len());
    for candidate in &candidates {
        bounds.push(Bound::of(space, candidate, &study.shape, max_users, step_limit_ms)?);
    }
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
    // Highest bound first: the best are found early, and the bar the rest must clear rises fast.
    to_run.sort_by(|a, b| bounds[b.0].tokens_per_s_per_gpu.total_cmp(&bounds[a.0].tokens_per_s_per_gpu));
    let goodputs = std::sync::Mutex::new(
        results.iter().flatten().map(ConfigResult::goodput_tokens_per_s_per_gpu).collect::<Vec<f64>>(),
    );
    let bar = |goodputs: &std::sync::Mutex<Vec<f64>>| {
        kth_best(&goodputs.lock().unwrap_or_else(|e| e.into_inner()), options.exact_top)
    };
    let runs = futures::stream::iter(to_run)
        .map(|(i, candidate)| {
            let fingerprint = fingerprint.clone();
            let (bound, goodputs) = (bounds[i].clone(), &goodputs);
            async move {
                // Decided when the candidate's turn comes, against the results in by then.
                if let Some(bar) = bar(goodputs).filter(|&bar| bound.tokens_per_s_per_gpu < bar) {
                    let reason = format!(
                        "its bound of {:.1} tokens/s per GPU is below the {}th best goodput run, {bar:.1}",
                        bound.tokens_per_s_per_gpu, options.exact_top
                    );
                    return (i, Err(Pruned { candidate, reason }));
                }
                // Loads whose own bound is below the bar cannot give the configuration a goodput
                // among the best either.
                let bar = bar(goodputs);
                let worth = |users: usize| bar.is_none_or(|bar| bound.per_gpu_at(users) >= bar);
                (i, Ok(run_config(space, study, candidate, fingerprint, worth).await))
            }
        })
        .buffer_unordered(options.jobs.max(1));
    futures::pin_mut!(runs);
    let mut bounded = Vec::new();
    while let Some((i, result)) = runs.next().await {
        match result {
            Ok(result) => {
                store.save(&result)?;
                progress(&result, false);
                goodputs.lock().unwrap_or_else(|e| e.into_inner()).push(result.goodput_tokens_per_s_per_gpu());
                results[i] = Some(result);
            }
            Err(skipped) => bounded.push((i, skipped)),
        }
    }
    bounded.sort_by_key(|(i, _)| *i);
    let bounded_count = bounded.len();
    pruned.extend(bounded.into_iter().map(|(_, p)| p));
    let mut results: Vec<ConfigResult> = results.into_iter().flatten().collect();
    if matches!(study.loads, Loads::UntilPeak) {
        explore_front_end(space, study, store, &mut results).await?;
    }
    Ok(SearchOutcome { results, pruned, bounded: bounded_count, resumed, wall_s: started.elapsed().as_secs_f64() })
}

/// One configuration: its engine (held, started without a directory), then its load points
/// as [`Loads::next`] picks them: from the lowest up, stopping at the first that misses an SLO
/// (higher loads only add delay), without closed-loop loads above the engine's max_batch_size
/// (they only queue).
async fn run_config(
    space: &SearchSpace,
    study: &Study,
    candidate: Candidate,
    fingerprint: serde_json::Value,
    worth_running: impl Fn(usize) -> bool + Copy,
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
    let engine = match space.engine(&candidate, &study.shape) {
        Ok(engine) => engine,
        Err(e) => {
            result.error = Some(e.to_string());
            return result;
        }
    };
    while let Some(step) = study.loads.next(&result.points, candidate.engine.max_batch_size, worth_running) {
        // The point's number seeds its requests: a climbed load's is its users, the same
        // whichever loads below it were run.
        let index = match (&study.loads, step) {
            (Loads::UntilPeak, LoadStep::Concurrency(c)) => c as u64,
            _ => result.points.len() as u64,
        };
        match measure(&engine, study, &candidate, step, index).await {
            Ok((point, failure)) => {
                result.error = failure.or(result.error.take());
                result.points.push(point);
            }
            Err(e) => {
                result.error = Some(e);
                break;
            }
        }
    }
    result.wall_s = started.elapsed().as_secs_f64();
    result
}

/// One load point of `candidate` on its `engine`: its figures, and what failed if any request did;
/// `Err` when the point could not run.
async fn measure(
    engine: &SimulatedEngine,
    study: &Study,
    candidate: &Candidate,
    step: LoadStep,
    index: u64,
) -> Result<(PointResult, Option<String>), String> {
    let PointRun { records, wall_s, lost_statistics } =
        run_point(engine, &study.workload, index, &study.plan(step), candidate.runtime)
            .await
            .map_err(|e| format!("{}: {e}", step.name()))?;
    let summarized = Instant::now();
    let point = PointResult::from_records(step.name(), &records, candidate.gpus(), &study.slos);
    tracing::debug!(
        load = %step.name(),
        summarize_s = summarized.elapsed().as_secs_f64(),
        config = %candidate.label(),
        "point summarized"
    );
    let failure = records
        .iter()
        .filter(|r| r.is_measured())
        .find_map(|r| r.error.as_deref())
        .map(|error| format!("{}: {} requests failed, e.g.: {error}", step.name(), point.failed));
    Ok((PointResult { wall_s, lost_statistics, ..point }, failure))
}

/// The low-latency end of the Pareto front: one user on each parallelism (TP and EP). A climb
/// the bound started above one user leaves it out, so the best configuration of each
/// parallelism without a one-user point runs one (first among its points), and is stored again.
async fn explore_front_end(
    space: &SearchSpace,
    study: &Study,
    store: &ResultStore,
    results: &mut [ConfigResult],
) -> Result<(), SearchError> {
    let one = LoadStep::Concurrency(1);
    let mut parallelisms: Vec<(usize, usize)> =
        results.iter().map(|r| (r.candidate.engine.tp, r.candidate.engine.ep)).collect();
    parallelisms.sort_unstable();
    parallelisms.dedup();
    for parallelism in parallelisms {
        let group = || results.iter().filter(|r| (r.candidate.engine.tp, r.candidate.engine.ep) == parallelism);
        if group().any(|r| r.points.iter().any(|p| p.load == one.name())) {
            continue;
        }
        // The group's best goodput; among equals (none met the SLOs), the first run.
        let Some(best) = group()
            .filter(|r| !r.points.is_empty())
            .reduce(|a, b| if b.goodput_tokens_per_s_per_gpu() > a.goodput_tokens_per_s_per_gpu() { b } else { a })
            .map(|r| r.key.clone())
        else {
            continue;
        };
        let Some(result) = results.iter_mut().find(|r| r.key == best) else { continue };
        let started = Instant::now();
        let candidate = result.candidate;
        let point = match space.engine(&candidate, &study.shape) {
            Ok(engine) => measure(&engine, study, &candidate, one, 1).await,
            Err(e) => Err(e.to_string()),
        };
        match point {
            Ok((point, failure)) => {
                result.points.insert(0, point);
                result.error = result.error.take().or(failure);
            }
            Err(e) => {
                tracing::warn!(config = %candidate.label(), "the one-user point could not run: {e}");
                continue;
            }
        }
        result.wall_s += started.elapsed().as_secs_f64();
        store.save(result)?;
    }
    Ok(())
}
