//! The server's life after a shutdown signal: draining, the grace period, and the hard stop.

use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Shutdown state shared by every response stream.
///
/// On the shutdown signal `draining` is cancelled: new work is refused, health goes NOT_SERVING,
/// and the open-ended streams (KV event subscriptions, health watches) send a last message and
/// end. In-flight generations may finish for the grace period; then `grace_over` is cancelled and
/// each of them ends at once with UNAVAILABLE. Every response-stream task runs on `tasks`, so the
/// server knows when the last stream has ended.
#[derive(Debug, Clone)]
pub(crate) struct Lifecycle {
    /// Cancelled when the shutdown signal arrives.
    pub(crate) draining: CancellationToken,
    /// Cancelled when the grace period is over: in-flight generations end now.
    pub(crate) grace_over: CancellationToken,
    /// Every task that feeds a response stream.
    pub(crate) tasks: TaskTracker,
    /// How long in-flight generations may run after the signal.
    pub(crate) grace_period: Duration,
}

impl Lifecycle {
    pub(crate) fn new(grace_period: Duration) -> Self {
        Lifecycle {
            draining: CancellationToken::new(),
            grace_over: CancellationToken::new(),
            tasks: TaskTracker::new(),
            grace_period,
        }
    }

    /// Whether the shutdown signal has arrived.
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.is_cancelled()
    }

    /// The terminal status of a generation cancelled because the grace period ended.
    pub(crate) fn shutdown_status(&self) -> tonic::Status {
        tonic::Status::unavailable(format!(
            "the server is shutting down: the request was cancelled when the {:.1} s grace period ended; \
             retry on another server",
            self.grace_period.as_secs_f64()
        ))
    }

    /// Drains: waits for in-flight streams for the grace period, then ends the rest and waits up to
    /// `hard_deadline` for them to deliver their terminal messages. Returns whether every stream
    /// ended in time.
    pub(crate) async fn drain(&self, hard_deadline: Duration) -> bool {
        self.draining.cancel();
        self.tasks.close();
        if tokio::time::timeout(self.grace_period, self.tasks.wait()).await.is_ok() {
            return true;
        }
        tracing::warn!(streams = self.tasks.len(), "grace period over: cancelling the generations still in flight");
        self.grace_over.cancel();
        tokio::time::timeout(hard_deadline, self.tasks.wait()).await.is_ok()
    }
}
