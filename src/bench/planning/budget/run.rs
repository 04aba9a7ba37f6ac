//! Running a budget plan: every candidate's engine resolved once, each role's workers estimated
//! from the timing model, the deployments ranked, and the best of each architecture confirmed on
//! the virtual clock (each confirming run stored, so that a re-run resumes).

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use super::super::search::{Candidate, Pruned, SchedulerChoice, SearchSpace, SloMetric, Study};
use super::aggregated::AggregatedWorker;
use super::confirm::{ConfirmStore, Confirmation, confirm};
use super::cosim::CoSimError;
use super::deploy::{Architecture, Deployment, best_deployments};
use super::estimate::{DecodeWorker, KvLinkChoice, PrefillWorker, WorkerModel};

/// The budget and the link between the pools.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    /// GPUs in all.
    pub gpus: usize,
    /// The link a prompt's KV cache crosses from a prefill worker to a decode worker.
    pub link: KvLinkChoice,
    /// Run the best deployment of each architecture on the virtual clock (all its workers on one
    /// timeline) and recommend by those runs' goodput.
    pub confirm: bool,
    /// Wall-clock time one confirming run may take.
    pub confirm_limit: Duration,
}

/// Errors of a budget plan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// The GPU preset is unknown, or an engine could not be described.
    #[error(transparent)]
    Sim(#[from] crate::sim::SimError),
    /// The results directory could not be used.
    #[error(transparent)]
    Store(#[from] super::super::search::ResultStoreError),
    /// A confirming run failed.
    #[error("confirming a deployment on the virtual clock: {0}")]
    Confirm(super::cosim::CoSimError),
    /// A confirming run passed its wall-clock limit.
    #[error(
        "confirming {deployment} on the virtual clock took too long: {source}; raise --confirm-limit, \
         or pass --estimate-only to print the estimates without confirming them"
    )]
    ConfirmTimeLimit {
        /// The deployment's label.
        deployment: String,
        /// The run's error.
        source: super::cosim::CoSimError,
    },
    /// No GPUs.
    #[error("a budget needs at least one GPU")]
    NoGpus,
    /// No tensor-parallel size fits the budget.
    #[error("no tensor-parallel size of the search ({0}) fits a budget of {1} GPUs")]
    NoTensorParallelFits(String, usize),
    /// Disaggregation is planned against TTFT: without a TTFT objective there is nothing to
    /// trade the transfer against.
    #[error("planning a budget needs a TTFT objective in --slo (e.g. ttft:p95:1000)")]
    NoTtftObjective,
}

/// What a budget plan did.
#[derive(Debug, Clone)]
pub struct BudgetOutcome {
    /// Each aggregated configuration's worker at its best estimated load (those meeting the SLOs).
    pub aggregated: Vec<AggregatedWorker>,
    /// Each prefill configuration's worker (empty when the budget cannot be split).
    pub prefill: Vec<PrefillWorker>,
    /// Each decode configuration's worker within the TPOT objective.
    pub decode: Vec<DecodeWorker>,
    /// Configurations resolved (every role's, each once).
    pub configurations: usize,
    /// Configurations that cannot run, with the reason.
    pub pruned: Vec<Pruned>,
    /// Deployments estimated.
    pub estimated: usize,
    /// The best deployment of each architecture and TP, best estimate first.
    pub deployments: Vec<Deployment>,
    /// The best deployment of each architecture run on the virtual clock, best confirmed goodput
    /// first (empty without [`Budget::confirm`]).
    pub confirmed: Vec<(Deployment, Confirmation)>,
    /// Of the confirming runs, those read back from the results directory.
    pub resumed: usize,
    /// Wall-clock seconds of the estimates (resolving, pricing, ranking).
    pub estimate_s: f64,
    /// Wall-clock seconds of the whole plan.
    pub wall_s: f64,
}

impl BudgetOutcome {
    /// The recommended deployment: the best confirmed one meeting the SLOs on the virtual clock,
    /// or, unconfirmed, the best estimate.
    pub fn recommendation(&self) -> Option<&Deployment> {
        if self.confirmed.is_empty() {
            return self.deployments.first();
        }
        self.confirmed.iter().find(|(_, c)| c.goodput_tokens_per_s_per_gpu() > 0.0).map(|(d, _)| d)
    }

    /// The best deployment of the architecture the recommendation is not.
    pub fn best_other(&self) -> Option<&Deployment> {
        let first = self.recommendation()?;
        self.deployments.iter().find(|d| d.architecture != first.architecture)
    }

    /// The virtual-clock run of `deployment`, if it was confirmed.
    pub fn confirmation(&self, deployment: &Deployment) -> Option<&Confirmation> {
        self.confirmed.iter().find(|(d, _)| d == deployment).map(|(_, c)| c)
    }
}

/// The prefill workers' search space: `space`'s TPs that leave room for a decode worker of the same
/// TP, one batch cap (the largest: prompts queue on the TTFT objective long before it binds), the
/// first scheduler policy, every token budget and chunking setting.
pub fn prefill_space(space: &SearchSpace, gpus: usize) -> SearchSpace {
    SearchSpace {
        tp: space.tp.iter().copied().filter(|&tp| 2 * tp <= gpus).collect(),
        max_batch_size: space.max_batch_size.iter().copied().max().into_iter().collect(),
        scheduler: space.scheduler.first().copied().into_iter().collect(),
        ..space.clone()
    }
}

/// The decode workers' space: `space`'s TPs that leave room for a prefill worker, decode-only
/// runtime settings (chunking and block reuse change nothing without prompts to prefill).
fn decode_space(space: &SearchSpace, gpus: usize) -> SearchSpace {
    SearchSpace {
        tp: space.tp.iter().copied().filter(|&tp| 2 * tp <= gpus).collect(),
        block_reuse: vec![false],
        chunked_context: vec![true],
        scheduler: vec![SchedulerChoice::GuaranteedNoEvict],
        ..space.clone()
    }
}

/// Each configuration resolved, by key; each role's keys; those that cannot run.
type Resolved = (BTreeMap<String, WorkerModel>, Vec<Vec<String>>, Vec<Pruned>);

/// Every candidate of `spaces` resolved once (a configuration several roles share is described
/// once), by key; those that cannot run are returned with the reason.
fn resolve(spaces: &[&SearchSpace], study: &Study) -> Result<Resolved, BudgetError> {
    let mut models = BTreeMap::new();
    let mut keys = Vec::new();
    let mut pruned = Vec::new();
    for space in spaces {
        let (candidates, cannot): (Vec<Candidate>, Vec<Pruned>) = space.candidates(&study.shape)?;
        pruned.extend(cannot);
        let mut role = Vec::new();
        for candidate in candidates {
            let key = candidate.key();
            if !models.contains_key(&key) {
                match WorkerModel::new(space, &candidate, &study.shape) {
                    Ok(model) => {
                        models.insert(key.clone(), model);
                    }
                    Err(e) => {
                        pruned.push(Pruned { candidate, reason: e.to_string() });
                        continue;
                    }
                }
            }
            role.push(key);
        }
        keys.push(role);
    }
    Ok((models, keys, pruned))
}

/// The best deployment of each architecture and TP in `all` (best first, as `all` is).
fn best_of_each_tp(all: &[Deployment]) -> Vec<Deployment> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for d in all {
        if !seen.contains(&(d.architecture, d.tp())) {
            seen.push((d.architecture, d.tp()));
            out.push(d.clone());
        }
    }
    out
}

/// Plans `budget` for `study` over `space`'s knobs: every configuration each role can use,
/// resolved once and estimated from the timing model, the deployments ranked, and the best of
/// each architecture confirmed on the virtual clock (each run stored under `root/confirmed`, so a
/// re-run resumes). `progress` sees each confirming run as it finishes (or is resumed).
pub async fn plan_budget(
    space: &SearchSpace,
    study: &Study,
    root: &Path,
    budget: &Budget,
    mut progress: impl FnMut(&Deployment, &Confirmation, bool),
) -> Result<BudgetOutcome, BudgetError> {
    let started = Instant::now();
    if budget.gpus == 0 {
        return Err(BudgetError::NoGpus);
    }
    if !study.slos.objectives().iter().any(|o| o.metric == SloMetric::Ttft) {
        return Err(BudgetError::NoTtftObjective);
    }
    let aggregated_space =
        SearchSpace { tp: space.tp.iter().copied().filter(|&tp| tp <= budget.gpus).collect(), ..space.clone() };
    if aggregated_space.tp.is_empty() {
        let tps: Vec<String> = space.tp.iter().map(ToString::to_string).collect();
        return Err(BudgetError::NoTensorParallelFits(tps.join(","), budget.gpus));
    }
    let (prefill_space, decode_space) = (prefill_space(space, budget.gpus), decode_space(space, budget.gpus));
    let split = !prefill_space.tp.is_empty();
    let spaces: Vec<&SearchSpace> =
        if split { vec![&aggregated_space, &prefill_space, &decode_space] } else { vec![&aggregated_space] };
    let (models, keys, pruned) = resolve(&spaces, study)?;
    let output_len = study.workload.output_len.map_or(study.shape.max_output_len, |n| n as usize);
    let role = |i: usize| keys.get(i).into_iter().flatten().filter_map(|k| models.get(k));
    let aggregated: Vec<AggregatedWorker> =
        role(0).filter_map(|m| AggregatedWorker::estimate(m, &study.shape, output_len, &study.slos)).collect();
    let prefill: Vec<PrefillWorker> = role(1).filter_map(|m| PrefillWorker::estimate(m, &study.shape)).collect();
    let step_limit_ms = study.slos.step_limit_ms();
    let decode: Vec<DecodeWorker> =
        role(2).filter_map(|m| DecodeWorker::estimate(m, &study.shape, step_limit_ms, &budget.link)).collect();
    let all = best_deployments(budget.gpus, output_len, &study.slos, &aggregated, &prefill, &decode);
    let deployments = best_of_each_tp(&all);
    let estimate_s = started.elapsed().as_secs_f64();
    let mut confirmed = Vec::new();
    let mut resumed = 0;
    if budget.confirm {
        let store = ConfirmStore::open(root.join("confirmed"), study, space, budget.gpus, &budget.link)?;
        // The best of each architecture: the estimate's choice and the best of the other.
        for architecture in [Architecture::Aggregated, Architecture::Disaggregated] {
            let Some(d) = deployments.iter().find(|d| d.architecture == architecture) else { continue };
            let models = |c: &Candidate| models.get(&c.key());
            let (c, was_resumed) =
                confirm(&models, study, &budget.link, d, &store, budget.confirm_limit).await.map_err(|e| match e {
                    e @ CoSimError::TimeLimit { .. } => {
                        BudgetError::ConfirmTimeLimit { deployment: d.label.clone(), source: e }
                    }
                    e => BudgetError::Confirm(e),
                })?;
            resumed += usize::from(was_resumed);
            progress(d, &c, was_resumed);
            confirmed.push((d.clone(), c));
        }
        confirmed.sort_by(|a, b| b.1.goodput_tokens_per_s_per_gpu().total_cmp(&a.1.goodput_tokens_per_s_per_gpu()));
    }
    Ok(BudgetOutcome {
        aggregated,
        prefill,
        decode,
        configurations: models.len(),
        pruned,
        estimated: all.len(),
        deployments,
        confirmed,
        resumed,
        estimate_s,
        wall_s: started.elapsed().as_secs_f64(),
    })
}
