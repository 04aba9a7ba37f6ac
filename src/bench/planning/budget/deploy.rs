//! Deployments of a GPU budget: aggregated workers of one TP, or a prefill pool and a decode pool
//! of one TP whose request rates are matched, and the best of each architecture.

use serde::Serialize;

use super::super::search::{Candidate, ConfigResult, SloMetric, SloSet, rank};
use super::estimate::{DecodeWorker, PrefillWorker};

/// How a deployment serves requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    /// Every worker prefills and decodes (in-flight batching).
    Aggregated,
    /// Prefill workers run context-only requests, decode workers generation-only ones, the KV cache
    /// crossing a link between them.
    Disaggregated,
}

impl Architecture {
    /// `aggregated` or `disaggregated`.
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Aggregated => "aggregated",
            Architecture::Disaggregated => "disaggregated",
        }
    }
}

/// Aggregated workers: one configuration, measured on the virtual clock at its best load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AggregatedPool {
    /// The configuration of each worker.
    pub candidate: Candidate,
    /// Workers.
    pub workers: usize,
    /// The load point of one worker's goodput (`c64`: 64 users per worker).
    pub load: String,
    /// Requests per second one worker completes within the SLOs.
    pub requests_per_s: f64,
}

/// The prefill pool of a disaggregated deployment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefillPool {
    /// One worker's figures.
    pub worker: PrefillWorker,
    /// Workers.
    pub workers: usize,
}

/// The decode pool of a disaggregated deployment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodePool {
    /// One worker's figures.
    pub worker: DecodeWorker,
    /// Workers.
    pub workers: usize,
}

/// One way to spend the budget, with its goodput.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deployment {
    /// Aggregated or disaggregated.
    pub architecture: Architecture,
    /// `4 × tp2 fp8/fp8kv mbs256 ...` or `2p(tp2 ...) + 1d(tp2 ...)`.
    pub label: String,
    /// GPUs the deployment uses (at most the budget).
    pub gpus_used: usize,
    /// The budget.
    pub gpus: usize,
    /// Requests per second the deployment serves within the SLOs.
    pub requests_per_s: f64,
    /// Output tokens per second it serves within the SLOs.
    pub tokens_per_s: f64,
    /// `tokens_per_s` over the budget's GPUs.
    pub tokens_per_s_per_gpu: f64,
    /// Decode speed one user sees, tokens/s.
    pub tokens_per_s_per_user: f64,
    /// TTFT at the first TTFT objective's percentile, ms (disaggregated: the prefill's, the
    /// transfer's and one decode step).
    pub ttft_ms: Option<f64>,
    /// Where the figures come from.
    pub source: &'static str,
    /// The aggregated workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregated: Option<AggregatedPool>,
    /// The prefill pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefill: Option<PrefillPool>,
    /// The decode pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode: Option<DecodePool>,
}

/// Output tokens per request: the goodput of a request rate.
fn tokens_of(requests_per_s: f64, output_len: usize) -> f64 {
    requests_per_s * output_len as f64
}

/// The best deployments of `gpus` GPUs, best first: for each TP, the best aggregated one (its
/// best-ranked configuration of that TP in `aggregated`, on `gpus / tp` workers) and the best
/// disaggregated one (each prefill configuration of `prefill` paired with each decode worker of the
/// same TP and precision, the pool sizes whose matched rate is highest); `output_len` tokens per
/// request. Ties go to fewer GPUs, then to the aggregated deployment (fewer moving parts).
pub fn best_deployments(
    gpus: usize,
    output_len: usize,
    slos: &SloSet,
    aggregated: &[ConfigResult],
    prefill: &[ConfigResult],
    decode: &[DecodeWorker],
) -> Vec<Deployment> {
    let mut out = Vec::new();
    let mut tps: Vec<usize> = aggregated.iter().map(|r| r.candidate.engine.tp).collect();
    tps.sort_unstable();
    tps.dedup();
    let ranked = rank(aggregated);
    for tp in tps.into_iter().filter(|&tp| tp <= gpus) {
        let Some(best) = ranked.iter().find(|r| r.candidate.engine.tp == tp && r.best_point().is_some()) else {
            continue;
        };
        out.push(aggregated_deployment(gpus, best, tp, slos));
    }
    let mut tps: Vec<usize> = decode.iter().map(|d| d.candidate.engine.tp).collect();
    tps.sort_unstable();
    tps.dedup();
    for tp in tps.into_iter().filter(|&tp| 2 * tp <= gpus) {
        if let Some(d) = best_disaggregated(gpus, tp, output_len, slos, prefill, decode) {
            out.push(d);
        }
    }
    out.sort_by(|a, b| {
        b.tokens_per_s
            .total_cmp(&a.tokens_per_s)
            .then(a.gpus_used.cmp(&b.gpus_used))
            .then((a.architecture as u8).cmp(&(b.architecture as u8)))
    });
    out
}

fn aggregated_deployment(gpus: usize, best: &ConfigResult, tp: usize, slos: &SloSet) -> Deployment {
    let ttft = slos.objectives().iter().find(|o| o.metric == SloMetric::Ttft).map(|o| o.key());
    let workers = gpus / tp;
    let point = best.best_point().expect("filtered on a point within the SLOs");
    let tokens_per_s = point.output_throughput * workers as f64;
    Deployment {
        architecture: Architecture::Aggregated,
        label: format!("{workers} × {}", best.candidate.label()),
        gpus_used: workers * tp,
        gpus,
        requests_per_s: point.request_throughput * workers as f64,
        tokens_per_s,
        tokens_per_s_per_gpu: tokens_per_s / gpus as f64,
        tokens_per_s_per_user: point.tokens_per_s_per_user,
        ttft_ms: ttft.and_then(|key| point.percentiles.get(&key).copied()),
        source: "virtual clock, one worker at its best load",
        aggregated: Some(AggregatedPool {
            candidate: best.candidate,
            workers,
            load: point.load.clone(),
            requests_per_s: point.request_throughput,
        }),
        prefill: None,
        decode: None,
    }
}

/// The best pairing of TP `tp`: for every prefill configuration and decode worker of that TP and
/// precision, the pool sizes with the highest matched rate.
fn best_disaggregated(
    gpus: usize,
    tp: usize,
    output_len: usize,
    slos: &SloSet,
    prefill: &[ConfigResult],
    decode: &[DecodeWorker],
) -> Option<Deployment> {
    let same_precision = |a: &Candidate, b: &Candidate| {
        a.engine.tp == b.engine.tp
            && a.engine.fp8_weights == b.engine.fp8_weights
            && a.engine.fp8_kv_cache == b.engine.fp8_kv_cache
    };
    let e2el = slos.objectives().iter().filter(|o| o.metric == SloMetric::E2el).map(|o| o.limit_ms).reduce(f64::min);
    let mut best: Option<(f64, usize, PrefillPool, DecodePool)> = None;
    for d in decode.iter().filter(|d| d.candidate.engine.tp == tp) {
        for result in prefill.iter().filter(|r| same_precision(&r.candidate, &d.candidate)) {
            let Some(p) = PrefillWorker::best(result, slos, d.transfer_ms + d.step_ms) else { continue };
            let ttft = p.ttft_ms + d.transfer_ms + d.step_ms;
            if e2el.is_some_and(|limit| ttft + output_len.saturating_sub(1) as f64 * d.step_ms > limit) {
                continue;
            }
            let slots = gpus / tp;
            for prefills in 1..slots {
                let decodes = slots - prefills;
                let rate = (prefills as f64 * p.requests_per_s).min(decodes as f64 * d.requests_per_s);
                // Fewer GPUs for the same rate: drop workers the other pool cannot feed.
                let prefills_needed = (rate / p.requests_per_s * (1.0 - 1e-9)).ceil().max(1.0) as usize;
                let decodes_needed = (rate / d.requests_per_s * (1.0 - 1e-9)).ceil().max(1.0) as usize;
                let used = (prefills_needed.min(prefills) + decodes_needed.min(decodes)) * tp;
                let better = match &best {
                    None => true,
                    Some((r, u, ..)) => rate > *r * (1.0 + 1e-9) || ((rate - r).abs() <= 1e-9 * r && used < *u),
                };
                if better {
                    let prefill = PrefillPool { worker: p.clone(), workers: prefills_needed.min(prefills) };
                    let decode = DecodePool { worker: d.clone(), workers: decodes_needed.min(decodes) };
                    best = Some((rate, used, prefill, decode));
                }
            }
        }
    }
    let (rate, used, prefill, decode) = best?;
    let tokens_per_s = tokens_of(rate, output_len);
    Some(Deployment {
        architecture: Architecture::Disaggregated,
        label: format!(
            "{}p({}) + {}d({} at batch {})",
            prefill.workers,
            prefill.worker.candidate.label(),
            decode.workers,
            decode.worker.candidate.label(),
            decode.worker.batch
        ),
        gpus_used: used,
        gpus,
        requests_per_s: rate,
        tokens_per_s,
        tokens_per_s_per_gpu: tokens_per_s / gpus as f64,
        tokens_per_s_per_user: 1e3 / decode.worker.step_ms,
        ttft_ms: Some(prefill.worker.ttft_ms + decode.worker.transfer_ms + decode.worker.step_ms),
        source: "estimate: prefill worker on the virtual clock, decode steady state from the timing model",
        aggregated: None,
        prefill: Some(prefill),
        decode: Some(decode),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::search::{PercentileTable, PointResult};

    fn candidate(tp: usize) -> Candidate {
        serde_json::from_value(serde_json::json!({
            "engine": {"tp": tp, "fp8_weights": false, "fp8_kv_cache": false, "max_batch_size": 64, "max_num_tokens": 8192},
            "runtime": {"kv_fraction": 0.9, "block_reuse": true, "chunked_context": true, "scheduler": "guaranteed-no-evict"}
        }))
        .unwrap()
    }

    fn result(tp: usize, requests_per_s: f64, output_len: f64, ttft_ms: f64) -> ConfigResult {
        let candidate = candidate(tp);
        let point = PointResult {
            load: "c8".into(),
            completed: 10,
            failed: 0,
            request_throughput: requests_per_s,
            output_throughput: requests_per_s * output_len,
            tokens_per_s_per_gpu: requests_per_s * output_len / tp as f64,
            tokens_per_s_per_user: 50.0,
            percentiles: PercentileTable::from([("p95_ttft_ms".to_string(), ttft_ms)]),
            violations: vec![],
            simulated_s: 1.0,
            wall_s: 0.0,
            lost_statistics: 0,
        };
        ConfigResult {
            key: candidate.key(),
            study: serde_json::Value::Null,
            candidate,
            points: vec![point],
            error: None,
            wall_s: 0.0,
        }
    }

    fn decode(tp: usize, requests_per_s: f64) -> DecodeWorker {
        DecodeWorker {
            candidate: candidate(tp),
            batch: 32,
            step_ms: 20.0,
            transfer_ms: 5.0,
            requests_per_s,
            limited_by: "tpot",
        }
    }

    #[test]
    fn pools_are_sized_so_the_prefill_rate_matches_the_decode_rate() {
        let slos = SloSet::parse("ttft:p95:1000,tpot:p95:25").unwrap();
        // A prefill worker serves 3 requests/s, a decode worker 5: on 8 GPUs, 5 prefill and 3 decode
        // workers serve min(15, 15) = 15 requests/s.
        let prefill = [result(1, 3.0, 1.0, 400.0)];
        let aggregated = [result(1, 1.0, 100.0, 300.0)];
        let all = best_deployments(8, 100, &slos, &aggregated, &prefill, &[decode(1, 5.0)]);
        let disagg = all.iter().find(|d| d.architecture == Architecture::Disaggregated).unwrap();
        assert_eq!((disagg.prefill.as_ref().unwrap().workers, disagg.decode.as_ref().unwrap().workers), (5, 3));
        assert!((disagg.requests_per_s - 15.0).abs() < 1e-9);
        assert!((disagg.tokens_per_s_per_gpu - 15.0 * 100.0 / 8.0).abs() < 1e-9);
        // TTFT: the prefill's, the transfer and one decode step.
        assert_eq!(disagg.ttft_ms, Some(400.0 + 5.0 + 20.0));
        assert_eq!(all[0].architecture, Architecture::Disaggregated, "{all:#?}");
        // Eight aggregated workers of 100 tokens/s each.
        let agg = all.iter().find(|d| d.architecture == Architecture::Aggregated).unwrap();
        assert_eq!(agg.aggregated.as_ref().unwrap().workers, 8);
        assert!((agg.tokens_per_s - 800.0).abs() < 1e-9);
    }

    #[test]
    fn the_transfer_and_first_step_count_against_the_ttft_objective() {
        let slos = SloSet::parse("ttft:p95:420").unwrap();
        let prefill = [result(1, 3.0, 1.0, 400.0)];
        // 400 ms of prefill + 25 ms is over 420 ms: no disaggregated deployment.
        let all = best_deployments(8, 100, &slos, &[result(1, 1.0, 100.0, 300.0)], &prefill, &[decode(1, 5.0)]);
        assert!(all.iter().all(|d| d.architecture == Architecture::Aggregated), "{all:#?}");
    }

    #[test]
    fn one_gpu_cannot_be_split_and_pools_use_no_more_gpus_than_they_need() {
        let slos = SloSet::parse("ttft:p95:1000").unwrap();
        let prefill = [result(1, 3.0, 1.0, 100.0)];
        let one = best_deployments(1, 100, &slos, &[result(1, 1.0, 100.0, 300.0)], &prefill, &[decode(1, 5.0)]);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].architecture, Architecture::Aggregated);
        // Five GPUs hold two TP-2 workers: one of each role, on four GPUs; two aggregated workers.
        let prefill = [result(2, 3.0, 1.0, 100.0)];
        let five = best_deployments(5, 100, &slos, &[result(2, 2.0, 100.0, 300.0)], &prefill, &[decode(2, 7.0)]);
        assert_eq!(five.len(), 2, "{five:#?}");
        assert!(five.iter().all(|d| d.gpus_used == 4 && d.gpus == 5));
        let disagg = five.iter().find(|d| d.architecture == Architecture::Disaggregated).unwrap();
        assert!((disagg.requests_per_s - 3.0).abs() < 1e-9, "{disagg:#?}");
    }
}
