//! The console lines that say how a point went: its failed requests by reason, and with `--slo`
//! its goodput, the share of requests within every limit and each objective's percentile.

use serde_json::Value;
use trtllm::bench::{FailureBudget, FailureSummary, RequestRecord, SloSet};

/// The lines printed after the table for the point `stem`.
pub fn point_lines(
    stem: &str,
    slos: Option<&SloSet>,
    records: &[RequestRecord],
    summary: &Value,
    failures: &FailureSummary,
) -> Vec<String> {
    let mut lines = Vec::new();
    if failures.failed > 0 {
        let mut text = format!("failed {stem}: {} of {} requests, by reason:", failures.failed, failures.measured);
        for reason in failures.reason_lines() {
            text += &format!("\n  {reason}");
        }
        lines.push(text);
    }
    if let Some(slos) = slos {
        let verdict = slos.verdict(records);
        let goodput = match summary["request_goodput"].as_f64() {
            Some(g) => format!("goodput {g:.3} req/s"),
            None => "no goodput (no limit applies without streaming)".to_string(),
        };
        lines.push(format!(
            "slo {stem} ({slos}): {goodput}, {} of {} requests ({:.1}%) within every limit; {}",
            verdict.met_every_limit,
            verdict.requests,
            verdict.attainment() * 100.0,
            verdict.describe_objectives()
        ));
    }
    lines
}

/// The error for points whose failures exceed the budget.
pub fn over_budget(points: &[(String, usize, usize)], budget: &FailureBudget) -> String {
    let list: Vec<String> =
        points.iter().map(|(stem, failed, measured)| format!("{stem} {failed} of {measured}")).collect();
    format!(
        "requests failed ({}) beyond --max-failed {budget}: the reasons are above; pass --max-failed N or P% to allow \
         failures",
        list.join(", ")
    )
}
