//! `trtllm bench --saturate`: raises the open-loop request rate until a point misses the SLOs or
//! over-saturates (its backlog keeps growing: the point stops sending early), then bisects
//! between the last rate that held and the first that did not; reports the highest rate within
//! the SLOs and its goodput (`saturation.json`).

use std::path::Path;

use anyhow::bail;
use serde_json::{Value, json};

/// The saturation sweep's options.
#[derive(Debug, Clone, clap::Args)]
pub struct SaturateArgs {
    /// Find the highest request rate within the SLOs (`--slo`) for this target: open-loop points
    /// from the first `--request-rate` (default 1/s) up by `--saturate-factor` until one misses
    /// the SLOs or over-saturates, then `--saturate-refine` bisections.
    #[arg(long, requires = "slo", conflicts_with_all = ["concurrency", "duration", "repeats"])]
    pub saturate: bool,
    /// Rate multiplier between points before the first miss.
    #[arg(long, default_value_t = 2.0, requires = "saturate")]
    pub saturate_factor: f64,
    /// Bisections between the last rate that held and the first that did not.
    #[arg(long, default_value_t = 2, requires = "saturate")]
    pub saturate_refine: u32,
    /// Points at most.
    #[arg(long, default_value_t = 12, requires = "saturate")]
    pub saturate_max_points: u32,
    /// Share of a point's requests that must meet every SLO (failed requests count as misses).
    #[arg(long, default_value_t = 0.95, requires = "saturate")]
    pub slo_attainment: f64,
    /// Seconds of arrivals per point (its request count is rate × this, at least 32) unless
    /// --num-prompts says how many.
    #[arg(long, default_value_t = 10.0, requires = "saturate")]
    pub saturate_seconds: f64,
}

impl SaturateArgs {
    /// Checks the numbers.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(self.saturate_factor.is_finite() && self.saturate_factor > 1.0) {
            bail!("--saturate-factor must be above 1");
        }
        if !(self.slo_attainment > 0.0 && self.slo_attainment <= 1.0) {
            bail!("--slo-attainment must be in (0, 1]");
        }
        if !(self.saturate_seconds.is_finite() && self.saturate_seconds > 0.0) {
            bail!("--saturate-seconds must be positive");
        }
        if self.saturate_max_points == 0 {
            bail!("--saturate-max-points must be at least 1");
        }
        Ok(())
    }
}

/// One point of the sweep as judged.
#[derive(Debug, Clone)]
pub struct Judged {
    pub rate: f64,
    pub meets: bool,
    pub row: Value,
}

/// Judges a point's summary: the share of its measured requests that met every SLO, and
/// whether it over-saturated.
pub fn judge(rate: f64, stem: &str, summary: &Value, attainment_target: f64) -> Judged {
    let completed = summary["completed"].as_f64().unwrap_or(0.0);
    let failed = summary["failed"].as_f64().unwrap_or(0.0);
    let duration = summary["duration"].as_f64().unwrap_or(0.0);
    let goodput = summary["request_goodput"].as_f64().unwrap_or(0.0);
    let good = goodput * duration;
    let attainment = if completed + failed > 0.0 { good / (completed + failed) } else { 0.0 };
    let arrivals = trtllm::bench::SummarySections::from_result(summary).arrivals;
    let over = arrivals.and_then(|a| a.over_saturated).map(|o| o.after_s);
    let meets = over.is_none() && completed > 0.0 && attainment + 1e-9 >= attainment_target;
    let row = json!({
        "request_rate": rate,
        "stem": stem,
        "achieved_request_throughput": summary["request_throughput"],
        "request_goodput": summary["request_goodput"],
        "output_throughput": summary["output_throughput"],
        "slo_attainment": attainment,
        "p99_ttft_ms": summary["p99_ttft_ms"],
        "p99_tpot_ms": summary["p99_tpot_ms"],
        "completed": summary["completed"],
        "failed": summary["failed"],
        "over_saturated_after_s": over,
        "meets_slos": meets,
    });
    Judged { rate, meets, row }
}

/// The next rate to try after `judged` (in order), or `None` when the sweep is done; rounded to
/// three significant digits so that stems and tables stay readable.
pub fn next_rate(args: &SaturateArgs, judged: &[Judged]) -> Option<f64> {
    raw_next_rate(args, judged).map(|r| {
        let scale = 10f64.powi(2 - r.log10().floor() as i32);
        (r * scale).round() / scale
    })
}

fn raw_next_rate(args: &SaturateArgs, judged: &[Judged]) -> Option<f64> {
    if judged.len() >= args.saturate_max_points as usize {
        return None;
    }
    let last = judged.last()?;
    let best = judged.iter().filter(|j| j.meets).map(|j| j.rate).max_by(f64::total_cmp);
    let worst = judged.iter().filter(|j| !j.meets).map(|j| j.rate).min_by(f64::total_cmp);
    match (best, worst) {
        // Still holding: raise.
        (Some(_), None) => Some(last.rate * args.saturate_factor),
        // Even the first rate misses: go down (a few times at most).
        (None, Some(low)) => (judged.len() < 4).then(|| low / args.saturate_factor),
        (Some(hold), Some(miss)) => {
            // Bisect (geometrically) between the best rate that held and the lowest that missed.
            let since_first_miss = judged.iter().position(|j| !j.meets).map_or(0, |i| judged.len() - i - 1);
            (since_first_miss < args.saturate_refine as usize && hold < miss).then(|| (hold * miss).sqrt())
        }
        (None, None) => None,
    }
}

/// Writes `saturation.json` and returns the console lines.
pub fn write(output_dir: &Path, args: &SaturateArgs, slos: &str, judged: &[Judged]) -> anyhow::Result<Vec<String>> {
    let best = judged.iter().filter(|j| j.meets).max_by(|a, b| a.rate.total_cmp(&b.rate));
    let mut points: Vec<&Judged> = judged.iter().collect();
    points.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let doc = json!({
        "slos": slos,
        "slo_attainment": args.slo_attainment,
        "rule": "a point holds when no backlog growth flagged it over-saturated and at least slo_attainment of its requests met every SLO",
        "highest_rate_within_slos": best.map(|b| b.rate),
        "goodput_at_highest_rate": best.map(|b| b.row["request_goodput"].clone()),
        "points": points.iter().map(|j| j.row.clone()).collect::<Vec<_>>(),
    });
    std::fs::write(output_dir.join("saturation.json"), serde_json::to_string_pretty(&doc)? + "\n")?;
    let mut lines = vec![format!(
        "{:>10}  {:>10}  {:>10}  {:>9}  {:>10}  {:>10}  verdict",
        "rate", "achieved", "goodput", "attained", "p99 TTFT", "p99 TPOT"
    )];
    let f = |v: &Value| v.as_f64().map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
    for j in &points {
        let r = &j.row;
        let verdict = match (r["over_saturated_after_s"].as_f64(), j.meets) {
            (Some(at), _) => format!("over-saturated (backlog grew from {at:.1} s; stopped early)"),
            (None, true) => "within SLOs".into(),
            (None, false) => "misses SLOs".into(),
        };
        lines.push(format!(
            "{:>10.3}  {:>10}  {:>10}  {:>8.1}%  {:>10}  {:>10}  {verdict}",
            j.rate,
            f(&r["achieved_request_throughput"]),
            f(&r["request_goodput"]),
            r["slo_attainment"].as_f64().unwrap_or(0.0) * 100.0,
            f(&r["p99_ttft_ms"]),
            f(&r["p99_tpot_ms"]),
        ));
    }
    lines.push(match best {
        Some(b) => format!(
            "highest rate within SLOs ({slos}, {:.0}% of requests): {:.3} req/s, goodput {} req/s",
            args.slo_attainment * 100.0,
            b.rate,
            f(&b.row["request_goodput"])
        ),
        None => format!("no rate tried met the SLOs ({slos}); lower --request-rate to start below"),
    });
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> SaturateArgs {
        SaturateArgs {
            saturate: true,
            saturate_factor: 2.0,
            saturate_refine: 2,
            saturate_max_points: 12,
            slo_attainment: 0.95,
            saturate_seconds: 10.0,
        }
    }

    fn point(rate: f64, meets: bool) -> Judged {
        Judged { rate, meets, row: Value::Null }
    }

    #[test]
    fn the_rate_doubles_until_a_miss_then_bisects() {
        let a = args();
        assert_eq!(next_rate(&a, &[point(1.0, true)]), Some(2.0));
        let mut judged = vec![point(1.0, true), point(2.0, true), point(4.0, false)];
        let mid = next_rate(&a, &judged).unwrap();
        assert_eq!(mid, 2.83, "the geometric middle of 2 and 4, three digits");
        judged.push(point(mid, true));
        let mid2 = next_rate(&a, &judged).unwrap();
        assert!(mid2 > mid && mid2 < 4.0);
        judged.push(point(mid2, false));
        assert_eq!(next_rate(&a, &judged), None, "two refinements after the first miss");
    }
}
