//! Prefill/decode disaggregation in the server: the worker's role, a Generate's
//! `disaggregated_params` as an executor leg, the finished contexts whose KV blocks the executor
//! holds for a generation worker, and the `EngineDisaggregation` figures.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use tonic::Status;

use super::events::{Event, EventStream};
use crate::proto::smg::grpc::common as cpb;
use crate::proto::trtllm as pb;
use crate::{AsyncExecutor, Executor, FinalOutput, FinishReason, GenerationRequest, GenerationStream, KvHandoff};

/// Which legs of a disaggregated request a worker runs (`trtllm serve --disagg-role`).
///
/// ```
/// use trtllm::server::DisaggRole;
/// let role: DisaggRole = "context".parse()?;
/// assert_eq!(role, DisaggRole::Context);
/// assert_eq!(role.mode(), "prefill");
/// assert_eq!(DisaggRole::default(), DisaggRole::Both);
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DisaggRole {
    /// Context-only requests (prefill workers).
    Context,
    /// Generation-only requests (decode workers).
    Generation,
    /// Every request type (the default): aggregated requests, and either leg when the executor has
    /// a cache transceiver.
    #[default]
    Both,
}

impl DisaggRole {
    /// The word `EngineDisaggregation.mode` carries: `prefill`, `decode` or `both`.
    pub fn mode(self) -> &'static str {
        match self {
            DisaggRole::Context => "prefill",
            DisaggRole::Generation => "decode",
            DisaggRole::Both => "both",
        }
    }

    fn admits(self, leg: LegKind) -> bool {
        matches!(
            (self, leg),
            (DisaggRole::Both, _)
                | (DisaggRole::Context, LegKind::Context)
                | (DisaggRole::Generation, LegKind::Generation)
        )
    }
}

impl std::str::FromStr for DisaggRole {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "context" => Ok(DisaggRole::Context),
            "generation" => Ok(DisaggRole::Generation),
            "both" => Ok(DisaggRole::Both),
            other => Err(format!("disaggregation role {other:?}: expected context, generation or both")),
        }
    }
}

impl std::fmt::Display for DisaggRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DisaggRole::Context => "context",
            DisaggRole::Generation => "generation",
            DisaggRole::Both => "both",
        })
    }
}

/// Which executor request a Generate call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LegKind {
    /// Prefill and decode here (no `disaggregated_params`, or REQUEST_TYPE_CONTEXT_AND_GENERATION).
    Aggregated,
    /// Context-only: ends after the first token with a KV handoff.
    Context,
    /// Generation-only: decodes from a handoff.
    Generation,
}

impl LegKind {
    fn describe(self) -> &'static str {
        match self {
            LegKind::Aggregated => "an aggregated request (no disaggregated_params)",
            LegKind::Context => "a context-only request",
            LegKind::Generation => "a generation-only request",
        }
    }
}

/// A Generate call's leg, with the handoff a generation-only one decodes from.
#[derive(Debug)]
pub(crate) struct Leg {
    kind: LegKind,
    handoff: Option<KvHandoff>,
}

impl Leg {
    /// The leg `request` asks for on a worker of `role`: FAILED_PRECONDITION naming the role when
    /// the worker does not run it, INVALID_ARGUMENT for malformed params or corrupt handoff bytes.
    pub(crate) fn of(request: &pb::GenerateRequest, role: DisaggRole) -> Result<Leg, Status> {
        use pb::disaggregated_params::RequestType;
        let params = request.disaggregated_params.as_ref();
        let kind = match params.map(|p| RequestType::try_from(p.request_type)) {
            None | Some(Ok(RequestType::ContextAndGeneration)) => LegKind::Aggregated,
            Some(Ok(RequestType::ContextOnly)) => LegKind::Context,
            Some(Ok(RequestType::GenerationOnly)) => LegKind::Generation,
            Some(Err(_)) => {
                return Err(Status::invalid_argument(format!(
                    "disaggregated_params.request_type {} is not a request type (0, 1 or 2)",
                    params.map_or(0, |p| p.request_type)
                )));
            }
        };
        if !role.admits(kind) {
            let runs = match role {
                DisaggRole::Context => "context-only requests (REQUEST_TYPE_CONTEXT_ONLY)",
                DisaggRole::Generation => "generation-only requests (REQUEST_TYPE_GENERATION_ONLY)",
                DisaggRole::Both => "every request type",
            };
            return Err(Status::failed_precondition(format!(
                "this worker's disaggregation role is {role} (--disagg-role {role}): it runs {runs}, not {}",
                kind.describe()
            )));
        }
        let phase = params.and_then(|p| p.context_phase_params.as_ref());
        if kind != LegKind::Generation {
            if phase.is_some() {
                return Err(Status::invalid_argument(
                    "disaggregated_params.context_phase_params is only for REQUEST_TYPE_GENERATION_ONLY",
                ));
            }
            return Ok(Leg { kind, handoff: None });
        }
        let (Some(params), Some(phase)) = (params, phase) else {
            return Err(Status::invalid_argument(
                "a generation-only request needs disaggregated_params.context_phase_params (the context worker's handoff)",
            ));
        };
        Ok(Leg { kind, handoff: Some(handoff(params, phase)?) })
    }

    /// What the call runs.
    pub(crate) fn kind(&self) -> LegKind {
        self.kind
    }

    /// Enqueues `request` as this leg.
    pub(crate) fn enqueue(
        self,
        executor: &AsyncExecutor,
        request: GenerationRequest,
    ) -> crate::Result<GenerationStream> {
        match (self.kind, self.handoff) {
            (LegKind::Context, _) => executor.enqueue_prefill(request),
            (LegKind::Generation, Some(handoff)) => executor.decode(request, handoff),
            _ => executor.enqueue(request),
        }
    }
}

/// The handoff of a generation-only request: a `kv_handoff` envelope (checked against the ids
/// beside it), or else the executor's serialized state with the ids beside it (trtllm-serve's way).
fn handoff(params: &pb::DisaggregatedParams, phase: &pb::ContextPhaseParams) -> Result<KvHandoff, Status> {
    const FIELD: &str = "disaggregated_params.context_phase_params.kv_cache_blocks";
    let bytes = &phase.kv_cache_blocks;
    if bytes.is_empty() {
        return Err(Status::invalid_argument(format!("{FIELD} is empty: send the context worker's handoff")));
    }
    let id = params.ctx_request_id.trim();
    let parsed_id = || {
        id.parse::<u64>().map_err(|_| {
            Status::invalid_argument(format!(
                "disaggregated_params.ctx_request_id {id:?} is not the context executor's numeric request id"
            ))
        })
    };
    if !KvHandoff::is_envelope(bytes) {
        return Ok(KvHandoff::from_parts(parsed_id()?, vec![phase.first_gen_token_id], bytes.clone()));
    }
    let handoff = KvHandoff::from_bytes(bytes).map_err(|e| Status::invalid_argument(format!("{FIELD}: {e}")))?;
    if !id.is_empty() && parsed_id()? != handoff.context_request_id() {
        return Err(Status::invalid_argument(format!(
            "disaggregated_params.ctx_request_id {id} differs from the handoff's context request {}",
            handoff.context_request_id()
        )));
    }
    if phase.first_gen_token_id != 0 && handoff.first_tokens().first() != Some(&phase.first_gen_token_id) {
        return Err(Status::invalid_argument(format!(
            "disaggregated_params.context_phase_params.first_gen_token_id {} differs from the handoff's first token {:?}",
            phase.first_gen_token_id,
            handoff.first_tokens().first()
        )));
    }
    Ok(handoff)
}

/// The `finish_reason` word of a sequence: a context-only request's final ends its phase after one
/// token (`length`, as trtllm-serve's context responses say), unless that token already ended it.
pub(crate) fn finish_word(reason: FinishReason, done: &FinalOutput) -> &'static str {
    match reason {
        FinishReason::NotFinished if done.handoff.is_some() => "length",
        other => other.as_openai_str(),
    }
}

/// Finished contexts the server remembers at most (the oldest is forgotten first; its blocks stay
/// with the executor until the transfer timeout).
const HELD_CAPACITY: usize = 4096;
/// Transfers the speed and latency figures average over.
const TRANSFER_WINDOW: usize = 32;

/// A finished context whose KV blocks the executor may still hold.
#[derive(Debug, Clone, Copy)]
struct Held {
    executor_id: u64,
    until: Option<Instant>,
}

/// The server's disaggregation state: the role, legs in flight, finished contexts and recent transfers.
#[derive(Debug, Default)]
pub(crate) struct Disaggregation {
    role: DisaggRole,
    /// Context legs before their final.
    prefilling: AtomicUsize,
    /// Generation legs before their first token (waiting for or receiving the KV cache).
    transferring: AtomicUsize,
    /// Client request id → finished context, until Abort, the transfer timeout or the capacity.
    held: Mutex<HashMap<String, Held>>,
    /// (transfer ms, bytes per rank) of the latest generation legs.
    transfers: Mutex<VecDeque<(f64, u64)>>,
}

impl Disaggregation {
    pub(crate) fn new(role: DisaggRole) -> Self {
        Disaggregation { role, ..Default::default() }
    }

    pub(crate) fn role(&self) -> DisaggRole {
        self.role
    }

    /// Counts the leg while `events` run, remembers a context's handoff and a generation's transfer.
    pub(crate) fn track(
        self: &Arc<Self>,
        events: EventStream,
        kind: LegKind,
        request_id: &str,
        executor_id: u64,
        timeout: Option<Duration>,
    ) -> EventStream {
        let counter = match kind {
            LegKind::Aggregated => return events,
            LegKind::Context => &self.prefilling,
            LegKind::Generation => &self.transferring,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let guard = LegGuard {
            state: self.clone(),
            kind,
            request_id: request_id.to_string(),
            executor_id,
            timeout,
            open: true,
        };
        Box::pin(Tracked { events, guard })
    }

    /// Forgets the finished context of `request_id` and returns its executor id, when the executor
    /// may still hold its blocks.
    pub(crate) fn take_held(&self, request_id: &str) -> Option<u64> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        prune(&mut held, Instant::now());
        held.remove(request_id).map(|h| h.executor_id)
    }

    /// Finished contexts remembered now (expired ones dropped first).
    pub(crate) fn held_count(&self) -> usize {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        prune(&mut held, Instant::now());
        held.len()
    }

    /// The `EngineDisaggregation` figures; `None` on an executor without a cache transceiver.
    pub(crate) fn figures(&self, executor: &Executor) -> Option<cpb::EngineDisaggregation> {
        executor.config().cache_transceiver.as_ref()?;
        let count = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let transfers = self.transfers.lock().unwrap_or_else(|p| p.into_inner());
        let (ms, bytes) = transfers.iter().fold((0.0, 0u64), |(ms, b), &(m, n)| (ms + m, b.saturating_add(n)));
        Some(cpb::EngineDisaggregation {
            mode: self.role.mode().to_string(),
            prefill_prealloc_queue_reqs: 0,
            prefill_inflight_queue_reqs: count(self.prefilling.load(Ordering::Relaxed) + self.held_count()),
            decode_prealloc_queue_reqs: 0,
            decode_transfer_queue_reqs: count(self.transferring.load(Ordering::Relaxed)),
            decode_retracted_queue_reqs: 0,
            kv_transfer_speed_gb_s: if ms > 0.0 { bytes as f64 / (ms * 1e-3) / 1e9 } else { 0.0 },
            kv_transfer_latency_ms: if transfers.is_empty() { 0.0 } else { ms / transfers.len() as f64 },
        })
    }

    fn hold(&self, request_id: &str, held: Held) {
        let mut map = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        prune(&mut map, now);
        if map.len() >= HELD_CAPACITY
            && let Some(oldest) = map.iter().min_by_key(|(_, h)| h.executor_id).map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(request_id.to_string(), held);
    }

    fn record_transfer(&self, done: &FinalOutput) {
        let Some(perf) = &done.perf else { return };
        let (Some(start), Some(end)) = (perf.kv_transfer_start, perf.kv_transfer_end) else { return };
        let mut transfers = self.transfers.lock().unwrap_or_else(|p| p.into_inner());
        if transfers.len() == TRANSFER_WINDOW {
            transfers.pop_front();
        }
        transfers.push_back((end.saturating_duration_since(start).as_secs_f64() * 1e3, perf.kv_cache_size));
    }
}

fn prune(held: &mut HashMap<String, Held>, now: Instant) {
    held.retain(|_, h| h.until.is_none_or(|until| until > now));
}

/// A leg's place in the counts, given back however its stream ends.
struct LegGuard {
    state: Arc<Disaggregation>,
    kind: LegKind,
    request_id: String,
    executor_id: u64,
    timeout: Option<Duration>,
    open: bool,
}

impl LegGuard {
    fn close(&mut self) {
        if std::mem::replace(&mut self.open, false) {
            let counter = match self.kind {
                LegKind::Context => &self.state.prefilling,
                _ => &self.state.transferring,
            };
            counter.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn observe(&mut self, item: Option<&crate::Result<Event>>) {
        match (self.kind, item) {
            (LegKind::Context, Some(Ok(Event::Final { output, .. }))) => {
                if output.handoff.is_some() {
                    let until = self.timeout.and_then(|t| Instant::now().checked_add(t));
                    self.state.hold(&self.request_id, Held { executor_id: self.executor_id, until });
                }
                self.close();
            }
            (LegKind::Context, Some(Ok(Event::Chunk(_)))) => {}
            (LegKind::Generation, Some(Ok(Event::Final { output, .. }))) => {
                self.state.record_transfer(output);
                self.close();
            }
            _ => self.close(),
        }
    }
}

impl Drop for LegGuard {
    fn drop(&mut self) {
        self.close();
    }
}

/// A leg's events, observed on their way to the client.
struct Tracked {
    events: EventStream,
    guard: LegGuard,
}

impl Stream for Tracked {
    type Item = crate::Result<Event>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let item = std::task::ready!(self.events.as_mut().poll_next(cx));
        self.guard.observe(item.as_ref());
        Poll::Ready(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pb::disaggregated_params::RequestType;

    fn request(kind: RequestType, phase: Option<pb::ContextPhaseParams>, ctx: &str) -> pb::GenerateRequest {
        pb::GenerateRequest {
            disaggregated_params: Some(pb::DisaggregatedParams {
                request_type: kind as i32,
                ctx_request_id: ctx.into(),
                context_phase_params: phase,
            }),
            ..Default::default()
        }
    }

    fn phase(first: u32, bytes: Vec<u8>) -> Option<pb::ContextPhaseParams> {
        Some(pb::ContextPhaseParams { first_gen_token_id: first, kv_cache_blocks: bytes })
    }

    #[test]
    fn each_role_runs_its_own_legs_and_names_itself_when_refusing() {
        let context = request(RequestType::ContextOnly, None, "");
        let plain = pb::GenerateRequest::default();
        assert_eq!(Leg::of(&context, DisaggRole::Context).unwrap().kind(), LegKind::Context);
        assert_eq!(Leg::of(&plain, DisaggRole::Both).unwrap().kind(), LegKind::Aggregated);
        for (request, role) in [(&context, DisaggRole::Generation), (&plain, DisaggRole::Context)] {
            let refused = Leg::of(request, role).unwrap_err();
            assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
            assert!(refused.message().contains(&format!("role is {role}")), "{}", refused.message());
        }
    }

    #[test]
    fn handoff_envelopes_and_raw_states_are_read_and_corrupt_bytes_refused() {
        let handoff = KvHandoff::from_parts(7, vec![42], b"state".to_vec());
        let bytes = handoff.to_bytes();
        let leg = Leg::of(&request(RequestType::GenerationOnly, phase(42, bytes.clone()), "7"), DisaggRole::Both);
        assert_eq!(leg.unwrap().handoff, Some(handoff.clone()));
        // trtllm-serve's mapping: the executor's state, the id and the first token beside it.
        let raw = Leg::of(&request(RequestType::GenerationOnly, phase(42, b"state".to_vec()), "7"), DisaggRole::Both);
        assert_eq!(raw.unwrap().handoff, Some(handoff));
        let mut cut = bytes.clone();
        cut.truncate(bytes.len() - 3);
        let mut altered = bytes.clone();
        altered[12] ^= 0x40;
        for bad in [cut, altered] {
            let refused = Leg::of(&request(RequestType::GenerationOnly, phase(0, bad), ""), DisaggRole::Both);
            assert_eq!(refused.unwrap_err().code(), tonic::Code::InvalidArgument);
        }
        let wrong_first =
            Leg::of(&request(RequestType::GenerationOnly, phase(43, bytes.clone()), ""), DisaggRole::Both);
        assert_eq!(wrong_first.unwrap_err().code(), tonic::Code::InvalidArgument);
        let wrong_id = Leg::of(&request(RequestType::GenerationOnly, phase(42, bytes), "8"), DisaggRole::Both);
        assert_eq!(wrong_id.unwrap_err().code(), tonic::Code::InvalidArgument);
        let missing = Leg::of(&request(RequestType::GenerationOnly, None, "7"), DisaggRole::Generation);
        assert_eq!(missing.unwrap_err().code(), tonic::Code::InvalidArgument);
        let not_an_id =
            Leg::of(&request(RequestType::GenerationOnly, phase(1, b"raw".to_vec()), "ctx-7"), DisaggRole::Both);
        assert!(not_an_id.unwrap_err().message().contains("ctx_request_id"));
        let unknown = pb::GenerateRequest {
            disaggregated_params: Some(pb::DisaggregatedParams { request_type: 9, ..Default::default() }),
            ..Default::default()
        };
        assert_eq!(Leg::of(&unknown, DisaggRole::Both).unwrap_err().code(), tonic::Code::InvalidArgument);
    }
}
