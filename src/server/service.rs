//! The `trtllm.TrtllmService` implementation over an [`AsyncExecutor`].

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::sync::{Semaphore, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::convert::{self, WallClock};
use super::metrics::ServerMetrics;
use crate::output::{FinalOutput, TokenChunk};
use crate::proto::smg::grpc::common as cpb;
use crate::proto::trtllm as pb;
use crate::proto::trtllm::trtllm_service_server::TrtllmService;
use crate::request::FinishReason;
use crate::text::Tokenizer;
use crate::{AsyncExecutor, StreamEvent, TextEvent, TextOptions, TextRequest, TextStream};

type ResponseStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// A request's events whether or not stop strings are matched in text: a chunk, or the final with
/// the matched stop string.
type Event = (Option<TokenChunk>, Option<(FinalOutput, Option<String>)>);
type EventStream = Pin<Box<dyn Stream<Item = crate::Result<Event>> + Send>>;

/// Shared state of the service.
#[derive(Debug)]
pub struct ServiceState {
    pub(crate) executor: AsyncExecutor,
    pub(crate) tokenizer: Option<Tokenizer>,
    pub(crate) live: Mutex<HashMap<String, u64>>,
    pub(crate) shutting_down: AtomicBool,
    pub(crate) wall: WallClock,
    pub(crate) slots: Option<Arc<Semaphore>>,
    pub(crate) heartbeat: Duration,
    pub(crate) metrics: Option<Arc<ServerMetrics>>,
    next_anonymous: AtomicU64,
}

/// The gRPC service.
#[derive(Debug, Clone)]
pub struct Service {
    state: Arc<ServiceState>,
}

impl Service {
    /// A service over `executor`; the tokenizer enables stop strings, bad strings and GetTokenizer.
    pub fn new(
        executor: AsyncExecutor,
        tokenizer: Option<Tokenizer>,
        max_concurrent_requests: Option<usize>,
        metrics: Option<Arc<ServerMetrics>>,
    ) -> Self {
        Service {
            state: Arc::new(ServiceState {
                executor,
                tokenizer,
                live: Mutex::new(HashMap::new()),
                shutting_down: AtomicBool::new(false),
                wall: WallClock::now(),
                slots: max_concurrent_requests.map(|n| Arc::new(Semaphore::new(n))),
                heartbeat: Duration::from_secs(1),
                metrics,
                next_anonymous: AtomicU64::new(1),
            }),
        }
    }

    /// The shared state (shutdown flag, executor).
    pub fn state(&self) -> &Arc<ServiceState> {
        &self.state
    }
}

impl Service {
    async fn generate_inner(
        &self,
        request: Request<pb::GenerateRequest>,
    ) -> Result<Response<ResponseStream<pb::GenerateResponse>>, Status> {
        let state = self.state.clone();
        if let Err(why) = state.healthy() {
            return Err(Status::unavailable(why));
        }
        let deadline =
            request.metadata().get("grpc-timeout").and_then(|v| v.to_str().ok()).and_then(convert::parse_grpc_timeout);
        let request = request.into_inner();
        convert::reject_unsupported(&request)?;
        let permit = match &state.slots {
            Some(slots) => Some(slots.clone().try_acquire_owned().map_err(|_| {
                Status::resource_exhausted("the server's max concurrent requests are in flight; retry later")
            })?),
            None => None,
        };
        let tokenizer = state.tokenizer.clone();
        if tokenizer.is_none() && (!request.stop.is_empty() || !request.bad.is_empty()) {
            return Err(Status::invalid_argument(
                "stop and bad strings need a tokenizer: start the server with --tokenizer",
            ));
        }
        let bad_words = match &tokenizer {
            Some(t) => request
                .bad
                .iter()
                .map(|s| t.encode(s, false).map_err(|e| Status::invalid_argument(format!("bad string {s:?}: {e}"))))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let generation = convert::generation_request(&request, None, bad_words)?;
        // The text layer sets the eos ids and the stop strings' executor stop words.
        let (mut generation, text_plan) = match &tokenizer {
            Some(t) => {
                let options = TextOptions::new()
                    .stop_strings(request.stop.iter().cloned())
                    .include_stop(request.include_stop_token_in_output)
                    .ignore_eos(request.ignore_eos);
                let (generation, plan) =
                    TextRequest::new(generation, t, options).map_err(|e| convert::status(&e))?.into_parts();
                (generation, Some(plan))
            }
            None => (generation, None),
        };
        if let Some(deadline) = deadline {
            generation = generation.with_allotted_time(deadline.max(Duration::from_millis(1)));
        }
        let request_id = if request.request_id.is_empty() {
            format!("trtllm-{}", state.next_anonymous.fetch_add(1, Ordering::Relaxed))
        } else {
            request.request_id.clone()
        };
        // Register the id, enqueue, and record the executor id under one lock: Abort never sees
        // a half-registered request and duplicates are refused before any work starts.
        let stream = {
            let mut live = state.live.lock().map_err(|_| Status::internal("request table poisoned"))?;
            if live.contains_key(&request_id) {
                return Err(Status::already_exists(format!("request_id {request_id:?} is already in flight")));
            }
            let stream = state.executor.generate(generation).map_err(|e| convert::status(&e))?;
            live.insert(request_id.clone(), stream.request_id());
            stream
        };
        let guard = LiveGuard { state: state.clone(), request_id: request_id.clone() };
        let output_perf = request.output_config.is_some_and(|o| o.return_perf_metrics);
        let stop_token_ids = request.stop_token_ids.clone();
        let include_stop = request.include_stop_token_in_output;
        let (tx, rx) = mpsc::channel(128);
        let mut events: EventStream = match text_plan {
            Some(plan) if plan.needs_text_stream() => {
                let text = TextStream::new(stream, plan);
                Box::pin(text.map(|item| {
                    item.map(|event| match event {
                        TextEvent::Chunk { chunk, .. } => (Some(chunk), None),
                        TextEvent::Final { output, matched_stop, .. } => (None, Some((*output, matched_stop))),
                    })
                }))
            }
            _ => Box::pin(stream_events(stream)),
        };
        let wall = state.wall;
        let timed = deadline.is_some();
        let metrics = state.metrics.clone();
        tokio::spawn(async move {
            let _guard = guard;
            let _permit = permit;
            let ctx = CompleteContext {
                request_id: &request_id,
                stop_token_ids: &stop_token_ids,
                include_stop_token: include_stop,
                perf: output_perf,
                wall: &wall,
            };
            // A closed channel (client gone) ends the loop at once; dropping the executor stream
            // then cancels the request.
            loop {
                let item = tokio::select! {
                    item = events.next() => item,
                    _ = tx.closed() => {
                        tracing::info!(request_id = %request_id, "client went away; request cancelled");
                        return;
                    }
                };
                let Some(item) = item else { return };
                let messages: Vec<Result<pb::GenerateResponse, Status>> = match item {
                    Ok((Some(chunk), _)) => vec![Ok(chunk_message(&request_id, &chunk))],
                    Ok((None, Some((done, matched)))) => {
                        if let Some(metrics) = &metrics {
                            metrics.record_final(&done);
                        }
                        if timed && done.finish_reason == FinishReason::TimedOut {
                            vec![Err(Status::deadline_exceeded("the request's deadline passed before it finished"))]
                        } else {
                            tracing::info!(
                                request_id = %request_id,
                                prompt_tokens = done.prompt_tokens,
                                completion_tokens = done.completion_tokens,
                                ttft_ms = done.ttft().map(|d| d.as_secs_f64() * 1e3),
                                finish_reason = %done.finish_reason,
                                "request finished"
                            );
                            complete_messages(&ctx, &done, matched).into_iter().map(Ok).collect()
                        }
                    }
                    Ok((None, None)) => Vec::new(),
                    Err(e) => {
                        let status = convert::status(&e);
                        if let Some(metrics) = &metrics {
                            metrics.record_error(status.code());
                        }
                        vec![Err(status)]
                    }
                };
                for message in messages {
                    if tx.send(message).await.is_err() {
                        return;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

impl ServiceState {
    /// Refuses new work from now on.
    pub fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
    }

    fn healthy(&self) -> Result<(), String> {
        if self.shutting_down.load(Ordering::Acquire) {
            return Err("shutting down".into());
        }
        if !self.executor.executor().is_healthy() {
            return Err("executor is not healthy".into());
        }
        Ok(())
    }
}

/// Removes a request id from the live table when its stream task ends, however it ends.
struct LiveGuard {
    state: Arc<ServiceState>,
    request_id: String,
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        if let Ok(mut live) = self.state.live.lock() {
            live.remove(&self.request_id);
        }
    }
}

fn chunk_message(request_id: &str, chunk: &TokenChunk) -> pb::GenerateResponse {
    pb::GenerateResponse {
        request_id: request_id.to_string(),
        response: Some(pb::generate_response::Response::Chunk(pb::GenerateStreamChunk {
            token_ids: chunk.token_ids.clone(),
            sequence_index: chunk.sequence_index,
            prompt_tokens: chunk.prompt_tokens,
            completion_tokens: chunk.completion_tokens,
            cached_tokens: chunk.cached_tokens.unwrap_or(0),
            logprobs: logprobs(&chunk.token_ids, chunk.log_probs.as_deref()),
        })),
    }
}

fn logprobs(ids: &[u32], values: Option<&[f32]>) -> Vec<pb::TokenLogprob> {
    let Some(values) = values else { return Vec::new() };
    ids.iter()
        .zip(values)
        .map(|(&token_id, &logprob)| pb::TokenLogprob { token_id, logprob, top_logprobs: Vec::new() })
        .collect()
}

struct CompleteContext<'a> {
    request_id: &'a str,
    stop_token_ids: &'a [u32],
    include_stop_token: bool,
    perf: bool,
    wall: &'a WallClock,
}

fn complete_messages(
    ctx: &CompleteContext<'_>,
    done: &FinalOutput,
    matched_stop: Option<String>,
) -> Vec<pb::GenerateResponse> {
    let cached = done.cached_tokens.unwrap_or(0);
    done.sequences
        .iter()
        .map(|seq| {
            let mut ids = seq.token_ids.clone();
            let mut matched = None;
            if let Some(stop) = &matched_stop
                && seq.index == 0
            {
                matched = Some(pb::generate_complete::MatchedStop::MatchedStopStr(stop.clone()));
            } else if seq.finish_reason == FinishReason::StopWords
                && let Some(&last) = ids.last()
                && ctx.stop_token_ids.contains(&last)
            {
                matched = Some(pb::generate_complete::MatchedStop::MatchedTokenId(last));
                if !ctx.include_stop_token {
                    ids.pop();
                }
            }
            pb::GenerateResponse {
                request_id: ctx.request_id.to_string(),
                response: Some(pb::generate_response::Response::Complete(pb::GenerateComplete {
                    completion_tokens: ids.len() as u32,
                    logprobs: logprobs(&ids, seq.log_probs.as_deref()),
                    output_token_ids: ids,
                    sequence_index: seq.index,
                    finish_reason: seq.finish_reason.as_openai_str().to_string(),
                    prompt_tokens: done.prompt_tokens,
                    cached_tokens: cached,
                    prompt_logprobs: Vec::new(),
                    perf_metrics: if ctx.perf { done.perf.as_ref().map(|p| ctx.wall.perf_metrics(p)) } else { None },
                    context_logits: None,
                    generation_logits: None,
                    spec_accepted_tokens: 0,
                    spec_draft_tokens: 0,
                    matched_stop: matched,
                })),
            }
        })
        .collect()
}

#[tonic::async_trait]
impl TrtllmService for Service {
    type GenerateStream = ResponseStream<pb::GenerateResponse>;
    type GetTokenizerStream = ResponseStream<cpb::GetTokenizerChunk>;
    type SubscribeKvEventsStream = ResponseStream<cpb::KvEventBatch>;

    async fn generate(&self, request: Request<pb::GenerateRequest>) -> Result<Response<Self::GenerateStream>, Status> {
        let result = self.generate_inner(request).await;
        if let (Err(status), Some(metrics)) = (&result, &self.state.metrics) {
            metrics.record_error(status.code());
        }
        result
    }
    async fn embed(&self, _request: Request<pb::EmbedRequest>) -> Result<Response<pb::EmbedResponse>, Status> {
        Err(Status::unimplemented("Embed is not supported: TensorRT-LLM engines here are decoder-only generators"))
    }

    async fn health_check(
        &self,
        _request: Request<pb::HealthCheckRequest>,
    ) -> Result<Response<pb::HealthCheckResponse>, Status> {
        let status = match self.state.healthy() {
            Ok(()) => "OK".to_string(),
            Err(why) => format!("UNHEALTHY: {why}"),
        };
        Ok(Response::new(pb::HealthCheckResponse { status }))
    }

    async fn abort(&self, request: Request<pb::AbortRequest>) -> Result<Response<pb::AbortResponse>, Status> {
        let request_id = request.into_inner().request_id;
        let id =
            self.state.live.lock().map_err(|_| Status::internal("request table poisoned"))?.get(&request_id).copied();
        Ok(Response::new(match id {
            Some(id) => match self.state.executor.executor().cancel(id) {
                Ok(()) => pb::AbortResponse { success: true, message: format!("request {request_id:?} cancelled") },
                Err(e) => pb::AbortResponse { success: false, message: e.to_string() },
            },
            None => pb::AbortResponse { success: false, message: format!("no request {request_id:?} is in flight") },
        }))
    }

    async fn get_model_info(
        &self,
        _request: Request<pb::GetModelInfoRequest>,
    ) -> Result<Response<pb::GetModelInfoResponse>, Status> {
        let engine = self.state.executor.executor().engine();
        let int = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
        let mut features = vec!["generate", "streaming", "abort", "logprobs", "perf_metrics", "stop_token_ids"];
        if self.state.tokenizer.is_some() {
            features.extend(["stop_strings", "bad_strings", "get_tokenizer"]);
        }
        Ok(Response::new(pb::GetModelInfoResponse {
            model_id: engine.model_name.clone(),
            max_input_len: int(engine.max_input_len),
            max_seq_len: int(engine.max_seq_len),
            max_batch_size: int(engine.max_batch_size),
            vocab_size: int(engine.vocab_size),
            hidden_size: int(engine.hidden_size),
            num_layers: int(engine.num_layers),
            num_heads: int(engine.num_heads),
            supported_features: features.into_iter().map(str::to_string).collect(),
        }))
    }

    async fn get_server_info(
        &self,
        _request: Request<pb::GetServerInfoRequest>,
    ) -> Result<Response<pb::GetServerInfoResponse>, Status> {
        let executor = self.state.executor.executor();
        let engine = executor.engine();
        let int = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
        Ok(Response::new(pb::GetServerInfoResponse {
            version: format!("trtllm {} ({})", env!("CARGO_PKG_VERSION"), executor.backend()),
            backend: "tensorrt".to_string(),
            tensor_parallel_size: int(engine.tp_size),
            pipeline_parallel_size: int(engine.pp_size),
            context_parallel_size: int(engine.cp_size),
            world_size: int(engine.world_size),
        }))
    }

    async fn get_tokenizer(
        &self,
        _request: Request<cpb::GetTokenizerRequest>,
    ) -> Result<Response<Self::GetTokenizerStream>, Status> {
        let tokenizer =
            self.state.tokenizer.as_ref().ok_or_else(|| Status::not_found("the server has no tokenizer"))?;
        let files = tokenizer.files().to_vec();
        let (bytes, sha256) = tokio::task::spawn_blocking(move || super::tokenizer_zip::zip_files(&files))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::internal(format!("zipping the tokenizer: {e}")))?;
        const CHUNK: usize = 64 * 1024;
        let count = bytes.len().div_ceil(CHUNK).max(1);
        let chunks: Vec<Result<cpb::GetTokenizerChunk, Status>> = (0..count)
            .map(|i| {
                let data = bytes[i * CHUNK..((i + 1) * CHUNK).min(bytes.len())].to_vec();
                let sha256 = if i + 1 == count { sha256.clone() } else { String::new() };
                Ok(cpb::GetTokenizerChunk { data, sha256 })
            })
            .collect();
        Ok(Response::new(Box::pin(futures::stream::iter(chunks))))
    }

    async fn subscribe_kv_events(
        &self,
        request: Request<cpb::SubscribeKvEventsRequest>,
    ) -> Result<Response<Self::SubscribeKvEventsStream>, Status> {
        let _ = request.into_inner();
        let state = self.state.clone();
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            let mut sequence = 0u64;
            let mut ticker = tokio::time::interval(state.heartbeat);
            loop {
                tokio::select! {
                    _ = ticker.tick() => {}
                    _ = tx.closed() => return,
                }
                sequence += 1;
                // Executor KV events are merged here once the executor exposes them; until then
                // every batch is a load report.
                let batch = cpb::KvEventBatch {
                    sequence_number: sequence,
                    timestamp: state.wall.seconds(Some(std::time::Instant::now())),
                    events: Vec::new(),
                    dp_rank: None,
                    snapshot: None,
                    load: Some(engine_load(&state, sequence)),
                };
                if tx.send(Ok(batch)).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

fn stream_events(stream: crate::GenerationStream) -> impl Stream<Item = crate::Result<Event>> + Send {
    stream.map(|item| {
        item.map(|event| match event {
            StreamEvent::Chunk(chunk) => (Some(chunk), None),
            StreamEvent::Final(done) => (None, Some((done, None))),
        })
    })
}

/// What the gateway routes on: running and waiting requests, KV use, throughput.
fn engine_load(state: &ServiceState, sample: u64) -> cpb::EngineLoad {
    let executor = state.executor.executor();
    let latest = executor.latest_iteration_stats();
    let kv = latest.as_ref().and_then(|s| s.kv_cache);
    let gen_throughput = latest
        .as_ref()
        .and_then(|s| {
            let batch = s.inflight_batching?;
            (s.iter_latency_ms > 0.0).then(|| f64::from(batch.num_gen_requests) * 1e3 / s.iter_latency_ms)
        })
        .unwrap_or(0.0);
    cpb::EngineLoad {
        running_requests: latest.as_ref().map_or(0, |s| s.num_active_requests.max(0) as u32),
        waiting_requests: latest.as_ref().map_or(0, |s| s.num_queued_requests.max(0) as u32),
        token_usage: kv.map_or(0.0, |k| k.utilization()),
        gen_throughput,
        max_running_requests: executor.engine().max_batch_size as u32,
        sample,
        load_only: true,
        cache_hit_rate: kv.map(|k| f64::from(k.cache_hit_rate)),
        num_used_tokens: kv.map(|k| k.used_num_blocks * k.tokens_per_block),
        max_total_num_tokens: kv.map(|k| k.max_num_blocks * k.tokens_per_block),
        ..Default::default()
    }
}
