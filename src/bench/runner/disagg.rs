//! The disaggregated bench target, run as a router runs prefill/decode disaggregation: each
//! request's context leg goes to the least-loaded worker of a prefill pool, its generation leg,
//! with the KV handoff, to the least-loaded worker of a decode pool; in process or over gRPC.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError};

use futures::StreamExt;

use super::grpc::{GrpcTarget, consume_grpc, grpc_message};
use super::in_process::{consume_in_process, generation_request};
use super::records::new_record;
use crate::bench::metrics::disagg::DisaggTimes;
use crate::bench::metrics::disagg_summary::{PoolWorker, PoolsSection, TokenCheck, TokenMismatch};
use crate::bench::metrics::record::{Phase, RequestRecord, RunClock, ServerTimes};
use crate::bench::traffic::workload::RequestSpec;
use crate::proto::trtllm as pb;
use crate::{AsyncExecutor, KvHandoff, StreamEvent};

/// Requests whose tokens the in-process target keeps for [`DisaggBench::token_check`].
const TOKEN_CHECK_REQUESTS: usize = 8;

/// A request and the tokens its disaggregated run generated, for the token check.
type KeptRequest = (RequestSpec, Vec<u32>);

/// One worker of a pool.
#[derive(Debug, Clone)]
pub enum DisaggWorker {
    /// An executor in this process (with a cache transceiver).
    InProcess(AsyncExecutor),
    /// A `trtllm serve --disagg-role context|generation` server.
    Grpc(GrpcTarget),
}

#[derive(Debug)]
struct Member {
    worker: DisaggWorker,
    name: String,
    in_flight: AtomicUsize,
    placed: AtomicU64,
}

/// A request's place on a worker, given back when the leg ends.
struct Busy<'a>(&'a Member);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A prefill pool and a decode pool; requests placed on the worker of each with the fewest legs in
/// flight (then the fewest placed so far), as a least-load router does.
#[derive(Debug, Clone)]
pub struct DisaggBench {
    prefill: Arc<[Member]>,
    decode: Arc<[Member]>,
    /// (request, generated tokens) of the first requests, in process.
    kept: Arc<Mutex<Vec<KeptRequest>>>,
    /// The latest token check, until the report takes it.
    checked: Arc<Mutex<Option<TokenCheck>>>,
}

fn pool(workers: Vec<(String, DisaggWorker)>) -> Arc<[Member]> {
    workers
        .into_iter()
        .map(|(name, worker)| Member { worker, name, in_flight: AtomicUsize::new(0), placed: AtomicU64::new(0) })
        .collect()
}

impl DisaggBench {
    /// Pools of named workers (each pool at least one).
    ///
    /// # Panics
    /// When a pool is empty.
    pub fn new(prefill: Vec<(String, DisaggWorker)>, decode: Vec<(String, DisaggWorker)>) -> Self {
        assert!(!prefill.is_empty() && !decode.is_empty(), "a prefill and a decode pool of one worker at least");
        DisaggBench { prefill: pool(prefill), decode: pool(decode), kept: Arc::default(), checked: Arc::default() }
    }

    /// `XpYd` in process: the executors of each pool, named `prefill-i` and `decode-i`.
    ///
    /// ```rust
    /// # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use trtllm::bench::{BenchTarget, DisaggBench, LoadPlan, PromptSource, RunClock, Workload, record_split, run_point};
    /// use trtllm::{AsyncExecutor, CacheTransceiverConfig, ExecutorConfig};
    ///
    /// let dir = tempfile::tempdir()?;
    /// trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
    /// let config = || ExecutorConfig::builder().cache_transceiver(CacheTransceiverConfig::new()).build();
    /// let prefill = AsyncExecutor::load(dir.path(), config()?).await?;
    /// let decode = AsyncExecutor::load(dir.path(), config()?).await?;
    /// let target = BenchTarget::Disaggregated(DisaggBench::in_process(vec![prefill.clone()], vec![decode.clone()]));
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
    /// let run = run_point(&target, &workload, 0, &LoadPlan::closed(1, 2), &RunClock::start(), |_| {}).await?;
    /// // Each request's TTFT splits into prefill, transfer wait, transfer and first decode.
    /// assert!(run.records.iter().all(|r| r.output_tokens == 4 && record_split(r).is_some()));
    /// prefill.shutdown(trtllm::ShutdownMode::Cancel).await?;
    /// decode.shutdown(trtllm::ShutdownMode::Cancel).await?;
    /// # Ok(()) }
    /// ```
    pub fn in_process(prefill: Vec<AsyncExecutor>, decode: Vec<AsyncExecutor>) -> Self {
        fn named(pool: &'static str, executors: Vec<AsyncExecutor>) -> Vec<(String, DisaggWorker)> {
            executors
                .into_iter()
                .enumerate()
                .map(|(i, e)| (format!("{pool}-{i}"), DisaggWorker::InProcess(e)))
                .collect()
        }
        Self::new(named("prefill", prefill), named("decode", decode))
    }

    /// The first decode executor in process (its iteration statistics are the run's).
    pub fn decode_executor(&self) -> Option<&AsyncExecutor> {
        match &self.decode[0].worker {
            DisaggWorker::InProcess(e) => Some(e),
            DisaggWorker::Grpc(_) => None,
        }
    }

    /// The summary's `disaggregation.pools`: each worker and the requests placed on it so far.
    pub fn pools_section(&self) -> PoolsSection {
        let list = |pool: &[Member]| -> Vec<PoolWorker> {
            pool.iter()
                .map(|m| PoolWorker { worker: m.name.clone(), requests: m.placed.load(Ordering::Relaxed) })
                .collect()
        };
        PoolsSection {
            shape: format!("{}p{}d", self.prefill.len(), self.decode.len()),
            placement: "least legs in flight, then fewest placed".into(),
            prefill: list(&self.prefill),
            decode: list(&self.decode),
        }
    }

    fn place(pool: &[Member]) -> (u32, Busy<'_>) {
        let (index, member) = pool
            .iter()
            .enumerate()
            .min_by_key(|(_, m)| (m.in_flight.load(Ordering::Relaxed), m.placed.load(Ordering::Relaxed)))
            .unwrap_or((0, &pool[0]));
        member.in_flight.fetch_add(1, Ordering::Relaxed);
        member.placed.fetch_add(1, Ordering::Relaxed);
        (index as u32, Busy(member))
    }

    /// Runs one request's two legs and records it; never fails (errors are recorded).
    pub(crate) async fn send(&self, spec: RequestSpec, clock: &RunClock, index: u64, phase: Phase) -> RequestRecord {
        let (prefill_worker, busy) = Self::place(&self.prefill);
        let mut record = new_record(&spec, index, phase, clock.now_s());
        record.disagg = Some(DisaggTimes { prefill_worker, ..Default::default() });
        let id = format!("bench-{index}-{}", clock.now_s().to_bits());
        let context = match &busy.0.worker {
            DisaggWorker::InProcess(executor) => prefill_in_process(executor, &spec, &mut record, clock).await,
            DisaggWorker::Grpc(target) => prefill_over_grpc(target, &spec, &id, &mut record, clock).await,
        };
        drop(busy);
        let Some((handoff, first_token)) = context else { return record };
        let (decode_worker, busy) = Self::place(&self.decode);
        if let Some(d) = record.disagg.as_mut() {
            d.decode_worker = Some(decode_worker);
        }
        let context_server = record.server;
        let mut record = match &busy.0.worker {
            DisaggWorker::InProcess(executor) => match executor.decode(generation_request(&spec), handoff) {
                Ok(stream) => consume_in_process(stream, record, clock).await,
                Err(e) => {
                    record.fail(clock.now_s(), format!("decode leg: {e}"));
                    record
                }
            },
            DisaggWorker::Grpc(target) => {
                let mut message = grpc_message(&spec, id);
                message.disaggregated_params = Some(pb::DisaggregatedParams {
                    request_type: pb::disaggregated_params::RequestType::GenerationOnly as i32,
                    ctx_request_id: handoff.context_request_id().to_string(),
                    context_phase_params: Some(pb::ContextPhaseParams {
                        first_gen_token_id: first_token,
                        kv_cache_blocks: handoff.to_bytes(),
                    }),
                });
                consume_grpc(target.client_for(index), target.anchor(), message, record, clock).await
            }
        };
        drop(busy);
        join_server_times(&mut record, context_server);
        self.keep_tokens(&spec, &mut record);
        record
    }

    fn keep_tokens(&self, spec: &RequestSpec, record: &mut RequestRecord) {
        let tokens = std::mem::take(&mut record.answer_ids);
        if record.session.is_some() {
            record.answer_ids = tokens.clone();
        }
        if record.phase != Phase::Measure || !record.is_success() || tokens.is_empty() {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if kept.len() < TOKEN_CHECK_REQUESTS {
            kept.push((spec.clone(), tokens));
        }
    }

    /// Reruns the first measured requests (up to 8) aggregated on the first prefill executor and
    /// compares their tokens with what the disaggregated run streamed: the summary's
    /// `disaggregation.token_check`. `None` over gRPC or when no request was kept; the kept
    /// requests are cleared for the next point. The result is also kept for
    /// [`DisaggBench::take_token_check`].
    pub async fn token_check(&self) -> Option<TokenCheck> {
        let check = self.run_token_check().await;
        *self.checked.lock().unwrap_or_else(PoisonError::into_inner) = check.clone();
        check
    }

    /// The latest [`DisaggBench::token_check`], once.
    pub fn take_token_check(&self) -> Option<TokenCheck> {
        self.checked.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    async fn run_token_check(&self) -> Option<TokenCheck> {
        let DisaggWorker::InProcess(executor) = &self.prefill[0].worker else { return None };
        let kept = std::mem::take(&mut *self.kept.lock().unwrap_or_else(PoisonError::into_inner));
        if kept.is_empty() {
            return None;
        }
        let mut mismatched = Vec::new();
        for (i, (spec, tokens)) in kept.iter().enumerate() {
            let aggregated = match executor.enqueue(generation_request(spec)) {
                Ok(stream) => stream.collect_final().await.map(|f| f.token_ids().to_vec()),
                Err(e) => Err(e),
            };
            match aggregated {
                Ok(ids) if &ids == tokens => {}
                Ok(ids) => mismatched.push(TokenMismatch {
                    request: i,
                    disaggregated: Some(tokens.clone()),
                    aggregated: Some(ids),
                    error: None,
                }),
                Err(e) => mismatched.push(TokenMismatch {
                    request: i,
                    disaggregated: None,
                    aggregated: None,
                    error: Some(e.to_string()),
                }),
            }
        }
        Some(TokenCheck {
            what:
                "the first measured requests rerun aggregated on prefill-0: disaggregation must not change the tokens"
                    .into(),
            checked: kept.len(),
            matched: kept.len() - mismatched.len(),
            mismatched,
        })
    }
}

/// The context leg in process: its handoff and first token, with its executor stamps in `record`.
async fn prefill_in_process(
    executor: &AsyncExecutor,
    spec: &RequestSpec,
    record: &mut RequestRecord,
    clock: &RunClock,
) -> Option<(KvHandoff, u32)> {
    let stream = match executor.enqueue_prefill(generation_request(spec)) {
        Ok(stream) => stream,
        Err(e) => {
            record.fail(clock.now_s(), format!("prefill leg: {e}"));
            return None;
        }
    };
    record.send_s = clock.offset_s(stream.enqueued_at());
    let mut last = None;
    let mut stream = stream;
    // Chunks of the context leg (its first token) are not the client's: the decode leg streams it.
    while let Some(item) = stream.next().await {
        match item {
            Ok(StreamEvent::Final(done)) => last = Some(done),
            Ok(StreamEvent::Chunk(_)) => {}
            Err(e) => {
                record.fail(clock.now_s(), format!("prefill leg: {e}"));
                return None;
            }
        }
    }
    let now = clock.now_s();
    let Some(done) = last else {
        record.fail(now, "prefill leg: the stream ended without a final");
        return None;
    };
    if let Some(d) = record.disagg.as_mut() {
        d.prefill_end_s = Some(now);
    }
    if let Some(perf) = done.perf {
        let at = |t: Option<std::time::Instant>| t.map(|t| clock.offset_s(t));
        record.server = Some(ServerTimes {
            arrival_s: at(perf.arrival),
            first_scheduled_s: at(perf.first_scheduled),
            ..Default::default()
        });
    }
    let Some(handoff) = done.handoff else {
        // The first token ended the request (its end id): there is nothing to decode.
        super::records::finish_record(record, &done, None, clock);
        return None;
    };
    let first = handoff.first_tokens().first().copied().unwrap_or(0);
    Some((handoff, first))
}

/// The context leg over gRPC: the complete's `kv_handoff`, with the context's executor stamps.
async fn prefill_over_grpc(
    target: &GrpcTarget,
    spec: &RequestSpec,
    id: &str,
    record: &mut RequestRecord,
    clock: &RunClock,
) -> Option<(KvHandoff, u32)> {
    let mut message = grpc_message(spec, id.to_string());
    message.streaming = false;
    message.disaggregated_params = Some(pb::DisaggregatedParams {
        request_type: pb::disaggregated_params::RequestType::ContextOnly as i32,
        ..Default::default()
    });
    let mut client = target.client_for(record.index);
    record.send_s = clock.now_s();
    let mut stream = match client.generate(message).await {
        Ok(response) => response.into_inner(),
        Err(status) => {
            record.fail(clock.now_s(), format!("prefill leg: {status}"));
            return None;
        }
    };
    let mut complete = None;
    while let Some(item) = stream.next().await {
        match item.map(|m| m.response) {
            Ok(Some(pb::generate_response::Response::Complete(done))) => complete = Some(done),
            Ok(_) => {}
            Err(status) => {
                record.fail(clock.now_s(), format!("prefill leg: {status}"));
                return None;
            }
        }
    }
    let now = clock.now_s();
    let Some(done) = complete else {
        record.fail(now, "prefill leg: the stream ended without a complete message");
        return None;
    };
    if let Some(d) = record.disagg.as_mut() {
        d.prefill_end_s = Some(now);
    }
    if let Some(perf) = done.perf_metrics {
        let at = |unix_s: f64| target.anchor().instant_of_unix(unix_s).map(|t| clock.offset_s(t));
        record.server = Some(ServerTimes {
            arrival_s: at(perf.arrival_time),
            first_scheduled_s: at(perf.first_scheduled_time),
            ..Default::default()
        });
    }
    let Some(bytes) = done.kv_handoff else {
        // The first token ended the request: nothing to decode.
        record.finish(now, u64::from(done.completion_tokens), Some(done.finish_reason));
        return None;
    };
    match KvHandoff::from_bytes(&bytes) {
        Ok(handoff) => {
            let first = done.output_token_ids.first().copied().unwrap_or(0);
            Some((handoff, first))
        }
        Err(e) => {
            record.fail(now, format!("prefill leg: the complete's kv_handoff: {e}"));
            None
        }
    }
}

/// The request's executor stamps across both legs: arrival and first scheduling on the context
/// worker (`context`), first and last token on the generation worker.
fn join_server_times(record: &mut RequestRecord, context: Option<ServerTimes>) {
    let Some(context) = context else { return };
    let server = record.server.get_or_insert_with(ServerTimes::default);
    server.arrival_s = context.arrival_s;
    server.first_scheduled_s = context.first_scheduled_s;
    // Iterations of two executors do not share a count.
    server.first_iter = None;
    server.last_iter = None;
}
