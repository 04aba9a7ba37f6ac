//! When a request scheduled on the simulator's virtual clock arrives at the executor.

use std::time::Instant;

use super::ids::RequestId;

/// When a scheduled request arrives at the executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// At this simulated time, on the executor's clock ([`crate::sim::SimControl::now`]).
    At(Instant),
    /// As the follow-up of an earlier request enqueued with a follow-up delay (its request id):
    /// at that request's end plus the delay. Sent while the earlier request still runs, it waits
    /// in the executor, chained to it, and arrives the moment it ends, so a client that knows
    /// its next requests spares the simulation a round trip per request.
    After(RequestId),
}
