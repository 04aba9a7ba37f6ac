//! The load generator: offers a workload to a target under a load plan and records every request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, mpsc};

use super::backlog::Watch;
use super::sessions::FAILURE_BACKOFF;
use super::slots::{Slot, SlotQueue};
use super::target::BenchTarget;
use crate::bench::metrics::iterations::{IterationCollector, IterationLog};
use crate::bench::metrics::live::LiveStats;
use crate::bench::metrics::record::{Phase, RequestRecord, RunClock};
use crate::bench::metrics::saturation::{BacklogWatch, SAMPLE_S, over_saturated_at};
use crate::bench::traffic::load::{ArrivalProcess, Load, LoadError, LoadPlan, arrival_schedule, ramp_start_s};
use crate::bench::traffic::workload::{PromptSampler, RequestSpec, Workload, WorkloadPhase};

/// What one point produced.
#[derive(Debug)]
pub struct PointRun {
    /// Every request, warmup and ramp-up included, in completion order.
    pub records: Vec<RequestRecord>,
    /// Executor iterations from the end of the warmup to the end of the point (in process);
    /// `None` for a target that does not expose them.
    pub iterations: Option<IterationLog>,
    /// Seconds after the first measured arrival at which the backlog showed the target could
    /// not keep up (an open-loop point); with [`LoadPlan::stop_when_saturated`] no request was
    /// sent after it.
    pub over_saturated_s: Option<f64>,
}

/// How a request leaves the runner: when it was due and whether it needs a slot first.
struct Dispatch {
    index: u64,
    phase: Phase,
    spec: RequestSpec,
    /// Open loop: the scheduled send time on the run clock.
    scheduled_s: Option<f64>,
    /// When the request became ready to go (its client queue time counts from here).
    ready_at: Instant,
    slot: Slot,
    /// A closed-loop user's first request: sent no earlier than this, once it holds its slot
    /// (users spread over the request cycle).
    not_before: Option<Instant>,
    /// Counts the request's send and return for a live view.
    live: Arc<LiveStats>,
}

/// The mean latency of the warmup's successful requests: one request cycle, over which
/// closed-loop users spread their starts.
pub(crate) fn warmup_latency(records: &[RequestRecord]) -> Option<Duration> {
    let latencies: Vec<f64> = records
        .iter()
        .filter(|r| r.phase == Phase::Warmup && r.is_success())
        .filter_map(|r| r.e2el_s())
        .filter(|s| s.is_finite() && *s > 0.0)
        .collect();
    (!latencies.is_empty()).then(|| Duration::from_secs_f64(latencies.iter().sum::<f64>() / latencies.len() as f64))
}

/// Runs one point: `plan.warmup` warmup requests, then the load of `plan`, each request from
/// `workload`'s prompt stream for `point` (warmup and measurement draw separate streams, and so
/// do different points). Times are seconds since `clock`'s origin; `progress` sees every
/// request after the warmup as it finishes.
///
/// ```rust
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use trtllm::bench::{BenchTarget, LoadPlan, PromptSource, RunClock, Workload, run_point};
///
/// let dir = tempfile::tempdir()?;
/// trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
/// let executor = trtllm::AsyncExecutor::load(dir.path(), trtllm::ExecutorConfig::default()).await?;
/// let workload = Workload {
///     source: PromptSource::Random { vocab_size: 1000, input_len: 16, shared_prefix: 0 },
///     output_len: Some(4),
///     fallback_output_len: 4,
///     ignore_eos: true,
///     end_id: None,
///     streaming: true,
///     seed: 0,
///     guide: None,
///     lengths: Default::default(),
/// };
/// let target = BenchTarget::InProcess(executor.clone());
/// let run = run_point(&target, &workload, 0, &LoadPlan::closed(2, 4), &RunClock::start(), |_| {}).await?;
/// assert_eq!(run.records.len(), 4);
/// assert!(run.records.iter().all(|r| r.output_tokens == 4 && r.first_token_s.is_some()));
/// executor.shutdown(trtllm::ShutdownMode::Cancel).await?;
/// # Ok(()) }
/// ```
pub async fn run_point(
    target: &BenchTarget,
    workload: &Workload,
    point: u64,
    plan: &LoadPlan,
    clock: &RunClock,
    progress: impl FnMut(&RequestRecord),
) -> Result<PointRun, LoadError> {
    run_point_live(target, workload, point, plan, clock, progress, &Arc::default()).await
}

/// [`run_point`], counting into `live` each request the runner creates, sends and gets back
/// (one relaxed atomic add each), so a live view can show requests queued and in flight.
pub async fn run_point_live(
    target: &BenchTarget,
    workload: &Workload,
    point: u64,
    plan: &LoadPlan,
    clock: &RunClock,
    mut progress: impl FnMut(&RequestRecord),
    live: &Arc<LiveStats>,
) -> Result<PointRun, LoadError> {
    plan.validate()?;
    let mut records = Vec::new();
    let next_index = Arc::new(AtomicU64::new(0));
    if plan.warmup > 0 {
        let concurrency = plan.load.concurrency().unwrap_or(plan.warmup);
        let sampler = workload.sampler(point, WorkloadPhase::Warmup);
        let warm =
            closed_loop(target, clock, sampler, Phase::Warmup, plan.warmup, concurrency, None, &next_index, live);
        collect(warm, &mut records, &mut |_| {}, &mut Watch::none()).await;
    }
    let collector = target.executor().map(|e| IterationCollector::start_live(e.executor(), Some(live.clone())));
    let sampler = workload.sampler(point, WorkloadPhase::Measure);
    let seed = workload.seed ^ point.rotate_left(32);
    // A trace replay: its own arrival times, under the load's cap if any.
    let trace = workload.trace().map(|t| t.arrivals_s(plan));
    let cycle = warmup_latency(&records);
    let stop = Arc::new(AtomicBool::new(false));
    let mut watch = match plan.load {
        Load::Open { rate, .. } if plan.stop_when_saturated && trace.is_none() => Watch {
            backlog: Some(BacklogWatch::new(rate)),
            stop: stop.clone(),
            sent: next_index.clone(),
            base: next_index.load(Ordering::Relaxed),
            started: Instant::now(),
            finished: 0,
            stopped_at: None,
            first_latencies: Vec::new(),
        },
        _ => Watch::none(),
    };
    let spread = |users: usize| -> Vec<Duration> {
        (0..users).map(|u| plan.user_start.offset(u, users, cycle)).collect::<Vec<_>>()
    };
    let done = match (plan.load, plan.duration) {
        _ if workload.sessions().is_some() => {
            let sessions = super::sessions::SessionRun {
                target: target.clone(),
                clock: *clock,
                workload: workload.clone(),
                sampler: Arc::new(Mutex::new(sampler)),
                next_index: next_index.clone(),
                budget: None,
                deadline: None,
                ramp_end: None,
                live: live.clone(),
            };
            sessions.start(plan, seed, spread)?
        }
        _ if trace.is_some() => {
            let arrivals = Arrivals::Fixed(trace.unwrap_or_default());
            open_loop(target, clock, sampler, arrivals, plan.load.concurrency(), &next_index, None, live)
        }
        (Load::Closed { concurrency }, None) => {
            let starts = Some(spread(concurrency));
            closed_loop(
                target,
                clock,
                sampler,
                Phase::Measure,
                plan.num_prompts,
                concurrency,
                starts,
                &next_index,
                live,
            )
        }
        (Load::Closed { concurrency }, Some(duration)) => {
            let ramp_up = plan.ramp_up.unwrap_or_default();
            users(target, clock, sampler, concurrency, ramp_up, duration, spread(concurrency), &next_index, live)
        }
        (Load::Open { rate, burstiness, max_concurrency }, duration) => {
            let arrivals = match duration {
                None => Arrivals::Fixed(arrival_schedule(plan.num_prompts, rate, burstiness, seed)?),
                Some(d) => Arrivals::Until(Box::new(ArrivalProcess::new(rate, burstiness, seed)?), d.as_secs_f64()),
            };
            open_loop(target, clock, sampler, arrivals, max_concurrency, &next_index, Some(stop.clone()), live)
        }
    };
    collect(done, &mut records, &mut progress, &mut watch).await;
    let iterations = match (collector, target.executor()) {
        (Some(c), Some(e)) => Some(c.finish(e.executor()).await),
        _ => None,
    };
    let over_saturated_s = match plan.load {
        Load::Open { rate, .. } if workload.trace().is_none() => {
            watch.stopped_at.or_else(|| over_saturated_at(&records, rate))
        }
        _ => None,
    };
    Ok(PointRun { records, iterations, over_saturated_s })
}

/// Receives finished records until every request task is done, sampling the backlog `watch`
/// as it goes.
async fn collect(
    mut done: mpsc::UnboundedReceiver<RequestRecord>,
    records: &mut Vec<RequestRecord>,
    progress: &mut dyn FnMut(&RequestRecord),
    watch: &mut Watch,
) {
    let mut tick = tokio::time::interval(Duration::from_secs_f64(SAMPLE_S));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            record = done.recv() => {
                let Some(record) = record else { break };
                watch.finished(&record);
                progress(&record);
                records.push(record);
            }
            _ = tick.tick(), if watch.backlog.is_some() => watch.sample(),
        }
    }
}

/// Starts a request task that waits for its slot (if any), sends, and reports its record.
fn dispatch(target: &BenchTarget, clock: &RunClock, d: Dispatch, done: &mpsc::UnboundedSender<RequestRecord>) {
    let (target, clock, done) = (target.clone(), *clock, done.clone());
    tokio::spawn(async move {
        let _permit = d.slot.take().await;
        let ready_at = match d.not_before {
            Some(at) => {
                tokio::time::sleep_until(at.into()).await;
                at.max(d.ready_at)
            }
            None => d.ready_at,
        };
        let queued_s = ready_at.elapsed().as_secs_f64();
        d.live.sent();
        let mut record = target.send(d.spec, &clock, d.index, d.phase).await;
        d.live.returned();
        record.client_queue_s = queued_s;
        record.scheduled_send_s = d.scheduled_s;
        let _ = done.send(record);
    });
}

/// `count` requests with at most `concurrency` in flight; all are ready at once, so each one's
/// wait for a slot is its client queue time. `starts` (one offset per user) delays the first
/// `concurrency` requests: user `u` starts `starts[u]` after the others could.
#[allow(clippy::too_many_arguments)]
fn closed_loop(
    target: &BenchTarget,
    clock: &RunClock,
    mut sampler: PromptSampler,
    phase: Phase,
    count: usize,
    concurrency: usize,
    starts: Option<Vec<Duration>>,
    next_index: &AtomicU64,
    live: &Arc<LiveStats>,
) -> mpsc::UnboundedReceiver<RequestRecord> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut slots = SlotQueue::new(Some(concurrency));
    let ready_at = Instant::now();
    for k in 0..count {
        let index = next_index.fetch_add(1, Ordering::Relaxed);
        let not_before = starts.as_ref().and_then(|s| s.get(k)).filter(|d| !d.is_zero()).map(|d| ready_at + *d);
        let d = Dispatch {
            index,
            phase,
            spec: sampler.next_request(),
            scheduled_s: None,
            ready_at,
            // The first `concurrency` requests hold theirs from now: each user's first request.
            slot: slots.next(),
            not_before,
            live: live.clone(),
        };
        live.created();
        dispatch(target, clock, d, &tx);
    }
    rx
}

enum Arrivals {
    /// Precomputed send times (seconds after the start).
    Fixed(Vec<f64>),
    /// Arrivals drawn one by one until the given number of seconds.
    Until(Box<ArrivalProcess>, f64),
}

/// Open loop: each request goes at its scheduled time whatever the engine does (waiting only
/// for a slot under a cap); the launcher sleeps until each arrival.
#[allow(clippy::too_many_arguments)]
fn open_loop(
    target: &BenchTarget,
    clock: &RunClock,
    mut sampler: PromptSampler,
    arrivals: Arrivals,
    max_concurrency: Option<usize>,
    next_index: &Arc<AtomicU64>,
    stop: Option<Arc<AtomicBool>>,
    live: &Arc<LiveStats>,
) -> mpsc::UnboundedReceiver<RequestRecord> {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut slots = SlotQueue::new(max_concurrency);
    let stopped = move || stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
    let (target, clock, next_index, live) = (target.clone(), *clock, next_index.clone(), live.clone());
    tokio::spawn(async move {
        let start = Instant::now();
        let offsets: Box<dyn Iterator<Item = f64> + Send> = match arrivals {
            Arrivals::Fixed(times) => Box::new(times.into_iter()),
            Arrivals::Until(mut process, duration_s) => {
                let first = process.next_gap_s();
                let drawn = std::iter::successors(Some(first), move |t| Some(t + process.next_gap_s()));
                Box::new(drawn.take_while(move |&t| t < duration_s))
            }
        };
        for offset in offsets {
            let due = start + Duration::from_secs_f64(offset);
            let (index, spec) = (next_index.fetch_add(1, Ordering::Relaxed), sampler.next_request());
            tokio::time::sleep_until(due.into()).await;
            if stopped() {
                break;
            }
            let d = Dispatch {
                index,
                phase: Phase::Measure,
                spec,
                scheduled_s: Some(clock.offset_s(due)),
                ready_at: due,
                // Claimed when due: a free slot is held from now, else the request queues.
                slot: slots.next(),
                not_before: None,
                live: live.clone(),
            };
            live.created();
            dispatch(&target, &clock, d, &tx);
        }
    });
    rx
}

/// Closed-loop users added linearly over `ramp_up` (each also `spread[u]` later), each sending
/// its next request as soon as the previous one finished (or [`FAILURE_BACKOFF`] after a
/// failure), until `ramp_up + duration` has passed. Requests sent before the ramp-up ends are
/// ramp-up requests.
#[allow(clippy::too_many_arguments)]
fn users(
    target: &BenchTarget,
    clock: &RunClock,
    sampler: PromptSampler,
    count: usize,
    ramp_up: Duration,
    duration: Duration,
    spread: Vec<Duration>,
    next_index: &Arc<AtomicU64>,
    live: &Arc<LiveStats>,
) -> mpsc::UnboundedReceiver<RequestRecord> {
    let (tx, rx) = mpsc::unbounded_channel();
    let start = Instant::now();
    let (ramp_end, deadline) = (start + ramp_up, start + ramp_up + duration);
    let sampler = Arc::new(Mutex::new(sampler));
    for user in 0..count {
        let (target, clock, tx, sampler, next_index, live) =
            (target.clone(), *clock, tx.clone(), sampler.clone(), next_index.clone(), live.clone());
        let begin = start
            + Duration::from_secs_f64(ramp_start_s(user, count, ramp_up.as_secs_f64()))
            + spread.get(user).copied().unwrap_or_default();
        tokio::spawn(async move {
            tokio::time::sleep_until(begin.into()).await;
            while Instant::now() < deadline {
                let spec = sampler.lock().await.next_request();
                let phase = if Instant::now() < ramp_end { Phase::RampUp } else { Phase::Measure };
                let index = next_index.fetch_add(1, Ordering::Relaxed);
                live.created();
                live.sent();
                let record = target.send(spec, &clock, index, phase).await;
                live.returned();
                let failed = !record.is_success();
                if tx.send(record).is_err() {
                    return;
                }
                if failed {
                    // A target that rejects everything at once must not be hammered in a tight
                    // loop for the whole duration (nor fill memory with failure records).
                    tokio::time::sleep(FAILURE_BACKOFF).await;
                }
            }
        });
    }
    rx
}

#[cfg(test)]
mod tests;
