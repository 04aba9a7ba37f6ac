//! The fast estimate of a budget's deployments, from the GPU timing model alone: each candidate's
//! engine resolved once ([`WorkerModel`]), the link between the pools ([`KvLinkChoice`]), a decode
//! worker's steady state ([`DecodeWorker`]) and a prefill worker's prompts and queue
//! ([`PrefillWorker`]). The aggregated worker's steady state is in `aggregated.rs`.

use std::time::Duration;

use serde::Serialize;

use super::super::search::{Candidate, SearchSpace, SloMetric, SloSet, WorkloadShape};
use crate::sim::perf_model::BatchWork;
use crate::sim::transfer::kv_transfer;
use crate::sim::{PerfModel, SimulatedEngine};
use crate::{KvLink, KvLinkPreset};

/// The link between the prefill and the decode pool: a preset of the simulator's, by name.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct KvLinkChoice {
    /// The preset (`nvlink4`, `ib-400`, `eth-100`, ...).
    pub preset: KvLinkPreset,
    /// Its figures.
    pub link: KvLink,
}

impl KvLinkChoice {
    /// The preset's link.
    pub fn new(preset: KvLinkPreset) -> Self {
        KvLinkChoice { preset, link: preset.link() }
    }

    /// The link between workers on one node of `gpu`: its preset's interconnect (NVLink 4 on
    /// H100/H200 SXM, NVLink 3 on A100 SXM, PCIe Gen5 or Gen4 otherwise).
    pub fn default_for(gpu: &crate::sim::GpuPreset) -> Self {
        let preset = match gpu.interconnect.as_str() {
            "NVLink 4" => KvLinkPreset::NvLink4,
            "NVLink 3" => KvLinkPreset::NvLink3,
            i if i.starts_with("PCIe 5") => KvLinkPreset::Pcie5,
            _ => KvLinkPreset::Pcie4,
        };
        KvLinkChoice::new(preset)
    }

    /// How long one prompt's KV cache takes to cross the link, ms: each rank moves its slice of
    /// `prompt_tokens` at `kv_bytes_per_token_per_gpu` (the simulator's one transfer formula).
    pub fn transfer_ms(&self, prompt_tokens: usize, kv_bytes_per_token_per_gpu: f64) -> f64 {
        kv_transfer(prompt_tokens as u64, kv_bytes_per_token_per_gpu, None, &self.link).ms
    }
}

/// One candidate's engine, resolved once for the whole plan: the engine the confirming runs
/// write, its timing model and its KV cache, asked by every estimate instead of being described
/// again.
#[derive(Debug, Clone)]
pub struct WorkerModel {
    candidate: Candidate,
    engine: SimulatedEngine,
    perf: PerfModel,
    kv_capacity_tokens: usize,
}

impl WorkerModel {
    /// Resolves `candidate` of `space` for `shape`; fails as the simulator would refuse to load it.
    pub fn new(
        space: &SearchSpace,
        candidate: &Candidate,
        shape: &WorkloadShape,
    ) -> Result<Self, crate::sim::SimError> {
        let engine = space.engine(candidate, shape)?;
        let perf = engine.perf_model()?;
        let e = &candidate.engine;
        let reserve = perf.runtime_reserve_bytes(e.max_num_tokens, e.max_batch_size, 1);
        let kv_capacity_tokens = perf.kv_capacity_tokens(candidate.runtime.kv_fraction, reserve)? as usize;
        Ok(WorkerModel { candidate: *candidate, engine, perf, kv_capacity_tokens })
    }

    /// The configuration.
    pub fn candidate(&self) -> &Candidate {
        &self.candidate
    }

    /// The engine every worker of this configuration loads.
    pub fn engine(&self) -> &SimulatedEngine {
        &self.engine
    }

    /// Its timing model.
    pub fn perf(&self) -> &PerfModel {
        &self.perf
    }

    /// Requests of `tokens` tokens (prompt and output) the KV cache holds at once, as
    /// GUARANTEED_NO_EVICT reserves them.
    pub fn requests_held(&self, tokens: usize) -> usize {
        self.kv_capacity_tokens / tokens.max(1)
    }

    /// One iteration of `work`, ms.
    pub fn iteration_ms(&self, work: &BatchWork) -> f64 {
        self.perf.iteration(work).total_ms
    }

    /// A lower bound on any iteration that produces a token: one generation row at the shortest
    /// context, with or without CUDA graphs, with a tenth off for rounding.
    pub fn min_iteration(&self) -> Duration {
        let mut work = BatchWork::default();
        work.add_generation(1.0, 1.0);
        let ms = [self.perf.clone().with_cuda_graphs(false), self.perf.clone().with_cuda_graphs(true)]
            .iter()
            .map(|m| m.iteration(&work).total_ms)
            .fold(f64::INFINITY, f64::min);
        Duration::from_secs_f64((0.9 * ms).max(0.0) / 1e3)
    }

    /// One decode step of `batch` requests at a mean context of `context` tokens, ms.
    pub fn decode_step_ms(&self, batch: usize, context: f64) -> f64 {
        let mut work = BatchWork::default();
        for _ in 0..batch {
            work.add_generation(context, 1.0);
        }
        self.iteration_ms(&work)
    }
}

/// The router's latency between a worker's final and the next worker (or the user's next
/// request): an in-process hand-off, in the estimates as in the confirming runs.
pub const ROUTER_LATENCY: Duration = Duration::from_micros(100);

/// [`ROUTER_LATENCY`] in ms.
pub(super) fn router_latency_ms() -> f64 {
    ROUTER_LATENCY.as_secs_f64() * 1e3
}

/// The standard normal quantile of a percentile objective (p50: 0, p95: 1.645): how many standard
/// deviations above the mean an estimate of that percentile lies.
pub(super) fn normal_quantile(percentile: f64) -> f64 {
    // Acklam's rational approximation of the inverse normal CDF, central region and tails.
    let p = (percentile / 100.0).clamp(1e-6, 1.0 - 1e-6);
    let a = [
        -39.696_830_286_653_76,
        220.946_098_424_520_5,
        -275.928_510_446_968_7,
        138.357_751_867_269,
        -30.664_798_066_147_16,
        2.506_628_277_459_239,
    ];
    let b = [
        -54.476_098_798_224_06,
        161.585_836_858_040_9,
        -155.698_979_859_886_6,
        66.801_311_887_719_72,
        -13.280_681_552_885_72,
    ];
    let c = [
        -0.007_784_894_002_430_293,
        -0.322_396_458_041_136_4,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    let d = [0.007_784_695_709_041_462, 0.322_467_129_070_039_8, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let tail = |q: f64| {
        (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
            / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
    }
}

/// The `percentile`-th percentile of the wait of a request at a pool of `servers` servers, each
/// serving one request in `service_ms`, at `rate_per_ms` arrivals (Poisson): the Erlang C
/// probability of waiting, and an exponential tail at twice the M/M/c decay, as deterministic
/// service halves the mean wait. Infinite at or past saturation.
pub(super) fn queue_wait_ms(servers: usize, service_ms: f64, rate_per_ms: f64, percentile: f64) -> f64 {
    let c = servers.max(1) as f64;
    let offered = rate_per_ms * service_ms;
    if offered >= c {
        return f64::INFINITY;
    }
    if offered <= 0.0 {
        return 0.0;
    }
    // Erlang C by the Erlang B recursion.
    let mut erlang_b = 1.0;
    for k in 1..=servers.max(1) {
        erlang_b = offered * erlang_b / (k as f64 + offered * erlang_b);
    }
    let rho = offered / c;
    let waits = erlang_b / (1.0 - rho + rho * erlang_b);
    let beyond = 1.0 - percentile / 100.0;
    if waits <= beyond {
        return 0.0;
    }
    let decay_per_ms = 2.0 * (c / service_ms - rate_per_ms);
    (waits / beyond).ln() / decay_per_ms
}

/// Whether estimated latencies meet every objective of `slos` (`ttft_p` gives the TTFT at a
/// percentile).
pub(super) fn meets(
    slos: &SloSet,
    ttft_p: impl Fn(f64) -> f64,
    tpot: (f64, f64),
    itl: (f64, f64, f64),
    output_len: usize,
) -> bool {
    slos.objectives().iter().all(|o| {
        let z = normal_quantile(o.percentile);
        let tpot_p = tpot.0 + z * tpot.1;
        let value = match o.metric {
            SloMetric::Ttft => ttft_p(o.percentile),
            SloMetric::Tpot => tpot_p,
            SloMetric::Itl => {
                if itl.2 > 1.0 - o.percentile / 100.0 {
                    itl.1
                } else {
                    itl.0
                }
            }
            SloMetric::E2el => ttft_p(o.percentile) + output_len.saturating_sub(1) as f64 * tpot_p,
        };
        value <= o.limit_ms
    })
}

/// A decode worker's steady state: the largest batch whose decode step, at the mean context of a
/// request over its decode, meets the TPOT and ITL objectives, each request holding its slot for
/// the KV transfer and its decode steps.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecodeWorker {
    /// The configuration (its max_batch_size caps the batch).
    pub candidate: Candidate,
    /// Requests decoding together.
    pub batch: usize,
    /// One decode step of that batch, ms (the timing model's).
    pub step_ms: f64,
    /// The KV transfer of one prompt into this worker, ms.
    pub transfer_ms: f64,
    /// Requests per second one worker finishes.
    pub requests_per_s: f64,
    /// Why the batch is not larger (`tpot`, `kv cache`, `max_batch_size`).
    pub limited_by: &'static str,
    /// One decode step of `b + 1` requests, ms, by `b` (up to `batch`).
    #[serde(skip)]
    pub step_ms_by_batch: Vec<f64>,
}

impl DecodeWorker {
    /// `model`'s decode worker for `shape` (`None` when it cannot hold one request or no batch
    /// meets `step_limit_ms`, the tightest TPOT or ITL objective), KV arriving over `link`.
    pub fn estimate(
        model: &WorkerModel,
        shape: &WorkloadShape,
        step_limit_ms: Option<f64>,
        link: &KvLinkChoice,
    ) -> Option<DecodeWorker> {
        let e = &model.candidate().engine;
        // Under GUARANTEED_NO_EVICT each request reserves its whole prompt and output.
        let held = model.requests_held(shape.max_input_len + shape.max_output_len);
        let cap = e.max_batch_size.min(e.max_num_tokens).min(held);
        if cap == 0 {
            return None;
        }
        // The first token comes from the prefill worker: the decode worker runs the other output - 1
        // steps, over contexts from the prompt up (the mean, as the bench's prediction takes it).
        let steps = shape.max_output_len.saturating_sub(1).max(1);
        let context = shape.max_input_len as f64 + steps.saturating_sub(1) as f64 / 2.0;
        let mut work = BatchWork::default();
        let mut step_ms_by_batch = Vec::new();
        for _ in 1..=cap {
            work.add_generation(context, 1.0);
            let step_ms = model.iteration_ms(&work);
            if step_limit_ms.is_some_and(|limit| step_ms > limit) {
                break;
            }
            step_ms_by_batch.push(step_ms);
        }
        let (batch, step_ms) = (step_ms_by_batch.len(), *step_ms_by_batch.last()?);
        let limited_by = if batch == cap { if cap == held { "kv cache" } else { "max_batch_size" } } else { "tpot" };
        let transfer_ms = link.transfer_ms(shape.max_input_len, model.perf().kv_bytes_per_token_per_gpu());
        let requests_per_s = batch as f64 * 1e3 / (transfer_ms + steps as f64 * step_ms);
        Some(DecodeWorker {
            candidate: *model.candidate(),
            batch,
            step_ms,
            transfer_ms,
            requests_per_s,
            limited_by,
            step_ms_by_batch,
        })
    }

    /// The decode step at `rate_per_s` requests a second into one worker, ms: its requests
    /// decoding at once are the rate times each one's stay (the transfer and its decode steps,
    /// Little's law), solved with the step they make.
    pub fn step_at(&self, rate_per_s: f64, output_len: usize) -> f64 {
        let steps = output_len.saturating_sub(1).max(1) as f64;
        let step_of = |batch: f64| {
            let b = batch.clamp(1.0, self.step_ms_by_batch.len().max(1) as f64);
            let (i, share) = (b.floor() as usize, b - b.floor());
            let at = |k: usize| self.step_ms_by_batch.get(k.max(1) - 1).copied().unwrap_or(self.step_ms);
            at(i) + share * (at(i + 1) - at(i))
        };
        let mut step = step_of(1.0);
        for _ in 0..100 {
            let next = step_of(rate_per_s / 1e3 * (self.transfer_ms + steps * step));
            if (next - step).abs() <= 1e-9 * step {
                break;
            }
            step = next;
        }
        step
    }
}

/// A prefill worker's prompts: how many one iteration takes at most (within max_num_tokens and
/// max_batch_size), how long that iteration and a lone prompt's prefill take. Its rate and TTFT
/// depend on the pool it serves in: requests arrive from a router, and queue ([`PrefillWorker::ttft_ms`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefillWorker {
    /// The configuration.
    pub candidate: Candidate,
    /// Prompts one iteration prefills at most.
    pub batch: usize,
    /// That iteration, ms (a prompt longer than max_num_tokens: all its chunks).
    pub batch_ms: f64,
    /// One prompt alone, ms.
    pub single_ms: f64,
}

impl PrefillWorker {
    /// `model`'s prefill worker for prompts of `shape` (`None` when a prompt cannot be scheduled).
    pub fn estimate(model: &WorkerModel, shape: &WorkloadShape) -> Option<PrefillWorker> {
        let e = &model.candidate().engine;
        let r = &model.candidate().runtime;
        let prompt = shape.max_input_len;
        if (prompt > e.max_num_tokens && !r.chunked_context) || model.requests_held(prompt + 1) == 0 {
            return None;
        }
        let tokens_per_block = 32;
        let single_ms = model.perf().ttft_ms(prompt, e.max_num_tokens, tokens_per_block);
        let batch =
            (e.max_num_tokens / prompt.max(1)).clamp(1, e.max_batch_size.max(1)).min(model.requests_held(prompt + 1));
        let batch_ms = if batch <= 1 {
            single_ms
        } else {
            let mut work = BatchWork::default();
            for _ in 0..batch {
                work.add_context(prompt as f64, 0.0, true);
            }
            model.iteration_ms(&work)
        };
        Some(PrefillWorker { candidate: *model.candidate(), batch, batch_ms, single_ms })
    }

    /// Prompts per second one worker prefills at most.
    pub fn capacity_per_s(&self) -> f64 {
        self.batch as f64 * 1e3 / self.batch_ms
    }

    /// The TTFT at `percentile` of a pool of `workers` such workers fed `rate_per_s` prompts a
    /// second: the queue's wait (Erlang C, each worker serving a prompt in its share of a
    /// full iteration) and the iteration that prefills it.
    pub fn ttft_ms(&self, workers: usize, rate_per_s: f64, percentile: f64) -> f64 {
        let service_ms = self.batch_ms / self.batch as f64;
        let wait = queue_wait_ms(workers, service_ms, rate_per_s / 1e3, percentile);
        // Under load the prompt shares its iteration; alone it runs by itself.
        let load = (rate_per_s / (workers as f64 * self.capacity_per_s())).clamp(0.0, 1.0);
        wait + self.single_ms + load * (self.batch_ms - self.single_ms)
    }

    /// The most prompts a second a pool of `workers` takes with every TTFT objective of `slos`
    /// met once `extra_ms` (the transfer and the first decode step) is added.
    pub fn pool_rate_per_s(&self, workers: usize, slos: &SloSet, extra_ms: f64) -> f64 {
        let ttft: Vec<_> = slos.objectives().iter().filter(|o| o.metric == SloMetric::Ttft).collect();
        let ok = |rate: f64| ttft.iter().all(|o| self.ttft_ms(workers, rate, o.percentile) + extra_ms <= o.limit_ms);
        let (mut lo, mut hi) = (0.0, workers as f64 * self.capacity_per_s());
        if !ok(1e-9) {
            return 0.0;
        }
        for _ in 0..40 {
            let mid = 0.5 * (lo + hi);
            if ok(mid) { lo = mid } else { hi = mid }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{SHAPE, space};
    use super::*;

    fn decode_workers(
        space: &SearchSpace,
        shape: &WorkloadShape,
        limit: Option<f64>,
        link: &KvLinkChoice,
    ) -> Vec<DecodeWorker> {
        let (candidates, _) = space.candidates(shape).unwrap();
        candidates
            .iter()
            .filter_map(|c| DecodeWorker::estimate(&WorkerModel::new(space, c, shape).unwrap(), shape, limit, link))
            .collect()
    }

    #[test]
    fn a_tighter_tpot_decodes_smaller_batches_and_a_slower_link_holds_slots_longer() {
        let nvlink = KvLinkChoice::new(KvLinkPreset::NvLink4);
        let loose = decode_workers(&space(), &SHAPE, Some(60.0), &nvlink);
        let tight = decode_workers(&space(), &SHAPE, Some(12.0), &nvlink);
        assert_eq!((loose.len(), tight.len()), (1, 1));
        let (loose, tight) = (&loose[0], &tight[0]);
        assert!(tight.batch < loose.batch && tight.step_ms <= 12.0, "{tight:?} {loose:?}");
        assert_eq!(tight.limited_by, "tpot");
        assert!(loose.requests_per_s > tight.requests_per_s);
        let eth = KvLinkChoice::new(KvLinkPreset::Eth100);
        let slow = &decode_workers(&space(), &SHAPE, Some(12.0), &eth)[0];
        assert_eq!(slow.batch, tight.batch);
        assert!(slow.transfer_ms > 10.0 * tight.transfer_ms && slow.requests_per_s < tight.requests_per_s);
        // No batch meets an impossible objective.
        assert!(decode_workers(&space(), &SHAPE, Some(0.5), &nvlink).is_empty());
    }

    #[test]
    fn a_prefill_pool_takes_less_than_its_capacity_and_less_still_under_a_tighter_ttft() {
        let s = space();
        let (candidates, _) = s.candidates(&SHAPE).unwrap();
        let p = PrefillWorker::estimate(&WorkerModel::new(&s, &candidates[0], &SHAPE).unwrap(), &SHAPE).unwrap();
        // 2,000-token prompts, 8,192 tokens an iteration: four prompts at once.
        assert_eq!(p.batch, 4);
        assert!(p.batch_ms > p.single_ms && p.batch_ms < 4.0 * p.single_ms, "{p:?}");
        let loose = SloSet::parse("ttft:p95:2000").unwrap();
        let tight = SloSet::parse("ttft:p95:300").unwrap();
        let one = p.pool_rate_per_s(1, &loose, 0.0);
        assert!(one > 0.5 * p.capacity_per_s() && one < p.capacity_per_s(), "{one} of {}", p.capacity_per_s());
        assert!(p.pool_rate_per_s(1, &tight, 0.0) < one);
        // Two workers behind one queue take more than twice one's rate at the same TTFT.
        assert!(p.pool_rate_per_s(2, &tight, 0.0) > 2.0 * p.pool_rate_per_s(1, &tight, 0.0));
        // The transfer and first step count against the objective.
        assert_eq!(p.pool_rate_per_s(1, &tight, 300.0), 0.0);
    }

    #[test]
    fn the_queue_waits_more_near_saturation_and_never_past_it() {
        assert_eq!(queue_wait_ms(1, 10.0, 0.001, 95.0), 0.0);
        let half = queue_wait_ms(1, 10.0, 0.05, 95.0);
        let near = queue_wait_ms(1, 10.0, 0.095, 95.0);
        assert!(half > 0.0 && near > 5.0 * half, "{half} {near}");
        assert!(queue_wait_ms(1, 10.0, 0.1, 95.0).is_infinite());
        assert!((normal_quantile(95.0) - 1.6449).abs() < 1e-3 && normal_quantile(50.0).abs() < 1e-9);
    }
}
