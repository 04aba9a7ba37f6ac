//! How much the runner and the gRPC transport add, measured against the executor's own clock.
//!
//! 1. Measurement error in process at 1, 64, 256 and 1,000 concurrent streams (10 ms simulated
//!    iterations in real time): client-side first-token time minus the executor's first-token
//!    stamp; per token, each client-side gap minus the gap between the executor iterations that
//!    produced the two tokens (pooled over every token of every stream); and the runner's own
//!    scheduling delay (response-thread receipt to the runner task handling the token).
//! 2. Tokens/s the runner can drive with the simulator at zero latency (no sleeping), best of
//!    three runs, and the tokens per executor iteration (256: every stream in every iteration),
//!    which shows a batching regression whatever the host's load.
//! 3. The same through the gRPC server on loopback: tokens/s at zero latency, and the TTFT that
//!    gRPC adds over in process at 256 streams, from interleaved rounds on one executor (median
//!    of the per-round percentile differences) and per request (client first token minus the
//!    executor's first-token stamp, which excludes executor scheduling).
//!
//! 4. This host's floor, measured first: how late a parked thread and a parked tokio task run
//!    after another thread wakes them, and how late a sleep to a deadline wakes (the real-time
//!    simulator sleeps to each iteration's end and stamps that end). No error above can be
//!    smaller than these on the same host.
//!
//! With the zero-latency rates it also prints the process's CPU time per token, which a busy
//! host changes far less than tokens/s. A summary at the end repeats the figures docs/bench.md's
//! measurement-error table gives, with the floor and CPU rows.
//!
//! With `TRTLLM_BENCH_LIVE=1` every point runs as `trtllm bench` runs it with its live view on:
//! through `run_point_live` with shared [`LiveStats`], each finished request added to it, the
//! simulated GPU telemetry sampler feeding it every 0.5 s, and a thread drawing the live view
//! into an off-screen buffer four times a second (`TRTLLM_BENCH_TELEMETRY=0` leaves the sampler
//! out; `TRTLLM_BENCH_VIEW_PRIORITY=normal` draws from an ordinary thread instead of the idle-priority
//! observer `trtllm bench` uses); the first line printed says which mode ran.
//! Comparing the figures of the two modes shows what the live view costs the runner.
//!
//! `cargo bench --bench runner_overhead`

#[path = "runner_overhead/host_floor.rs"]
mod host_floor;
#[path = "runner_overhead/live_view.rs"]
mod live_view;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

// The allocator the `trtllm` command uses (src/main.rs), so the figures are the command's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use host_floor::{timer_lateness, wake_up_floor};
use live_view::{GPU_SAMPLE_INTERVAL, VIEW_PERIOD, live_view};
use trtllm::bench::{
    BenchTarget, Calibration, GrpcTarget, LoadPlan, Phase, PointRun, PromptSource, RequestRecord, RunClock,
    SimulatedSource, TelemetrySampler, WallAnchor, Workload, percentile, run_point, run_point_live, telemetry_line,
};
use trtllm::server::{ServeOptions, serve};
use trtllm::sim::SimulatedEngine;
use trtllm::{AsyncExecutor, ExecutorConfig};

fn engine(dir: &std::path::Path, iteration_ms: f64, time_scale: f64) {
    SimulatedEngine::builder()
        .vocab_size(32000)
        .max_batch_size(1024)
        .max_num_tokens(65536)
        .iteration_ms(iteration_ms)
        .time_scale(time_scale)
        .kv_cache_max_tokens(4_000_000)
        .build()
        .write_to(dir)
        .expect("engine dir");
}

async fn start_executor(iteration_ms: f64, time_scale: f64) -> (tempfile::TempDir, AsyncExecutor) {
    let dir = tempfile::tempdir().unwrap();
    engine(dir.path(), iteration_ms, time_scale);
    let config = ExecutorConfig::builder().stream_buffer(4096).build().unwrap();
    let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
    (dir, executor)
}

fn workload(output_len: usize) -> Workload {
    Workload {
        source: PromptSource::Random { vocab_size: 32000, input_len: 16, shared_prefix: 0 },
        output_len: Some(output_len as u32),
        fallback_output_len: output_len as u32,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 1,
        guide: None,
        lengths: Default::default(),
    }
}

/// One closed-loop point with every stream in flight at once; the measured records, the run,
/// its clock and wall anchor, and the seconds it took.
async fn run_full(
    target: &BenchTarget,
    concurrency: usize,
    output_len: usize,
) -> (PointRun, RunClock, WallAnchor, f64) {
    let plan = LoadPlan::closed(concurrency, concurrency);
    let (clock, anchor) = (RunClock::start(), WallAnchor::now());
    let started = Instant::now();
    let run = match live_view() {
        None => run_point(target, &workload(output_len), 0, &plan, &clock, |_| {}).await,
        Some(view) => {
            view.stats.start_point(&format!("c{concurrency}"), Some(concurrency as u64));
            let live = view.stats.clone();
            let source = target.executor().and_then(|e| SimulatedSource::of(e.executor())).filter(|_| view.telemetry);
            let sampler = source.map(|source| {
                TelemetrySampler::start(Box::new(source), GPU_SAMPLE_INTERVAL, move |round| {
                    live.set_gpu(telemetry_line(round))
                })
            });
            let count = |r: &RequestRecord| view.stats.record(r);
            let run = run_point_live(target, &workload(output_len), 0, &plan, &clock, count, &view.stats).await;
            if let Some(sampler) = sampler {
                sampler.finish();
            }
            run
        }
    }
    .expect("valid plan");
    let seconds = started.elapsed().as_secs_f64();
    if let Some(failed) = run.records.iter().find(|r| !r.is_success()) {
        panic!("a request failed: {:?}", failed.error);
    }
    (run, clock, anchor, seconds)
}

async fn run(target: &BenchTarget, concurrency: usize, output_len: usize) -> (Vec<RequestRecord>, f64) {
    let (run, _, _, seconds) = run_full(target, concurrency, output_len).await;
    (run.records.into_iter().filter(|r| r.phase == Phase::Measure).collect(), seconds)
}

/// A percentile of values already in milliseconds.
fn ms_of(values: &[f64], p: f64) -> f64 {
    percentile(values, p).unwrap_or(f64::NAN)
}

fn ms(values: &[f64], p: f64) -> f64 {
    percentile(values, p).unwrap_or(f64::NAN) * 1e3
}

/// Serves `executor` on a loopback port; returns a gRPC target, the stop signal and the server task.
async fn serve_on_loopback(
    executor: &AsyncExecutor,
) -> (BenchTarget, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let served = executor.clone();
    let server = tokio::spawn(async move {
        let options = ServeOptions { addr, grace_period: Duration::from_secs(1), ..Default::default() };
        serve(served, None, options, listener, async {
            let _ = stop_rx.await;
        })
        .await
        .unwrap();
    });
    let grpc = BenchTarget::Grpc(GrpcTarget::connect(format!("http://{addr}")).await.unwrap());
    (grpc, stop_tx, server)
}

/// The figures the summary table at the end repeats, with their goals.
#[derive(Default)]
struct Table {
    ttft_error_p99_1000: f64,
    ttft_error_p99_256: f64,
    itl_error_p99_1000: f64,
    grpc_added_ttft_p99: f64,
    delivery_p99_grpc: f64,
    delivery_p99_in_process: f64,
    tokens_per_s_in_process: f64,
    tokens_per_s_grpc: f64,
    floor_thread_p99: f64,
    floor_task_p99: f64,
    floor_timer_p99: f64,
    cpu_us_per_token_in_process: f64,
    cpu_us_per_token_grpc: f64,
}

impl Table {
    fn print(&self) {
        println!("\nsummary (the measurement-error table of docs/bench.md):");
        let rows = [
            ("in-process TTFT error p99, 1,000 streams", format!("{:.3} ms", self.ttft_error_p99_1000), "<= 0.5 ms"),
            ("in-process TTFT error p99, 256 streams", format!("{:.3} ms", self.ttft_error_p99_256), "<= 0.2 ms"),
            ("in-process ITL error p99, 1,000 streams", format!("{:.3} ms", self.itl_error_p99_1000), "<= 0.5 ms"),
            (
                "TTFT gRPC adds over in process p99, 256 streams",
                format!("{:.2} ms", self.grpc_added_ttft_p99),
                "<= 2 ms",
            ),
            (
                "first token after the executor's stamp p99, gRPC / in process",
                format!("{:.3} / {:.3} ms", self.delivery_p99_grpc, self.delivery_p99_in_process),
                "<= 1.0 / 0.3 ms",
            ),
            (
                "tokens/s at zero latency, 256 streams, in process / gRPC",
                format!("{:.0}k / {:.0}k", self.tokens_per_s_in_process / 1e3, self.tokens_per_s_grpc / 1e3),
                ">= 1M / >= 500k",
            ),
        ];
        for (name, value, goal) in rows {
            println!("  {name:<64} {value:>18}   goal {goal}");
        }
        println!(
            "  {:<64} {:>18}   (no goal: the load's CPU cost)",
            "CPU time per token at zero latency, in process / gRPC",
            format!("{:.2} / {:.2} us", self.cpu_us_per_token_in_process, self.cpu_us_per_token_grpc)
        );
        println!(
            "  {:<64} {:>18}   (no goal: what this host allows)",
            "wake-up floor p99, thread -> thread / thread -> tokio task",
            format!("{:.3} / {:.3} ms", self.floor_thread_p99, self.floor_task_p99)
        );
        println!(
            "  {:<64} {:>18}   (no goal: what this host allows)",
            "timer lateness p99 (a sleep's wake-up, as the simulator's)",
            format!("{:.3} ms", self.floor_timer_p99)
        );
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    println!("build profile: {}", env!("TRTLLM_BUILD_PROFILE"));
    match live_view() {
        Some(view) => println!(
            "mode: live view ON (TRTLLM_BENCH_LIVE=1): run_point_live + LiveStats, simulated GPU telemetry {}, view \
             drawn every {VIEW_PERIOD:?} off screen by a thread at {} priority",
            if view.telemetry { format!("every {GPU_SAMPLE_INTERVAL:?}") } else { "off".to_owned() },
            if view.normal_priority { "normal (TRTLLM_BENCH_VIEW_PRIORITY=normal)" } else { "idle" }
        ),
        None => println!("mode: live view off (TRTLLM_BENCH_LIVE=1 turns it on)"),
    }
    let mut table = Table::default();
    let (thread_wake, task_wake) = wake_up_floor().await;
    println!("this host's wake-up floor (2,000 wake-ups 0.5 ms apart), ms:");
    for (what, delays) in
        [("thread -> parked thread (condvar)", &thread_wake), ("thread -> parked tokio task", &task_wake)]
    {
        println!(
            "  {what:<36} p50 {:.3}  p99 {:.3}  max {:.3}",
            ms_of(delays, 50.0),
            ms_of(delays, 99.0),
            delays.iter().copied().fold(0.0, f64::max)
        );
    }
    let timer = tokio::task::spawn_blocking(timer_lateness).await.unwrap();
    println!(
        "  {:<36} p50 {:.3}  p99 {:.3}  max {:.3}",
        "sleep until a deadline (timer)",
        ms_of(&timer, 50.0),
        ms_of(&timer, 99.0),
        timer.iter().copied().fold(0.0, f64::max)
    );
    (table.floor_thread_p99, table.floor_task_p99) = (ms_of(&thread_wake, 99.0), ms_of(&task_wake, 99.0));
    table.floor_timer_p99 = ms_of(&timer, 99.0);
    // At 256 and 1,000 streams every first token comes in one or two iterations, which share a
    // stamp: one run's TTFT p99 is one or two samples. Those points run a few rounds on one
    // executor, pooled, so the p99 is over several iterations' hand-overs.
    const CALIBRATION_ROUNDS: usize = 4;
    println!(
        "measurement error in process (10 ms iterations, 32 output tokens; 256 and 1,000 streams: \
         {CALIBRATION_ROUNDS} rounds pooled), ms:"
    );
    println!(
        "{:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "streams",
        "TTFT p50",
        "TTFT p99",
        "ITL p50",
        "ITL p99",
        "|ITL|p99",
        "sched p50",
        "sched p99",
        "sched max",
        "tokens"
    );
    for streams in [1, 64, 256, 1000] {
        let (_dir, executor) = start_executor(10.0, 1.0).await;
        let target = BenchTarget::InProcess(executor.clone());
        let (mut ttft, mut itl, mut sched) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..if streams >= 256 { CALIBRATION_ROUNDS } else { 1 } {
            let (run, clock, anchor, _) = run_full(&target, streams, 32).await;
            let ends = run.iterations.as_ref().map(|log| log.end_times_s(&clock, &anchor)).unwrap_or_default();
            let c = Calibration::compute(&run.records, &ends, &[]).expect("executor stamps");
            ttft.extend_from_slice(c.ttft_error.sorted_samples());
            itl.extend_from_slice(c.itl_error.sorted_samples());
            sched.extend_from_slice(c.runner_scheduling_delay.sorted_samples());
        }
        // Per-token errors of either sign: how far a client-side gap can be off.
        let abs_itl: Vec<f64> = itl.iter().map(|v| v.abs()).collect();
        println!(
            "{streams:>8} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>8}",
            ms_of(&ttft, 50.0),
            ms_of(&ttft, 99.0),
            ms_of(&itl, 50.0),
            ms_of(&itl, 99.0),
            ms_of(&abs_itl, 99.0),
            ms_of(&sched, 50.0),
            ms_of(&sched, 99.0),
            sched.iter().copied().fold(f64::NAN, f64::max),
            itl.len(),
        );
        match streams {
            1000 => {
                table.ttft_error_p99_1000 = ms_of(&ttft, 99.0);
                table.itl_error_p99_1000 = ms_of(&itl, 99.0);
            }
            256 => table.ttft_error_p99_256 = ms_of(&ttft, 99.0),
            _ => {}
        }
        executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
    }

    // The per-token cost of the whole path (executor, response thread, stream, runner): the best
    // of a few runs, since one run is short enough for a busy host to halve it.
    const THROUGHPUT_RUNS: usize = 3;
    println!("\nzero-latency simulator (no sleeping), 256 streams x 256 tokens, best of {THROUGHPUT_RUNS} runs:");
    let (_dir, executor) = start_executor(10.0, 0.0).await;
    let target = BenchTarget::InProcess(executor.clone());
    let (local, batch, local_cpu) = tokens_per_s(&target, THROUGHPUT_RUNS).await;
    println!(
        "  in process: {:>10.0} tokens/s (runs: {}); {:.1} tokens per executor iteration (256 expected); \
         {local_cpu:.2} CPU us per token",
        best(&local),
        thousands(&local),
        batch.unwrap_or(f64::NAN)
    );
    let (grpc, stop_tx, server) = serve_on_loopback(&executor).await;
    let (remote, _, remote_cpu) = tokens_per_s(&grpc, THROUGHPUT_RUNS).await;
    println!(
        "  via gRPC:   {:>10.0} tokens/s (runs: {}); {remote_cpu:.2} CPU us per token (server and client)",
        best(&remote),
        thousands(&remote)
    );
    (table.tokens_per_s_in_process, table.tokens_per_s_grpc) = (best(&local), best(&remote));
    (table.cpu_us_per_token_in_process, table.cpu_us_per_token_grpc) = (local_cpu, remote_cpu);
    let _ = stop_tx.send(());
    let _ = server.await;

    // Two runs' TTFT percentiles differ by more than gRPC adds (which iteration each burst lands
    // in, scheduling noise), so the same executor serves alternating in-process and gRPC rounds
    // (order swapped every round) and two figures are reported: the median over rounds of each
    // round's percentile difference, and the per-request delivery delay (client first token
    // minus the executor's own first-token stamp), which excludes executor scheduling entirely.
    const ROUNDS: usize = 6;
    println!(
        "\nTTFT added by gRPC over in process, 256 streams, 10 ms iterations, 32 tokens, {ROUNDS} interleaved rounds:"
    );
    let (_dir, executor) = start_executor(10.0, 1.0).await;
    let in_process = BenchTarget::InProcess(executor.clone());
    let (grpc, stop_tx, server) = serve_on_loopback(&executor).await;
    let ttfts = |records: &[RequestRecord]| records.iter().filter_map(RequestRecord::ttft_s).collect::<Vec<_>>();
    let delivery = |records: &[RequestRecord]| {
        records.iter().filter_map(|r| Some(r.first_token_s? - r.server?.first_token_s?)).collect::<Vec<_>>()
    };
    let (mut added_p50, mut added_p99) = (Vec::new(), Vec::new());
    let (mut local_all, mut remote_all) = (Vec::new(), Vec::new());
    let (mut local_delivery, mut remote_delivery) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        let (local, remote) = if round % 2 == 0 {
            let local = run(&in_process, 256, 32).await.0;
            (local, run(&grpc, 256, 32).await.0)
        } else {
            let remote = run(&grpc, 256, 32).await.0;
            (run(&in_process, 256, 32).await.0, remote)
        };
        let (l, r) = (ttfts(&local), ttfts(&remote));
        added_p50.push(ms(&r, 50.0) - ms(&l, 50.0));
        added_p99.push(ms(&r, 99.0) - ms(&l, 99.0));
        local_all.extend(l);
        remote_all.extend(r);
        local_delivery.extend(delivery(&local));
        remote_delivery.extend(delivery(&remote));
    }
    let median = |v: &[f64]| percentile(v, 50.0).unwrap_or(f64::NAN);
    println!(
        "  p50 TTFT: in process {:.2} ms, gRPC {:.2} ms; added (median of rounds) {:.2} ms, per round {}",
        ms(&local_all, 50.0),
        ms(&remote_all, 50.0),
        median(&added_p50),
        rounds(&added_p50)
    );
    println!(
        "  p99 TTFT: in process {:.2} ms, gRPC {:.2} ms; added (median of rounds) {:.2} ms, per round {}",
        ms(&local_all, 99.0),
        ms(&remote_all, 99.0),
        median(&added_p99),
        rounds(&added_p99)
    );
    println!(
        "  first-token delivery after the executor's stamp: p50 in process {:.3} ms, gRPC {:.3} ms (added {:.3} ms); \
         p99 in process {:.3} ms, gRPC {:.3} ms (added {:.3} ms)",
        ms(&local_delivery, 50.0),
        ms(&remote_delivery, 50.0),
        ms(&remote_delivery, 50.0) - ms(&local_delivery, 50.0),
        ms(&local_delivery, 99.0),
        ms(&remote_delivery, 99.0),
        ms(&remote_delivery, 99.0) - ms(&local_delivery, 99.0)
    );
    table.grpc_added_ttft_p99 = median(&added_p99);
    table.delivery_p99_grpc = ms(&remote_delivery, 99.0);
    table.delivery_p99_in_process = ms(&local_delivery, 99.0);
    let _ = stop_tx.send(());
    let _ = server.await;
    table.print();
    if let Some(view) = live_view() {
        let last = view.stats.snapshot();
        let frames = view.frames.load(Ordering::Relaxed);
        println!(
            "live view: {frames} frames drawn, {:.1} us each, {} priority; last point {}: KV {:?}, GPU {:?}",
            view.drawing_ns.load(Ordering::Relaxed) as f64 / 1e3 / frames.max(1) as f64,
            if view.normal_priority { "normal" } else { "idle" },
            last.label,
            last.kv_utilization,
            last.gpu
        );
    }
}

/// Tokens/s of `runs` closed-loop runs of 256 streams x 256 tokens, and (in process) the mean
/// tokens per executor iteration over all runs: 256 when every stream shares every iteration,
/// fewer when the executor splits the streams over more iterations, each with its fixed costs. A
/// busy host lowers it somewhat (the 256 requests reach the executor over a longer time); the ~40%
/// zero-latency regression took it to about 35, plain where tokens/s drowned in the host's noise.
/// Also the process's CPU time per token over the runs (every thread: the executor's, the
/// response thread, the runtime's workers), which a busy host changes far less than tokens/s.
async fn tokens_per_s(target: &BenchTarget, runs: usize) -> (Vec<f64>, Option<f64>, f64) {
    let mut rates = Vec::with_capacity(runs);
    let (mut all_tokens, mut iterations) = (0_u64, 0_usize);
    let cpu_before = process_cpu_s();
    for _ in 0..runs {
        let (run, _, _, seconds) = run_full(target, 256, 256).await;
        let tokens: u64 = run.records.iter().filter(|r| r.phase == Phase::Measure).map(|r| r.output_tokens).sum();
        rates.push(tokens as f64 / seconds);
        all_tokens += tokens;
        if let Some(log) = &run.iterations {
            iterations += log.iterations.iter().filter(|s| s.num_active_requests > 0).count();
        }
    }
    let cpu_us_per_token = (process_cpu_s() - cpu_before) * 1e6 / all_tokens.max(1) as f64;
    (rates, (iterations > 0).then(|| all_tokens as f64 / iterations as f64), cpu_us_per_token)
}

/// User plus system CPU seconds this process has used, all threads together.
fn process_cpu_s() -> f64 {
    // SAFETY: getrusage only writes the struct it is given, which lives on this stack frame.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

fn best(values: &[f64]) -> f64 {
    values.iter().copied().fold(f64::NAN, f64::max)
}

fn thousands(values: &[f64]) -> String {
    let parts: Vec<String> = values.iter().map(|v| format!("{:.0}k", v / 1e3)).collect();
    parts.join(", ")
}

/// Per-round values, for the spread.
fn rounds(values: &[f64]) -> String {
    let parts: Vec<String> = values.iter().map(|v| format!("{v:.2}")).collect();
    format!("[{}] ms", parts.join(", "))
}
