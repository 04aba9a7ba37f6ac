//! What the plan says beside its ranking, so the console tells the whole answer: the latencies
//! at the recommendation against each objective, a precision note when FP8 is chosen, a warning
//! when the best point lies at the edge of the search, configurations never run at a load that
//! could meet the SLOs, configuration counts that reconcile, and progress lines for a log.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::loads::{LoadStep, Loads};
use super::pareto::rank;
use super::result::ConfigResult;
use super::slo::{PercentileTable, SloSet};

/// The best configuration without FP8, beside an FP8 recommendation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrecisionNote {
    /// What the recommendation quantizes: `FP8 weights`, `an FP8 KV cache`, or both.
    pub fp8: String,
    /// The best configuration with BF16 weights and a 16-bit KV cache, if one met the SLOs.
    pub best_bf16: Option<Alternative>,
}

/// Another configuration's best point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alternative {
    /// Its label.
    pub label: String,
    /// The load of its goodput.
    pub load: String,
    /// Its goodput per GPU, output tokens/s.
    pub goodput_tokens_per_s_per_gpu: f64,
}

/// A configuration the search never ran at a load that could meet the SLOs, so it has no
/// goodput to rank by (it is not ranked at 0).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnexploredConfig {
    /// [`super::Candidate::key`].
    pub key: String,
    /// Its label.
    pub label: String,
    /// The lowest load it ran.
    pub first_load: String,
    /// Why it is unexplored.
    pub reason: String,
}

/// Why `result` is unexplored, if it is: a climb the bound started above one user (the lower
/// loads could not beat the best goodput) whose points all missed the SLOs. A listed load axis
/// starts where the user asked, so its configurations are always explored.
pub fn unexplored(result: &ConfigResult, loads: &Loads) -> Option<UnexploredConfig> {
    let first = result.points.first()?;
    if !matches!(loads, Loads::UntilPeak) || first.load == "c1" || result.best_point().is_some() {
        return None;
    }
    Some(UnexploredConfig {
        key: result.key.clone(),
        label: result.candidate.label(),
        first_load: first.load.clone(),
        reason: format!(
            "its climb started at {} (by the bound, lower loads could not beat the best goodput), which missed: {}; \
             no lower load was run",
            first.load,
            if first.violations.is_empty() {
                format!("{} requests failed", first.failed)
            } else {
                first.violations.join(", ")
            }
        ),
    })
}

/// The note for a recommendation that uses FP8, with the best BF16 configuration of `results`.
pub fn precision_note(recommended: &ConfigResult, results: &[ConfigResult]) -> Option<PrecisionNote> {
    let e = &recommended.candidate.engine;
    let fp8 = match (e.fp8_weights, e.fp8_kv_cache) {
        (true, true) => "FP8 weights and an FP8 KV cache",
        (true, false) => "FP8 weights",
        (false, true) => "an FP8 KV cache",
        (false, false) => return None,
    };
    let best_bf16 = rank(results)
        .into_iter()
        .filter(|r| !r.candidate.engine.fp8_weights && !r.candidate.engine.fp8_kv_cache)
        .find_map(|r| {
            r.best_point().map(|p| Alternative {
                label: r.candidate.label(),
                load: p.load.clone(),
                goodput_tokens_per_s_per_gpu: r.goodput_tokens_per_s_per_gpu(),
            })
        });
    Some(PrecisionNote { fp8: fp8.to_string(), best_bf16 })
}

/// A warning when the recommended point is the highest load the search could try for it, so
/// more load (a larger batch, a longer list) might give more goodput; `largest_mbs` is the
/// largest `--max-batch-size` searched.
pub fn edge_of_search(loads: &Loads, largest_mbs: usize, recommended: &ConfigResult) -> Option<String> {
    let best = recommended.best_point()?;
    let mbs = recommended.candidate.engine.max_batch_size;
    let at_batch_cap = best.load == LoadStep::Concurrency(mbs).name();
    let widen = format!("a larger --max-batch-size (e.g. {}) may give more goodput", 2 * mbs);
    match loads {
        Loads::UntilPeak if at_batch_cap && mbs >= largest_mbs => Some(format!(
            "the best point, {}, is at the edge of the search: its users climbed to max_batch_size {mbs}, the \
             largest --max-batch-size tried, still within the SLOs; {widen}",
            best.load
        )),
        Loads::Listed(steps) => {
            let highest = steps.last().map(LoadStep::name);
            if highest.as_deref() == Some(best.load.as_str()) {
                Some(format!(
                    "the best point, {}, is the highest load listed, still within the SLOs: higher loads may give \
                     more goodput",
                    best.load
                ))
            } else if at_batch_cap && mbs >= largest_mbs {
                Some(format!(
                    "the best point, {}, is at max_batch_size {mbs}, the largest --max-batch-size tried (higher \
                     loads only queue), still within the SLOs; {widen}",
                    best.load
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Each objective's figure at a point against its limit: `ttft p95 275.1 ms (limit 300), tpot
/// p95 5.6 ms (limit 30)`.
pub fn latencies_at(slos: &SloSet, table: &PercentileTable) -> String {
    let parts: Vec<String> = slos
        .objectives()
        .iter()
        .map(|o| {
            let name = format!("{} p{}", o.metric.name(), crate::bench::percentile_label(o.percentile));
            match table.get(&o.key()) {
                Some(v) => format!("{name} {v:.1} ms (limit {})", o.limit_ms),
                None => format!("{name} not measured (limit {})", o.limit_ms),
            }
        })
        .collect();
    parts.join(", ")
}

/// How the configurations of the space were accounted for; every one is counted exactly once:
/// `space = run + bounded + pruned_before`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConfigCounts {
    /// Configurations in the search space.
    pub space: usize,
    /// Pruned before running: they cannot fit or run.
    pub pruned_before: usize,
    /// Skipped while searching: their bound could not reach the best.
    pub bounded: usize,
    /// Run (or resumed from an earlier run).
    pub run: usize,
    /// Of `run`, taken from an earlier run.
    pub resumed: usize,
}

impl ConfigCounts {
    /// The line printed before the search: what the space holds and what is left to run.
    pub fn outline(space: usize, pruned_before: usize) -> String {
        format!(
            "{space} configurations in the space: {} to run, {pruned_before} pruned before running (cannot fit or run); \
             those whose bound cannot reach the best are skipped as the search goes",
            space - pruned_before
        )
    }

    /// The line printed after: how each configuration of the space ended.
    pub fn summary(&self) -> String {
        format!(
            "{} configurations in the space: {} run ({} resumed), {} skipped by their bound, {} pruned before running",
            self.space, self.run, self.resumed, self.bounded, self.pruned_before
        )
    }
}

/// Progress lines for a log (stderr not a terminal, where no bar is drawn): the first finished
/// configuration, then at most one line per `every`, and the last.
#[derive(Debug)]
pub struct ProgressLines {
    started: Instant,
    last: Option<Instant>,
    every: Duration,
    total: usize,
    done: usize,
    points: usize,
    best: Option<(f64, String)>,
}

impl ProgressLines {
    /// Lines for a search of `total` configurations to run, one per `every` at most.
    pub fn new(total: usize, every: Duration) -> Self {
        ProgressLines { started: Instant::now(), last: None, every, total, done: 0, points: 0, best: None }
    }

    /// Counts a finished configuration; returns a line when one is due.
    pub fn finished(&mut self, result: &ConfigResult) -> Option<String> {
        self.done += 1;
        self.points += result.points.len();
        let goodput = result.goodput_tokens_per_s_per_gpu();
        if result.best_point().is_some() && self.best.as_ref().is_none_or(|(g, _)| goodput > *g) {
            self.best = Some((goodput, result.candidate.label()));
        }
        let now = Instant::now();
        let due = self.last.is_none_or(|last| now.duration_since(last) >= self.every) || self.done == self.total;
        if !due {
            return None;
        }
        self.last = Some(now);
        let best = match &self.best {
            Some((g, label)) => format!("best so far {label}: {g:.1} tok/s/GPU"),
            None => "none within the SLOs yet".to_string(),
        };
        Some(format!(
            "plan: {} of at most {} configurations done, {} load points, {:.0} s; {best}",
            self.done,
            self.total,
            self.points,
            now.duration_since(self.started).as_secs_f64()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::search::{Candidate, PointResult};

    fn candidate(tp: usize, fp8: bool, max_batch_size: usize) -> Candidate {
        serde_json::from_value(serde_json::json!({
            "engine": {"tp": tp, "fp8_weights": fp8, "fp8_kv_cache": fp8, "max_batch_size": max_batch_size, "max_num_tokens": 512},
            "runtime": {"kv_fraction": 0.9, "block_reuse": true, "chunked_context": true, "scheduler": "guaranteed-no-evict"}
        }))
        .unwrap()
    }

    fn point(load: &str, per_gpu: f64, ok: bool) -> PointResult {
        PointResult::with_goodput(load, per_gpu, ok)
    }

    fn result(candidate: Candidate, points: Vec<PointResult>) -> ConfigResult {
        ConfigResult { key: candidate.key(), study: serde_json::json!({}), candidate, points, error: None, wall_s: 0.0 }
    }

    #[test]
    fn a_climb_started_high_that_missed_is_unexplored_not_ranked_at_zero() {
        let high = result(candidate(1, false, 256), vec![point("c64", 0.0, false)]);
        let why = unexplored(&high, &Loads::UntilPeak).expect("unexplored");
        assert_eq!(why.first_load, "c64");
        assert!(why.reason.contains("started at c64") && why.reason.contains("tpot:p95:50 (61.2 ms)"), "{why:?}");
        // Run from one user, or with a point within the SLOs, or on a listed axis: explored.
        assert!(
            unexplored(&result(candidate(1, false, 256), vec![point("c1", 0.0, false)]), &Loads::UntilPeak).is_none()
        );
        let met = result(candidate(1, false, 256), vec![point("c64", 9.0, true), point("c128", 0.0, false)]);
        assert!(unexplored(&met, &Loads::UntilPeak).is_none());
        assert!(unexplored(&high, &Loads::Listed(vec![LoadStep::Concurrency(64)])).is_none());
    }

    #[test]
    fn an_fp8_recommendation_names_the_best_bf16_configuration() {
        let fp8 = result(candidate(1, true, 256), vec![point("c32", 5567.9, true)]);
        let bf16 = result(candidate(1, false, 256), vec![point("c16", 1917.6, true)]);
        let bf16_missed = result(candidate(2, false, 256), vec![point("c1", 0.0, false)]);
        let results = [fp8.clone(), bf16_missed, bf16.clone()];
        let note = precision_note(&fp8, &results).expect("a note");
        assert_eq!(note.fp8, "FP8 weights and an FP8 KV cache");
        let best = note.best_bf16.expect("a BF16 alternative");
        assert_eq!(
            (best.label, best.load, best.goodput_tokens_per_s_per_gpu),
            (bf16.candidate.label(), "c16".into(), 1917.6)
        );
        assert!(precision_note(&bf16, &results).is_none(), "BF16 needs no note");
    }

    #[test]
    fn a_best_point_at_the_largest_batch_or_the_last_listed_load_is_at_the_edge() {
        let capped = result(candidate(2, true, 1024), vec![point("c512", 8.0, true), point("c1024", 9.0, true)]);
        let warning = edge_of_search(&Loads::UntilPeak, 1024, &capped).expect("at the edge");
        assert!(warning.contains("c1024") && warning.contains("--max-batch-size (e.g. 2048)"), "{warning}");
        assert!(edge_of_search(&Loads::UntilPeak, 2048, &capped).is_none(), "a larger batch was searched");
        let peaked = result(candidate(2, true, 1024), vec![point("c512", 9.0, true), point("c1024", 8.0, true)]);
        assert!(edge_of_search(&Loads::UntilPeak, 1024, &peaked).is_none(), "goodput peaked below the cap");
        let listed = Loads::Listed(vec![LoadStep::Concurrency(8), LoadStep::Concurrency(16)]);
        let last = result(candidate(1, false, 256), vec![point("c8", 1.0, true), point("c16", 2.0, true)]);
        assert!(edge_of_search(&listed, 256, &last).expect("the last listed").contains("highest load listed"));
    }

    #[test]
    fn counts_account_for_every_configuration_once() {
        let counts = ConfigCounts { space: 912, pruned_before: 368, bounded: 388, run: 156, resumed: 0 };
        assert_eq!(counts.space, counts.run + counts.bounded + counts.pruned_before);
        assert!(ConfigCounts::outline(912, 368).starts_with("912 configurations in the space: 544 to run, 368 pruned"));
        assert_eq!(
            counts.summary(),
            "912 configurations in the space: 156 run (0 resumed), 388 skipped by their bound, 368 pruned before running"
        );
    }

    #[test]
    fn progress_lines_come_first_last_and_at_most_once_per_interval() {
        let mut lines = ProgressLines::new(3, Duration::from_secs(3600));
        let r = result(candidate(1, false, 16), vec![point("c1", 10.0, true), point("c2", 20.0, true)]);
        let first = lines.finished(&r).expect("the first result prints");
        assert!(first.starts_with("plan: 1 of at most 3 configurations done, 2 load points"), "{first}");
        assert!(first.contains("best so far tp1 bf16/16bkv mbs16") && first.contains("20.0 tok/s/GPU"), "{first}");
        assert!(lines.finished(&r).is_none(), "within the interval");
        assert!(lines.finished(&r).expect("the last prints").starts_with("plan: 3 of at most 3"));
    }

    #[test]
    fn latencies_are_printed_against_their_limits() {
        let slos = SloSet::parse("ttft:p95:300,tpot:30").unwrap();
        let table = PercentileTable::from([("p95_ttft_ms".into(), 275.14), ("p95_tpot_ms".into(), 5.6)]);
        assert_eq!(latencies_at(&slos, &table), "ttft p95 275.1 ms (limit 300), tpot p95 5.6 ms (limit 30)");
    }
}
