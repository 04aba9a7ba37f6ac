//! One Generate call's response stream: executor events out as protocol messages, ending with
//! exactly one terminal item whatever ends the request (its final, an error, its deadline, the
//! end of the shutdown grace period, or the client going away).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, mpsc};
use tokio::time::Instant;
use tonic::{Code, Status};

use super::convert;
use super::events::{Event, EventStream};
use super::live::LiveEntry;
use super::metrics::code_outcome;
use super::replies::{self, ReplyContext, chunk_message, complete_messages};
use super::state::ServiceState;
use crate::proto::trtllm as pb;
use crate::{FinalOutput, FinishReason};

/// Reply messages a Generate call queues for its connection. Past that, the client lags and its
/// chunks wait as one coalesced message instead (see `Generation::stream`): a short queue keeps
/// a lagging client's tokens in few large messages rather than many small ones.
pub(crate) const REPLY_BUFFER: usize = 32;

/// How long a terminal status may wait for a client that has stopped reading.
const TERMINAL_SEND_TIMEOUT: Duration = Duration::from_secs(1);

/// When a request must be over, and who said so.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline {
    /// The moment.
    pub(crate) at: Instant,
    /// The time allotted from arrival.
    pub(crate) allotted: Duration,
    /// Whether the client's gRPC deadline set it (else the server's default request timeout).
    pub(crate) from_client: bool,
}

impl Deadline {
    /// The earlier of the client's gRPC deadline and the server's default request timeout.
    pub(crate) fn new(client: Option<Duration>, server: Option<Duration>) -> Option<Self> {
        let (allotted, from_client) = match (client, server) {
            (Some(c), Some(s)) if s < c => (s, false),
            (Some(c), _) => (c, true),
            (None, Some(s)) => (s, false),
            (None, None) => return None,
        };
        // A deadline too far away to represent is no deadline.
        let at = Instant::now().checked_add(allotted)?;
        Some(Deadline { at, allotted, from_client })
    }

    fn status(&self) -> Status {
        let seconds = self.allotted.as_secs_f64();
        Status::deadline_exceeded(if self.from_client {
            format!("the request's deadline ({seconds:.3} s) passed before it finished")
        } else {
            format!("the server's request timeout ({seconds:.3} s) passed before the request finished")
        })
    }
}

/// How a request ended, for the log and the metrics.
enum Outcome {
    /// Its final output went out (finish reason inside).
    Finished(Box<FinalOutput>),
    /// The client cancelled its call or went away; the request was cancelled in the executor.
    ClientGone,
    /// Its deadline passed; it ended with DEADLINE_EXCEEDED.
    Deadline,
    /// The shutdown grace period ended; it ended with UNAVAILABLE.
    Shutdown,
    /// It ended with this error status.
    Failed(Code),
}

/// Why a send gave up.
enum Interrupted {
    ClientGone,
    Shutdown,
    Deadline,
}

/// A running Generate call.
pub(crate) struct Generation {
    pub(crate) state: Arc<ServiceState>,
    pub(crate) reply: ReplyContext,
    pub(crate) guard: LiveEntry,
    pub(crate) permit: Option<OwnedSemaphorePermit>,
    pub(crate) events: EventStream,
    pub(crate) tx: mpsc::Sender<Result<pb::GenerateResponse, Status>>,
    pub(crate) deadline: Option<Deadline>,
}

impl Generation {
    /// Streams the request to the client, then logs and counts how it ended. Dropping the
    /// executor stream when this returns cancels the request in the executor if it still runs.
    pub(crate) async fn run(mut self) {
        let outcome = self.stream().await;
        let request_id = self.guard.request_id().to_string();
        let outcome_word = match &outcome {
            Outcome::Finished(done) => {
                tracing::info!(
                    request_id = %request_id,
                    prompt_tokens = done.prompt_tokens,
                    completion_tokens = done.completion_tokens,
                    ttft_ms = done.ttft().map(|d| d.as_secs_f64() * 1e3),
                    // The word on the wire (and in the gateway's log): `abort`, not `cancelled`.
                    finish_reason = done.finish_reason.as_openai_str(),
                    "request finished"
                );
                if let Some(metrics) = &self.state.metrics {
                    metrics.record_final(done);
                }
                return;
            }
            Outcome::ClientGone => self.client_gone(&request_id),
            Outcome::Deadline => {
                tracing::info!(request_id = %request_id, "deadline passed; request cancelled");
                "deadline_exceeded"
            }
            Outcome::Shutdown => {
                tracing::warn!(request_id = %request_id, "shutdown grace period over; request cancelled");
                "unavailable"
            }
            Outcome::Failed(code) => code_outcome(*code),
        };
        if let Some(metrics) = &self.state.metrics {
            metrics.record_outcome(outcome_word);
        }
    }

    /// Cancels the request of a client that went away (unless it already finished) and says
    /// whether that worked: a failed cancel leaves the request running, which must not be hidden.
    fn client_gone(&self, request_id: &str) -> &'static str {
        if self.guard.is_released() {
            tracing::info!(request_id = %request_id, finish_reason = "abort", "client went away after the final");
            return "cancelled";
        }
        match self.state.executor.executor().cancel(crate::RequestId::new(self.guard.executor_id())) {
            Ok(()) => {
                tracing::info!(request_id = %request_id, finish_reason = "abort", "client went away; request cancelled");
                "cancelled"
            }
            Err(e) => {
                tracing::warn!(
                    request_id = %request_id,
                    error = %e,
                    "client went away but cancelling the request failed: it runs on in the executor"
                );
                "cancel_failed"
            }
        }
    }

    async fn stream(&mut self) -> Outcome {
        // Chunks that came while the client lagged (its reply buffer full), as one message: the
        // executor stream is drained at the executor's pace whatever the connection's, so a slow
        // client never fills the request's buffer (which would cancel it), and it gets one
        // message for everything that waited instead of one per token.
        let mut pending: Option<pb::GenerateResponse> = None;
        // Its own handle on the reply channel: a reserved slot must not borrow `self`.
        let replies = self.tx.clone();
        // The watches on the client, the shutdown and the deadline live across the loop: made
        // afresh for every token, each would register and unregister a waiter per token.
        let grace_over = self.state.lifecycle.grace_over.clone();
        let (client_gone, shutdown) = (replies.closed(), grace_over.cancelled());
        let deadline = tokio::time::sleep_until(self.deadline_at());
        tokio::pin!(client_gone, shutdown, deadline);
        loop {
            let item = tokio::select! {
                biased;
                _ = &mut client_gone => return Outcome::ClientGone,
                _ = &mut shutdown => return self.interrupted(Interrupted::Shutdown).await,
                _ = &mut deadline, if self.deadline.is_some() => {
                    return self.interrupted(Interrupted::Deadline).await;
                }
                permit = replies.reserve(), if pending.is_some() => {
                    let Ok(permit) = permit else { return Outcome::ClientGone };
                    if let Some(message) = pending.take() {
                        permit.send(Ok(message));
                    }
                    continue;
                }
                item = self.events.next() => item,
            };
            if let Some(Ok(Event::Chunk(chunk))) = item {
                let max = self.state.max_message_size;
                let chunk = match pending.as_mut() {
                    Some(message) => replies::coalesce(message, chunk, max),
                    None => Some(chunk),
                };
                let Some(chunk) = chunk else { continue };
                // Another sequence's tokens, or a message at the limit: what waited goes first.
                if let Some(message) = pending.take()
                    && let Err(why) = self.send(message, true).await
                {
                    return self.interrupted(why).await;
                }
                let message = chunk_message(&self.reply.request_id, chunk);
                if let Err(status) = convert::check_message_fits(&message, max) {
                    return self.end_with(status).await;
                }
                pending = Some(message);
                continue;
            }
            // The end: the chunks that waited go before it.
            if let Some(message) = pending.take()
                && let Err(why) = self.send(message, true).await
            {
                return self.interrupted(why).await;
            }
            match item {
                Some(Ok(Event::Chunk(_))) => unreachable!("chunks are handled above"),
                Some(Ok(Event::Final { output, matched_stops })) => return self.finish(output, &matched_stops).await,
                Some(Err(error)) => {
                    let status = convert::stream_status(&error, self.state.executor_failing());
                    tracing::warn!(
                        request_id = %self.reply.request_id,
                        code = ?status.code(),
                        error = %error,
                        "request failed"
                    );
                    return self.end_with(status).await;
                }
                None => {
                    let status = Status::unavailable("the executor's response stream ended before the final response");
                    tracing::error!(request_id = %self.reply.request_id, "executor stream ended without a final");
                    return self.end_with(status).await;
                }
            }
        }
    }

    /// The request's final: one `complete` per sequence.
    async fn finish(&mut self, done: Box<FinalOutput>, matched_stops: &[Option<String>]) -> Outcome {
        // The id is free for reuse from the moment the client can see the completes.
        self.guard.release();
        if self.deadline.is_some() && done.finish_reason == FinishReason::TimedOut {
            return self.interrupted(Interrupted::Deadline).await;
        }
        let messages = complete_messages(&self.reply, &done, matched_stops);
        if let Some(status) =
            messages.iter().find_map(|m| convert::check_message_fits(m, self.state.max_message_size).err())
        {
            return self.end_with(status).await;
        }
        for message in messages {
            match self.send(message, false).await {
                Ok(()) => {}
                Err(Interrupted::ClientGone) => return Outcome::ClientGone,
                // Shutdown while a slow reader holds up the completes: they are lost with it.
                Err(_) => return Outcome::Shutdown,
            }
        }
        Outcome::Finished(done)
    }

    /// Sends one message, giving up if the client leaves, the grace period ends or (while
    /// `watch_deadline`) the deadline passes before the client takes it.
    async fn send(&mut self, message: pb::GenerateResponse, watch_deadline: bool) -> Result<(), Interrupted> {
        let deadline = self.deadline_at();
        tokio::select! {
            biased;
            sent = self.tx.send(Ok(message)) => sent.map_err(|_| Interrupted::ClientGone),
            _ = self.state.lifecycle.grace_over.cancelled() => Err(Interrupted::Shutdown),
            _ = tokio::time::sleep_until(deadline), if watch_deadline && self.deadline.is_some() => {
                Err(Interrupted::Deadline)
            }
        }
    }

    /// Ends the stream because of `why`.
    async fn interrupted(&mut self, why: Interrupted) -> Outcome {
        match why {
            Interrupted::ClientGone => Outcome::ClientGone,
            Interrupted::Shutdown => {
                self.end_with(self.state.lifecycle.shutdown_status()).await;
                Outcome::Shutdown
            }
            Interrupted::Deadline => {
                let status = self.deadline.map_or_else(|| Status::deadline_exceeded("deadline passed"), |d| d.status());
                self.end_with(status).await;
                Outcome::Deadline
            }
        }
    }

    /// Sends `status` as the stream's last item.
    async fn end_with(&mut self, status: Status) -> Outcome {
        let code = status.code();
        // A client that stopped reading gets a bounded wait, not a hold on shutdown.
        let _ = tokio::time::timeout(TERMINAL_SEND_TIMEOUT, self.tx.send(Err(status))).await;
        match code {
            Code::DeadlineExceeded => Outcome::Deadline,
            _ => Outcome::Failed(code),
        }
    }

    /// The deadline, or a moment far enough away never to matter.
    fn deadline_at(&self) -> Instant {
        self.deadline.map_or_else(|| Instant::now() + Duration::from_secs(86_400 * 365), |d| d.at)
    }
}

impl std::fmt::Debug for Generation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Generation")
            .field("request_id", &self.reply.request_id)
            .field("deadline", &self.deadline)
            .field("concurrency_slot", &self.permit.is_some())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_earlier_deadline_wins_and_says_whose_it_was() {
        let s = Duration::from_secs;
        assert!(Deadline::new(None, None).is_none());
        let client = Deadline::new(Some(s(1)), Some(s(30))).unwrap();
        assert!(client.from_client && client.allotted == s(1));
        let server = Deadline::new(Some(s(60)), Some(s(30))).unwrap();
        assert!(!server.from_client && server.allotted == s(30));
        assert!(server.status().message().contains("server's request timeout"));
        assert_eq!(client.status().code(), Code::DeadlineExceeded);
        assert!(Deadline::new(Some(Duration::MAX), None).is_none(), "unrepresentable, not a panic");
    }
}
