//! Deployments of a GPU budget: aggregated workers of one TP, or a prefill pool and a decode pool
//! of one TP whose request rates are matched, and the best of each architecture.

use serde::Serialize;

use super::super::search::{Candidate, SloMetric, SloSet};
use super::aggregated::AggregatedWorker;
use super::estimate::{DecodeWorker, PrefillWorker, router_latency_ms};

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

/// Aggregated workers: one configuration at its estimated best load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AggregatedPool {
    /// One worker's estimate.
    pub worker: AggregatedWorker,
    /// Workers.
    pub workers: usize,
}

/// The prefill pool of a disaggregated deployment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefillPool {
    /// One worker's figures.
    pub worker: PrefillWorker,
    /// Workers.
    pub workers: usize,
    /// TTFT of the pool at the deployment's rate, at the first TTFT objective's percentile, ms
    /// (prefill only: queueing and compute).
    pub ttft_ms: f64,
}

/// The decode pool of a disaggregated deployment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodePool {
    /// One worker's figures.
    pub worker: DecodeWorker,
    /// Workers.
    pub workers: usize,
}

/// One way to spend the budget, with its estimated goodput.
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
    /// Closed-loop users that keep `requests_per_s` over one request's cycle (Little's law).
    pub users: usize,
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

impl Deployment {
    /// The tensor-parallel size of its workers.
    pub fn tp(&self) -> usize {
        match (&self.aggregated, &self.decode) {
            (Some(a), _) => a.worker.candidate.engine.tp,
            (None, Some(d)) => d.worker.candidate.engine.tp,
            (None, None) => 0,
        }
    }

    /// Workers in all.
    pub fn workers(&self) -> usize {
        self.aggregated.as_ref().map_or_else(
            || self.prefill.as_ref().map_or(0, |p| p.workers) + self.decode.as_ref().map_or(0, |d| d.workers),
            |a| a.workers,
        )
    }
}

/// Every deployment of `gpus` GPUs the estimates allow, most goodput first: each aggregated
/// worker on `gpus / tp` workers, and each prefill worker paired with each decode worker of the
/// same TP and precision (the handoff refuses other pairings) at the pool sizes whose matched rate
/// is highest; `output_len` tokens per request. Ties go to fewer GPUs, then to the aggregated
/// deployment (fewer moving parts).
pub fn best_deployments(
    gpus: usize,
    output_len: usize,
    slos: &SloSet,
    aggregated: &[AggregatedWorker],
    prefill: &[PrefillWorker],
    decode: &[DecodeWorker],
) -> Vec<Deployment> {
    let mut out: Vec<Deployment> = aggregated
        .iter()
        .filter(|w| w.candidate.engine.tp <= gpus)
        .map(|w| aggregated_deployment(gpus, w, output_len, slos))
        .collect();
    for d in decode.iter().filter(|d| 2 * d.candidate.engine.tp <= gpus) {
        for p in prefill.iter().filter(|p| same_precision(&p.candidate, &d.candidate)) {
            if let Some(deployment) = disaggregated(gpus, output_len, slos, p, d) {
                out.push(deployment);
            }
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

/// A prefill and a decode worker can hand off: one TP, one precision.
fn same_precision(a: &Candidate, b: &Candidate) -> bool {
    a.engine.tp == b.engine.tp
        && a.engine.fp8_weights == b.engine.fp8_weights
        && a.engine.fp8_kv_cache == b.engine.fp8_kv_cache
}

fn first_ttft_percentile(slos: &SloSet) -> Option<f64> {
    slos.objectives().iter().find(|o| o.metric == SloMetric::Ttft).map(|o| o.percentile)
}

fn aggregated_deployment(gpus: usize, w: &AggregatedWorker, output_len: usize, slos: &SloSet) -> Deployment {
    let tp = w.candidate.engine.tp;
    let workers = gpus / tp;
    let requests_per_s = w.requests_per_s * workers as f64;
    let tokens_per_s = requests_per_s * output_len as f64;
    Deployment {
        architecture: Architecture::Aggregated,
        label: format!("{workers} × {}", w.candidate.label()),
        gpus_used: workers * tp,
        gpus,
        requests_per_s,
        tokens_per_s,
        tokens_per_s_per_gpu: tokens_per_s / gpus as f64,
        tokens_per_s_per_user: 1e3 / w.tpot_ms,
        ttft_ms: first_ttft_percentile(slos).map(|_| w.ttft_ms),
        users: w.users * workers,
        source: "estimate: each worker's steady state from the timing model",
        aggregated: Some(AggregatedPool { worker: w.clone(), workers }),
        prefill: None,
        decode: None,
    }
}

/// The pool sizes of `p` and `d` with the highest matched rate within the SLOs, on the fewest GPUs
/// that keep it.
fn disaggregated(
    gpus: usize,
    output_len: usize,
    slos: &SloSet,
    p: &PrefillWorker,
    d: &DecodeWorker,
) -> Option<Deployment> {
    let tp = d.candidate.engine.tp;
    let extra_ms = d.transfer_ms + d.step_ms + router_latency_ms();
    let e2el = slos.objectives().iter().filter(|o| o.metric == SloMetric::E2el).map(|o| o.limit_ms).reduce(f64::min);
    let slots = gpus / tp;
    let rates: Vec<f64> = (0..slots).map(|n| if n == 0 { 0.0 } else { p.pool_rate_per_s(n, slos, extra_ms) }).collect();
    let mut best: Option<(f64, usize, usize, usize)> = None;
    for prefills in 1..slots {
        let decodes = slots - prefills;
        let rate = rates[prefills].min(decodes as f64 * d.requests_per_s);
        if rate <= 0.0 {
            continue;
        }
        // Fewer GPUs for the same rate: drop workers the other pool cannot feed.
        let prefills_needed = (1..=prefills).find(|&n| rates[n] >= rate * (1.0 - 1e-9)).unwrap_or(prefills);
        let decodes_needed = ((rate / d.requests_per_s) * (1.0 - 1e-9)).ceil().max(1.0) as usize;
        let (np, nd) = (prefills_needed, decodes_needed.min(decodes));
        let better = match best {
            None => true,
            Some((r, used, ..)) => rate > r * (1.0 + 1e-9) || ((rate - r).abs() <= 1e-9 * r && (np + nd) * tp < used),
        };
        if better {
            best = Some((rate, (np + nd) * tp, np, nd));
        }
    }
    let (rate, used, np, nd) = best?;
    // The decode workers run the batch the rate keeps in them, not their largest.
    let step = d.step_at(rate / nd as f64, output_len);
    let extra_ms = d.transfer_ms + step + router_latency_ms();
    // A request's cycle: its median prefill wait and iteration, the transfer, the decode steps.
    let cycle_ms = p.ttft_ms(np, rate, 50.0) + extra_ms + output_len.saturating_sub(2) as f64 * step;
    // Users come whole: the most the rate keeps, and the rate they keep.
    let users = (rate * cycle_ms / 1e3).floor().max(1.0);
    let rate = rate.min(users * 1e3 / cycle_ms);
    let percentile = first_ttft_percentile(slos).unwrap_or(50.0);
    let prefill_ttft = p.ttft_ms(np, rate, percentile);
    let ttft = prefill_ttft + extra_ms;
    if e2el.is_some_and(|limit| ttft + output_len.saturating_sub(1) as f64 * step > limit) {
        return None;
    }
    let tokens_per_s = rate * output_len as f64;
    Some(Deployment {
        architecture: Architecture::Disaggregated,
        label: format!("{np}p({}) + {nd}d({} at batch {})", p.candidate.label(), d.candidate.label(), d.batch),
        gpus_used: used,
        gpus,
        requests_per_s: rate,
        tokens_per_s,
        tokens_per_s_per_gpu: tokens_per_s / gpus as f64,
        tokens_per_s_per_user: 1e3 / step,
        ttft_ms: Some(ttft),
        users: users as usize,
        source: "estimate: prefill queue and decode steady state from the timing model, rate-matched",
        aggregated: None,
        prefill: Some(PrefillPool { worker: p.clone(), workers: np, ttft_ms: prefill_ttft }),
        decode: Some(DecodePool { worker: d.clone(), workers: nd }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(tp: usize) -> Candidate {
        serde_json::from_value(serde_json::json!({
            "engine": {"tp": tp, "fp8_weights": false, "fp8_kv_cache": false, "max_batch_size": 64, "max_num_tokens": 8192},
            "runtime": {"kv_fraction": 0.9, "block_reuse": true, "chunked_context": true, "scheduler": "guaranteed-no-evict"}
        }))
        .unwrap()
    }

    fn aggregated(tp: usize, requests_per_s: f64) -> AggregatedWorker {
        AggregatedWorker { candidate: candidate(tp), users: 8, requests_per_s, ttft_ms: 300.0, tpot_ms: 20.0 }
    }

    /// One prompt at a time, `ms` each.
    fn prefill(tp: usize, ms: f64) -> PrefillWorker {
        PrefillWorker { candidate: candidate(tp), batch: 1, batch_ms: ms, single_ms: ms }
    }

    fn decode(tp: usize, requests_per_s: f64) -> DecodeWorker {
        DecodeWorker {
            candidate: candidate(tp),
            batch: 32,
            step_ms: 20.0,
            transfer_ms: 5.0,
            requests_per_s,
            limited_by: "tpot",
            step_ms_by_batch: vec![20.0; 32],
        }
    }

    fn disaggregated_of(all: &[Deployment]) -> &Deployment {
        all.iter().find(|d| d.architecture == Architecture::Disaggregated).unwrap()
    }

    #[test]
    fn pools_are_sized_so_the_prefill_rate_matches_the_decode_rate() {
        let slos = SloSet::parse("ttft:p95:1000,tpot:p95:25").unwrap();
        // A prefill worker takes 100 ms a prompt (10 a second at most), a decode worker 5 requests
        // a second: on 8 GPUs the best split gives the decode pool what the prefill pool sends.
        let p = prefill(1, 100.0);
        let d = decode(1, 5.0);
        let all =
            best_deployments(8, 100, &slos, &[aggregated(1, 1.0)], std::slice::from_ref(&p), std::slice::from_ref(&d));
        let disagg = disaggregated_of(&all);
        let (np, nd) = (disagg.prefill.as_ref().unwrap().workers, disagg.decode.as_ref().unwrap().workers);
        let extra = d.transfer_ms + d.step_ms + router_latency_ms();
        let matched = |np: usize, nd: usize| p.pool_rate_per_s(np, &slos, extra).min(nd as f64 * d.requests_per_s);
        // The matched rate, less at most one user's share (users come whole).
        let best = matched(np, nd);
        let users = disagg.users as f64;
        assert!(disagg.requests_per_s <= best && disagg.requests_per_s >= best * (users - 1.0) / users, "{disagg:#?}");
        // No other split of the eight GPUs serves more.
        assert!((1..8).all(|n| matched(n, 8 - n) <= best * (1.0 + 1e-9)), "{disagg:#?}");
        assert!(disagg.requests_per_s > 20.0 && np + nd <= 8, "{disagg:#?}");
        assert!((disagg.tokens_per_s_per_gpu - disagg.requests_per_s * 100.0 / 8.0).abs() < 1e-9);
        // TTFT: the prefill pool's at the rate, the transfer, one decode step and the router.
        let prefill_ttft = p.ttft_ms(np, disagg.requests_per_s, 95.0);
        assert!((disagg.ttft_ms.unwrap() - (prefill_ttft + extra)).abs() < 1e-9);
        // Users: the rate over the request's cycle.
        assert!(disagg.users as f64 > disagg.requests_per_s * 99.0 * 0.020, "{disagg:#?}");
        assert_eq!(all[0].architecture, Architecture::Disaggregated, "{all:#?}");
        // Eight aggregated workers of 100 tokens/s each.
        let agg = all.iter().find(|d| d.architecture == Architecture::Aggregated).unwrap();
        assert_eq!((agg.aggregated.as_ref().unwrap().workers, agg.users), (8, 64));
        assert!((agg.tokens_per_s - 800.0).abs() < 1e-9);
    }

    #[test]
    fn the_transfer_and_first_step_count_against_the_ttft_objective() {
        let slos = SloSet::parse("ttft:p95:420").unwrap();
        // 400 ms of prefill + 25 ms is over 420 ms: no disaggregated deployment.
        let all = best_deployments(8, 100, &slos, &[aggregated(1, 1.0)], &[prefill(1, 400.0)], &[decode(1, 5.0)]);
        assert!(all.iter().all(|d| d.architecture == Architecture::Aggregated), "{all:#?}");
    }

    #[test]
    fn one_gpu_cannot_be_split_and_pools_use_no_more_gpus_than_they_need() {
        let slos = SloSet::parse("ttft:p95:1000").unwrap();
        let one = best_deployments(1, 100, &slos, &[aggregated(1, 1.0)], &[prefill(1, 10.0)], &[decode(1, 5.0)]);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].architecture, Architecture::Aggregated);
        // Five GPUs hold two TP-2 workers: one of each role, on four GPUs; two aggregated workers.
        let five = best_deployments(5, 100, &slos, &[aggregated(2, 2.0)], &[prefill(2, 300.0)], &[decode(2, 7.0)]);
        assert_eq!(five.len(), 2, "{five:#?}");
        assert!(five.iter().all(|d| d.gpus_used == 4 && d.gpus == 5));
        // A prefill worker far faster than the decode worker: the decode worker's rate.
        let fast = best_deployments(4, 100, &slos, &[aggregated(1, 0.1)], &[prefill(1, 10.0)], &[decode(1, 7.0)]);
        let disagg = disaggregated_of(&fast);
        assert!(disagg.requests_per_s <= 21.0 && disagg.requests_per_s > 20.0, "{disagg:#?}");
        assert_eq!((disagg.prefill.as_ref().unwrap().workers, disagg.decode.as_ref().unwrap().workers), (1, 3));
    }
}
