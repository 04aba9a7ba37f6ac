//! A request's stream of responses, with cancel-on-drop.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::mpsc;

use super::accumulator::{Accumulator, Routed};
use super::shared::{EndCause, EndSignal, Registration, Shared};
use super::totals::Ending;
use crate::error::{Error, Result};
use crate::types::ids::RequestId;
use crate::types::output::{FinalOutput, StreamEvent};
use crate::types::request::FinishReason;

/// The responses of one request: [`StreamEvent::Chunk`]s, then exactly one terminal item, either
/// [`StreamEvent::Final`] or an `Err`. Nothing follows the terminal item.
///
/// Cancellation is a finish reason, not an error: a cancelled request ends with a final whose
/// reason is [`FinishReason::Cancelled`](crate::FinishReason::Cancelled). Dropping the stream before
/// its terminal item cancels the request in the executor at once.
///
/// Responses wait in a bounded buffer (`ExecutorConfig::stream_buffer`); a consumer that lets it
/// fill has its request cancelled and receives [`Error::ConsumerTooSlow`].
#[derive(Debug)]
#[must_use = "dropping a GenerationStream cancels its request"]
pub struct GenerationStream {
    shared: Arc<Shared>,
    id: u64,
    rx: mpsc::Receiver<Routed>,
    end: EndSignal,
    accumulator: Accumulator,
    pending: VecDeque<StreamEvent>,
    scratch: Vec<StreamEvent>,
    terminated: bool,
}

impl GenerationStream {
    pub(crate) fn new(shared: Arc<Shared>, registration: Registration, accumulator: Accumulator) -> Self {
        let Registration { id, rx, end } = registration;
        GenerationStream {
            shared,
            id,
            rx,
            end,
            accumulator,
            pending: VecDeque::new(),
            scratch: Vec::new(),
            terminated: false,
        }
    }

    /// The executor's id for this request.
    pub fn request_id(&self) -> RequestId {
        RequestId::new(self.id)
    }

    /// Asks the executor to cancel this request; the stream then ends with a `Cancelled` final.
    pub fn cancel(&self) {
        if !self.terminated {
            self.shared.cancel_quietly(self.id);
        }
    }

    /// When the request was handed to the executor (the start of client-side TTFT).
    pub fn enqueued_at(&self) -> std::time::Instant {
        self.accumulator.enqueued_at()
    }

    /// Sequences the request produces (`num_return_sequences`, or 1).
    pub fn num_sequences(&self) -> usize {
        self.accumulator.num_sequences()
    }

    /// Whether the terminal item has been yielded.
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Turns one received response (or the channel's end) into items.
    fn absorb(&mut self, routed: Option<Routed>) -> Option<Result<StreamEvent>> {
        match routed {
            Some(routed) if routed.item.is_error => {
                self.terminated = true;
                self.shared.totals.count(Ending::Failed);
                Some(Err(Error::from_response(&routed.item.error_message)))
            }
            Some(routed) => {
                self.accumulator.apply(routed, self.shared.clock(), &mut self.scratch);
                self.pending.extend(self.scratch.drain(..));
                None
            }
            None => {
                self.terminated = true;
                self.shared.totals.count(Ending::Failed);
                Some(Err(match self.end.cause() {
                    Some(EndCause::Overflow(capacity)) => Error::ConsumerTooSlow { capacity: *capacity },
                    Some(EndCause::ShutDown) => Error::ShutDown,
                    Some(EndCause::Fatal(message)) => Error::ExecutorFailed(message.clone()),
                    None => Error::StreamEnded,
                }))
            }
        }
    }

    fn next_pending(&mut self) -> Option<Result<StreamEvent>> {
        let event = self.pending.pop_front()?;
        if let StreamEvent::Final(done) = &event {
            self.terminated = true;
            self.pending.clear();
            let cancelled = done.finish_reason == FinishReason::Cancelled;
            self.shared.totals.count(if cancelled { Ending::Cancelled } else { Ending::Completed });
        }
        Some(Ok(event))
    }

    /// Blocks for the next item; `None` after the terminal item. Must not be called from an async
    /// runtime thread (use the `Stream` implementation there).
    pub fn blocking_next(&mut self) -> Option<Result<StreamEvent>> {
        loop {
            if let Some(item) = self.next_pending() {
                return Some(item);
            }
            if self.terminated {
                return None;
            }
            let routed = self.rx.blocking_recv();
            if let Some(item) = self.absorb(routed) {
                return Some(item);
            }
        }
    }

    /// A blocking iterator over the remaining items.
    pub fn blocking_iter(self) -> BlockingIter {
        BlockingIter { stream: self }
    }

    /// Collects the stream and returns the final output, or the terminal error.
    pub async fn collect_final(mut self) -> Result<FinalOutput> {
        use futures::StreamExt;
        while let Some(item) = self.next().await {
            if let StreamEvent::Final(done) = item? {
                return Ok(done);
            }
        }
        Err(Error::StreamEnded)
    }
}

impl Stream for GenerationStream {
    type Item = Result<StreamEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(item) = this.next_pending() {
                return Poll::Ready(Some(item));
            }
            if this.terminated {
                return Poll::Ready(None);
            }
            let routed = match this.rx.poll_recv(cx) {
                Poll::Ready(routed) => routed,
                Poll::Pending => return Poll::Pending,
            };
            if let Some(item) = this.absorb(routed) {
                return Poll::Ready(Some(item));
            }
        }
    }
}

impl Drop for GenerationStream {
    fn drop(&mut self) {
        // Release on drop: a consumer that walks away must not leave work running in the executor.
        if !self.terminated {
            tracing::debug!(executor_request_id = self.id, "stream dropped before its end: cancelling the request");
            self.shared.totals.count(Ending::Cancelled);
            self.shared.release(self.id);
        }
    }
}

/// Blocking iterator over a [`GenerationStream`].
#[derive(Debug)]
#[must_use = "dropping a BlockingIter cancels its request"]
pub struct BlockingIter {
    stream: GenerationStream,
}

impl Iterator for BlockingIter {
    type Item = Result<StreamEvent>;

    fn next(&mut self) -> Option<Self::Item> {
        self.stream.blocking_next()
    }
}
