//! Disaggregated generation on two [`Engine`]s: the prompt's prefill on one, its decode on the other.

use super::engine::{Completion, Engine};
use super::options::GenerateOptions;
use super::prompt::Prompt;
use crate::error::Result;
use crate::executor::Prefilled;
use crate::text::{TextRequest, TextStream};

/// A disaggregated generation's two legs: the prefill's first token and handoff, and the decode's
/// text stream (which repeats the first token, so its text is the whole generation).
#[derive(Debug)]
#[non_exhaustive]
pub struct DisaggregatedStream {
    /// The context leg: first token, handoff, and its final output with the executor's timings.
    pub prefilled: Prefilled,
    /// The generation leg's text.
    pub stream: TextStream,
}

impl Engine {
    /// Generates with the prompt's prefill on this engine and its decode on `decode`, as a
    /// disaggregated deployment's router runs a request: a context-only request here, its
    /// [`KvHandoff`](crate::KvHandoff) to the other engine, a generation-only request there. Both
    /// executors need a cache transceiver (`ExecutorConfig::cache_transceiver`), and the engines
    /// must pair ([`EngineFingerprint`](crate::EngineFingerprint)).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> trtllm::Result<()> {
    /// use trtllm::{CacheTransceiverConfig, Engine, GenerateOptions};
    /// let dir = tempfile::tempdir()?;
    /// let engine_dir = trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path())?;
    /// let load = || Engine::builder(&engine_dir).config(|c| c.cache_transceiver(CacheTransceiverConfig::new())).load();
    /// let (prefill, decode) = (load().await?, load().await?);
    /// let options = GenerateOptions::new().max_tokens(8).temperature(0.0);
    /// let disaggregated = prefill.complete_disaggregated(&decode, "The quick brown fox", options.clone()).await?;
    /// let aggregated = decode.complete("The quick brown fox", options).await?;
    /// assert_eq!(disaggregated.output.token_ids(), aggregated.output.token_ids());
    /// # Ok(()) }
    /// ```
    pub async fn generate_disaggregated(
        &self,
        decode: &Engine,
        prompt: impl Into<Prompt>,
        options: GenerateOptions,
    ) -> Result<DisaggregatedStream> {
        let ids = self.encode(prompt.into())?;
        let (request, text) = options.into_parts(ids);
        let (request, plan) = TextRequest::new(request, self.tokenizer(), text)?.into_parts();
        let prefilled = self.executor().prefill(request.clone()).await?;
        let stream = decode.executor().decode(request, prefilled.handoff.clone())?;
        Ok(DisaggregatedStream { prefilled, stream: TextStream::new(stream, plan) })
    }

    /// [`Engine::generate_disaggregated`], waiting for the whole text.
    pub async fn complete_disaggregated(
        &self,
        decode: &Engine,
        prompt: impl Into<Prompt>,
        options: GenerateOptions,
    ) -> Result<Completion> {
        Completion::collect(self.generate_disaggregated(decode, prompt, options).await?.stream).await
    }
}
