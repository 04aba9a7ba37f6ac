//! Prefill/decode disaggregation on the executor: the context-only leg that ends in a KV handoff,
//! and the generation-only leg that decodes from one.

use super::async_executor::AsyncExecutor;
use super::stream::GenerationStream;
use super::sync_executor::Executor;
use crate::error::{Error, Result};
use crate::types::disagg::{HandoffError, RequestType};
use crate::types::handoff::KvHandoff;
use crate::types::output::{FinalOutput, StreamEvent};
use crate::types::request::GenerationRequest;

/// A finished prefill: the first generated token(s), the handoff a generation executor decodes from,
/// and the context-only request's final output (its executor timings among them).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Prefilled {
    /// The first generated token(s).
    pub first_tokens: Vec<u32>,
    /// What [`Executor::decode`] takes on the generation executor.
    pub handoff: KvHandoff,
    /// The context-only request's final output.
    pub output: FinalOutput,
}

impl Prefilled {
    /// The handoff out of a context-only request's final output.
    pub fn from_final(output: FinalOutput) -> Result<Self> {
        let handoff = output.handoff.clone().ok_or(HandoffError::Missing(output.request_id.get()))?;
        Ok(Prefilled { first_tokens: handoff.first_tokens().to_vec(), handoff, output })
    }
}

impl Executor {
    /// Enqueues `request` as a context-only request: this executor prefills the prompt, and the stream
    /// ends with exactly one final item carrying the first generated token and the [`KvHandoff`]
    /// ([`FinalOutput::handoff`]); this executor keeps the prompt's KV blocks until the generation
    /// executor has taken them or the cache transceiver's transfer timeout passes. Its `max_tokens`
    /// is the whole generation's (the generation leg runs to it).
    ///
    /// Errors: those of [`Executor::enqueue`], and [`HandoffError::NoTransceiver`] unless the executor
    /// has a cache transceiver (`ExecutorConfig::cache_transceiver`).
    pub fn enqueue_prefill(&self, request: GenerationRequest) -> Result<GenerationStream> {
        self.require_transceiver("context-only")?;
        self.enqueue(request.with_request_type(RequestType::ContextOnly))
    }

    /// Runs the prefill of `request` and waits for its final: the first token and the handoff. Blocks;
    /// from async code use [`AsyncExecutor::prefill`].
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use trtllm::{CacheTransceiverConfig, Executor, ExecutorConfig, GenerationRequest, SamplingParams};
    /// let dir = tempfile::tempdir()?;
    /// trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
    /// let config = || ExecutorConfig::builder().cache_transceiver(CacheTransceiverConfig::new()).build();
    /// let (context, generation) = (Executor::load(dir.path(), config()?)?, Executor::load(dir.path(), config()?)?);
    /// let request = GenerationRequest::new(vec![5, 6, 7, 8], 6).with_sampling(SamplingParams::default().top_k(1));
    /// let prefilled = context.prefill(request.clone())?;
    /// // The handoff is plain bytes: send it anywhere, then decode from it on the other executor.
    /// let handoff = trtllm::KvHandoff::from_bytes(&prefilled.handoff.to_bytes())?;
    /// let done = generation.decode(request, handoff)?.blocking_iter().last().unwrap()?;
    /// let trtllm::StreamEvent::Final(done) = done else { unreachable!() };
    /// assert_eq!(done.token_ids()[0], prefilled.first_tokens[0]);
    /// assert_eq!(done.token_ids().len(), 6);
    /// # Ok(()) }
    /// ```
    pub fn prefill(&self, request: GenerationRequest) -> Result<Prefilled> {
        let mut last = None;
        for item in self.enqueue_prefill(request)?.blocking_iter() {
            last = Some(item?);
        }
        match last {
            Some(StreamEvent::Final(output)) => Prefilled::from_final(output),
            _ => Err(Error::StreamEnded),
        }
    }

    /// Enqueues `request` as a generation-only request decoding from `handoff`: this executor pulls the
    /// prompt's KV cache from the context executor that made the handoff, then decodes. The stream
    /// carries every generated token, the first one (the context executor's) included, so its final
    /// is the whole generation, as an aggregated request's would be.
    ///
    /// Errors, before anything is enqueued: [`HandoffError::EngineMismatch`] when the handoff comes from
    /// an engine that does not pair with this one (see [`EngineFingerprint`](crate::EngineFingerprint)),
    /// [`HandoffError::NoTransceiver`], and an invalid request when the prompt is not the one the handoff
    /// covers. A handoff whose blocks are gone (unknown, expired, released) ends the stream with
    /// [`HandoffError::Unavailable`].
    pub fn decode(&self, request: GenerationRequest, handoff: KvHandoff) -> Result<GenerationStream> {
        self.require_transceiver("generation-only")?;
        if let Some(context) = handoff.engine() {
            context.check_pairing(self.fingerprint())?;
        }
        self.enqueue(request.with_handoff(handoff))
    }

    fn require_transceiver(&self, what: &'static str) -> Result<()> {
        match self.config().cache_transceiver {
            Some(_) => Ok(()),
            None => Err(HandoffError::NoTransceiver(what).into()),
        }
    }
}

impl AsyncExecutor {
    /// Enqueues a context-only request; see [`Executor::enqueue_prefill`].
    pub fn enqueue_prefill(&self, request: GenerationRequest) -> Result<GenerationStream> {
        self.executor().enqueue_prefill(request)
    }

    /// Runs the prefill of `request` and awaits the first token and the handoff; see [`Executor::prefill`].
    pub async fn prefill(&self, request: GenerationRequest) -> Result<Prefilled> {
        Prefilled::from_final(self.enqueue_prefill(request)?.collect_final().await?)
    }

    /// Enqueues a generation-only request decoding from `handoff`; see [`Executor::decode`].
    pub fn decode(&self, request: GenerationRequest, handoff: KvHandoff) -> Result<GenerationStream> {
        self.executor().decode(request, handoff)
    }
}
