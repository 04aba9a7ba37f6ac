//! Running a budget plan: the aggregated search, the prefill workers' search, the decode workers'
//! estimates, and the deployments ranked; each search resumable in its own results directory.

use std::path::Path;
use std::time::Instant;

use super::super::search::{
    ConfigResult, ResultStore, SchedulerChoice, SearchError, SearchOptions, SearchOutcome, SearchSpace, SloMetric,
    SloSet, Study, run_search,
};
use super::confirm::{Confirmation, confirm};
use super::deploy::{Deployment, best_deployments};
use super::estimate::{DecodeWorker, KvLinkChoice, decode_workers};

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
}

/// Errors of a budget plan.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// A search failed.
    #[error(transparent)]
    Search(#[from] SearchError),
    /// An engine could not be described.
    #[error(transparent)]
    Sim(#[from] crate::sim::SimError),
    /// The results directory could not be used.
    #[error(transparent)]
    Store(#[from] super::super::search::ResultStoreError),
    /// A confirming run failed.
    #[error("confirming a deployment on the virtual clock: {0}")]
    Confirm(super::cosim::CoSimError),
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
    /// The aggregated workers' search.
    pub aggregated: SearchOutcome,
    /// The prefill workers' search (`None` when the budget cannot be split).
    pub prefill: Option<SearchOutcome>,
    /// The decode workers' estimates.
    pub decode: Vec<DecodeWorker>,
    /// Every deployment's best, best first (by estimate).
    pub deployments: Vec<Deployment>,
    /// The best deployment of each architecture run on the virtual clock, best confirmed goodput
    /// first (empty without [`Budget::confirm`]).
    pub confirmed: Vec<(Deployment, Confirmation)>,
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

/// The prefill workers' study: `study`'s prompts with one output token each (a context-only
/// request ends with its first token), under `study`'s TTFT objectives alone.
pub fn prefill_study(study: &Study) -> Result<Study, BudgetError> {
    let ttft: Vec<String> =
        study.slos.objectives().iter().filter(|o| o.metric == SloMetric::Ttft).map(ToString::to_string).collect();
    if ttft.is_empty() {
        return Err(BudgetError::NoTtftObjective);
    }
    let slos = SloSet::parse(&ttft.join(",")).map_err(|_| BudgetError::NoTtftObjective)?;
    let mut prefill = study.clone();
    prefill.workload.output_len = Some(1);
    prefill.workload.fallback_output_len = 1;
    prefill.shape.max_output_len = 1;
    prefill.workload_id = format!("{} context-only", study.workload_id);
    prefill.slos = slos;
    Ok(prefill)
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

/// Plans `budget` for `study` over `space`'s knobs: the aggregated search in `root/aggregated`,
/// the prefill search in `root/prefill` (both resumable), the decode estimates, and the
/// deployments ranked. `progress` sees each configuration as it finishes (or is resumed), with its
/// role (`aggregated`, `prefill`).
pub async fn plan_budget(
    space: &SearchSpace,
    study: &Study,
    root: &Path,
    budget: &Budget,
    options: SearchOptions,
    mut progress: impl FnMut(&'static str, &ConfigResult, bool),
) -> Result<BudgetOutcome, BudgetError> {
    let started = Instant::now();
    if budget.gpus == 0 {
        return Err(BudgetError::NoGpus);
    }
    let prefill_study = prefill_study(study)?;
    let aggregated_space =
        SearchSpace { tp: space.tp.iter().copied().filter(|&tp| tp <= budget.gpus).collect(), ..space.clone() };
    if aggregated_space.tp.is_empty() {
        let tps: Vec<String> = space.tp.iter().map(ToString::to_string).collect();
        return Err(BudgetError::NoTensorParallelFits(tps.join(","), budget.gpus));
    }
    let store = ResultStore::open(root.join("aggregated"))?;
    let aggregated =
        run_search(&aggregated_space, study, &store, options, |r, resumed| progress("aggregated", r, resumed)).await?;
    let split = prefill_space(space, budget.gpus);
    let (prefill, decode) = if split.tp.is_empty() {
        (None, Vec::new())
    } else {
        let store = ResultStore::open(root.join("prefill"))?;
        let prefill =
            run_search(&split, &prefill_study, &store, options, |r, resumed| progress("prefill", r, resumed)).await?;
        let decode =
            decode_workers(&decode_space(space, budget.gpus), &study.shape, study.slos.step_limit_ms(), &budget.link)?;
        (Some(prefill), decode)
    };
    let output_len = study.workload.output_len.map_or(study.shape.max_output_len, |n| n as usize);
    let deployments = best_deployments(
        budget.gpus,
        output_len,
        &study.slos,
        &aggregated.results,
        prefill.as_ref().map_or(&[][..], |p| &p.results[..]),
        &decode,
    );
    let mut confirmed = Vec::new();
    if budget.confirm {
        // The best of each architecture: the estimate's choice and the best of the other.
        let mut firsts: Vec<&Deployment> = Vec::new();
        for d in &deployments {
            if firsts.iter().all(|f| f.architecture != d.architecture) {
                firsts.push(d);
            }
        }
        for d in firsts {
            let c = confirm(space, study, root, &budget.link, d).await.map_err(BudgetError::Confirm)?;
            confirmed.push((d.clone(), c));
        }
        confirmed.sort_by(|a, b| b.1.goodput_tokens_per_s_per_gpu().total_cmp(&a.1.goodput_tokens_per_s_per_gpu()));
    }
    Ok(BudgetOutcome { aggregated, prefill, decode, deployments, confirmed, wall_s: started.elapsed().as_secs_f64() })
}
