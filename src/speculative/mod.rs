//! Speculative decoding: the request and config types (lookahead, EAGLE, draft tokens, the
//! engine's mode, per-request and per-iteration figures) and draft-target speculative decoding
//! driven from Rust: a draft executor proposes `k` tokens, the
//! target executor verifies them (TensorRT-LLM leaves this loop to the client; Triton runs it in a
//! BLS script), streamed like [`AsyncExecutor`].

mod draft_length;
mod draft_loop;

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use crate::error::{Error, Result};
use crate::executor::AsyncExecutor;
use crate::types::output::StreamEvent;
use crate::types::request::GenerationRequest;

pub use draft_length::DraftLength;
// What requests, configs and results say about speculative decoding.
pub use crate::engine::speculative::SpeculativeDecodingMode;
pub use crate::types::speculative::{
    DecodingConfig, DecodingMode, DraftTokens, EagleConfig, LookaheadConfig, SpeculativeMetrics, SpeculativeRequest,
};
pub use crate::types::stats::SpecDecodingStats;

/// Draft-target speculative decoding over two executors: the draft (a small model) and the
/// target (an engine built with `speculative_decoding_mode` `draft_tokens_external`).
///
/// Each round sends the context (prompt + tokens so far) to the draft for `k` tokens, then to the
/// target with those tokens as [`DraftTokens`]: the target keeps the longest
/// prefix it agrees with and adds one token of its own, so the output is exactly what the target
/// alone would generate (greedy). A stream yields one chunk per round and exactly one terminal
/// item; dropping it cancels whatever the round has in flight on both executors.
#[derive(Debug, Clone)]
pub struct SpeculativeExecutor {
    draft: AsyncExecutor,
    target: AsyncExecutor,
    length: DraftLength,
}

impl SpeculativeExecutor {
    /// Pairs a draft and a target executor. Fails on an invalid [`DraftLength`].
    pub fn new(draft: AsyncExecutor, target: AsyncExecutor, length: DraftLength) -> Result<Self> {
        length.validate()?;
        Ok(SpeculativeExecutor { draft, target, length })
    }

    /// The target executor (it verifies and its output is the stream's).
    pub fn target(&self) -> &AsyncExecutor {
        &self.target
    }

    /// The draft executor (it proposes the tokens the target verifies).
    pub fn draft(&self) -> &AsyncExecutor {
        &self.draft
    }

    /// Starts a request. Its sampling parameters, end id and stop words go to both executors; the
    /// request is validated against the target engine first.
    pub fn enqueue(&self, request: GenerationRequest) -> Result<SpeculativeStream> {
        request.validate(self.target.executor().engine()).map_err(Error::InvalidRequest)?;
        let (tx, rx) = mpsc::channel(64);
        let round = draft_loop::DraftLoop::new(self.draft.clone(), self.target.clone(), self.length, request);
        let task = tokio::spawn(round.run(tx));
        Ok(SpeculativeStream { rx, task, terminated: false })
    }
}

/// The items of one speculative request: [`StreamEvent::Chunk`]s (one per round, the accepted run
/// plus the target's token) and one terminal [`StreamEvent::Final`] or error.
#[derive(Debug)]
pub struct SpeculativeStream {
    rx: mpsc::Receiver<Result<StreamEvent>>,
    task: tokio::task::JoinHandle<()>,
    terminated: bool,
}

impl Stream for SpeculativeStream {
    type Item = Result<StreamEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.terminated {
            return Poll::Ready(None);
        }
        match this.rx.poll_recv(cx) {
            Poll::Ready(Some(item)) => {
                this.terminated = matches!(item, Ok(StreamEvent::Final(_)) | Err(_));
                Poll::Ready(Some(item))
            }
            Poll::Ready(None) => {
                // The loop ended without a terminal item (it panicked): report it once.
                this.terminated = true;
                Poll::Ready(Some(Err(Error::StreamEnded)))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for SpeculativeStream {
    fn drop(&mut self) {
        // Aborting drops the round's draft and target streams, which cancel their requests.
        self.task.abort();
    }
}
