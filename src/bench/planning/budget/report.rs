//! The budget plan's report: the verdict between the architectures, the recommended deployment
//! with each worker role's build and serve commands and the bench command that measures the whole,
//! and `summary.json` and `pareto.svg` carrying both architectures, marked.

use std::path::PathBuf;

use serde::Serialize;

use super::super::search::Candidate;
use super::super::search::{ResultStore, ResultStoreError, SearchSpace, Study, bench_command, write_summary};
use super::confirm::Confirmation;
use super::deploy::{Architecture, Deployment};
use super::estimate::KvLinkChoice;
use super::plot::{BudgetPoint, plot_budget};
use super::run::{Budget, BudgetOutcome};

/// How to run one worker role.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleCommands {
    /// `aggregated`, `prefill` or `decode`.
    pub role: &'static str,
    /// Workers of this role.
    pub workers: usize,
    /// `trtllm sim build ...` of its engine.
    pub build: String,
    /// `trtllm serve ...` of each worker.
    pub serve: String,
}

/// The report, as written to `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct BudgetReport {
    /// The study's fingerprint (model, GPU, workload, loads, SLOs).
    pub study: serde_json::Value,
    /// GPUs in the budget.
    pub gpus: usize,
    /// The link between the pools.
    pub link: KvLinkChoice,
    /// Wall-clock seconds of this run.
    pub wall_s: f64,
    /// What was estimated: configurations resolved and pruned, each role's workers, deployments;
    /// and the confirming runs read back from an earlier run.
    pub configurations: serde_json::Value,
    /// Wall-clock seconds of the estimates (the rest went to the confirming runs).
    pub estimate_s: f64,
    /// The best deployment.
    pub recommendation: Option<Deployment>,
    /// Its virtual-clock run (all its workers on one timeline), when confirmed: the goodput
    /// printed is this run's.
    pub recommendation_confirmed: Option<Confirmation>,
    /// The best deployment of the other architecture.
    pub best_other: Option<Deployment>,
    /// Its virtual-clock run, when confirmed.
    pub best_other_confirmed: Option<Confirmation>,
    /// One line: which architecture wins and by how much.
    pub verdict: String,
    /// How to run the recommendation: each role's build and serve commands.
    pub commands: Vec<RoleCommands>,
    /// The bench command that measures the recommendation.
    pub bench: Option<String>,
    /// The best deployment of each architecture and TP, best first.
    pub deployments: Vec<Deployment>,
    /// Every point of the chart, marked by architecture.
    pub points: Vec<BudgetPoint>,
}

impl BudgetReport {
    /// The report of `outcome`; engines in the commands go to `engine_dir` (aggregated) or
    /// `engine_dir-prefill` and `engine_dir-decode`.
    pub fn new(space: &SearchSpace, study: &Study, budget: &Budget, outcome: &BudgetOutcome, engine_dir: &str) -> Self {
        let recommendation = outcome.recommendation().cloned();
        let best_other = outcome.best_other().cloned();
        let confirmed = |d: &Option<Deployment>| d.as_ref().and_then(|d| outcome.confirmation(d)).cloned();
        let (recommendation_confirmed, best_other_confirmed) = (confirmed(&recommendation), confirmed(&best_other));
        let goodput = |d: &Option<Deployment>, c: &Option<Confirmation>| {
            d.as_ref().map(|d| {
                (d.architecture, c.as_ref().map_or(d.tokens_per_s_per_gpu, |c| c.goodput_tokens_per_s_per_gpu()))
            })
        };
        let verdict = verdict(
            goodput(&recommendation, &recommendation_confirmed),
            goodput(&best_other, &best_other_confirmed),
            recommendation_confirmed.is_some(),
            budget.gpus,
        );
        let (commands, bench) = match &recommendation {
            Some(d) => deployment_commands(space, study, budget, d, engine_dir),
            None => (Vec::new(), None),
        };
        let mut points: Vec<BudgetPoint> = outcome.deployments.iter().map(BudgetPoint::deployment).collect();
        points.extend(outcome.confirmed.iter().map(|(d, c)| BudgetPoint::confirmed(d, c)));
        BudgetReport {
            study: study.fingerprint(space),
            gpus: budget.gpus,
            link: budget.link,
            wall_s: outcome.wall_s,
            configurations: serde_json::json!({
                "resolved": outcome.configurations,
                "pruned": outcome.pruned.len(),
                "aggregated_estimated": outcome.aggregated.len(),
                "prefill_estimated": outcome.prefill.len(),
                "decode_estimated": outcome.decode.len(),
                "deployments_estimated": outcome.estimated,
                "confirming_runs": outcome.confirmed.iter().map(|(_, c)| c.tries).sum::<usize>(),
                "confirmations_resumed": outcome.resumed,
            }),
            estimate_s: outcome.estimate_s,
            recommendation,
            recommendation_confirmed,
            best_other,
            best_other_confirmed,
            verdict,
            commands,
            bench,
            deployments: outcome.deployments.clone(),
            points,
        }
    }
}

/// Which architecture wins, by how much (goodput per GPU, confirmed on the virtual clock when
/// `confirmed`).
fn verdict(
    best: Option<(Architecture, f64)>,
    other: Option<(Architecture, f64)>,
    confirmed: bool,
    gpus: usize,
) -> String {
    let how = if confirmed { "on the virtual clock" } else { "estimated" };
    match (best, other) {
        (None, _) => "no deployment meets the SLOs".into(),
        (Some((b, _)), None) if gpus < 2 => {
            format!("{}: a budget of {gpus} GPU cannot be split into prefill and decode workers", b.name())
        }
        (Some((b, _)), None) => format!("{}: no deployment of the other architecture meets the SLOs", b.name()),
        (Some((b, g)), Some((o, h))) if h <= 0.0 => {
            format!(
                "{} wins: {g:.1} output tokens/s per GPU {how}; the best {} misses the SLOs there",
                b.name(),
                o.name()
            )
        }
        (Some((b, g)), Some((o, h))) => format!(
            "{} wins: {g:.1} against {h:.1} output tokens/s per GPU {how} ({:+.0}% over the {})",
            b.name(),
            (g / h - 1.0) * 100.0,
            o.name()
        ),
    }
}

/// Each role's build and serve commands of `deployment`, and the bench command of the whole.
fn deployment_commands(
    space: &SearchSpace,
    study: &Study,
    budget: &Budget,
    deployment: &Deployment,
    engine_dir: &str,
) -> (Vec<RoleCommands>, Option<String>) {
    let shape = &study.shape;
    if let Some(agg) = &deployment.aggregated {
        let c = &agg.worker.candidate;
        let role = RoleCommands {
            role: "aggregated",
            workers: agg.workers,
            build: space.sim_build_command(c, shape, engine_dir),
            serve: SearchSpace::serve_command(c, engine_dir),
        };
        // One worker at its load: every worker sees the same under a router that balances them.
        return (vec![role], Some(bench_command(c, engine_dir, study, &format!("c{}", agg.worker.users))));
    }
    let (Some(prefill), Some(decode)) = (&deployment.prefill, &deployment.decode) else { return (Vec::new(), None) };
    let link = format!(" --kv-link {}", budget.link.preset);
    let (prefill_dir, decode_dir) = (format!("{engine_dir}-prefill"), format!("{engine_dir}-decode"));
    let role = |role: &'static str, workers: usize, candidate: &Candidate, dir: &str, disagg_role: &str| RoleCommands {
        role,
        workers,
        build: space.sim_build_command(candidate, shape, dir),
        serve: format!("{} --disagg-role {disagg_role}{link}", SearchSpace::serve_command(candidate, dir)),
    };
    let roles = vec![
        role("prefill", prefill.workers, &prefill.worker.candidate, &prefill_dir, "context"),
        role("decode", decode.workers, &decode.worker.candidate, &decode_dir, "generation"),
    ];
    let rate = format!("r{:.3}", deployment.requests_per_s);
    let mut bench = bench_command(&prefill.worker.candidate, &prefill_dir, study, &rate);
    bench = bench.replacen(
        "trtllm bench",
        &format!(
            "trtllm bench --disagg {}p{}d --decode-engine-dir {}{link}",
            prefill.workers,
            decode.workers,
            super::super::search::shell_word(&decode_dir)
        ),
        1,
    );
    (roles, Some(bench))
}

/// Writes `summary.json` and `pareto.svg` of `report` into `store`'s directory; returns their paths.
pub fn write_budget_report(store: &ResultStore, report: &BudgetReport) -> Result<(PathBuf, PathBuf), ResultStoreError> {
    let svg = plot_budget(&report.points, report.recommendation.as_ref()).unwrap_or_else(|e| {
        format!("<svg xmlns=\"http://www.w3.org/2000/svg\"><text x=\"10\" y=\"20\">{e}</text></svg>")
    });
    write_summary(store, report, &svg)
}
