//! Requests to a `trtllm.TrtllmService` server: the connection, the Generate request for a
//! workload's request, and its stream recorded as messages arrive.

use futures::StreamExt;

use super::records::new_record;
use crate::bench::metrics::iterations::WallAnchor;
use crate::bench::metrics::record::{Phase, RequestRecord, RunClock, ServerTimes};
use crate::bench::metrics::speculative::SpecCounts;
use crate::bench::traffic::workload::RequestSpec;
use crate::proto::trtllm as pb;
use crate::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
use crate::types::guided::{GuideType, GuidedDecodingParams};

/// A gRPC server and the anchor that maps its Unix-epoch perf times onto this process's clock.
#[derive(Debug, Clone)]
pub struct GrpcTarget {
    /// One client per connection; request `i` goes over connection `i % len`.
    clients: Vec<TrtllmServiceClient<tonic::transport::Channel>>,
    anchor: WallAnchor,
}

impl GrpcTarget {
    /// Connects to `url` (`http://host:port`) with [`GrpcTarget::endpoint`]'s settings.
    pub async fn connect(url: String) -> Result<Self, tonic::transport::Error> {
        Self::connect_endpoint(Self::endpoint(url)?).await
    }

    /// The connection settings [`GrpcTarget::connect`] uses: no Nagle delay, and receive windows
    /// large enough that hundreds of streams never wait on a window update.
    pub fn endpoint(url: String) -> Result<tonic::transport::Endpoint, tonic::transport::Error> {
        Ok(tonic::transport::Endpoint::from_shared(url)?.tcp_nodelay(true))
    }

    /// Connects with `endpoint`'s settings, over one HTTP/2 connection.
    pub async fn connect_endpoint(endpoint: tonic::transport::Endpoint) -> Result<Self, tonic::transport::Error> {
        Self::connect_pool(endpoint, 1).await
    }

    /// Opens `connections` HTTP/2 connections (at least one) with `endpoint`'s settings and
    /// spreads requests over them in turn: each connection is one task on each side, so one
    /// connection carries every stream's frames through one task.
    pub async fn connect_pool(
        endpoint: tonic::transport::Endpoint,
        connections: usize,
    ) -> Result<Self, tonic::transport::Error> {
        let mut clients = Vec::with_capacity(connections.max(1));
        for _ in 0..connections.max(1) {
            clients.push(TrtllmServiceClient::new(endpoint.connect().await?));
        }
        Ok(GrpcTarget { clients, anchor: WallAnchor::now() })
    }

    /// The client (of the first connection), for info calls.
    pub fn client(&self) -> TrtllmServiceClient<tonic::transport::Channel> {
        self.clients[0].clone()
    }

    /// The client request `index` goes over.
    pub(crate) fn client_for(&self, index: u64) -> TrtllmServiceClient<tonic::transport::Channel> {
        self.clients[index as usize % self.clients.len()].clone()
    }

    /// Maps the server's Unix-epoch perf times onto this process's clock.
    pub(crate) fn anchor(&self) -> &WallAnchor {
        &self.anchor
    }
}

/// The protocol's `guided_decoding` for a guide (its guide types count from 1).
fn guided_pb(guide: &GuidedDecodingParams) -> pb::GuidedDecodingParams {
    use pb::guided_decoding_params::GuideType as Pb;
    let guide_type = match guide.guide_type {
        GuideType::Json => Pb::Json,
        GuideType::JsonSchema => Pb::JsonSchema,
        GuideType::Regex => Pb::Regex,
        GuideType::EbnfGrammar => Pb::EbnfGrammar,
        GuideType::StructuralTag => Pb::StructuralTag,
    };
    pb::GuidedDecodingParams { guide_type: guide_type as i32, guide: guide.guide.clone().unwrap_or_default() }
}

pub(crate) async fn over_grpc(
    target: &GrpcTarget,
    spec: RequestSpec,
    clock: &RunClock,
    index: u64,
    phase: Phase,
) -> RequestRecord {
    let message = grpc_message(&spec, format!("bench-{index}-{}", clock.now_s().to_bits()));
    let record = new_record(&spec, index, phase, clock.now_s());
    consume_grpc(target.client_for(index), target.anchor(), message, record, clock).await
}

/// The Generate request for `spec`.
pub(crate) fn grpc_message(spec: &RequestSpec, request_id: String) -> pb::GenerateRequest {
    pb::GenerateRequest {
        request_id,
        tokenized: Some(pb::TokenizedInput { input_token_ids: spec.prompt.clone(), ..Default::default() }),
        sampling_config: Some(pb::SamplingConfig { min_tokens: spec.min_tokens, ..Default::default() }),
        output_config: Some(pb::OutputConfig { return_perf_metrics: true, ..Default::default() }),
        max_tokens: spec.max_tokens,
        streaming: spec.streaming,
        ignore_eos: spec.ignore_eos,
        guided_decoding: spec.guide.as_ref().map(guided_pb),
        ..Default::default()
    }
}

/// Sends `message` over `client` and records its stream into `record` to the end; the server's
/// perf times are mapped onto the run clock through `anchor`.
pub(crate) async fn consume_grpc(
    mut client: TrtllmServiceClient<tonic::transport::Channel>,
    anchor: &WallAnchor,
    message: pb::GenerateRequest,
    mut record: RequestRecord,
    clock: &RunClock,
) -> RequestRecord {
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
                record.record_chunk(now, chunk.token_ids.len() as u32);
                if record.session.is_some() {
                    record.answer_ids.extend_from_slice(&chunk.token_ids);
                }
            }
            Ok(Some(pb::generate_response::Response::Complete(done))) => {
                record.cached_tokens = u64::from(done.cached_tokens);
                if record.session.is_some() && record.answer_ids.is_empty() {
                    record.answer_ids = done.output_token_ids.clone();
                }
                if done.spec_draft_tokens > 0 {
                    record.speculative = Some(SpecCounts {
                        decoding_steps: 0,
                        accepted_draft_tokens: u64::from(done.spec_accepted_tokens),
                        draft_tokens: u64::from(done.spec_draft_tokens),
                    });
                }
                if let Some(perf) = done.perf_metrics {
                    let at = |unix_s: f64| anchor.instant_of_unix(unix_s).map(|t| clock.offset_s(t));
                    if let Some(disagg) = record.disagg.as_mut() {
                        disagg.transfer_start_s = at(perf.kv_cache_transfer_start);
                        disagg.transfer_end_s = at(perf.kv_cache_transfer_end);
                        disagg.transfer_bytes = u64::try_from(perf.kv_cache_size).unwrap_or(0);
                    }
                    record.server = Some(ServerTimes {
                        arrival_s: at(perf.arrival_time),
                        first_scheduled_s: at(perf.first_scheduled_time),
                        first_token_s: at(perf.first_token_time),
                        last_token_s: at(perf.last_token_time),
                        first_iter: None,
                        last_iter: None,
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
