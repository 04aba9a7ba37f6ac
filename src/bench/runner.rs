//! The load generator: drives an executor in process, or a server over gRPC, with a workload and
//! records every request.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::record::{Phase, RequestRecord, RunClock, ServerTimes};
use crate::proto::trtllm as pb;
use crate::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
use crate::{AsyncExecutor, GenerationRequest, IterationStats, SamplingParams, StreamEvent};

/// Where the load goes: the same workloads and records either way, so the transport's cost shows.
#[derive(Debug, Clone)]
pub enum BenchTarget {
    /// An executor in this process: times come straight from executor events.
    InProcess(AsyncExecutor),
    /// A `trtllm.TrtllmService` server: times are taken as messages arrive.
    Grpc(GrpcTarget),
}

/// A gRPC server and the anchor that maps its Unix-epoch perf times onto this process's clock.
#[derive(Debug, Clone)]
pub struct GrpcTarget {
    client: TrtllmServiceClient<tonic::transport::Channel>,
    anchor: (Instant, Duration),
}

impl GrpcTarget {
    /// Connects to `url` (`http://host:port`).
    pub async fn connect(url: String) -> Result<Self, tonic::transport::Error> {
        let client = TrtllmServiceClient::connect(url).await?;
        Ok(GrpcTarget {
            client,
            anchor: (Instant::now(), SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()),
        })
    }

    /// The client, for info calls.
    pub fn client(&self) -> TrtllmServiceClient<tonic::transport::Channel> {
        self.client.clone()
    }

    fn instant(&self, unix_s: f64) -> Option<Instant> {
        if unix_s <= 0.0 {
            return None;
        }
        let (instant, unix) = self.anchor;
        let unix_s = Duration::from_secs_f64(unix_s);
        match unix_s.checked_sub(unix) {
            Some(after) => instant.checked_add(after),
            None => instant.checked_sub(unix - unix_s),
        }
    }
}

/// One point of a sweep: a closed-loop concurrency and a request shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadPoint {
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Prompt tokens per request (the shared prefix included).
    pub input_len: usize,
    /// Output tokens per request (fixed: the end id is disabled and min_tokens = max_tokens).
    pub output_len: usize,
    /// Measured requests.
    pub num_prompts: usize,
    /// Warmup requests sent first, recorded with phase `warmup` and excluded from statistics.
    pub warmup: usize,
}

/// How prompts are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomWorkload {
    /// Vocabulary to draw token ids from.
    pub vocab_size: usize,
    /// Tokens shared by every prompt (warm prefix cache) before the random part; 0 for none.
    pub shared_prefix: usize,
    /// Seed for reproducible prompts.
    pub seed: u64,
    /// Streaming requests (false: one final per request; TTFT equals E2E).
    pub streaming: bool,
}

impl RandomWorkload {
    /// Prompts with exactly `point.input_len` token ids each.
    fn prompts(&self, point: &LoadPoint, count: usize, salt: u64) -> Vec<Vec<u32>> {
        let mut rng = StdRng::seed_from_u64(self.seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let vocab = self.vocab_size.max(2) as u32;
        let prefix_len = self.shared_prefix.min(point.input_len);
        let mut prefix_rng = StdRng::seed_from_u64(self.seed);
        let prefix: Vec<u32> = (0..prefix_len).map(|_| prefix_rng.random_range(1..vocab)).collect();
        (0..count)
            .map(|_| {
                let mut ids = prefix.clone();
                ids.extend((prefix_len..point.input_len).map(|_| rng.random_range(1..vocab)));
                ids
            })
            .collect()
    }
}

/// What one point produced.
#[derive(Debug)]
pub struct PointRun {
    /// Every request, warmup included.
    pub records: Vec<RequestRecord>,
    /// Executor iterations during the measured phase.
    pub iterations: Vec<IterationStats>,
}

/// Runs one closed-loop point: warmup, then `num_prompts` requests with at most `concurrency`
/// in flight; times are seconds since `clock`'s origin.
pub async fn run_point(
    target: &BenchTarget,
    workload: &RandomWorkload,
    point: &LoadPoint,
    clock: &RunClock,
    mut progress: impl FnMut(usize),
) -> PointRun {
    let mut records = Vec::with_capacity(point.warmup + point.num_prompts);
    let warmup = workload.prompts(point, point.warmup, 1);
    records.extend(drive(target, workload, point, clock, warmup, Phase::Warmup, 0, &mut |_| {}).await);
    // Iteration stats of the measured phase only (in process; a server keeps its own).
    let executor = match target {
        BenchTarget::InProcess(executor) => Some(executor),
        BenchTarget::Grpc(_) => None,
    };
    if let Some(executor) = executor {
        executor.executor().refresh_stats();
    }
    let mut iterations_rx = executor.map(|e| e.executor().subscribe_iteration_stats());
    let prompts = workload.prompts(point, point.num_prompts, 2);
    records.extend(
        drive(target, workload, point, clock, prompts, Phase::Measure, point.warmup as u64, &mut progress).await,
    );
    let mut iterations = Vec::new();
    if let (Some(executor), Some(rx)) = (executor, iterations_rx.as_mut()) {
        executor.executor().refresh_stats();
        while let Ok(stats) = rx.try_recv() {
            iterations.push((*stats).clone());
        }
    }
    PointRun { records, iterations }
}

#[allow(clippy::too_many_arguments)]
async fn drive(
    target: &BenchTarget,
    workload: &RandomWorkload,
    point: &LoadPoint,
    clock: &RunClock,
    prompts: Vec<Vec<u32>>,
    phase: Phase,
    first_index: u64,
    progress: &mut dyn FnMut(usize),
) -> Vec<RequestRecord> {
    let slots = Arc::new(Semaphore::new(point.concurrency.max(1)));
    let ready_at = Instant::now();
    let mut tasks = Vec::with_capacity(prompts.len());
    for (i, prompt) in prompts.into_iter().enumerate() {
        // Closed loop: a request waits for a free slot; that wait is its client queue time.
        let permit = slots.clone().acquire_owned().await;
        let queued_s = ready_at.elapsed().as_secs_f64();
        let request = GenerationRequest::new(prompt, point.output_len as u32)
            .with_streaming(workload.streaming)
            .with_end_id(-1)
            .with_sampling(SamplingParams { min_tokens: Some(point.output_len as u32), ..Default::default() });
        let target = target.clone();
        let clock = *clock;
        tasks.push(tokio::spawn(async move {
            let _permit = permit;
            let index = first_index + i as u64;
            let record = match &target {
                BenchTarget::InProcess(executor) => one_request(executor, request, &clock, index, phase).await,
                BenchTarget::Grpc(grpc) => one_grpc_request(grpc, request, &clock, index, phase).await,
            };
            (record, queued_s)
        }));
    }
    let mut records = Vec::with_capacity(tasks.len());
    for (done, task) in tasks.into_iter().enumerate() {
        match task.await {
            Ok((mut record, queued_s)) => {
                // From when the load began (every request was ready) to when it got a slot.
                record.client_queue_s = queued_s;
                records.push(record);
            }
            Err(e) => tracing::error!(error = %e, "benchmark request task failed"),
        }
        progress(done + 1);
    }
    records
}

async fn one_request(
    executor: &AsyncExecutor,
    request: GenerationRequest,
    clock: &RunClock,
    index: u64,
    phase: Phase,
) -> RequestRecord {
    let prompt_tokens = request.prompt().len() as u64;
    let mut stream = match executor.generate(request) {
        Ok(stream) => stream,
        Err(e) => {
            let now = clock.now_s();
            let mut record = RequestRecord::new(index, phase, now);
            record.prompt_tokens = prompt_tokens;
            record.fail(now, e.to_string());
            return record;
        }
    };
    let mut record = RequestRecord::new(index, phase, clock.offset_s(stream.enqueued_at()));
    record.prompt_tokens = prompt_tokens;
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent::Chunk(chunk)) => {
                record.record_chunk(clock.offset_s(chunk.received_at), chunk.token_ids.len() as u32)
            }
            Ok(StreamEvent::Final(done)) => {
                if !done.token_ids().is_empty() && record.chunks.is_empty() {
                    // Non-streaming: the final is the one response that carries tokens.
                    record.record_chunk(clock.offset_s(done.finished_at), done.completion_tokens);
                }
                record.cached_tokens = u64::from(done.cached_tokens.unwrap_or(0));
                if let Some(perf) = done.perf {
                    let at = |t: Option<Instant>| t.map(|t| clock.offset_s(t));
                    record.server = Some(ServerTimes {
                        arrival_s: at(perf.arrival),
                        first_scheduled_s: at(perf.first_scheduled),
                        first_token_s: at(perf.first_token),
                        last_token_s: at(perf.last_token),
                    });
                }
                record.finish(
                    clock.offset_s(done.finished_at),
                    u64::from(done.completion_tokens),
                    Some(done.finish_reason.to_string()),
                );
            }
            Err(e) => record.fail(clock.now_s(), e.to_string()),
        }
    }
    record
}

async fn one_grpc_request(
    target: &GrpcTarget,
    request: GenerationRequest,
    clock: &RunClock,
    index: u64,
    phase: Phase,
) -> RequestRecord {
    let prompt_tokens = request.prompt().len() as u64;
    let message = pb::GenerateRequest {
        request_id: format!("bench-{index}-{}", clock.now_s().to_bits()),
        tokenized: Some(pb::TokenizedInput { input_token_ids: request.prompt().to_vec(), ..Default::default() }),
        sampling_config: Some(pb::SamplingConfig { min_tokens: request.sampling().min_tokens, ..Default::default() }),
        output_config: Some(pb::OutputConfig { return_perf_metrics: true, ..Default::default() }),
        max_tokens: request.max_tokens(),
        streaming: request.streaming(),
        ignore_eos: true,
        ..Default::default()
    };
    let mut client = target.client.clone();
    let mut record = RequestRecord::new(index, phase, clock.now_s());
    record.prompt_tokens = prompt_tokens;
    let mut stream = match client.generate(message).await {
        Ok(response) => response.into_inner(),
        Err(status) => {
            record.fail(clock.now_s(), status.to_string());
            return record;
        }
    };
    while let Some(item) = stream.next().await {
        let now = clock.now_s();
        match item.map(|m| m.response) {
            Ok(Some(pb::generate_response::Response::Chunk(chunk))) => {
                record.record_chunk(now, chunk.token_ids.len() as u32)
            }
            Ok(Some(pb::generate_response::Response::Complete(done))) => {
                if record.chunks.is_empty() && !done.output_token_ids.is_empty() {
                    record.record_chunk(now, done.completion_tokens);
                }
                record.cached_tokens = u64::from(done.cached_tokens);
                if let Some(perf) = done.perf_metrics {
                    let at = |unix_s: f64| target.instant(unix_s).map(|t| clock.offset_s(t));
                    record.server = Some(ServerTimes {
                        arrival_s: at(perf.arrival_time),
                        first_scheduled_s: at(perf.first_scheduled_time),
                        first_token_s: at(perf.first_token_time),
                        last_token_s: at(perf.last_token_time),
                    });
                }
                record.finish(now, u64::from(done.completion_tokens), Some(done.finish_reason));
            }
            Ok(None) => {}
            Err(status) => record.fail(now, status.to_string()),
        }
    }
    if record.end_s.is_none() && record.error.is_none() {
        record.fail(clock.now_s(), "stream ended without a complete message");
    }
    record
}

/// The `kv` summary object: KV utilisation and reuse over the measured iterations.
pub fn kv_summary(iterations: &[IterationStats]) -> Value {
    let kv: Vec<_> = iterations.iter().filter_map(|s| s.kv_cache).collect();
    let mut utilization: Vec<f64> = kv.iter().map(|k| k.utilization()).collect();
    utilization.sort_by(f64::total_cmp);
    let last = kv.last();
    json!({
        "iterations": kv.len(),
        "max_utilization": utilization.last().copied().unwrap_or(0.0),
        "mean_utilization": super::stats::mean(&utilization).unwrap_or(0.0),
        "p99_utilization": super::stats::percentile(&utilization, 99.0).unwrap_or(0.0),
        "max_num_blocks": last.map(|k| k.max_num_blocks),
        "tokens_per_block": last.map(|k| k.tokens_per_block),
        "reused_blocks": last.map(|k| k.reused_blocks),
        "missed_blocks": last.map(|k| k.missed_blocks),
        "cache_hit_rate": last.map(|k| k.cache_hit_rate),
    })
}

/// The `iter` summary object: iteration count, latency and batch figures.
pub fn iter_summary(iterations: &[IterationStats]) -> Value {
    let latency: Vec<f64> = iterations.iter().map(|s| s.iter_latency_ms).collect();
    let active: Vec<f64> = iterations.iter().map(|s| f64::from(s.num_active_requests)).collect();
    let queued: Vec<f64> = iterations.iter().map(|s| f64::from(s.num_queued_requests)).collect();
    let paused: Vec<f64> =
        iterations.iter().filter_map(|s| s.inflight_batching).map(|b| f64::from(b.num_paused_requests)).collect();
    let ctx: Vec<f64> =
        iterations.iter().filter_map(|s| s.inflight_batching).map(|b| f64::from(b.num_ctx_tokens)).collect();
    let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
    json!({
        "count": iterations.len(),
        "mean_latency_ms": super::stats::mean(&latency),
        "p50_latency_ms": super::stats::percentile(&latency, 50.0),
        "p99_latency_ms": super::stats::percentile(&latency, 99.0),
        "mean_active_requests": super::stats::mean(&active),
        "max_active_requests": max(&active),
        "mean_queued_requests": super::stats::mean(&queued),
        "max_queued_requests": max(&queued),
        "max_paused_requests": max(&paused),
        "mean_context_tokens": super::stats::mean(&ctx),
        "max_context_tokens": max(&ctx),
    })
}
