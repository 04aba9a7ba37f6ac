//! `trtllm plan --gpus N`: aggregated workers against disaggregated prefill and decode pools on a
//! GPU budget, and the recommended deployment's commands.

use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use trtllm::bench::budget::{
    Budget, BudgetReport, Confirmation, Deployment, KvLinkChoice, plan_budget, write_budget_report,
};
use trtllm::bench::search::{ResultStore, SearchSpace, Study};
use trtllm::sim::GpuPreset;

use super::Args;

/// Plans a budget of `gpus` GPUs for `study` over `space`'s knobs and prints the verdict.
pub(super) async fn run(args: &Args, space: &SearchSpace, study: &Study, gpus: usize) -> anyhow::Result<ExitCode> {
    let link = match args.kv_link {
        Some(preset) => KvLinkChoice::new(preset),
        None => KvLinkChoice::default_for(GpuPreset::by_id(&args.gpu)?),
    };
    let budget = Budget { gpus, link, confirm: !args.estimate_only, confirm_limit: args.confirm_limit };
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        eprintln!(
            "budget of {gpus} {} GPUs for {}: aggregated workers against prefill and decode pools over {}; SLOs {}",
            args.gpu, args.model, link.preset, study.slos
        );
        ProgressBar::new_spinner().with_style(ProgressStyle::with_template("{spinner} {elapsed} {msg}")?)
    };
    bar.set_message("estimating every deployment, then confirming the best of each architecture on the virtual clock");
    let outcome = plan_budget(space, study, &args.output_dir, &budget, |d, c, resumed| {
        bar.set_message(format!(
            "confirmed {} at {} users{}",
            d.label,
            c.users,
            if resumed { " (resumed)" } else { "" }
        ));
    })
    .await?;
    bar.finish_and_clear();
    let engine_dir = args.engine_dir.clone().unwrap_or_else(|| args.output_dir.join("engine"));
    let report = BudgetReport::new(space, study, &budget, &outcome, &engine_dir.to_string_lossy());
    let store = ResultStore::open(&args.output_dir)?;
    let (summary, svg) = write_budget_report(&store, &report)?;
    print!("{}", render(&report));
    println!("wrote {} and {}", summary.display(), svg.display());
    Ok(if report.recommendation.is_some() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The console report: the deployments, the verdict, the recommendation and its commands.
fn render(report: &BudgetReport) -> String {
    let c = &report.configurations;
    let mut out = format!(
        "{} configurations resolved ({} cannot run), {} deployments estimated in {:.1} s; {} confirming runs on the virtual clock ({} resumed); {:.1} s wall\n\n",
        c["resolved"],
        c["pruned"],
        c["deployments_estimated"],
        report.estimate_s,
        c["confirming_runs"],
        c["confirmations_resumed"],
        report.wall_s
    );
    out += &format!(
        "{:<14} {:>4} {:>8} {:>10} {:>10} {:>8}  deployment (estimates: best of each architecture and TP, best first)\n",
        "architecture", "GPUs", "req/s", "tok/s/GPU", "tok/s/user", "TTFT ms"
    );
    for d in &report.deployments {
        out += &format!(
            "{:<14} {:>4} {:>8.2} {:>10.1} {:>10.1} {:>8}  {}\n",
            d.architecture.name(),
            d.gpus_used,
            d.requests_per_s,
            d.tokens_per_s_per_gpu,
            d.tokens_per_s_per_user,
            d.ttft_ms.map_or("-".into(), |t| format!("{t:.0}")),
            d.label
        );
    }
    out += &format!("\n{}\n", report.verdict);
    match &report.recommendation {
        Some(d) => {
            out += &recommendation(d, report.recommendation_confirmed.as_ref());
            if let (Some(o), Some(c)) = (&report.best_other, &report.best_other_confirmed) {
                out += &format!(
                    "  best {}: {} on {} GPUs: {:.1} output tokens/s per GPU on the virtual clock at {} users (estimate {:.1}, {:.2}x){}\n",
                    o.architecture.name(),
                    o.label,
                    o.gpus_used,
                    c.point.tokens_per_s_per_gpu,
                    c.users,
                    c.estimate_tokens_per_s_per_gpu,
                    c.ratio,
                    if c.point.meets_slos() {
                        String::new()
                    } else {
                        format!(", misses {}", c.point.violations.join(", "))
                    }
                );
            }
            for role in &report.commands {
                let workers = if role.workers == 1 { "1 worker".into() } else { format!("{} workers", role.workers) };
                out += &format!("  {} ({workers}):\n    build: {}\n    serve: {}\n", role.role, role.build, role.serve);
            }
            if let Some(bench) = &report.bench {
                out += &format!("  bench: {bench}\n");
            }
        }
        None => out += "no deployment meets the SLOs: relax --slo or widen the search\n",
    }
    out
}

fn recommendation(d: &Deployment, confirmed: Option<&Confirmation>) -> String {
    let figures = match confirmed {
        Some(c) => format!(
            "{:.1} output tokens/s per GPU ({:.2} requests/s in all) on the virtual clock, all {} workers on one timeline at {} users, {:.1} tokens/s per user; estimate {:.1} ({:.2}x)",
            c.point.tokens_per_s_per_gpu,
            c.point.request_throughput,
            d.workers(),
            c.users,
            c.point.tokens_per_s_per_user,
            c.estimate_tokens_per_s_per_gpu,
            c.ratio
        ),
        None => format!(
            "{:.1} output tokens/s per GPU ({:.2} requests/s in all), {:.1} tokens/s per user, estimated ({})",
            d.tokens_per_s_per_gpu, d.requests_per_s, d.tokens_per_s_per_user, d.source
        ),
    };
    format!("recommended: {} {} on {} of {} GPUs: {figures}\n", d.architecture.name(), d.label, d.gpus_used, d.gpus,)
}
