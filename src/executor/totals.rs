//! Running totals of how requests ended, counted as each stream yields its terminal item (or is
//! dropped before it).

use std::sync::atomic::{AtomicU64, Ordering};

/// How many requests have ended since the executor started, by how they ended. A request counts
/// once its stream yields its terminal item, or when its stream is dropped before that.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct RequestTotals {
    /// Ended with a final output that was not a cancellation.
    pub completed: u64,
    /// Cancelled: by [`cancel`](crate::Executor::cancel), by dropping the stream, or at shutdown.
    pub cancelled: u64,
    /// Ended with an error (refused at admission, failed in the executor, consumer too slow, ...).
    pub failed: u64,
}

/// The counters behind [`RequestTotals`].
#[derive(Debug, Default)]
pub(crate) struct Totals {
    completed: AtomicU64,
    cancelled: AtomicU64,
    failed: AtomicU64,
}

/// How one request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Completed,
    Cancelled,
    Failed,
}

impl Totals {
    pub(crate) fn count(&self, ending: Ending) {
        let counter = match ending {
            Ending::Completed => &self.completed,
            Ending::Cancelled => &self.cancelled,
            Ending::Failed => &self.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn read(&self) -> RequestTotals {
        RequestTotals {
            completed: self.completed.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}
