//! Where the load goes: an executor in this process or a gRPC server, recorded the same way.

pub use super::grpc::GrpcTarget;
use super::grpc::over_grpc;
use super::in_process::in_process;
pub(crate) use super::in_process::{consume_in_process, generation_request};
pub(crate) use super::records::new_record;
use crate::AsyncExecutor;
use crate::bench::metrics::record::{Phase, RequestRecord, RunClock};
use crate::bench::traffic::workload::RequestSpec;

/// Where the load goes: the same workloads and records either way, so the transport's cost
/// shows. Both record finish reasons in the same (OpenAI) words and fill cached tokens.
#[derive(Debug, Clone)]
pub enum BenchTarget {
    /// An executor in this process: times come straight from executor events.
    InProcess(AsyncExecutor),
    /// A `trtllm.TrtllmService` server: times are taken as messages arrive.
    Grpc(GrpcTarget),
    /// An OpenAI-compatible HTTP endpoint (the smg gateway, vLLM, ...): times are taken as SSE
    /// chunks arrive.
    OpenAi(super::openai::OpenAiTarget),
    /// Draft-target speculative decoding: a draft and a target executor in this process, driven by
    /// a `SpeculativeExecutor`.
    DraftTarget(super::draft_target::DraftTargetBench),
    /// An executor in this process whose requests carry synthetic LoRA adapters
    /// (`--lora-adapters`): each request gets the adapter the traffic draws for it.
    InProcessLora(AsyncExecutor, std::sync::Arc<crate::bench::lora::LoraTraffic>),
    /// Prefill/decode disaggregation: each request's context leg on a prefill pool's worker, its
    /// generation leg on a decode pool's, in process or over gRPC (`--disagg`, `--prefill-target`).
    Disaggregated(super::disagg::DisaggBench),
}

impl BenchTarget {
    /// The in-process executor, if that is the target.
    pub fn executor(&self) -> Option<&AsyncExecutor> {
        match self {
            BenchTarget::InProcess(executor) | BenchTarget::InProcessLora(executor, _) => Some(executor),
            BenchTarget::Grpc(_) | BenchTarget::OpenAi(_) => None,
            BenchTarget::DraftTarget(loop_) => Some(loop_.target()),
            BenchTarget::Disaggregated(pools) => pools.decode_executor(),
        }
    }

    /// The LoRA traffic the requests carry, if any.
    pub fn lora(&self) -> Option<&std::sync::Arc<crate::bench::lora::LoraTraffic>> {
        match self {
            BenchTarget::InProcessLora(_, traffic) => Some(traffic),
            _ => None,
        }
    }

    /// Sends one request and records it to the end; never fails (errors are recorded).
    pub async fn send(&self, spec: RequestSpec, clock: &RunClock, index: u64, phase: Phase) -> RequestRecord {
        match self {
            BenchTarget::InProcess(executor) => in_process(executor, None, spec, clock, index, phase).await,
            BenchTarget::InProcessLora(executor, traffic) => {
                in_process(executor, Some(traffic), spec, clock, index, phase).await
            }
            BenchTarget::Grpc(grpc) => over_grpc(grpc, spec, clock, index, phase).await,
            BenchTarget::OpenAi(http) => http.send(spec, clock, index, phase).await,
            BenchTarget::DraftTarget(loop_) => loop_.send(spec, clock, index, phase).await,
            BenchTarget::Disaggregated(pools) => pools.send(spec, clock, index, phase).await,
        }
    }
}
