//! Confirming a deployment on the virtual clock: its workers as simulated executors on one
//! timeline ([`run_cosim`]), closed-loop users placed by a router, and the goodput that run
//! measures beside the estimate that chose it.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::super::search::{Candidate, PointResult, SearchSpace, Study};
use super::cosim::{CoSimError, CoSimPlan, PoolSpec, run_cosim};
use super::deploy::Deployment;
use super::estimate::KvLinkChoice;
use crate::{CacheTransceiverConfig, ExecutorConfig};

/// The router's latency between a worker's final and the next worker (or the user's next
/// request): an in-process hand-off.
pub const ROUTER_LATENCY: Duration = Duration::from_micros(100);

/// Load steps tried below the estimate's when a run misses an SLO: each takes this share of the
/// users of the one before.
const BACKOFF: f64 = 0.85;

/// Runs tried at most.
const TRIES: usize = 3;

/// Measured requests per user at least: the steady window (every user past its first measured
/// request and none past its last) then spans about this many request cycles less one.
const STEADY_REQUESTS_PER_USER: usize = 3;

/// A deployment's virtual-clock run beside its estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Confirmation {
    /// Closed-loop users of the run (the estimate's rate times its request cycle, or fewer when that
    /// missed an SLO).
    pub users: usize,
    /// The run's figures (goodput per GPU of the budget).
    pub point: PointResult,
    /// The estimate's output tokens/s per GPU.
    pub estimate_tokens_per_s_per_gpu: f64,
    /// Measured over estimated goodput.
    pub ratio: f64,
    /// Runs tried (each with fewer users than the one before).
    pub tries: usize,
    /// Wall-clock seconds of the runs.
    pub wall_s: f64,
}

impl Confirmation {
    /// Goodput per GPU the run measured (0 when it missed an SLO).
    pub fn goodput_tokens_per_s_per_gpu(&self) -> f64 {
        if self.point.meets_slos() { self.point.tokens_per_s_per_gpu } else { 0.0 }
    }
}

/// Runs `deployment` on the virtual clock: its engines built under `root`, users enough to keep its
/// estimated rate over its request cycle (Little's law), fewer when that misses an SLO.
pub async fn confirm(
    space: &SearchSpace,
    study: &Study,
    root: &Path,
    link: &KvLinkChoice,
    deployment: &Deployment,
) -> Result<Confirmation, CoSimError> {
    let started = std::time::Instant::now();
    let mut dirs = Vec::new();
    let mut engine = |candidate: &Candidate| -> Result<std::path::PathBuf, CoSimError> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("confirm-{}-", candidate.key()))
            .tempdir_in(root)
            .map_err(|e| CoSimError::Plan(format!("creating an engine directory in {}: {e}", root.display())))?;
        let engine = space.engine(candidate, &study.shape).map_err(|e| CoSimError::Plan(e.to_string()))?;
        engine.write_to(dir.path()).map_err(|e| CoSimError::Plan(format!("writing the engine: {e}")))?;
        let path = dir.path().to_path_buf();
        dirs.push(dir);
        Ok(path)
    };
    let transceiver = |c: &Candidate| ExecutorConfig {
        cache_transceiver: Some(CacheTransceiverConfig::new()),
        sim_kv_link: Some(link.link),
        ..c.runtime.apply(ExecutorConfig::default())
    };
    let output_len = study.workload.output_len.map_or(study.shape.max_output_len, |n| n as usize);
    let (pools, cycle_s) = match (&deployment.aggregated, &deployment.prefill, &deployment.decode) {
        (Some(agg), _, _) => {
            let pool = PoolSpec {
                engine_dir: engine(&agg.candidate)?,
                executor: agg.candidate.runtime.apply(ExecutorConfig::default()),
                workers: agg.workers,
                min_iteration: min_iteration(space, study, &agg.candidate)?,
            };
            let users: usize = agg.load.strip_prefix('c').and_then(|c| c.parse().ok()).unwrap_or(1);
            (vec![pool], users as f64 / agg.requests_per_s.max(1e-9))
        }
        (None, Some(prefill), Some(decode)) => {
            let pools = vec![
                PoolSpec {
                    engine_dir: engine(&prefill.worker.candidate)?,
                    executor: transceiver(&prefill.worker.candidate),
                    workers: prefill.workers,
                    min_iteration: min_iteration(space, study, &prefill.worker.candidate)?,
                },
                PoolSpec {
                    engine_dir: engine(&decode.worker.candidate)?,
                    executor: transceiver(&decode.worker.candidate),
                    workers: decode.workers,
                    min_iteration: min_iteration(space, study, &decode.worker.candidate)?,
                },
            ];
            let d = &decode.worker;
            let cycle_ms = prefill.worker.ttft_ms + d.transfer_ms + output_len.saturating_sub(1) as f64 * d.step_ms;
            (pools, cycle_ms / 1e3)
        }
        _ => return Err(CoSimError::Plan("a deployment without workers".into())),
    };
    // Little's law: the users that keep the estimated rate over one request cycle.
    let mut users = (deployment.requests_per_s * cycle_s).round().max(1.0) as usize;
    let mut tries = 0;
    loop {
        tries += 1;
        let plan = CoSimPlan {
            pools: pools.clone(),
            users,
            requests: study.min_prompts.max(STEADY_REQUESTS_PER_USER * users),
            spread: Duration::from_secs_f64(cycle_s.max(0.0)),
            latency: ROUTER_LATENCY,
        };
        let records = run_cosim(&study.workload, users as u64, &plan).await?;
        let point = steady_point(format!("c{users}"), &records, users, deployment.gpus, study);
        if point.meets_slos() || tries == TRIES || users == 1 {
            let ratio = point.tokens_per_s_per_gpu / deployment.tokens_per_s_per_gpu.max(1e-12);
            return Ok(Confirmation {
                users,
                point,
                estimate_tokens_per_s_per_gpu: deployment.tokens_per_s_per_gpu,
                ratio,
                tries,
                wall_s: started.elapsed().as_secs_f64(),
            });
        }
        users = ((users as f64 * BACKOFF).floor() as usize).max(1);
    }
}

/// A lower bound on any iteration of `candidate`'s engine that produces a token: one generation
/// row at the shortest context, with or without CUDA graphs, with a tenth off for rounding.
fn min_iteration(space: &SearchSpace, study: &Study, candidate: &Candidate) -> Result<Duration, CoSimError> {
    let perf = space
        .engine(candidate, &study.shape)
        .and_then(|e| e.perf_model())
        .map_err(|e| CoSimError::Plan(e.to_string()))?;
    let mut work = crate::sim::perf_model::BatchWork::default();
    work.add_generation(1.0, 1.0);
    let ms = [perf.clone().with_cuda_graphs(false), perf.with_cuda_graphs(true)]
        .iter()
        .map(|m| m.iteration(&work).total_ms)
        .fold(f64::INFINITY, f64::min);
    Ok(Duration::from_secs_f64((0.9 * ms).max(0.0) / 1e3))
}

/// The figures of a co-simulated closed loop in its steady state: throughput is the output of the
/// requests that end while every user is busy (after the last user's first measured request was
/// sent, before the first user's last request ended) over that window; latencies and SLOs are
/// those requests'. Request `i` belongs to user `i % users`.
fn steady_point(
    load: String,
    records: &[crate::bench::RequestRecord],
    users: usize,
    gpus: usize,
    study: &Study,
) -> PointResult {
    let measured: Vec<&crate::bench::RequestRecord> = records.iter().filter(|r| r.is_measured()).collect();
    let mut first_send = vec![f64::NEG_INFINITY; users];
    let mut last_end = vec![f64::INFINITY; users];
    for r in &measured {
        let u = r.index as usize % users.max(1);
        if first_send[u] == f64::NEG_INFINITY || r.send_s < first_send[u] {
            first_send[u] = r.send_s;
        }
        let end = r.end_s.unwrap_or(r.send_s);
        if last_end[u] == f64::INFINITY || end > last_end[u] {
            last_end[u] = end;
        }
    }
    let start = first_send.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let stop = last_end.iter().copied().fold(f64::INFINITY, f64::min);
    if stop.partial_cmp(&start) != Some(std::cmp::Ordering::Greater) {
        return PointResult::from_records(load, records, gpus, &study.slos);
    }
    let inside: Vec<crate::bench::RequestRecord> =
        measured.iter().filter(|r| r.end_s.is_some_and(|e| e >= start && e <= stop)).map(|r| (*r).clone()).collect();
    let mut point = PointResult::from_records(load, &inside, gpus, &study.slos);
    let ok: Vec<&crate::bench::RequestRecord> = inside.iter().filter(|r| r.is_success()).collect();
    let window = stop - start;
    point.request_throughput = ok.len() as f64 / window;
    point.output_throughput = ok.iter().map(|r| r.output_tokens).sum::<u64>() as f64 / window;
    point.tokens_per_s_per_gpu = point.output_throughput / gpus.max(1) as f64;
    point.simulated_s = window;
    point
}
