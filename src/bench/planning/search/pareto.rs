//! Goodput ranking, the Pareto front of tokens/s/user against tokens/s/GPU, and the
//! recommended configuration.

use serde::Serialize;

use super::result::{ConfigResult, PointResult};

/// A point of the trade-off chart: one load point of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrontPoint {
    /// [`super::Candidate::key`] of the configuration.
    pub key: String,
    /// Its label.
    pub label: String,
    /// The load point, `c16` style.
    pub load: String,
    /// Decode speed per user, tokens/s (the x axis).
    pub tokens_per_s_per_user: f64,
    /// Output tokens/s per GPU (the y axis).
    pub tokens_per_s_per_gpu: f64,
    /// It meets every SLO.
    pub meets_slos: bool,
}

impl FrontPoint {
    fn new(result: &ConfigResult, point: &PointResult) -> Self {
        FrontPoint {
            key: result.key.clone(),
            label: result.candidate.label(),
            load: point.load.clone(),
            tokens_per_s_per_user: point.tokens_per_s_per_user,
            tokens_per_s_per_gpu: point.tokens_per_s_per_gpu,
            meets_slos: point.meets_slos(),
        }
    }
}

/// Every load point of every configuration, as chart points.
pub fn all_points(results: &[ConfigResult]) -> Vec<FrontPoint> {
    results.iter().flat_map(|r| r.points.iter().map(move |p| FrontPoint::new(r, p))).collect()
}

/// The Pareto front of `points` that meet the SLOs: no other such point is at least as good on
/// both axes and better on one. Sorted by tokens/s/user, ascending (tokens/s/GPU descending).
///
/// ```rust
/// use trtllm::bench::search::{FrontPoint, pareto_front};
///
/// let p = |user: f64, gpu: f64| FrontPoint {
///     key: String::new(), label: String::new(), load: String::new(),
///     tokens_per_s_per_user: user, tokens_per_s_per_gpu: gpu, meets_slos: true,
/// };
/// let front = pareto_front(&[p(10.0, 1000.0), p(50.0, 400.0), p(30.0, 300.0), p(60.0, 100.0)]);
/// let xy: Vec<(f64, f64)> = front.iter().map(|f| (f.tokens_per_s_per_user, f.tokens_per_s_per_gpu)).collect();
/// assert_eq!(xy, [(10.0, 1000.0), (50.0, 400.0), (60.0, 100.0)]);
/// ```
pub fn pareto_front(points: &[FrontPoint]) -> Vec<FrontPoint> {
    let mut candidates: Vec<&FrontPoint> = points
        .iter()
        .filter(|p| p.meets_slos && p.tokens_per_s_per_user.is_finite() && p.tokens_per_s_per_gpu.is_finite())
        .collect();
    // Fastest per user first; a point joins the front when it beats every faster point per GPU.
    candidates.sort_by(|a, b| {
        b.tokens_per_s_per_user
            .total_cmp(&a.tokens_per_s_per_user)
            .then(b.tokens_per_s_per_gpu.total_cmp(&a.tokens_per_s_per_gpu))
    });
    let mut front: Vec<FrontPoint> = Vec::new();
    let mut best_gpu = f64::NEG_INFINITY;
    for p in candidates {
        if p.tokens_per_s_per_gpu > best_gpu {
            best_gpu = p.tokens_per_s_per_gpu;
            front.push(p.clone());
        }
    }
    front.reverse();
    front
}

/// Configurations ordered best first: goodput per GPU (tokens/s), then tokens/s/user at that
/// point, then fewer GPUs, then fewer runtime knobs off their defaults, then the key (a stable
/// order for equal figures).
pub fn rank(results: &[ConfigResult]) -> Vec<&ConfigResult> {
    let mut ranked: Vec<&ConfigResult> = results.iter().collect();
    ranked.sort_by(|a, b| {
        let user = |r: &ConfigResult| r.best_point().map_or(0.0, |p| p.tokens_per_s_per_user);
        b.goodput_tokens_per_s_per_gpu()
            .total_cmp(&a.goodput_tokens_per_s_per_gpu())
            .then(user(b).total_cmp(&user(a)))
            .then(a.gpus().cmp(&b.gpus()))
            .then(a.candidate.departures_from_defaults().cmp(&b.candidate.departures_from_defaults()))
            .then(a.key.cmp(&b.key))
    });
    ranked
}

/// The recommended configuration: the best-ranked one with a point meeting every SLO.
pub fn recommend(results: &[ConfigResult]) -> Option<&ConfigResult> {
    rank(results).into_iter().find(|r| r.best_point().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::search::{Candidate, PercentileTable};

    fn candidate(tp: usize, max_batch_size: usize) -> Candidate {
        serde_json::from_value(serde_json::json!({
            "engine": {"tp": tp, "fp8_weights": false, "fp8_kv_cache": false, "max_batch_size": max_batch_size, "max_num_tokens": 512},
            "runtime": {"kv_fraction": 0.9, "block_reuse": true, "chunked_context": true, "scheduler": "guaranteed-no-evict"}
        }))
        .unwrap()
    }

    fn point(load: &str, user: f64, total: f64, gpus: usize, ok: bool) -> PointResult {
        PointResult {
            load: load.into(),
            completed: 10,
            failed: 0,
            request_throughput: total / 100.0,
            output_throughput: total,
            tokens_per_s_per_gpu: total / gpus as f64,
            tokens_per_s_per_user: user,
            percentiles: PercentileTable::new(),
            violations: if ok { vec![] } else { vec!["ttft:p95:500 (900.0 ms)".into()] },
            simulated_s: 1.0,
            wall_s: 0.1,
            lost_statistics: 0,
        }
    }

    fn result(tp: usize, mbs: usize, points: Vec<PointResult>) -> ConfigResult {
        let candidate = candidate(tp, mbs);
        ConfigResult {
            key: candidate.key(),
            study: serde_json::Value::Null,
            candidate,
            points,
            error: None,
            wall_s: 0.0,
        }
    }

    #[test]
    fn goodput_is_the_best_point_within_the_slos_per_gpu() {
        let one = result(
            1,
            64,
            vec![
                point("c1", 50.0, 50.0, 1, true),
                point("c8", 40.0, 320.0, 1, true),
                point("c32", 20.0, 640.0, 1, false),
            ],
        );
        assert_eq!(one.best_point().unwrap().load, "c8");
        assert_eq!(one.goodput_tokens_per_s_per_gpu(), 320.0);
        assert!((one.goodput_requests_per_s_per_gpu() - 3.2).abs() < 1e-12);
        // Twice the throughput on two GPUs is the same goodput per GPU; the faster users win.
        let two = result(2, 64, vec![point("c16", 45.0, 640.0, 2, true)]);
        let none = result(1, 8, vec![point("c1", 10.0, 10.0, 1, false)]);
        assert_eq!(none.goodput_tokens_per_s_per_gpu(), 0.0);
        let all = [one.clone(), none, two.clone()];
        let ranked: Vec<&str> = rank(&all).iter().map(|r| r.key.as_str()).collect();
        assert_eq!(ranked[..2], [two.key.as_str(), one.key.as_str()]);
        assert_eq!(recommend(&all).unwrap().key, two.key);
        assert!(recommend(&all[1..2]).is_none(), "nothing meets the SLOs: no recommendation");
    }

    #[test]
    fn equal_figures_favour_the_default_runtime_knobs() {
        let mut tuned = result(1, 64, vec![point("c8", 40.0, 320.0, 1, true)]);
        tuned.candidate.runtime.chunked_context = false;
        tuned.candidate.runtime.kv_fraction = 0.5;
        tuned.key = tuned.candidate.key();
        let default = result(1, 64, vec![point("c8", 40.0, 320.0, 1, true)]);
        for order in [[tuned.clone(), default.clone()], [default.clone(), tuned.clone()]] {
            assert_eq!(recommend(&order).unwrap().key, default.key);
        }
    }

    #[test]
    fn the_front_keeps_only_undominated_points_within_the_slos() {
        let a = result(
            1,
            64,
            vec![
                point("c1", 50.0, 50.0, 1, true),
                point("c8", 40.0, 320.0, 1, true),
                point("c32", 20.0, 900.0, 1, false),
            ],
        );
        let b = result(
            1,
            16,
            vec![
                point("c1", 50.0, 45.0, 1, true),
                point("c8", 30.0, 300.0, 1, true),
                point("c16", 25.0, 500.0, 1, true),
            ],
        );
        let points = all_points(&[a, b]);
        assert_eq!(points.len(), 6);
        let front: Vec<(f64, f64)> =
            pareto_front(&points).iter().map(|p| (p.tokens_per_s_per_user, p.tokens_per_s_per_gpu)).collect();
        // (20, 900) misses an SLO; (50, 45) is dominated by (50, 50), (30, 300) by (40, 320).
        assert_eq!(front, [(25.0, 500.0), (40.0, 320.0), (50.0, 50.0)]);
        assert!(pareto_front(&[]).is_empty());
    }
}
