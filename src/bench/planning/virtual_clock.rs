//! Planning runs on the simulator's virtual clock: closed-loop points measured in simulated time.
//!
//! With simulation.json's `clock: "virtual"` nothing sleeps: the executor's clock jumps by each
//! iteration's modelled time, so a point finishes far faster than real time, and the client's
//! wall clock says nothing about latency. The runner here therefore
//!
//! - keeps the closed loop inside the executor: a fresh executor per point whose runtime batch
//!   cap is the concurrency, with every request (warmup first) queued at once, so a request
//!   enters the batch in the iteration after one leaves, with no client reaction time between
//!   (a runner reacting in wall time would let the racing executor run short-handed);
//! - rebuilds every record in executor (virtual) time: send = the executor's arrival stamp (the
//!   moment a closed-loop user's request enters), first and last token from the perf metrics,
//!   and each token's time from the iteration latencies of the iterations that produced it.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::bench::metrics::iterations::{IterationCollector, IterationLog};
use crate::bench::metrics::record::{Phase, RequestRecord, RunClock, ServerTimes, TokenChunk};
use crate::bench::runner::point::PointRun;
use crate::bench::runner::target::{consume_in_process, enqueue_all_in_process};
use crate::bench::traffic::load::{Load, LoadError, LoadPlan};
use crate::bench::traffic::workload::{Workload, WorkloadPhase};
use crate::{AsyncExecutor, EngineConfig, ExecutorConfig};

/// Iteration statistics the executor may buffer between two polls: a virtual-clock executor
/// runs thousands of iterations per second of wall time, and every one is needed for ITL.
const ITERATION_STATS_BUFFER: u32 = 1_000_000;

/// How often the stats thread drains the executor during a planning point.
const STATS_POLL: Duration = Duration::from_millis(5);

/// Errors of a planning run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanningError {
    /// The load plan is invalid.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A load shape that needs wall-clock time (open-loop arrivals, ramp-up, duration).
    #[error(
        "{0} counts wall-clock time, which the virtual clock does not follow: plan with closed-loop concurrency and a request count (--concurrency, --num-prompts), or use an engine whose simulation.json has \"clock\": \"real\""
    )]
    NeedsWallClock(&'static str),
    /// The executor could not be loaded or configured.
    #[error("loading the executor for the planning run: {0}")]
    Executor(#[from] crate::Error),
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
    /// Runtime batch cap the executor ran with (the concurrency, capped by the engine's).
    pub max_batch_size: usize,
    /// Wall-clock seconds queueing every request took (the executor already runs meanwhile).
    pub queue_wall_s: f64,
    /// Requests that had finished before the last one was queued: while queueing, the batch
    /// may not have been full. Zero means every request met a full queue behind it; the warmup
    /// requests absorb a small number (they are excluded from statistics).
    pub finished_while_queueing: u64,
}

/// Runs one closed-loop point on a virtual-clock engine in `engine_dir`: its own executor with
/// the concurrency as batch cap, `plan.warmup` warmup requests then `plan.num_prompts` measured
/// ones queued at once, records rebuilt in simulated time (seconds since the first arrival),
/// and the iteration log from the iteration that scheduled the first measured request.
/// `progress` sees every measured request as it finishes.
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
pub async fn run_virtual_point(
    engine_dir: &Path,
    workload: &Workload,
    point: u64,
    plan: &LoadPlan,
    mut progress: impl FnMut(&RequestRecord),
) -> Result<(PointRun, VirtualClockRun), PlanningError> {
    plan.validate()?;
    let concurrency = match plan.load {
        Load::Closed { concurrency } => concurrency,
        Load::Open { .. } => return Err(PlanningError::NeedsWallClock("an open-loop request rate")),
    };
    if plan.duration.is_some() {
        return Err(PlanningError::NeedsWallClock("--duration"));
    }
    if plan.ramp_up.is_some() {
        return Err(PlanningError::NeedsWallClock("--ramp-up"));
    }
    let engine = EngineConfig::from_dir(engine_dir)?;
    let max_batch_size = concurrency.min(engine.max_batch_size.max(1));
    let longest_output = workload.output_len.unwrap_or(workload.fallback_output_len).max(1) as usize;
    let config = ExecutorConfig::builder()
        .max_batch_size(max_batch_size as u32)
        .stats_poll_interval(STATS_POLL)
        .iter_stats_max_iterations(ITERATION_STATS_BUFFER)
        // The racing executor may deliver a whole answer before the runner reads any of it.
        .stream_buffer(longest_output.max(engine.max_seq_len) + 16)
        .build()?;
    // ---- LoRA: this point's executor gets the run's adapter caches, and the traffic starts over ----
    let lora = crate::bench::lora::installed();
    let config = ExecutorConfig { peft_cache: lora.as_ref().and_then(|t| t.spec().peft_cache.clone()), ..config };
    // ---- config search: the searched configuration's runtime knobs (KV fraction, reuse, chunking, scheduler) ----
    let config = super::search::apply_runtime_knobs(config);
    let executor = AsyncExecutor::load(engine_dir, config).await?;
    if let Some(traffic) = &lora {
        traffic.reset(executor.clone());
    }
    let collector = IterationCollector::start(executor.executor());

    // Prompts are drawn before anything is queued: the executor starts on the first request,
    // and the closed loop is only full once everything is queued.
    let mut specs = Vec::with_capacity(plan.warmup + plan.num_prompts);
    let phases = [
        (Phase::Warmup, WorkloadPhase::Warmup, plan.warmup),
        (Phase::Measure, WorkloadPhase::Measure, plan.num_prompts),
    ];
    for (phase, workload_phase, count) in phases {
        let mut sampler = workload.sampler(point, workload_phase);
        specs.extend((0..count).map(|_| (phase, sampler.next_request())));
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    let clock = RunClock::start();
    let wall_start = Instant::now();
    // Everything is queued in one executor call, in order: the executor's own queue then admits
    // the next request whenever one of `concurrency` leaves, as a closed-loop user would send it,
    // and the first iteration already sees the whole queue, so every run of a point is the same.
    for (stream, record) in enqueue_all_in_process(&executor, &specs, &clock) {
        match stream {
            Some(stream) => {
                let tx = tx.clone();
                tokio::spawn(async move {
                    let _ = tx.send(consume_in_process(stream, record, &clock).await);
                });
            }
            None => {
                let _ = tx.send(record);
            }
        }
    }
    let queue_wall_s = wall_start.elapsed().as_secs_f64();
    let finished_while_queueing = specs.len().saturating_sub(executor.executor().in_flight()) as u64;
    drop(tx);
    let mut records = Vec::new();
    while let Some(record) = rx.recv().await {
        if record.phase == Phase::Measure {
            progress(&record);
        }
        records.push(record);
    }
    // In request order, not completion order: sums then add up in the same order every run.
    records.sort_by_key(|r| r.index);
    let log = collector.finish(executor.executor()).await;
    let wall_s = wall_start.elapsed().as_secs_f64();
    executor.shutdown(crate::ShutdownMode::Cancel).await?;

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
    let clock_run = VirtualClockRun {
        wall_s,
        simulated_s,
        itl_unmapped_requests,
        max_batch_size,
        queue_wall_s,
        finished_while_queueing,
    };
    Ok((PointRun { records, iterations: Some(log) }, clock_run))
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
/// A request without executor stamps (refused before it was scheduled) keeps its error and
/// is placed at time 0.
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
    v.finish_reason = r.finish_reason.clone();
    v.error = r.error.clone();
    v.lora_task = r.lora_task;
    v.lora_with_weights = r.lora_with_weights;
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
            .map(|(t_s, c)| TokenChunk { t_s, tokens: c.tokens, handled_s: None })
            .collect();
        v.first_token_s = Some(first);
        return (v, true);
    }
    let mut mapped = true;
    match token_times(first, last, r.output_tokens, server.first_iter, server.last_iter, latencies_ms) {
        Some(times) => v.chunks = times.into_iter().map(|t_s| TokenChunk { t_s, tokens: 1, handled_s: None }).collect(),
        None => {
            mapped = r.output_tokens <= 1;
            v.chunks.push(TokenChunk { t_s: first, tokens: 1, handled_s: None });
            if r.output_tokens > 1 {
                let rest = u32::try_from(r.output_tokens - 1).unwrap_or(u32::MAX);
                v.chunks.push(TokenChunk { t_s: last, tokens: rest, handled_s: None });
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
    let mut times = Vec::with_capacity(tokens as usize);
    let mut t = first;
    times.push(t);
    for iter in f + 1..=l {
        t += latencies_ms.get(&iter)? / 1e3;
        times.push(t);
    }
    // The executor's own stamps are the reference; a mismatch means a gap we cannot see.
    (((t - last).abs()) <= 1e-6 * tokens as f64 + 1e-6).then_some(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(first_iter: u64, last_iter: u64, tokens: u64) -> RequestRecord {
        let mut r = RequestRecord::new(0, Phase::Measure, 5.0);
        r.finish(6.0, tokens, Some("length".into()));
        r.server = Some(ServerTimes {
            arrival_s: Some(1.0),
            first_scheduled_s: Some(1.0),
            first_token_s: Some(1.5),
            last_token_s: Some(1.5 + 0.01 * (tokens - 1) as f64),
            first_iter: Some(first_iter),
            last_iter: Some(last_iter),
        });
        r
    }

    #[test]
    fn a_gap_in_the_iterations_is_not_papered_over() {
        let latencies: BTreeMap<u64, f64> = (0..10).map(|i| (i, 10.0)).collect();
        let (ok, unmapped) = to_simulated_time(vec![streamed(2, 5, 4)], &latencies);
        assert_eq!(unmapped, 0);
        assert_eq!(ok[0].chunks.len(), 4);
        assert!((ok[0].tpot_s().unwrap() - 0.01).abs() < 1e-9);
        // Four tokens over five iterations (a pause): one response for the decode, counted.
        let (paused, unmapped) = to_simulated_time(vec![streamed(2, 6, 4)], &latencies);
        assert_eq!(unmapped, 1);
        assert_eq!(paused[0].chunks.len(), 2);
        assert!((paused[0].e2el_s().unwrap() - 0.53).abs() < 1e-9);
        // A lost iteration.
        let mut holes = latencies.clone();
        holes.remove(&4);
        assert_eq!(to_simulated_time(vec![streamed(2, 5, 4)], &holes).1, 1);
    }

    #[test]
    fn refused_requests_keep_their_error() {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.3);
        r.fail(0.31, "prompt too long");
        let (v, unmapped) = to_simulated_time(vec![r, streamed(0, 1, 2)], &BTreeMap::from([(1, 10.0)]));
        assert_eq!(unmapped, 0);
        assert_eq!(v[0].error.as_deref(), Some("prompt too long"));
        assert_eq!((v[0].send_s, v[0].end_s), (0.0, Some(0.0)));
        assert_eq!(v[1].send_s, 0.0, "times count from the earliest arrival");
    }
}
