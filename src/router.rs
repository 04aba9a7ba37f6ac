//! The response thread: the one owner of `awaitResponses`, routing each response to its request's
//! bounded channel.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use crate::executor::Inner;
use crate::output::Routed;

/// Why a request's channel closed without a final response; read by the stream when it sees the
/// channel close, so that it can still end with exactly one terminal item.
#[derive(Debug, Clone)]
pub(crate) enum EndCause {
    /// Its buffer filled up: the consumer was too slow, the request was cancelled.
    Overflow(usize),
    /// The executor shut down before the request finished.
    ShutDown,
    /// The response thread failed; the message says how.
    Fatal(String),
}

/// A live request's routing entry.
#[derive(Debug)]
pub(crate) struct Route {
    pub(crate) tx: mpsc::Sender<Routed>,
    pub(crate) end: Arc<OnceLock<EndCause>>,
}

/// Request id → route. Guarded by one mutex that `enqueue` holds across the executor call and the
/// insert, so that a response can never arrive for an id that is not registered yet.
pub(crate) type Routes = HashMap<u64, Route>;

/// Routes one batch of responses. Returns the ids to cancel in the executor (consumer gone or too
/// slow); the caller cancels them outside the lock.
fn route_batch(routes: &Mutex<Routes>, batch: Vec<crate::ffi::sys::ResponseItem>, cancel: &mut Vec<u64>) -> bool {
    let mut removed = false;
    let Ok(mut routes) = routes.lock() else { return false };
    for item in batch {
        let id = item.request_id;
        let terminal = item.is_final || item.is_error;
        let Some(route) = routes.get(&id) else {
            // Expected after a drop or an overflow: the final of a cancelled request still arrives.
            if !(item.is_error && item.error_message.contains("already been processed")) {
                tracing::debug!(request_id = id, terminal, "response for an unknown request id dropped");
            }
            if !terminal {
                cancel.push(id);
            }
            continue;
        };
        let routed = Routed { item, received_at: Instant::now() };
        match route.tx.try_send(routed) {
            Ok(()) if terminal => {
                routes.remove(&id);
                removed = true;
            }
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                // Never block the one thread every request depends on: cancel the slow one instead.
                let _ = route.end.set(EndCause::Overflow(route.tx.max_capacity()));
                tracing::warn!(request_id = id, "consumer too slow, cancelling request");
                routes.remove(&id);
                removed = true;
                if !terminal {
                    cancel.push(id);
                }
            }
            Err(TrySendError::Closed(_)) => {
                routes.remove(&id);
                removed = true;
                if !terminal {
                    cancel.push(id);
                }
            }
        }
    }
    removed
}

/// The body of the response thread.
pub(crate) fn run(inner: Arc<Inner>) {
    let timeout_ms = inner.config.response_poll_interval.as_millis().clamp(1, 1000) as u32;
    let mut cancel = Vec::new();
    while !inner.stop.load(Ordering::Acquire) {
        match inner.handle.await_responses(timeout_ms) {
            Ok(batch) if batch.is_empty() => {}
            Ok(batch) => {
                if route_batch(&inner.routes, batch, &mut cancel) {
                    inner.routes_changed.notify_all();
                }
                for id in cancel.drain(..) {
                    if let Err(e) = inner.handle.cancel(id) {
                        tracing::debug!(request_id = id, error = e.what(), "cancel after routing failed");
                    }
                }
            }
            Err(e) => {
                let message = format!("awaitResponses failed: {}", e.what().lines().next().unwrap_or(""));
                tracing::error!(error = %message, "response thread stopping; failing every in-flight request");
                inner.fail_all(EndCause::Fatal(message));
                return;
            }
        }
    }
}
