//! The state a running executor shares with its threads and streams: the executor handle and the
//! route table (request id → the request's channel), together with the rules that keep them
//! consistent.
//!
//! The invariants, all kept by [`Shared`]'s methods and nowhere else:
//! - A request is enqueued and its route inserted under one hold of the routes lock, so the
//!   response thread never sees a response for an id that is not registered yet.
//! - Nothing is enqueued once `accepting` is cleared; it is read and cleared under the routes lock.
//! - A route is removed exactly once: when its terminal response is delivered, when its consumer
//!   is gone or too slow, when its stream is dropped, or by `fail_all`. Every removal wakes
//!   `wait_idle`; every route removed before its terminal response records why, so the stream can
//!   still end with exactly one terminal item.
//! - `fail_all` ends every route and refuses new requests; after a fatal error the executor is
//!   unhealthy and reports the first failure to later callers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;

use super::accumulator::Routed;
use super::health::HealthTracker;
use super::totals::Totals;
use crate::clock::SteadyClock;
use crate::error::{Error, Result};
use crate::ffi::sys;

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

/// Where a stream reads why its channel closed early (set before the route's sender is dropped).
#[derive(Debug, Clone, Default)]
pub(crate) struct EndSignal(Arc<OnceLock<EndCause>>);

impl EndSignal {
    /// The cause, if the route was ended before its terminal response.
    pub(crate) fn cause(&self) -> Option<&EndCause> {
        self.0.get()
    }

    fn set(&self, cause: EndCause) {
        let _ = self.0.set(cause);
    }
}

/// A live request's routing entry.
#[derive(Debug)]
struct Route {
    tx: mpsc::Sender<Routed>,
    end: EndSignal,
}

/// One registered request: what its stream reads from.
#[derive(Debug)]
pub(crate) struct Registration {
    /// The executor's request id.
    pub(crate) id: u64,
    /// The request's bounded channel.
    pub(crate) rx: mpsc::Receiver<Routed>,
    /// Why the channel closed, when it closed without a terminal response.
    pub(crate) end: EndSignal,
}

/// The executor handle and the route table; see the module docs for the invariants it keeps.
pub(crate) struct Shared {
    handle: cxx::UniquePtr<sys::ExecutorHandle>,
    clock: SteadyClock,
    routes: Mutex<HashMap<u64, Route>>,
    routes_changed: Condvar,
    /// Cleared when shutdown starts or the response thread fails; read and cleared under the routes lock.
    accepting: AtomicBool,
    /// Cleared on a fatal response-thread error.
    healthy: AtomicBool,
    /// Tells the response and stats threads to stop.
    stop: AtomicBool,
    /// The first fatal error, reported to later enqueue calls.
    failure: OnceLock<String>,
    /// What the executor's calls and responses say about its health.
    pub(crate) health: HealthTracker,
    /// How requests ended, counted by their streams.
    pub(crate) totals: Totals,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("in_flight", &self.in_flight())
            .field("accepting", &self.is_accepting())
            .field("healthy", &self.healthy.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Shared state around a freshly created executor, accepting requests.
    pub(crate) fn new(handle: cxx::UniquePtr<sys::ExecutorHandle>) -> Self {
        Shared {
            handle,
            clock: SteadyClock::calibrate(),
            routes: Mutex::new(HashMap::new()),
            routes_changed: Condvar::new(),
            accepting: AtomicBool::new(true),
            healthy: AtomicBool::new(true),
            stop: AtomicBool::new(false),
            failure: OnceLock::new(),
            health: HealthTracker::default(),
            totals: Totals::default(),
        }
    }

    /// The executor, for calls that do not route (stats, events, cancel, shutdown). Enqueueing
    /// goes through [`Shared::register`] only.
    pub(crate) fn handle(&self) -> &sys::ExecutorHandle {
        &self.handle
    }

    /// The executor clock's mapping onto `Instant`.
    pub(crate) fn clock(&self) -> &SteadyClock {
        &self.clock
    }

    fn lock_routes(&self) -> Option<MutexGuard<'_, HashMap<u64, Route>>> {
        self.routes.lock().ok()
    }

    /// Calls `submit` (which enqueues `count` requests and returns their ids in order) with the
    /// routes locked and registers a route per id, each with a channel of `buffer` responses,
    /// before any response can be routed. Returns when the requests were handed over and their
    /// registrations, in order.
    pub(crate) fn register(
        &self,
        count: usize,
        buffer: usize,
        submit: impl FnOnce(&sys::ExecutorHandle) -> std::result::Result<Vec<u64>, cxx::Exception>,
    ) -> Result<(Instant, Vec<Registration>)> {
        let mut routes = self.lock_routes().ok_or_else(|| Error::Internal("routing table poisoned".into()))?;
        if !self.accepting.load(Ordering::Acquire) {
            return Err(match self.failure.get() {
                Some(message) => Error::ExecutorFailed(message.clone()),
                // Between the start of a shutdown and its end, requests in flight may still finish.
                None if !self.stopping() => Error::Draining,
                None => Error::ShutDown,
            });
        }
        let enqueued_at = Instant::now();
        let ids = match submit(&self.handle) {
            Ok(ids) => {
                self.health.enqueue(None);
                ids
            }
            Err(e) => {
                let error = Error::from_executor(e.what());
                // A full queue or a refused request says nothing about the executor's health.
                if let Error::ExecutorFailed(message) = &error {
                    self.health.enqueue(Some(message));
                }
                return Err(error);
            }
        };
        if ids.len() != count {
            // Not expected from any executor; the ids cannot be matched to the requests, so they
            // are cancelled rather than left running unrouted.
            for id in &ids {
                self.cancel_quietly(*id);
            }
            return Err(Error::Internal(format!(
                "the executor returned {} request ids for {count} requests",
                ids.len()
            )));
        }
        let registrations = ids
            .into_iter()
            .map(|id| {
                let (tx, rx) = mpsc::channel(buffer);
                let end = EndSignal::default();
                routes.insert(id, Route { tx, end: end.clone() });
                Registration { id, rx, end }
            })
            .collect();
        Ok((enqueued_at, registrations))
    }

    /// Routes one batch of responses, received at `received_at`, to their channels, removing the
    /// routes that ended, then cancels (outside the lock) the requests whose consumer is gone or
    /// too slow.
    pub(crate) fn route(&self, batch: Vec<sys::ResponseItem>, received_at: Instant) {
        let mut cancel = Vec::new();
        let removed = match self.lock_routes() {
            Some(mut routes) => route_batch(&mut routes, batch, received_at, &mut cancel, &self.health),
            None => false,
        };
        if removed {
            self.routes_changed.notify_all();
        }
        for id in cancel {
            // Repeated for every response of a request whose cancel failed: counted, logged quietly.
            if let Err(e) = self.cancel_checked(id) {
                tracing::debug!(executor_request_id = id, error = %e, "cancel after routing failed");
            }
        }
    }

    /// Ends every in-flight request with `cause` and refuses new ones. A `Fatal` cause also marks
    /// the executor unhealthy and is reported to later enqueue calls.
    pub(crate) fn fail_all(&self, cause: EndCause) {
        if let EndCause::Fatal(message) = &cause {
            let _ = self.failure.set(message.clone());
            self.health.fatal(message);
            self.healthy.store(false, Ordering::Release);
        }
        self.accepting.store(false, Ordering::Release);
        let drained: Vec<Route> = match self.lock_routes() {
            Some(mut routes) => routes.drain().map(|(_, r)| r).collect(),
            None => Vec::new(),
        };
        for route in drained {
            // Set before the sender drops, which closes the channel; the stream then reads the cause.
            route.end.set(cause.clone());
        }
        self.routes_changed.notify_all();
    }

    /// Cancels a request in the executor. After shutdown a failure is expected and stays quiet;
    /// before it, a failed cancel means the request runs on, so it is logged and counted.
    pub(crate) fn cancel_quietly(&self, id: u64) {
        if let Err(e) = self.cancel_checked(id) {
            if self.is_accepting() {
                tracing::warn!(executor_request_id = id, error = %e, "cancelRequest failed: the request runs on");
            } else {
                tracing::debug!(executor_request_id = id, error = %e, "cancel failed");
            }
        }
    }

    /// Cancels a request in the executor, counting a failure in the health tracker.
    pub(crate) fn cancel_checked(&self, id: u64) -> Result<()> {
        self.handle.cancel(id).map_err(|e| {
            self.health.cancel_failed();
            Error::from_executor(e.what())
        })
    }

    /// Removes a request's route (its stream was dropped) and cancels it in the executor.
    pub(crate) fn release(&self, id: u64) {
        let removed = self.lock_routes().is_some_and(|mut r| r.remove(&id).is_some());
        if removed {
            self.routes_changed.notify_all();
            self.cancel_quietly(id);
        }
    }

    /// Refuses new requests from now on; returns how many are in flight.
    pub(crate) fn stop_accepting(&self) -> usize {
        // Cleared with the lock held, so no enqueue is between its check and its insert.
        let routes = self.lock_routes();
        self.accepting.store(false, Ordering::Release);
        routes.map_or(0, |r| r.len())
    }

    /// The ids of the requests in flight.
    pub(crate) fn in_flight_ids(&self) -> Vec<u64> {
        self.lock_routes().map(|r| r.keys().copied().collect()).unwrap_or_default()
    }

    /// Requests registered and not yet finished.
    pub(crate) fn in_flight(&self) -> usize {
        self.lock_routes().map_or(0, |r| r.len())
    }

    /// Waits until no request is in flight, for at most `timeout`. Returns whether it is idle.
    pub(crate) fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let Some(mut routes) = self.lock_routes() else { return false };
        while !routes.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            match self.routes_changed.wait_timeout(routes, deadline - now) {
                Ok((guard, _)) => routes = guard,
                Err(_) => return false,
            }
        }
        true
    }

    /// Whether new requests are accepted.
    pub(crate) fn is_accepting(&self) -> bool {
        self.accepting.load(Ordering::Acquire)
    }

    /// True while requests are accepted and no fatal error happened.
    pub(crate) fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire) && self.is_accepting()
    }

    /// Asks the response and stats threads to stop.
    pub(crate) fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
    }

    /// Whether the response and stats threads should stop.
    pub(crate) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }
}

/// Routes one batch of responses with the routes locked, each stamped `received_at`. Collects
/// the ids to cancel in the executor (consumer gone or too slow); returns whether any route was
/// removed.
fn route_batch(
    routes: &mut HashMap<u64, Route>,
    batch: Vec<sys::ResponseItem>,
    received_at: Instant,
    cancel: &mut Vec<u64>,
    health: &HealthTracker,
) -> bool {
    // Every request this batch ends counts before any stream sees its end: a forward failure
    // that fails the whole batch shows as the executor failing to each of those streams. A request
    // the executor refused when admitting it (its guide, adapter or parameters) is that request's
    // fault and says nothing about the executor: it neither counts as a failure nor as a success.
    for item in batch.iter().filter(|i| (i.is_final || i.is_error) && routes.contains_key(&i.request_id)) {
        if item.is_error && Error::is_admission_refusal(&item.error_message) {
            continue;
        }
        health.request_ended(item.is_error.then_some(item.error_message.as_str()));
    }
    let mut removed = false;
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
        let routed = Routed { item, received_at };
        match route.tx.try_send(routed) {
            Ok(()) if terminal => {
                routes.remove(&id);
                removed = true;
            }
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                // Never block the one thread every request depends on: cancel the slow one instead.
                route.end.set(EndCause::Overflow(route.tx.max_capacity()));
                // The stream's owner logs it under the client's request id.
                tracing::debug!(executor_request_id = id, "consumer too slow, cancelling request");
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

#[cfg(test)]
mod tests {
    use super::*;

    fn route(routes: &mut HashMap<u64, Route>, id: u64) -> mpsc::Receiver<Routed> {
        let (tx, rx) = mpsc::channel(4);
        routes.insert(id, Route { tx, end: EndSignal::default() });
        rx
    }

    fn error(id: u64, message: &str) -> sys::ResponseItem {
        sys::ResponseItem { request_id: id, is_error: true, error_message: message.into(), ..Default::default() }
    }

    #[test]
    fn requests_refused_at_admission_never_count_against_health() {
        let health = HealthTracker::default();
        let mut routes = HashMap::new();
        let mut receivers = Vec::new();
        for id in 0..10 {
            receivers.push(route(&mut routes, id));
            let refused = error(id, "Encountered an error when fetching new request: guide: the grammar is bad");
            route_batch(&mut routes, vec![refused], Instant::now(), &mut Vec::new(), &health);
        }
        assert!(health.issues().is_empty(), "{:?}", health.issues());
        assert!(routes.is_empty(), "each refusal ended its request");

        for id in 10..13 {
            receivers.push(route(&mut routes, id));
            let failed = error(id, "Encountered an error in forwardAsync function: device lost");
            route_batch(&mut routes, vec![failed], Instant::now(), &mut Vec::new(), &health);
        }
        assert!(
            matches!(&health.issues()[..], [crate::executor::HealthIssue::RequestsFailing { count: 3, .. }]),
            "forward failures in a row do count: {:?}",
            health.issues()
        );
    }
}
