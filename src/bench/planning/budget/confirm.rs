//! Confirming a deployment on the virtual clock: its workers as simulated executors on one
//! timeline ([`run_cosim`]), closed-loop users placed by a router, and the goodput that run
//! measures beside the estimate that chose it; each run stored ([`ConfirmStore`]) so that a re-run
//! of the plan reads it back instead of running it again.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::search::{Candidate, PointResult, ResultStoreError, SearchSpace, SloSet, Study, save_json};
use super::cosim::{CoSimError, CoSimPlan, CoSimRun, PoolSpec, run_cosim};
use super::deploy::Deployment;
use super::estimate::{KvLinkChoice, ROUTER_LATENCY, WorkerModel};
use crate::{CacheTransceiverConfig, ExecutorConfig};

/// Runs tried at most: the estimate's users, then fewer after each miss.
const TRIES: usize = 3;

/// Measured requests in the steady window at least: its percentiles rest on this many.
const WINDOW_REQUESTS: usize = 96;

/// How a stored run was measured (a run measured otherwise is run again).
const MEASURED: &str = "steady window: from every user's first measured request, one request per user";

/// A deployment's virtual-clock run beside its estimate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// Closed-loop users of the run (the estimate's, or fewer when that missed an SLO).
    pub users: usize,
    /// The run's figures (goodput per GPU of the budget).
    pub point: PointResult,
    /// The estimate's output tokens/s per GPU.
    pub estimate_tokens_per_s_per_gpu: f64,
    /// Measured over estimated goodput.
    pub ratio: f64,
    /// Runs tried (each with fewer users than the one before).
    pub tries: usize,
    /// Wall-clock seconds of the runs (as they were first run).
    pub wall_s: f64,
}

impl Confirmation {
    /// Goodput per GPU the run measured (0 when it missed an SLO).
    pub fn goodput_tokens_per_s_per_gpu(&self) -> f64 {
        if self.point.meets_slos() { self.point.tokens_per_s_per_gpu } else { 0.0 }
    }
}

/// One stored confirming run.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredRun {
    key: String,
    study: serde_json::Value,
    deployment: String,
    users: usize,
    point: PointResult,
    wall_s: f64,
}

/// The confirming runs of a plan, one JSON file per deployment and users, each with the study's
/// fingerprint (and the budget's GPUs and link): a run of another study is not reused.
#[derive(Debug, Clone)]
pub struct ConfirmStore {
    root: PathBuf,
    fingerprint: serde_json::Value,
}

impl ConfirmStore {
    /// Opens (creating) `root` for `study` on `space`'s model and GPU, a budget of `gpus` GPUs and
    /// `link` between the pools.
    pub fn open(
        root: PathBuf,
        study: &Study,
        space: &SearchSpace,
        gpus: usize,
        link: &KvLinkChoice,
    ) -> Result<Self, ResultStoreError> {
        std::fs::create_dir_all(&root).map_err(|source| ResultStoreError::Io { path: root.clone(), source })?;
        let mut fingerprint = study.fingerprint(space);
        fingerprint["gpus"] = serde_json::json!(gpus);
        fingerprint["kv_link"] = serde_json::json!(link.preset);
        fingerprint["measured"] = serde_json::json!(MEASURED);
        Ok(ConfirmStore { root, fingerprint })
    }

    fn key(deployment: &Deployment, users: usize) -> String {
        let text = format!("{} c{users}", deployment.label);
        let hash =
            text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        format!("{}-{hash:016x}", deployment.architecture.name())
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root.join(format!("{key}.json"))
    }

    /// The stored run of `deployment` at `users`, if any (unreadable or foreign files count as
    /// missing).
    fn load(&self, deployment: &Deployment, users: usize) -> Option<StoredRun> {
        let key = Self::key(deployment, users);
        let text = std::fs::read_to_string(self.path(&key)).ok()?;
        let run: StoredRun = serde_json::from_str(&text).ok()?;
        (run.key == key && run.study == self.fingerprint && run.deployment == deployment.label).then_some(run)
    }

    fn save(
        &self,
        deployment: &Deployment,
        users: usize,
        point: &PointResult,
        wall_s: f64,
    ) -> Result<(), ResultStoreError> {
        let key = Self::key(deployment, users);
        let run = StoredRun {
            key: key.clone(),
            study: self.fingerprint.clone(),
            deployment: deployment.label.clone(),
            users,
            point: point.clone(),
            wall_s,
        };
        save_json(&self.path(&key), &run)
    }
}

/// Users for the next run after one at `users` missed `slos` with `point`'s percentiles: fewer in
/// proportion to the worst objective's excess (latency grows about linearly with the users
/// below saturation), between half and nine tenths of them.
fn fewer_users(users: usize, point: &PointResult, slos: &SloSet) -> usize {
    let ratio = slos
        .objectives()
        .iter()
        .filter_map(|o| point.percentiles.get(&o.key()).map(|v| o.limit_ms / v))
        .fold(1.0_f64, f64::min);
    ((users as f64 * ratio.clamp(0.5, 0.9)).floor() as usize).max(1)
}

/// Runs `deployment` on the virtual clock: its engines (from `models`, each resolved once for the
/// plan, started from memory), the estimate's users, fewer when that misses an SLO; each run read
/// from `store` when it is there, saved to it when it is not; each run stops with
/// [`CoSimError::TimeLimit`] past `wall_limit`. Also says whether every run it needed was read back.
pub async fn confirm<'m>(
    models: &impl Fn(&Candidate) -> Option<&'m WorkerModel>,
    study: &Study,
    link: &KvLinkChoice,
    deployment: &Deployment,
    store: &ConfirmStore,
    wall_limit: Duration,
) -> Result<(Confirmation, bool), CoSimError> {
    let model = |c: &Candidate| models(c).ok_or_else(|| CoSimError::Plan(format!("{} was not resolved", c.label())));
    let pool = |candidate: &Candidate, executor: ExecutorConfig, workers: usize| -> Result<PoolSpec, CoSimError> {
        let m = model(candidate)?;
        Ok(PoolSpec { engine: m.engine().clone(), executor, workers, min_iteration: m.min_iteration() })
    };
    let transceiver = |c: &Candidate| ExecutorConfig {
        cache_transceiver: Some(CacheTransceiverConfig::new()),
        sim_kv_link: Some(link.link),
        ..c.runtime.apply(ExecutorConfig::default())
    };
    let mut pools = None;
    let mut users = deployment.users.max(1);
    let mut best: Option<(usize, PointResult)> = None;
    let (mut tries, mut wall_s, mut all_resumed) = (0, 0.0, true);
    let cycle_s = deployment.users as f64 / deployment.requests_per_s.max(1e-9);
    while tries < TRIES {
        tries += 1;
        let (point, resumed) = match store.load(deployment, users) {
            Some(run) => {
                wall_s += run.wall_s;
                (run.point, true)
            }
            None => {
                if pools.is_none() {
                    pools = Some(match (&deployment.aggregated, &deployment.prefill, &deployment.decode) {
                        (Some(agg), _, _) => {
                            let c = &agg.worker.candidate;
                            vec![pool(c, c.runtime.apply(ExecutorConfig::default()), agg.workers)?]
                        }
                        (None, Some(p), Some(d)) => vec![
                            pool(&p.worker.candidate, transceiver(&p.worker.candidate), p.workers)?,
                            pool(&d.worker.candidate, transceiver(&d.worker.candidate), d.workers)?,
                        ],
                        _ => return Err(CoSimError::Plan("a deployment without workers".into())),
                    });
                }
                let started = std::time::Instant::now();
                let plan = CoSimPlan {
                    pools: pools.clone().unwrap_or_default(),
                    users,
                    window_requests: window_requests(users, study.min_prompts),
                    spread: Duration::from_secs_f64(cycle_s.max(0.0)),
                    latency: ROUTER_LATENCY,
                    wall_limit,
                };
                let run = run_cosim(&study.workload, users as u64, &plan).await?;
                let point = steady_point(format!("c{users}"), &run, deployment.gpus, study);
                let took = started.elapsed().as_secs_f64();
                wall_s += took;
                store.save(deployment, users, &point, took).map_err(|e| CoSimError::Plan(e.to_string()))?;
                (point, false)
            }
        };
        all_resumed &= resumed;
        let met = point.meets_slos();
        let next = fewer_users(users, &point, &study.slos);
        if met || best.is_none() {
            best = Some((users, point));
        }
        if met || users == 1 {
            break;
        }
        users = next;
    }
    let (users, point) = best.ok_or_else(|| CoSimError::Plan("no run".into()))?;
    let ratio = point.tokens_per_s_per_gpu / deployment.tokens_per_s_per_gpu.max(1e-12);
    let confirmation = Confirmation {
        users,
        point,
        estimate_tokens_per_s_per_gpu: deployment.tokens_per_s_per_gpu,
        ratio,
        tries,
        wall_s,
    };
    Ok((confirmation, all_resumed))
}

/// Requests that end in a confirming run's measured window: one per user (the window then spans
/// about one request cycle, every user busy throughout), at least [`WINDOW_REQUESTS`] and at least
/// `min_prompts` up to two per user.
fn window_requests(users: usize, min_prompts: usize) -> usize {
    users.max(WINDOW_REQUESTS).max(min_prompts.min(2 * users))
}

/// The figures of a co-simulated closed loop in its steady state: throughput is the output of the
/// requests that end in the run's measured window (every user busy throughout) over the window;
/// latencies and SLOs are those requests'.
fn steady_point(load: String, run: &CoSimRun, gpus: usize, study: &Study) -> PointResult {
    let (start, stop) = run.window;
    let inside: Vec<crate::bench::RequestRecord> = run
        .records
        .iter()
        .filter(|r| r.is_measured() && r.end_s.is_some_and(|e| e > start && e <= stop))
        .cloned()
        .collect();
    let mut point = PointResult::from_records(load, &inside, gpus, &study.slos);
    let window = stop - start;
    if window <= 0.0 {
        return point;
    }
    let ok: Vec<&crate::bench::RequestRecord> = inside.iter().filter(|r| r.is_success()).collect();
    point.request_throughput = ok.len() as f64 / window;
    point.output_throughput = ok.iter().map(|r| r.output_tokens).sum::<u64>() as f64 / window;
    point.tokens_per_s_per_gpu = point.output_throughput / gpus.max(1) as f64;
    point.simulated_s = window;
    point
}
