//! Per-role figures of a disaggregated deployment: a prefill worker's measured rate and TTFT under
//! the TTFT objectives (from its virtual-clock search), and a decode worker's steady state priced by
//! the GPU timing model.

use serde::Serialize;

use super::super::search::{Candidate, ConfigResult, SearchSpace, SloMetric, SloSet, WorkloadShape};
use crate::sim::perf_model::BatchWork;
use crate::sim::transfer::kv_transfer;
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

/// A prefill worker at its best load within the TTFT objectives, once `extra_ms` (the transfer and
/// the first decode step) is added to its measured TTFT.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrefillWorker {
    /// The configuration.
    pub candidate: Candidate,
    /// Its load point (`c4`).
    pub load: String,
    /// Context-only requests per second one worker completes there.
    pub requests_per_s: f64,
    /// Its TTFT at the first TTFT objective's percentile, ms (prefill only: queueing and compute).
    pub ttft_ms: f64,
}

impl PrefillWorker {
    /// The highest-rate point of `result` (a prefill configuration measured with one output token
    /// per request) whose every TTFT percentile plus `extra_ms` meets its objective in `slos`;
    /// `None` when no point does.
    pub fn best(result: &ConfigResult, slos: &SloSet, extra_ms: f64) -> Option<PrefillWorker> {
        let ttft: Vec<_> = slos.objectives().iter().filter(|o| o.metric == SloMetric::Ttft).collect();
        let first = ttft.first()?;
        result
            .points
            .iter()
            .filter(|p| p.failed == 0 && p.completed > 0)
            .filter(|p| ttft.iter().all(|o| p.percentiles.get(&o.key()).is_some_and(|v| v + extra_ms <= o.limit_ms)))
            .max_by(|a, b| a.request_throughput.total_cmp(&b.request_throughput))
            .map(|p| PrefillWorker {
                candidate: result.candidate,
                load: p.load.clone(),
                requests_per_s: p.request_throughput,
                ttft_ms: p.percentiles.get(&first.key()).copied().unwrap_or(f64::NAN),
            })
    }
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
}

/// The decode workers `space` can build for `shape` (configurations that cannot hold one request
/// are left out), each at its largest batch within `step_limit_ms` (the tightest TPOT or ITL
/// objective), KV arriving over `link`.
pub fn decode_workers(
    space: &SearchSpace,
    shape: &WorkloadShape,
    step_limit_ms: Option<f64>,
    link: &KvLinkChoice,
) -> Result<Vec<DecodeWorker>, crate::sim::SimError> {
    let (candidates, _) = space.candidates(shape)?;
    let mut workers = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        if let Some(worker) = decode_worker(space, &candidate, shape, step_limit_ms, link)? {
            workers.push(worker);
        }
    }
    Ok(workers)
}

fn decode_worker(
    space: &SearchSpace,
    candidate: &Candidate,
    shape: &WorkloadShape,
    step_limit_ms: Option<f64>,
    link: &KvLinkChoice,
) -> Result<Option<DecodeWorker>, crate::sim::SimError> {
    let perf = space.engine(candidate, shape)?.perf_model()?;
    let e = &candidate.engine;
    let reserve = perf.runtime_reserve_bytes(e.max_num_tokens, e.max_batch_size, 1);
    let capacity = perf.kv_capacity_tokens(candidate.runtime.kv_fraction, reserve)? as usize;
    // Under GUARANTEED_NO_EVICT each request reserves its whole prompt and output.
    let held = capacity / (shape.max_input_len + shape.max_output_len).max(1);
    let cap = e.max_batch_size.min(e.max_num_tokens).min(held);
    if cap == 0 {
        return Ok(None);
    }
    // The first token comes from the prefill worker: the decode worker runs the other output - 1
    // steps, over contexts from the prompt up (the mean, as the bench's prediction takes it).
    let steps = shape.max_output_len.saturating_sub(1).max(1);
    let context = shape.max_input_len as f64 + steps.saturating_sub(1) as f64 / 2.0;
    let mut work = BatchWork::default();
    let mut best: Option<(usize, f64)> = None;
    for b in 1..=cap {
        work.add_generation(context, 1.0);
        let step_ms = perf.iteration(&work).total_ms;
        if step_limit_ms.is_some_and(|limit| step_ms > limit) {
            break;
        }
        best = Some((b, step_ms));
    }
    let Some((batch, step_ms)) = best else { return Ok(None) };
    let limited_by = if batch == cap { if cap == held { "kv cache" } else { "max_batch_size" } } else { "tpot" };
    let transfer_ms = link.transfer_ms(shape.max_input_len, perf.kv_bytes_per_token_per_gpu());
    let requests_per_s = batch as f64 * 1e3 / (transfer_ms + steps as f64 * step_ms);
    Ok(Some(DecodeWorker { candidate: *candidate, batch, step_ms, transfer_ms, requests_per_s, limited_by }))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::bench::search::{PercentileTable, PointResult, SchedulerChoice};

    fn space() -> SearchSpace {
        SearchSpace {
            model: crate::sim::ModelPreset::by_id("llama-3.1-8b").unwrap().clone(),
            gpu: "h100-sxm".into(),
            gpu_overrides: BTreeMap::new(),
            tp: vec![1],
            ep: vec![1],
            try_fp8: false,
            max_batch_size: vec![256],
            max_num_tokens: vec![8192],
            kv_fraction: vec![0.9],
            block_reuse: vec![true],
            chunked_context: vec![true],
            scheduler: vec![SchedulerChoice::GuaranteedNoEvict],
        }
    }

    const SHAPE: WorkloadShape =
        WorkloadShape { min_input_len: 2000, max_input_len: 2000, max_output_len: 200, shared_prefixes: false };

    #[test]
    fn a_tighter_tpot_decodes_smaller_batches_and_a_slower_link_holds_slots_longer() {
        let nvlink = KvLinkChoice::new(KvLinkPreset::NvLink4);
        let loose = decode_workers(&space(), &SHAPE, Some(60.0), &nvlink).unwrap();
        let tight = decode_workers(&space(), &SHAPE, Some(12.0), &nvlink).unwrap();
        assert_eq!((loose.len(), tight.len()), (1, 1));
        let (loose, tight) = (&loose[0], &tight[0]);
        assert!(tight.batch < loose.batch && tight.step_ms <= 12.0, "{tight:?} {loose:?}");
        assert_eq!(tight.limited_by, "tpot");
        assert!(loose.requests_per_s > tight.requests_per_s);
        let eth = KvLinkChoice::new(KvLinkPreset::Eth100);
        let slow = &decode_workers(&space(), &SHAPE, Some(12.0), &eth).unwrap()[0];
        assert_eq!(slow.batch, tight.batch);
        assert!(slow.transfer_ms > 10.0 * tight.transfer_ms && slow.requests_per_s < tight.requests_per_s);
        // No batch meets an impossible objective.
        assert!(decode_workers(&space(), &SHAPE, Some(0.5), &nvlink).unwrap().is_empty());
    }

    #[test]
    fn the_prefill_rate_is_the_best_point_whose_ttft_plus_the_rest_meets_the_objective() {
        let (candidates, _) = space().candidates(&SHAPE).unwrap();
        let point = |load: &str, rate: f64, ttft: f64| PointResult {
            load: load.into(),
            completed: 10,
            failed: 0,
            request_throughput: rate,
            output_throughput: rate,
            tokens_per_s_per_gpu: rate,
            tokens_per_s_per_user: 0.0,
            percentiles: PercentileTable::from([("p95_ttft_ms".to_string(), ttft)]),
            violations: vec![],
            simulated_s: 1.0,
            wall_s: 0.0,
            lost_statistics: 0,
        };
        let result = ConfigResult {
            key: candidates[0].key(),
            study: serde_json::Value::Null,
            candidate: candidates[0],
            points: vec![point("c1", 5.0, 200.0), point("c2", 9.0, 380.0), point("c4", 12.0, 700.0)],
            error: None,
            wall_s: 0.0,
        };
        let slos = SloSet::parse("ttft:p95:500,tpot:p95:20").unwrap();
        assert_eq!(PrefillWorker::best(&result, &slos, 0.0).unwrap().load, "c2");
        assert_eq!(PrefillWorker::best(&result, &slos, 150.0).unwrap().load, "c1");
        assert!(PrefillWorker::best(&result, &slos, 400.0).is_none());
        assert!(PrefillWorker::best(&result, &SloSet::parse("tpot:p95:20").unwrap(), 0.0).is_none());
    }
}
