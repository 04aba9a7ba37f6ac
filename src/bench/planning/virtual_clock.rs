//! Planning runs on the simulator's virtual clock: points measured in simulated time.
//!
//! With simulation.json's `clock: "virtual"` nothing sleeps: the executor's clock jumps by each
//! iteration's modelled time, so a point finishes far faster than real time. The runner and the
//! executor share that clock through scheduled arrivals ([`crate::Arrival`]): every request is
//! stamped with the simulated time it arrives (a closed-loop user's next request: its previous
//! one's end plus the client latency; an open-loop request: its scheduled time), the executor
//! admits it at the first iteration starting at or after that time (as a real arrival waits for
//! the iteration in flight), and it never runs past an arrival the runner has yet to send. Every
//! load shape therefore works in simulated time, and the same seed gives the same figures.
//!
//! Records are rebuilt in executor time: send = the arrival stamp, first and last token from the
//! perf metrics, and each token's time from the latencies of the iterations that produced it (so
//! requests go to the executor without per-token responses unless the engine speculates).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use super::scheduled_load::{CLIENT_STAGGER, NextRequest, Planned, ScheduledLoad, UserLimit, sim_control};
use super::virtual_engine::VirtualEngine;
use super::virtual_sessions::{SessionUsers, warmup_cycle};
use crate::bench::metrics::iterations::{IterationCollector, IterationLog};
use crate::bench::metrics::live::LiveStats;
use crate::bench::metrics::record::{Phase, RecordedChunk, RequestRecord, RunClock, ServerTimes};
use crate::bench::runner::point::PointRun;
use crate::bench::traffic::load::{Load, LoadError, LoadPlan, arrival_schedule, ramp_start_s};
use crate::bench::traffic::workload::{Workload, WorkloadPhase};
use crate::{AsyncExecutor, ExecutorConfig};

/// Iteration statistics the executor may buffer between two polls: a virtual-clock executor
/// runs thousands of iterations per second of wall time, and every one is needed for ITL.
const ITERATION_STATS_BUFFER: u32 = 1_000_000;

/// How often the stats thread drains the executor during a planning point.
const STATS_POLL: Duration = Duration::from_millis(5);

/// Default time from a response's end to the same user's next arrival for a client in the
/// executor's process: the response thread routes the final, the user's task wakes and enqueues
/// (tens of microseconds on an idle host).
pub const IN_PROCESS_CLIENT_LATENCY: Duration = Duration::from_micros(50);

/// Default client latency for a gRPC client on the same host: the final message's trip back,
/// the client's reaction and the next request's trip in (a few hundred microseconds).
pub const GRPC_CLIENT_LATENCY: Duration = Duration::from_micros(400);

/// Errors of a planning run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanningError {
    /// The load plan is invalid.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A load shape the virtual clock cannot follow.
    #[error("{0} is not supported on the virtual clock: use an engine whose simulation.json has \"clock\": \"real\"")]
    NeedsWallClock(&'static str),
    /// The executor could not be loaded or configured.
    #[error("loading the executor for the planning run: {0}")]
    Executor(#[from] crate::Error),
}

/// How a planning point runs.
#[derive(Debug, Clone)]
pub struct VirtualRunOptions {
    /// Time from a request's end to its user's next arrival (closed loop), or to the next
    /// waiting request's arrival when a slot frees (open loop under a cap).
    pub client_latency: Duration,
    /// Runtime batch cap; `None`: the engine's (or `executor`'s).
    pub max_batch_size: Option<u32>,
    /// The executor's runtime settings (KV cache, block reuse, scheduler, chunking, ...); the
    /// run sets its statistics buffer, poll interval and stream buffer itself. `None`: the
    /// library's defaults.
    pub executor: Option<ExecutorConfig>,
    /// LoRA traffic the requests carry (`--lora-adapters`): its adapter caches become the
    /// executor's, and its counts start over with the point.
    pub lora: Option<Arc<crate::bench::lora::LoraTraffic>>,
    /// A live view the point feeds as it runs: the executor's active and queued requests and
    /// KV-cache use per iteration, and each finished measured request in simulated time.
    pub live: Option<Arc<LiveStats>>,
}

impl Default for VirtualRunOptions {
    fn default() -> Self {
        VirtualRunOptions {
            client_latency: IN_PROCESS_CLIENT_LATENCY,
            max_batch_size: None,
            executor: None,
            lora: None,
            live: None,
        }
    }
}

/// What a planning point produced, besides its records.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VirtualClockRun {
    /// Wall-clock seconds the point took.
    pub wall_s: f64,
    /// Simulated seconds from the first request's arrival to the last request's end.
    pub simulated_s: f64,
    /// Streaming requests whose tokens could not be matched one per iteration to executor
    /// iterations (a request paused, or iterations lost); their decode is recorded as one
    /// response after the first token.
    pub itl_unmapped_requests: u64,
    /// Client latency the point modelled, seconds.
    pub client_latency_s: f64,
}

/// Runs one point on a virtual-clock engine (a directory or a held simulated engine) with
/// [`VirtualRunOptions::default`]; see [`run_virtual_point_with`].
///
/// ```rust
/// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use trtllm::bench::{LoadPlan, PromptSource, Workload, run_virtual_point};
/// use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine};
///
/// let dir = tempfile::tempdir()?;
/// let engine = SimulatedEngine::builder().model(ModelPreset::by_id("llama-3.1-8b")?).gpu("h100-sxm");
/// engine.clock(ClockMode::Virtual).build().write_to(dir.path())?;
/// let workload = Workload {
///     source: PromptSource::Random { vocab_size: 1000, input_len: 512, shared_prefix: 0 },
///     output_len: Some(32),
///     fallback_output_len: 32,
///     ignore_eos: true,
///     end_id: None,
///     streaming: true,
///     seed: 0,
///     guide: None,
///     lengths: Default::default(),
/// };
/// let plan = LoadPlan { warmup: 1, ..LoadPlan::closed(1, 3) };
/// let (run, clock) = run_virtual_point(dir.path(), &workload, 0, &plan, |_| {}).await?;
/// assert_eq!(run.records.len(), 4);
/// // Three requests of 512 + 32 tokens on a simulated H100 take more simulated time than a
/// // loaded build machine needs to run them.
/// assert!(clock.simulated_s > 0.1);
/// assert_eq!(clock.itl_unmapped_requests, 0);
/// # Ok(()) }
/// ```
pub async fn run_virtual_point<'a>(
    engine: impl Into<VirtualEngine<'a>>,
    workload: &Workload,
    point: u64,
    plan: &LoadPlan,
    progress: impl FnMut(&RequestRecord),
) -> Result<(PointRun, VirtualClockRun), PlanningError> {
    run_virtual_point_with(engine, workload, point, plan, &VirtualRunOptions::default(), progress).await
}

/// Runs one point on a virtual-clock engine (a directory, or a simulated engine held in memory:
/// [`VirtualEngine`]): its own executor, `plan.warmup` warmup requests (closed loop at the point's
/// concurrency, its cap, or all at once), then the load of `plan` in simulated time, records rebuilt
/// in simulated time (seconds since the first arrival), and the iteration log from the iteration that
/// scheduled the first measured request. `progress` sees every measured request, rebuilt, once the load has run;
/// `options.live` follows the point while it runs.
pub async fn run_virtual_point_with<'a>(
    engine: impl Into<VirtualEngine<'a>>,
    workload: &Workload,
    point: u64,
    plan: &LoadPlan,
    options: &VirtualRunOptions,
    mut progress: impl FnMut(&RequestRecord),
) -> Result<(PointRun, VirtualClockRun), PlanningError> {
    plan.validate()?;
    let base = options.executor.clone().unwrap_or_default();
    let mut config = ExecutorConfig {
        stats_poll_interval: STATS_POLL,
        iter_stats_max_iterations: ITERATION_STATS_BUFFER,
        // The racing executor may deliver a whole answer before the runner reads any of it.
        stream_buffer: workload.output_len.unwrap_or(workload.fallback_output_len).max(1) as usize + 4096,
        max_batch_size: options.max_batch_size.or(base.max_batch_size),
        ..base
    };
    // ---- LoRA: this point's executor gets the run's adapter caches, and the traffic starts over ----
    let lora = options.lora.clone();
    if let Some(traffic) = &lora {
        config.peft_cache = traffic.spec().peft_cache.clone().or(config.peft_cache);
    }
    config.validate()?;
    let engine = engine.into();
    let executor = engine.start(config).await?;
    if let Some(traffic) = &lora {
        traffic.reset(executor.clone());
    }
    let step_responses = engine.speculates();
    let collector = IterationCollector::start_live(executor.executor(), options.live.clone());
    let wall_start = Instant::now();
    let origin = sim_control(&executor)?.now()?;
    let clock = RunClock::from_instant(origin);
    if let Some(live) = &options.live {
        live.set_simulated_elapsed(0.0);
    }

    let mut records = Vec::new();
    let mut next_index = 0_u64;
    if plan.warmup > 0 {
        let users = plan.load.concurrency().unwrap_or(plan.warmup);
        let mut sampler = workload.sampler(point, WorkloadPhase::Warmup);
        let planned: Vec<Planned> =
            (0..plan.warmup as u64).map(|i| (i, Phase::Warmup, sampler.next_request())).collect();
        next_index = plan.warmup as u64;
        let warm = run_phase(&executor, clock, options, step_responses, |load| {
            let start = sim_control(&load.executor)?.now()?;
            load.users(deal(planned, users), first_wave(start, users), UserLimit::Count, None);
            Ok(())
        })
        .await?;
        records.extend(warm);
    }
    let seed = workload.seed ^ point.rotate_left(32);
    let cycle = warmup_cycle(&records);
    // Closed-loop users' first arrivals: spread over the request cycle unless asked otherwise.
    let spread =
        |users: usize| -> Vec<Duration> { (0..users).map(|u| plan.user_start.offset(u, users, cycle)).collect() };
    let measured = run_phase(&executor, clock, options, step_responses, |load| {
        let start = sim_control(&load.executor)?.now()?;
        let mut sampler = workload.sampler(point, WorkloadPhase::Measure);
        // A trace replay: its own arrival times, under the load's cap if any.
        let trace = workload.trace().map(|t| t.arrivals_s(plan));
        // User u starts at its ramp-up time, CLIENT_STAGGER after u - 1, spread over the cycle.
        let ramped_starts = |users: usize, ramp_up: Duration| -> Vec<Instant> {
            (0..users)
                .map(|u| start + Duration::from_secs_f64(ramp_start_s(u, users, ramp_up.as_secs_f64())))
                .zip(first_wave(Duration::ZERO, users))
                .zip(spread(users))
                .map(|((at, stagger), offset)| at + stagger + offset)
                .collect()
        };
        match (plan.load, plan.duration) {
            (Load::Closed { concurrency }, duration) if workload.sessions().is_some() => {
                let ramp_up = plan.ramp_up.unwrap_or_default();
                let starts = ramped_starts(concurrency, ramp_up);
                let users =
                    SessionUsers { start, ramp_up, duration, budget: plan.num_prompts, first_index: next_index };
                users.run(load, workload, sampler, starts);
            }
            (Load::Open { .. }, _) if workload.sessions().is_some() => {
                return Err(PlanningError::NeedsWallClock("open-loop sessions (session starts at a rate)"));
            }
            _ if trace.is_some() => {
                let offsets = trace.unwrap_or_default();
                let planned: Vec<Planned> = (0..offsets.len() as u64)
                    .map(|i| (next_index + i, Phase::Measure, sampler.next_request()))
                    .collect();
                load.open_loop(planned, offsets, start, plan.load.concurrency());
            }
            (Load::Closed { concurrency }, None) => {
                let planned: Vec<Planned> = (0..plan.num_prompts as u64)
                    .map(|i| (next_index + i, Phase::Measure, sampler.next_request()))
                    .collect();
                let starts = first_wave(start, concurrency).into_iter().zip(spread(concurrency)).map(|(a, o)| a + o);
                load.users(deal(planned, concurrency), starts.collect(), UserLimit::Count, None);
            }
            (Load::Closed { concurrency }, Some(duration)) => {
                let ramp_up = plan.ramp_up.unwrap_or_default();
                let limit = UserLimit::Until { deadline: start + ramp_up + duration, ramp_end: start + ramp_up };
                let starts = ramped_starts(concurrency, ramp_up);
                // Request k of the point (user k mod concurrency, its (k / concurrency)-th) is the
                // k-th draw, whatever order the users reach it in.
                let drawn = Arc::new(Mutex::new((sampler, Vec::new())));
                let base = next_index;
                let next: NextRequest = Arc::new(move |user: usize, sent: u64, _: Option<&RequestRecord>| {
                    let k = (sent as usize) * concurrency + user;
                    let mut guard = drawn.lock().unwrap_or_else(|e| e.into_inner());
                    let (sampler, specs) = &mut *guard;
                    while specs.len() <= k {
                        specs.push(sampler.next_request());
                    }
                    Some((base + k as u64, Phase::Measure, specs[k].clone()))
                });
                let firsts: Vec<VecDeque<Planned>> = starts
                    .iter()
                    .enumerate()
                    .map(|(u, &at)| {
                        let (index, _, spec) = next(u, 0, None).expect("a duration user always has a next request");
                        let phase = if at < start + ramp_up { Phase::RampUp } else { Phase::Measure };
                        VecDeque::from([(index, phase, spec)])
                    })
                    .collect();
                load.users(firsts, starts, limit, Some(next));
            }
            (Load::Open { rate, burstiness, max_concurrency }, duration) => {
                let count = match duration {
                    None => plan.num_prompts,
                    // Enough arrivals for the duration; those after it are dropped below.
                    Some(d) => ((d.as_secs_f64() * rate * 1.5).ceil() as usize + 16).max(1),
                };
                let mut offsets = arrival_schedule(count, rate, burstiness, seed)?;
                if let Some(d) = duration {
                    offsets.retain(|&t| t < d.as_secs_f64());
                }
                let planned: Vec<Planned> = (0..offsets.len() as u64)
                    .map(|i| (next_index + i, Phase::Measure, sampler.next_request()))
                    .collect();
                load.open_loop(planned, offsets, start, max_concurrency);
            }
        }
        Ok(())
    })
    .await?;
    for record in &measured {
        if record.phase == Phase::Measure {
            progress(record);
        }
    }
    records.extend(measured);
    // In request order, not completion order: sums then add up in the same order every run.
    records.sort_by_key(|r| r.index);
    let ran_s = wall_start.elapsed().as_secs_f64();
    let log = collector.finish(executor.executor()).await;
    let wall_s = wall_start.elapsed().as_secs_f64();
    executor.shutdown(crate::ShutdownMode::Cancel).await?;
    let rebuild_start = Instant::now();

    let latencies = iteration_latencies_ms(&log);
    // `kv` and `iter` describe the measured window, as in a wall-clock run: from the iteration
    // that scheduled the first measured request (warmup requests still finishing share it).
    let first_measured =
        records.iter().filter(|r| r.phase == Phase::Measure).filter_map(|r| r.server.and_then(|s| s.first_iter)).min();
    let log = match first_measured {
        Some(first) => log.from_iteration(first),
        None => log,
    };
    let (records, itl_unmapped_requests) = to_simulated_time(records, &latencies);
    let simulated_s = records.iter().filter_map(|r| r.end_s).fold(0.0_f64, f64::max);
    // Where a point's wall time goes (`RUST_LOG=trtllm::bench=debug`).
    let rebuild_s = rebuild_start.elapsed().as_secs_f64();
    tracing::debug!(run_s = ran_s, stats_wait_s = wall_s - ran_s, rebuild_s, iterations = latencies.len(), "point");
    let clock_run = VirtualClockRun {
        wall_s,
        simulated_s,
        itl_unmapped_requests,
        client_latency_s: options.client_latency.as_secs_f64(),
    };
    // Over-saturation is read from the records afterwards: a virtual point costs no wall time
    // worth saving by stopping early.
    let over_saturated_s = match plan.load {
        Load::Open { rate, .. } if workload.trace().is_none() => {
            crate::bench::metrics::saturation::over_saturated_at(&records, rate)
        }
        _ => None,
    };
    Ok((PointRun { records, iterations: Some(log), over_saturated_s }, clock_run))
}

/// When each of `users` closed-loop users sends its first request from `start`: one after
/// another, [`CLIENT_STAGGER`] apart, as separate clients starting together do (an idle executor
/// then starts on the first, and the others wait for the next iteration, as in real time).
fn first_wave<T: std::ops::Add<Duration, Output = T> + Copy>(start: T, users: usize) -> Vec<T> {
    (0..users).map(|u| start + CLIENT_STAGGER * u as u32).collect()
}

/// Deals `planned` to `users` users in turn: user `u` gets requests `u`, `u + users`, ...
fn deal(planned: Vec<Planned>, users: usize) -> Vec<VecDeque<Planned>> {
    let users = users.max(1);
    let mut lists = vec![VecDeque::new(); users];
    for (k, p) in planned.into_iter().enumerate() {
        lists[k % users].push_back(p);
    }
    lists
}

/// Runs one phase: `start` enqueues its first requests under a hold (so the executor starts
/// nothing before they are all in), then every record is collected.
async fn run_phase(
    executor: &AsyncExecutor,
    clock: RunClock,
    options: &VirtualRunOptions,
    step_responses: bool,
    start: impl FnOnce(&ScheduledLoad) -> Result<(), PlanningError>,
) -> Result<Vec<RequestRecord>, PlanningError> {
    let (done, mut rx) = mpsc::unbounded_channel();
    let load = ScheduledLoad {
        executor: executor.clone(),
        clock,
        client_latency: options.client_latency,
        done,
        step_responses,
        lora: options.lora.clone(),
    };
    let now = sim_control(executor)?.now()?;
    let hold = sim_control(executor)?.hold_arrivals(now)?;
    let started = start(&load);
    sim_control(executor)?.release_hold(hold)?;
    started?;
    drop(load);
    let mut records = Vec::new();
    while let Some(record) = rx.recv().await {
        if let Some(live) = &options.live {
            live.record_simulated(&record);
        }
        records.push(record);
    }
    Ok(records)
}

/// Latency of every forward pass by iteration number (the entries that report an idle
/// executor reuse the next pass's number and are skipped).
pub fn iteration_latencies_ms(log: &IterationLog) -> BTreeMap<u64, f64> {
    log.iterations.iter().filter(|s| s.num_active_requests > 0).map(|s| (s.iter, s.iter_latency_ms)).collect()
}

/// Rebuilds records in executor time, seconds since the earliest arrival: send = arrival,
/// first token and end from the perf metrics, one response per token at the end of the
/// iteration that produced it (the first token's time plus the latencies of the following
/// iterations, which run back to back while a request is active). Returns the records and the
/// number of streaming requests whose tokens could not be matched to iterations.
///
/// A request refused at enqueue carries its arrival stamp and ends there; a request without any
/// executor stamp (failed with its arrival unknown) keeps its error and is placed at time 0.
///
/// ```rust
/// use std::collections::BTreeMap;
/// use trtllm::bench::{Phase, RequestRecord, ServerTimes, to_simulated_time};
///
/// let mut r = RequestRecord::new(0, Phase::Measure, 0.001); // wall-clock stamps ...
/// r.record_chunk(0.002, 1);
/// r.record_chunk(0.0021, 1);
/// r.record_chunk(0.0022, 1);
/// r.finish(0.0022, 3, Some("length".into()));
/// r.server = Some(ServerTimes { // ... and the executor's simulated ones
///     arrival_s: Some(10.0),
///     first_scheduled_s: Some(10.0),
///     first_token_s: Some(10.1),
///     last_token_s: Some(10.14),
///     first_iter: Some(4),
///     last_iter: Some(6),
/// });
/// let latencies = BTreeMap::from([(4, 100.0), (5, 20.0), (6, 20.0)]);
/// let (records, unmapped) = to_simulated_time(vec![r], &latencies);
/// assert_eq!(unmapped, 0);
/// let v = &records[0];
/// assert!((v.ttft_s().unwrap() - 0.1).abs() < 1e-9);
/// assert!((v.itl_s()[1] - 0.02).abs() < 1e-9);
/// assert!((v.e2el_s().unwrap() - 0.14).abs() < 1e-9);
/// ```
pub fn to_simulated_time(records: Vec<RequestRecord>, latencies_ms: &BTreeMap<u64, f64>) -> (Vec<RequestRecord>, u64) {
    let origin = records.iter().filter_map(|r| r.server.and_then(|s| s.arrival_s)).fold(f64::INFINITY, f64::min);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    let mut unmapped = 0;
    let rebuilt = records
        .into_iter()
        .map(|r| {
            let (record, mapped) = rebuild(r, origin, latencies_ms);
            unmapped += u64::from(!mapped);
            record
        })
        .collect();
    (rebuilt, unmapped)
}

/// One record in executor time; `false` when a streaming request's tokens could not be
/// matched to iterations.
fn rebuild(r: RequestRecord, origin: f64, latencies_ms: &BTreeMap<u64, f64>) -> (RequestRecord, bool) {
    let mut v = RequestRecord::new(r.index, r.phase, 0.0);
    v.streaming = r.streaming;
    v.prompt_tokens = r.prompt_tokens;
    v.output_tokens = r.output_tokens;
    v.expected_output_tokens = r.expected_output_tokens;
    v.cached_tokens = r.cached_tokens;
    v.speculative = r.speculative;
    v.scheduled_send_s = r.scheduled_send_s.map(|t| t - origin);
    v.finish_reason = r.finish_reason.clone();
    v.error = r.error.clone();
    v.lora_task = r.lora_task;
    v.lora_with_weights = r.lora_with_weights;
    v.session = r.session;
    v.turn = r.turn;
    let shift = |t: Option<f64>| t.map(|t| t - origin);
    let Some(server) = r.server.filter(|s| s.arrival_s.is_some()) else {
        v.end_s = Some(0.0);
        return (v, true);
    };
    v.server = Some(ServerTimes {
        arrival_s: shift(server.arrival_s),
        first_scheduled_s: shift(server.first_scheduled_s),
        first_token_s: shift(server.first_token_s),
        last_token_s: shift(server.last_token_s),
        ..server
    });
    let arrival = server.arrival_s.unwrap_or(origin) - origin;
    v.send_s = arrival;
    // Open loop under a cap: the wait for a slot between the scheduled time and the arrival.
    v.client_queue_s = v.scheduled_send_s.map_or(0.0, |due| (arrival - due).max(0.0));
    let (first, last) = (shift(server.first_token_s), shift(server.last_token_s));
    v.end_s = last.or(first).or(Some(arrival));
    let (Some(first), Some(last)) = (first, last) else {
        return (v, true);
    };
    if !r.streaming {
        return (v, true);
    }
    // Speculative decoding: a response per decoding step, each carrying its accepted run.
    let steps = r.chunks.len() as u64;
    if r.chunks.iter().any(|c| c.tokens > 1)
        && let Some(times) = token_times(first, last, steps, server.first_iter, server.last_iter, latencies_ms)
    {
        v.chunks = times
            .into_iter()
            .zip(&r.chunks)
            .map(|(t_s, c)| RecordedChunk { t_s, tokens: c.tokens, handled_s: None })
            .collect();
        v.first_token_s = Some(first);
        return (v, true);
    }
    let mut mapped = true;
    match token_times(first, last, r.output_tokens, server.first_iter, server.last_iter, latencies_ms) {
        Some(times) => {
            v.chunks = times.into_iter().map(|t_s| RecordedChunk { t_s, tokens: 1, handled_s: None }).collect()
        }
        None => {
            mapped = r.output_tokens <= 1;
            v.chunks.push(RecordedChunk { t_s: first, tokens: 1, handled_s: None });
            if r.output_tokens > 1 {
                let rest = u32::try_from(r.output_tokens - 1).unwrap_or(u32::MAX);
                v.chunks.push(RecordedChunk { t_s: last, tokens: rest, handled_s: None });
            }
        }
    }
    v.first_token_s = Some(first);
    (v, mapped)
}

/// Each token's time when the request produced one token in every iteration from its first to
/// its last and those iterations' latencies add up to its first-to-last-token time.
fn token_times(
    first: f64,
    last: f64,
    tokens: u64,
    first_iter: Option<u64>,
    last_iter: Option<u64>,
    latencies_ms: &BTreeMap<u64, f64>,
) -> Option<Vec<f64>> {
    let (f, l) = (first_iter?, last_iter?);
    if tokens == 0 || l < f || l - f + 1 != tokens {
        return None;
    }
    if tokens == 1 {
        // One token (a context-only request): nothing after the first to walk.
        return Some(vec![first]);
    }
    let mut times = Vec::with_capacity(tokens as usize);
    let mut t = first;
    times.push(t);
    // One walk over the range (not a lookup per token); a missing iteration leaves it short.
    for (_, latency_ms) in latencies_ms.range(f + 1..=l) {
        t += latency_ms / 1e3;
        times.push(t);
    }
    if times.len() as u64 != tokens {
        return None;
    }
    // The executor's own stamps are the reference; a mismatch means a gap we cannot see.
    (((t - last).abs()) <= 1e-6 * tokens as f64 + 1e-6).then_some(times)
}

#[cfg(test)]
mod tests;
