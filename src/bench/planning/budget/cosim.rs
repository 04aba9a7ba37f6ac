//! Several simulated executors on one simulated timeline: the workers of a deployment, closed-loop
//! users, and a router that places each request on the least-loaded worker of a pool (a
//! disaggregated request: its context on a prefill worker, then its generation, with the prefill's
//! KV handoff, on a decode worker).
//!
//! Each virtual-clock executor keeps its own clock, which only moves by its own iterations and up to
//! the arrivals it is given; the router keeps them consistent as a conservative parallel
//! simulation does. Every executor is held (see [`crate::sim::SimControl::hold_arrivals`]) at a
//! bound no arrival can precede: the earliest of the arrivals still to place and of every busy
//! worker's clock plus the router's latency (a request a worker finishes at its clock's time or
//! later reaches the next worker that much later). Every request carries a follow-up lease of no
//! delay, so a worker stops at each request's end until the router has taken the final; a worker
//! whose clock reached the bound, or none of whose requests can end before it (a request needs its
//! tokens' iterations, and a decode worker's waits for its KV transfer first: holding on to its
//! clock could wait for ever), is settled. Once every worker
//! is settled, the arrivals up to the bound are placed (each on the worker with the fewest requests
//! outstanding at that moment) and the bound moves on. Each round lets every busy worker run at
//! least one iteration.
//!
//! The users keep sending until the measured window closes: it opens when the last user sends its
//! first measured request (every user past its warmup) and closes once a set number of requests has
//! ended after that, so every user is busy for the whole window however the ramp went; the run
//! stops there, the requests still running cancelled.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::bench::traffic::workload::{RequestSpec, Workload, WorkloadPhase};
use crate::bench::{Phase, RequestRecord};
use crate::sim::{HoldKey, SimulatedEngine};
use crate::{AsyncExecutor, ExecutorConfig, FinalOutput, GenerationRequest, KvHandoff, RequestId, RequestType};

/// Polls of unsettled workers made at once, before the router sleeps between polls.
const EAGER_POLLS: usize = 2000;

/// One pool of identical workers.
#[derive(Debug, Clone)]
pub struct PoolSpec {
    /// The engine every worker starts on (held in memory: no directory is written).
    pub engine: SimulatedEngine,
    /// Its executor settings.
    pub executor: ExecutorConfig,
    /// Workers.
    pub workers: usize,
    /// No iteration that produces a token takes less (a lower bound from the timing model): a
    /// request needing `n` more tokens cannot end sooner than `n` such iterations.
    pub min_iteration: Duration,
}

/// What to run: one pool (aggregated workers) or two (prefill, then decode).
#[derive(Debug, Clone)]
pub struct CoSimPlan {
    /// The pools a request goes through, in order (one or two).
    pub pools: Vec<PoolSpec>,
    /// Closed-loop users.
    pub users: usize,
    /// Requests that end in the measured window: it opens when every user has sent its first
    /// measured request (after one warmup request each) and closes when this many have ended.
    pub window_requests: usize,
    /// Simulated time over which the users' first requests are spread.
    pub spread: Duration,
    /// Time from a request's end on one worker to its arrival at the next (or, after the last
    /// pool, to the user's next request).
    pub latency: Duration,
    /// Wall-clock time the run may take; past it the run stops with [`CoSimError::TimeLimit`].
    pub wall_limit: Duration,
}

/// A co-simulation's requests and its measured window.
#[derive(Debug, Clone)]
pub struct CoSimRun {
    /// Every request that ended (warmup included), in seconds since the first arrival, by index.
    pub records: Vec<RequestRecord>,
    /// The measured window, seconds since the first arrival: from the moment every user had sent
    /// its first measured request to the end of the last request of [`CoSimPlan::window_requests`].
    pub window: (f64, f64),
}

/// Errors of a co-simulation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CoSimError {
    /// An executor failed to load or to take a request.
    #[error(transparent)]
    Executor(#[from] crate::Error),
    /// The plan cannot run.
    #[error("{0}")]
    Plan(String),
    /// The run took longer than [`CoSimPlan::wall_limit`].
    #[error(
        "the virtual-clock run of {users} users passed its wall-clock limit of {limit_s:.1} s \
         ({ended} requests ended, {simulated_s:.1} s simulated)"
    )]
    TimeLimit {
        /// The run's users.
        users: usize,
        /// The limit, s.
        limit_s: f64,
        /// Requests that had ended.
        ended: usize,
        /// Simulated time reached, s.
        simulated_s: f64,
    },
}

/// The measured window as the run finds it: its opening once every user has sent a measured
/// request, the ends after it (the earliest `requests`), and those seen before it opened.
struct Window {
    requests: usize,
    users_waiting: usize,
    start: Option<Instant>,
    before: Vec<Instant>,
    /// The earliest `requests` ends after the start (a max-heap: the latest of them on top).
    ends: BinaryHeap<Instant>,
}

impl Window {
    fn new(users: usize, requests: usize) -> Self {
        Window {
            requests: requests.max(1),
            users_waiting: users,
            start: None,
            before: Vec::new(),
            ends: BinaryHeap::new(),
        }
    }

    /// A user's first measured request was sent at `at` (sends come in time order).
    fn first_measured_sent(&mut self, at: Instant) {
        self.users_waiting = self.users_waiting.saturating_sub(1);
        if self.users_waiting == 0 && self.start.is_none() {
            self.start = Some(at);
            for end in std::mem::take(&mut self.before) {
                self.ended(end);
            }
        }
    }

    /// A request ended at `end`.
    fn ended(&mut self, end: Instant) {
        match self.start {
            None => self.before.push(end),
            Some(start) if end > start => {
                self.ends.push(end);
                if self.ends.len() > self.requests {
                    self.ends.pop();
                }
            }
            Some(_) => {}
        }
    }

    /// The window's end, once that many requests have ended in it (a later end seen sooner may
    /// still be displaced by an earlier one until every worker has passed it).
    fn stop(&self) -> Option<Instant> {
        if self.ends.len() == self.requests { self.ends.peek().copied() } else { None }
    }
}

/// A request between its stages.
#[derive(Debug)]
struct Pending {
    at: Instant,
    index: u64,
    phase: Phase,
    stage: usize,
    user: usize,
    handoff: Option<KvHandoff>,
}

/// What the router knows of a request in a worker.
struct InFlight {
    worker: usize,
    index: u64,
    phase: Phase,
    stage: usize,
    user: usize,
    arrival: Instant,
}

struct Worker {
    executor: AsyncExecutor,
    pool: usize,
    hold: Option<HoldKey>,
    /// Each request placed on it and not yet ended, by id: the earliest it can end.
    outstanding: BTreeMap<u64, Instant>,
}

impl Worker {
    fn now(&self) -> Result<Instant, CoSimError> {
        Ok(self.executor.executor().sim_control().ok_or(crate::Error::SimulatorOnly("the virtual clock"))?.now()?)
    }

    fn sim(&self) -> Result<crate::sim::SimControl<'_>, CoSimError> {
        Ok(self.executor.executor().sim_control().ok_or(crate::Error::SimulatorOnly("the virtual clock"))?)
    }

    fn hold_at(&mut self, bound: Instant) -> Result<(), CoSimError> {
        let sim = self.executor.executor().sim_control().ok_or(crate::Error::SimulatorOnly("the virtual clock"))?;
        let key = sim.hold_arrivals(bound)?;
        if let Some(old) = self.hold.replace(key) {
            sim.release_hold(old)?;
        }
        Ok(())
    }
}

/// Runs `plan` on `workload` (point `point`'s requests) until its measured window closes; returns
/// every ended request's record in simulated time (seconds since the first arrival), warmup
/// included, and the window.
pub async fn run_cosim(workload: &Workload, point: u64, plan: &CoSimPlan) -> Result<CoSimRun, CoSimError> {
    let started = std::time::Instant::now();
    if plan.pools.is_empty() || plan.pools.len() > 2 || plan.pools.iter().any(|p| p.workers == 0) || plan.users == 0 {
        return Err(CoSimError::Plan("a co-simulation needs one or two pools of workers and at least one user".into()));
    }
    let disaggregated = plan.pools.len() == 2;
    let output_len = workload.output_len.unwrap_or(workload.fallback_output_len).max(1) as usize;
    let mut workers = Vec::new();
    for (pool, spec) in plan.pools.iter().enumerate() {
        let config = ExecutorConfig { stream_buffer: output_len + 4096, ..spec.executor.clone() };
        for _ in 0..spec.workers {
            let executor = spec.engine.start_async(config.clone()).await?;
            workers.push(Worker { executor, pool, hold: None, outstanding: BTreeMap::new() });
        }
    }
    // Every clock starts at the latest of them (none has run yet), and nothing runs until placed.
    let mut origin = workers[0].now()?;
    for w in &workers {
        origin = origin.max(w.now()?);
    }
    origin += Duration::from_millis(1);
    for w in &mut workers {
        w.hold_at(origin)?;
    }
    // The requests, dealt to users in turn: user u sends u, u + users, ...; the first of each is
    // warmup. Drawn as they are sent, in index order, so a run draws the same requests however long.
    let mut warm = workload.sampler(point, WorkloadPhase::Warmup);
    let mut measure = workload.sampler(point, WorkloadPhase::Measure);
    let mut specs: Vec<RequestSpec> = Vec::new();
    let mut next_of_user: Vec<usize> = (0..plan.users).map(|u| u + plan.users).collect();
    let mut window = Window::new(plan.users, plan.window_requests);
    let mut pending: BinaryHeap<Reverse<(Instant, u64)>> = BinaryHeap::new();
    let mut waiting: BTreeMap<u64, Pending> = BTreeMap::new();
    for u in 0..plan.users {
        let at = origin + plan.spread.mul_f64(u as f64 / plan.users as f64);
        // Keys: request index × 4 + stage, unique while pending.
        pending.push(Reverse((at, u as u64 * 4)));
        waiting.insert(
            u as u64 * 4,
            Pending { at, index: u as u64, phase: Phase::Warmup, stage: 0, user: u, handoff: None },
        );
    }
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<((usize, u64), crate::Result<FinalOutput>)>();
    // By worker and request id (each executor numbers its own requests).
    let mut in_flight: BTreeMap<(usize, u64), InFlight> = BTreeMap::new();
    let mut records: Vec<RequestRecord> = Vec::new();
    let mut first_arrival: BTreeMap<u64, Instant> = BTreeMap::new();
    let mut bound = origin;
    let mut unsettled_polls = 0_usize;
    loop {
        // Finals in: each request's next stage (or its user's next request) becomes pending.
        while let Ok(((w, id), result)) = done_rx.try_recv() {
            let Some(f) = in_flight.remove(&(w, id)) else { continue };
            let worker = &mut workers[f.worker];
            worker.outstanding.remove(&id);
            let end = match &result {
                Ok(out) => out.perf.as_ref().and_then(|p| p.last_token.or(p.first_token)).unwrap_or(f.arrival),
                Err(_) => f.arrival,
            };
            let last_stage = f.stage + 1 == plan.pools.len();
            match result {
                Ok(out) if !last_stage => match out.handoff.clone() {
                    Some(handoff) => {
                        let key = f.index * 4 + 1;
                        pending.push(Reverse((end + plan.latency, key)));
                        waiting.insert(
                            key,
                            Pending {
                                at: end + plan.latency,
                                index: f.index,
                                phase: f.phase,
                                stage: 1,
                                user: f.user,
                                handoff: Some(handoff),
                            },
                        );
                    }
                    None => records.push(failed(
                        &f,
                        first_arrival[&f.index],
                        origin,
                        end,
                        "the prefill ended without a KV handoff",
                    )),
                },
                Ok(out) => records.push(finished(&f, first_arrival[&f.index], origin, &out)),
                Err(e) => records.push(failed(&f, first_arrival[&f.index], origin, end, &e.to_string())),
            }
            if last_stage || records.last().is_some_and(|r| r.index == f.index) {
                window.ended(end);
                // The user's next request.
                if let Some(&next) = next_of_user.get(f.user) {
                    next_of_user[f.user] += plan.users;
                    let key = next as u64 * 4;
                    pending.push(Reverse((end + plan.latency, key)));
                    waiting.insert(
                        key,
                        Pending {
                            at: end + plan.latency,
                            index: next as u64,
                            phase: Phase::Measure,
                            stage: 0,
                            user: f.user,
                            handoff: None,
                        },
                    );
                }
            }
            worker.sim()?.release_follow_up(RequestId::new(id))?;
        }
        // Settled: every worker has reached the bound or has nothing that can end before it.
        let mut settled = true;
        for w in &workers {
            if w.outstanding.values().any(|&earliest| earliest < bound) && w.now()? < bound {
                settled = false;
                break;
            }
        }
        if !settled {
            if tracing::enabled!(tracing::Level::TRACE) {
                let state: Vec<String> = workers
                    .iter()
                    .map(|w| {
                        let now = w.now().map_or(f64::NAN, |n| n.saturating_duration_since(origin).as_secs_f64());
                        format!("pool{} now {now:.4} outstanding {}", w.pool, w.outstanding.len())
                    })
                    .collect();
                let b = bound.saturating_duration_since(origin).as_secs_f64();
                tracing::trace!(bound = b, in_flight = in_flight.len(), pending = pending.len(), ?state, "waiting");
            }
            // A worker runs one iteration in microseconds: poll again at once (giving the CPU to
            // the executors' threads) for a while before sleeping, whose millisecond granularity
            // would otherwise bound the whole run to a millisecond per round.
            unsettled_polls += 1;
            if unsettled_polls < EAGER_POLLS {
                std::thread::yield_now();
                tokio::task::yield_now().await;
            } else {
                tokio::select! {
                    got = done_rx.recv() => if let Some(item) = got { done_tx.send(item).ok(); },
                    () = tokio::time::sleep(Duration::from_millis(1)) => {}
                }
            }
            continue;
        }
        unsettled_polls = 0;
        // Every end before the bound is in: past the window's end, the run is done.
        if window.stop().is_some_and(|stop| bound > stop) {
            break;
        }
        if started.elapsed() > plan.wall_limit {
            shut_down(&mut workers).await?;
            return Err(CoSimError::TimeLimit {
                users: plan.users,
                limit_s: plan.wall_limit.as_secs_f64(),
                ended: records.len(),
                simulated_s: bound.saturating_duration_since(origin).as_secs_f64(),
            });
        }
        // Place every arrival up to the bound, in time order.
        while let Some(Reverse((at, key))) = pending.peek().copied() {
            if at > bound {
                break;
            }
            pending.pop();
            let Some(p) = waiting.remove(&key) else { continue };
            let pool = p.stage;
            let target = (0..workers.len())
                .filter(|&i| workers[i].pool == pool)
                .min_by_key(|&i| (workers[i].outstanding.len(), i))
                .expect("a pool has workers");
            while specs.len() <= p.index as usize {
                let spec = if specs.len() < plan.users { warm.next_request() } else { measure.next_request() };
                specs.push(spec);
            }
            let spec = &specs[p.index as usize];
            if p.stage == 0 && (plan.users..2 * plan.users).contains(&(p.index as usize)) {
                window.first_measured_sent(p.at);
            }
            let mut request = crate::bench::runner::target::generation_request(spec).with_streaming(false);
            if disaggregated {
                request = match p.handoff {
                    None => request.with_request_type(RequestType::ContextOnly),
                    Some(h) => request.with_handoff(h),
                };
            }
            first_arrival.entry(p.index).or_insert(p.at);
            let stream = place(&workers[target], request, p.at)?;
            let id = stream.request_id().get();
            // Tokens it must still produce, each at least one iteration: all of them in one pool, the
            // first on a prefill worker, the rest on a decode worker.
            let tokens = match (disaggregated, pool) {
                (false, _) => output_len,
                (true, 0) => 1,
                (true, _) => output_len.saturating_sub(1).max(1),
            };
            let earliest = p.at + plan.pools[pool].min_iteration.mul_f64(tokens as f64);
            workers[target].outstanding.insert(id, earliest);
            in_flight.insert(
                (target, id),
                InFlight {
                    worker: target,
                    index: p.index,
                    phase: p.phase,
                    stage: p.stage,
                    user: p.user,
                    arrival: p.at,
                },
            );
            let tx = done_tx.clone();
            tokio::spawn(async move {
                let _ = tx.send(((target, id), stream.collect_final().await));
            });
        }
        if in_flight.is_empty() && pending.is_empty() {
            break;
        }
        // The next bound: no arrival can come before the earliest pending one, nor before a busy
        // worker's earliest end (its clock, and no earlier than its requests' fewest iterations
        // left allow) plus the latency.
        let mut next = pending.peek().map(|Reverse((at, _))| *at);
        for w in &workers {
            if let Some(earliest) = w.outstanding.values().min().copied() {
                let t = w.now()?.max(earliest).max(bound) + plan.latency;
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        let Some(next) = next else { break };
        bound = next.max(bound);
        for w in &mut workers {
            w.hold_at(bound)?;
        }
    }
    shut_down(&mut workers).await?;
    records.sort_by_key(|r| r.index);
    let s = |t: Option<Instant>| t.map_or(0.0, |t| t.saturating_duration_since(origin).as_secs_f64());
    Ok(CoSimRun { records, window: (s(window.start), s(window.stop())) })
}

/// Stops every worker, cancelling what still runs: first the holds and the follow-up leases go,
/// or a worker held at the bound could not run the iteration that ends its cancelled requests.
async fn shut_down(workers: &mut [Worker]) -> Result<(), CoSimError> {
    for w in workers.iter_mut() {
        let hold = w.hold.take();
        let sim = w.sim()?;
        if let Some(key) = hold {
            sim.release_hold(key)?;
        }
        for &id in w.outstanding.keys() {
            sim.release_follow_up(RequestId::new(id))?;
        }
    }
    let stops = workers.iter().map(|w| w.executor.shutdown(crate::ShutdownMode::Cancel));
    for stopped in futures::future::join_all(stops).await {
        stopped?;
    }
    Ok(())
}

/// Enqueues `request` on `worker` arriving at `at`, with a follow-up lease of no delay (the worker
/// stops at its end until the router has taken the final).
fn place(worker: &Worker, request: GenerationRequest, at: Instant) -> Result<crate::GenerationStream, CoSimError> {
    Ok(worker.sim()?.enqueue_at(request, crate::sim::Arrival::At(at), Some(Duration::ZERO))?)
}

/// The record of a request that ended well, in seconds since `origin`: sent when it reached the
/// first pool, its first token when the last pool's worker produced its first response (a decode
/// worker's first response carries the prefill's token and its own), its last at the end.
fn finished(f: &InFlight, sent: Instant, origin: Instant, out: &FinalOutput) -> RequestRecord {
    let s = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
    let mut r = RequestRecord::new(f.index, f.phase, s(sent));
    r.prompt_tokens = u64::from(out.prompt_tokens);
    let tokens = out.sequences.first().map_or(0, |q| q.token_ids.len() as u64);
    let perf = out.perf.as_ref();
    let first = perf.and_then(|p| p.first_token).map_or(r.send_s, s);
    let last = perf.and_then(|p| p.last_token).map_or(first, s);
    r.record_chunk(first, 1);
    if tokens > 1 {
        r.record_chunk(last, u32::try_from(tokens - 1).unwrap_or(u32::MAX));
    }
    r.finish(last, tokens, Some(out.finish_reason.as_openai_str().to_owned()));
    r
}

/// The record of a request that failed at `end`.
fn failed(f: &InFlight, sent: Instant, origin: Instant, end: Instant, error: &str) -> RequestRecord {
    let s = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
    let mut r = RequestRecord::new(f.index, f.phase, s(sent));
    r.fail(s(end), error);
    r
}
