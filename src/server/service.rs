//! The `trtllm.TrtllmService` implementation over an [`AsyncExecutor`].

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::convert;
use super::disagg::Leg;
use super::events::{EventStream, stream_events, text_events};
use super::generation::{Deadline, Generation, REPLY_BUFFER};
use super::kv_events;
use super::metrics::ServerMetrics;
use super::options::ServeOptions;
use super::replies::{ReplyContext, ResponseStream};
use super::state::ServiceState;
use super::tokenizer_zip::zip_files;
use crate::AsyncExecutor;
use crate::proto::smg::grpc::common as cpb;
use crate::proto::trtllm as pb;
use crate::proto::trtllm::trtllm_service_server::TrtllmService;
use crate::text::Tokenizer;
use crate::text::{TextOptions, TextRequest, TextStream};

/// Bytes of a `GetTokenizerChunk` besides its data: two field headers and the hex SHA-256.
const TOKENIZER_CHUNK_OVERHEAD: usize = 96;

/// The gRPC service.
#[derive(Debug, Clone)]
pub struct Service {
    state: Arc<ServiceState>,
}

impl Service {
    /// A service over `executor` configured by `options`; the tokenizer enables stop strings, bad
    /// strings and GetTokenizer.
    pub fn new(
        executor: AsyncExecutor,
        tokenizer: Option<Tokenizer>,
        options: &ServeOptions,
        metrics: Option<Arc<ServerMetrics>>,
    ) -> Self {
        Service { state: Arc::new(ServiceState::new(executor, tokenizer, options, metrics)) }
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
        if let Err(why) = state.admits() {
            return Err(Status::unavailable(why));
        }
        let client_deadline =
            request.metadata().get("grpc-timeout").and_then(|v| v.to_str().ok()).and_then(convert::parse_grpc_timeout);
        let deadline = Deadline::new(client_deadline, state.default_deadline);
        let request = request.into_inner();
        convert::reject_unsupported(&request)?;
        let leg = Leg::of(&request, state.disagg.role())?;
        state.limits.check(&request)?;
        convert::check_reply_fits(&request, state.max_message_size)?;
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
            Some(t) => encode_bad_strings(t, &request.bad).await?,
            None => Vec::new(),
        };
        let mut generation = convert::generation_request(&request, None, bad_words)?;
        // ---- LoRA: the adapter, checked against the engine before enqueue ----
        let lora = super::lora::lora_config(&request, state.executor.executor().engine())?;
        let lora_task = lora.as_ref().map(|l| l.task_id);
        if let Some(lora) = lora {
            generation = generation.with_lora(lora);
        }
        // The text layer sets the eos ids and the stop strings' executor stop words.
        let (mut generation, text_plan) = match &tokenizer {
            Some(t) => {
                let options = TextOptions::new()
                    .stop_strings(request.stop.iter().cloned())
                    .include_stop_string(request.include_stop_token_in_output)
                    .ignore_eos(request.ignore_eos);
                // Off the request threads when the stop strings are large (see TextRequest::prepare).
                let (generation, plan) =
                    TextRequest::prepare(generation, t, options).await.map_err(|e| convert::status(&e))?.into_parts();
                (generation, Some(plan))
            }
            None => (generation, None),
        };
        if let Some(deadline) = &deadline {
            // The executor drops the request at the deadline too, even while it waits in the queue.
            generation = generation.with_allotted_time(deadline.allotted.max(Duration::from_millis(1)));
        }
        if let (Some(task), Some(metrics)) = (lora_task, &state.metrics) {
            metrics.record_lora_request(task);
        }
        let request_id = state.request_id(&request.request_id);
        let leg_kind = leg.kind();
        let (stream, guard) = state.live.register(request_id.clone(), || {
            let stream = leg.enqueue(&state.executor, generation).map_err(|e| convert::status(&e))?;
            let id = stream.request_id().get();
            Ok((stream, id))
        })?;
        let output_perf = request.output_config.is_some_and(|o| o.return_perf_metrics);
        let stop_token_ids = request.stop_token_ids.clone();
        let include_stop = request.include_stop_token_in_output;
        let events: EventStream = match text_plan {
            Some(plan) if plan.needs_text_stream() => text_events(TextStream::new(stream, plan)),
            _ => stream_events(stream),
        };
        // Disaggregated legs: counted for EngineDisaggregation, a context's handoff kept for Abort.
        let timeout = state.executor.executor().config().cache_transceiver.and_then(|c| c.kv_transfer_timeout);
        let events = state.disagg.track(events, leg_kind, &request_id, guard.executor_id(), timeout);
        let reply = ReplyContext {
            request_id: request_id.clone(),
            stop_token_ids,
            include_stop_token: include_stop,
            perf: output_perf,
            wall: state.wall,
        };
        let (tx, rx) = mpsc::channel(REPLY_BUFFER);
        let generation = Generation { state: state.clone(), reply, guard, permit, events, tx, deadline };
        state.lifecycle.tasks.spawn(generation.run());
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

/// Encodes the bad strings, on the blocking pool when they are large (as stop strings are), so
/// that the worker threads answering health checks and other streams are not held up.
async fn encode_bad_strings(tokenizer: &Tokenizer, bad: &[String]) -> Result<Vec<Vec<u32>>, Status> {
    let encode = |tokenizer: &Tokenizer, bad: &[String]| {
        bad.iter()
            .map(|s| tokenizer.encode(s, false).map_err(|e| Status::invalid_argument(format!("bad string {s:?}: {e}"))))
            .collect::<Result<Vec<_>, _>>()
    };
    if bad.iter().map(String::len).sum::<usize>() < TextRequest::BLOCKING_POOL_BYTES {
        return encode(tokenizer, bad);
    }
    let (tokenizer, bad) = (tokenizer.clone(), bad.to_vec());
    tokio::task::spawn_blocking(move || encode(&tokenizer, &bad))
        .await
        .map_err(|e| Status::internal(format!("encoding the bad strings: {e}")))?
}

#[tonic::async_trait]
impl TrtllmService for Service {
    type GenerateStream = ResponseStream<pb::GenerateResponse>;
    type GetTokenizerStream = ResponseStream<cpb::GetTokenizerChunk>;
    type SubscribeKvEventsStream = ResponseStream<cpb::KvEventBatch>;

    async fn generate(&self, request: Request<pb::GenerateRequest>) -> Result<Response<Self::GenerateStream>, Status> {
        // Bounded: the id is only checked against its limit inside.
        let request_id: String = request.get_ref().request_id.chars().take(128).collect();
        let result = self.generate_inner(request).await;
        if let Err(status) = &result {
            tracing::info!(request_id = %request_id, code = ?status.code(), error = status.message(), "request refused");
            if let Some(metrics) = &self.state.metrics {
                metrics.record_error(status.code());
            }
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
        let id = self.state.live.executor_id(&request_id)?;
        Ok(Response::new(match id {
            Some(id) => match self.state.executor.executor().cancel(crate::RequestId::new(id)) {
                Ok(()) => pb::AbortResponse { success: true, message: format!("request {request_id:?} cancelled") },
                Err(e) => pb::AbortResponse { success: false, message: e.to_string() },
            },
            // A finished context whose KV blocks wait for a generation worker: release them.
            None => match self.state.disagg.take_held(&request_id) {
                Some(id) => match self.state.executor.executor().cancel(crate::RequestId::new(id)) {
                    Ok(()) => pb::AbortResponse {
                        success: true,
                        message: format!("request {request_id:?}'s context finished; its KV blocks are released"),
                    },
                    Err(e) => pb::AbortResponse { success: false, message: e.to_string() },
                },
                None => {
                    pb::AbortResponse { success: false, message: format!("no request {request_id:?} is in flight") }
                }
            },
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
        if engine.lora().is_some() {
            features.push("lora");
        }
        Ok(Response::new(pb::GetModelInfoResponse {
            model_id: engine.model_name().to_string(),
            max_input_len: int(engine.max_input_len()),
            max_seq_len: int(engine.max_seq_len()),
            max_batch_size: int(engine.max_batch_size()),
            vocab_size: int(engine.vocab_size()),
            hidden_size: int(engine.hidden_size()),
            num_layers: int(engine.num_layers()),
            num_heads: int(engine.num_heads()),
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
            tensor_parallel_size: int(engine.tp_size()),
            pipeline_parallel_size: int(engine.pp_size()),
            context_parallel_size: int(engine.cp_size()),
            world_size: int(engine.world_size()),
            disaggregation: self.state.disagg.figures(executor),
        }))
    }

    async fn get_tokenizer(
        &self,
        _request: Request<cpb::GetTokenizerRequest>,
    ) -> Result<Response<Self::GetTokenizerStream>, Status> {
        let tokenizer =
            self.state.tokenizer.as_ref().ok_or_else(|| Status::not_found("the server has no tokenizer"))?;
        let files = tokenizer.files().to_vec();
        let (bytes, sha256) = tokio::task::spawn_blocking(move || zip_files(&files))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(|e| Status::internal(format!("zipping the tokenizer: {e}")))?;
        // Each chunk must fit the message limit, with room for the field headers and the digest.
        let chunk = (64 * 1024).min(self.state.max_message_size.saturating_sub(TOKENIZER_CHUNK_OVERHEAD)).max(1);
        let count = bytes.len().div_ceil(chunk).max(1);
        let chunks: Vec<Result<cpb::GetTokenizerChunk, Status>> = (0..count)
            .map(|i| {
                let data = bytes[i * chunk..((i + 1) * chunk).min(bytes.len())].to_vec();
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
        kv_events::subscribe(self.state.clone(), request.into_inner())
    }
}
