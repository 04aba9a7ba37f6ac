//! The fast estimate of an aggregated worker: closed-loop users in their steady state, each
//! iteration carrying the decode steps of the requests past their prompt and its share of the
//! prompts (in-flight batching), priced by the GPU timing model.
//!
//! At a rate of `r` requests with prompts of `I` tokens and `O` output tokens, every iteration
//! of mean length `t` carries `r (O - 1) t` decode rows and `r I t` prompt tokens (whole prompts,
//! or chunks of what max_num_tokens leaves beside the decode rows): on average a fraction of a
//! prompt, so iterations alternate between those without one and those with one more. TPOT is the
//! mean iteration; TTFT the rest of the iteration in flight, the prefill iterations and the wait
//! for the token budget (a queue whose server is the budget); the users are the rate times the
//! request's cycle (Little's law). The highest rate within the SLOs is the estimate.

use serde::Serialize;

use super::super::search::{Candidate, SloSet, WorkloadShape};
use super::estimate::{WorkerModel, meets, queue_wait_ms, router_latency_ms};
use crate::sim::perf_model::BatchWork;

/// An aggregated worker at the load of its most goodput within the SLOs, estimated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AggregatedWorker {
    /// The configuration.
    pub candidate: Candidate,
    /// Closed-loop users of one worker.
    pub users: usize,
    /// Requests per second one worker completes.
    pub requests_per_s: f64,
    /// Mean TTFT, ms.
    pub ttft_ms: f64,
    /// Mean TPOT, ms.
    pub tpot_ms: f64,
}

/// A steady state at one request rate.
#[derive(Debug, Clone, Copy)]
struct Steady {
    /// Closed-loop users that keep the rate (Little's law over the cycle).
    users: f64,
    ttft_mean_ms: f64,
    /// The TTFT's parts that do not depend on the percentile: the prefill iterations.
    prefill_ms: f64,
    /// The mean iteration (the residual an arrival waits for is up to one).
    iteration_ms: f64,
    /// The token budget as a queue: its service per prompt and the prompts' arrival rate, per ms.
    queue: (f64, f64),
    tpot: (f64, f64),
    itl: (f64, f64, f64),
}

impl Steady {
    fn ttft_at(&self, percentile: f64) -> f64 {
        let (service_ms, rate_per_ms) = self.queue;
        percentile / 100.0 * self.iteration_ms + self.prefill_ms + queue_wait_ms(1, service_ms, rate_per_ms, percentile)
    }
}

impl AggregatedWorker {
    /// `model`'s worker on prompts of `shape` and `output_len` tokens out at the highest request
    /// rate whose estimated latencies meet `slos` with no more users than the engine batches;
    /// `None` when no rate does.
    pub fn estimate(model: &WorkerModel, shape: &WorkloadShape, output_len: usize, slos: &SloSet) -> Option<Self> {
        let e = &model.candidate().engine;
        let cap = e.max_batch_size.min(model.requests_held(shape.max_input_len + output_len)) as f64;
        let ok = |rate_per_ms: f64| {
            steady(model, shape, output_len, rate_per_ms)
                .filter(|s| s.users <= cap && meets(slos, |p| s.ttft_at(p), s.tpot, s.itl, output_len))
        };
        // Latencies grow with the rate: the highest rate that meets them, by bisection.
        let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
        let mut best = None;
        for _ in 0..30 {
            let mid = 0.5 * (lo + hi);
            match ok(mid) {
                Some(s) => {
                    lo = mid;
                    best = Some(s);
                }
                None => hi = mid,
            }
        }
        // Users come whole: the most within the SLOs, and the rate they keep.
        let users = best?.users.floor();
        if users < 1.0 {
            return None;
        }
        let (mut below, mut above) = (0.0, lo);
        for _ in 0..30 {
            let mid = 0.5 * (below + above);
            match steady(model, shape, output_len, mid) {
                Some(s) if s.users <= users => below = mid,
                _ => above = mid,
            }
        }
        let s = steady(model, shape, output_len, below)?;
        Some(AggregatedWorker {
            candidate: *model.candidate(),
            users: users as usize,
            requests_per_s: below * 1e3,
            ttft_ms: s.ttft_mean_ms,
            tpot_ms: s.tpot.0,
        })
    }
}

/// The steady state at `rate_per_ms` requests a millisecond (`None` past saturation: the decode
/// rows and prompts no longer fit the token budget, or the iterations grow without bound).
///
/// Each request decodes for `O - 1` iterations, so `rate × (O - 1) × t` requests decode in every
/// iteration of mean length `t`, beside `rate × I × t` prompt tokens; `t` is the fixed point of
/// the timing model's iteration over that work.
fn steady(model: &WorkerModel, shape: &WorkloadShape, output_len: usize, rate_per_ms: f64) -> Option<Steady> {
    let e = &model.candidate().engine;
    let chunked = model.candidate().runtime.chunked_context;
    let prompt = (shape.min_input_len + shape.max_input_len) as f64 / 2.0;
    let steps = output_len.saturating_sub(1) as f64;
    let context = prompt + steps.max(1.0) / 2.0;
    let mut t = model.iteration_ms(BatchWork::default().add_generation(context, 1.0));
    for _ in 0..200 {
        let rows = rate_per_ms * steps * t;
        let budget = e.max_num_tokens as f64 - rows.ceil();
        if budget < 1.0 || (!chunked && budget < prompt) {
            return None;
        }
        // A prompt goes in whole, or in chunks of what the budget leaves.
        let unit = prompt.min(budget);
        let units_per_prompt = prompt / unit;
        let past = if units_per_prompt > 1.0 { (prompt - unit) / 2.0 } else { 0.0 };
        let max_units = (budget / unit).floor().max(1.0);
        let units = rate_per_ms * units_per_prompt * t;
        if units >= max_units {
            return None;
        }
        let (whole, share) = (units.floor(), units - units.floor());
        let iteration = |k: f64| {
            let mut work = BatchWork::default();
            if rows > 0.0 {
                work.add_generation(context, rows);
            }
            for _ in 0..k as usize {
                work.add_context(unit, past, true);
            }
            model.iteration_ms(&work)
        };
        let (lo, hi) = (iteration(whole), iteration(whole + 1.0));
        let mean = (1.0 - share) * lo + share * hi;
        if (mean - t).abs() > 1e-6 * t {
            t = mean;
            continue;
        }
        // Prompts queue for the budget: each takes its units' share of a mean iteration.
        let service = mean * units_per_prompt / max_units;
        let rho = service * rate_per_ms;
        let prefill_ms = units_per_prompt.ceil() * hi;
        let ttft_mean_ms = mean / 2.0 + prefill_ms + rho * service / (2.0 * (1.0 - rho));
        // A request never decodes beside its own prompt: of `c` users' prompts it meets the
        // other users', `1 - 1 / c` of the mean share (`c` being the rate over the cycle).
        let (mut seen, mut cycle) = (share, 0.0);
        for _ in 0..20 {
            cycle = ttft_mean_ms + steps * (lo + seen * (hi - lo)) + router_latency_ms();
            seen = share * (1.0 - 1.0 / (rate_per_ms * cycle).max(1.0));
        }
        let tpot = lo + seen * (hi - lo);
        let spread = if steps > 0.0 { (hi - lo) * (seen * (1.0 - seen) / steps).sqrt() } else { 0.0 };
        return Some(Steady {
            users: rate_per_ms * cycle,
            ttft_mean_ms,
            prefill_ms,
            iteration_ms: mean,
            queue: (service, rate_per_ms),
            tpot: (tpot, spread),
            itl: (lo, hi, share),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{SHAPE, space};
    use super::*;

    fn worker(slo: &str, shape: &WorkloadShape) -> Option<AggregatedWorker> {
        let s = space();
        let (candidates, _) = s.candidates(shape).unwrap();
        AggregatedWorker::estimate(
            &WorkerModel::new(&s, &candidates[0], shape).unwrap(),
            shape,
            200,
            &SloSet::parse(slo).unwrap(),
        )
    }

    #[test]
    fn a_tighter_tpot_admits_fewer_users_and_long_prompts_slow_every_decode_step() {
        let loose = worker("ttft:p95:2000,tpot:p95:60", &SHAPE).unwrap();
        let tight = worker("ttft:p95:2000,tpot:p95:15", &SHAPE).unwrap();
        assert!(tight.users < loose.users && tight.requests_per_s < loose.requests_per_s, "{tight:?} {loose:?}");
        assert!(tight.tpot_ms <= 15.0 && loose.tpot_ms <= 60.0);
        // Prompts share the decode iterations: the mean step is longer than a decode-only one.
        let s = space();
        let (candidates, _) = s.candidates(&SHAPE).unwrap();
        let model = WorkerModel::new(&s, &candidates[0], &SHAPE).unwrap();
        assert!(tight.tpot_ms > model.decode_step_ms(tight.users, 2100.0), "{tight:?}");
        let short = WorkloadShape { min_input_len: 200, max_input_len: 200, ..SHAPE };
        let quick = worker("ttft:p95:2000,tpot:p95:15", &short).unwrap();
        assert!(quick.users > tight.users, "{quick:?} {tight:?}");
        // An objective no load meets.
        assert!(worker("ttft:p95:1,tpot:p95:15", &SHAPE).is_none());
    }
}
