//! The stats thread: drains the executor's iteration and request stats and fans them out.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::broadcast;

use super::shared::Shared;
use crate::error::{Error, Result};
use crate::types::stats::{IterationStats, RequestStatsPerIteration};

/// How many stats batches a subscriber may fall behind before it loses the oldest.
const SUBSCRIBER_BUFFER: usize = 4096;

/// How long one drain may wait for a subscriber that is a full buffer behind before the oldest
/// batches are dropped for it. A fast executor (the simulator on a virtual clock runs thousands of
/// iterations per wall second) hands over more per drain than a busy runtime reads at once; a short
/// wait lets the reader catch up, and the bound keeps a reader that stopped from stalling the stats.
const SUBSCRIBER_GRACE: Duration = Duration::from_millis(100);

/// The latest iteration's stats and the broadcast of every batch.
#[derive(Debug)]
pub(crate) struct StatsPoller {
    shared: Arc<Shared>,
    /// Whether per-request stats are recorded (`request_stats_max_iterations` > 0).
    request_stats: bool,
    /// The simulator on its virtual clock: nothing forces a batch to be lost (the clock does not
    /// run away from the reader), so a subscriber a full buffer behind is waited for, however long.
    lossless: bool,
    latest_iteration: RwLock<Option<IterationStats>>,
    /// Held while draining the executor's stats buffers: the stats thread and `poll` from a caller
    /// both drain, and unserialised they could publish batches out of order.
    draining: Mutex<()>,
    iterations: Outbox<IterationStats>,
    requests: Outbox<RequestStatsPerIteration>,
}

impl StatsPoller {
    pub(crate) fn new(shared: Arc<Shared>, request_stats: bool, lossless: bool) -> Self {
        StatsPoller {
            shared,
            request_stats,
            lossless,
            latest_iteration: RwLock::new(None),
            draining: Mutex::new(()),
            iterations: Outbox::new(),
            requests: Outbox::new(),
        }
    }

    /// Starts the stats thread, polling every `period` until the shared state says stop.
    pub(crate) fn start(self: &Arc<Self>, period: Duration) -> Result<JoinHandle<()>> {
        let poller = self.clone();
        std::thread::Builder::new()
            .name("trtllm-stats".to_string())
            .spawn(move || poller.run(period))
            .map_err(|source| Error::Thread { name: "trtllm-stats", source })
    }

    fn run(&self, period: Duration) {
        while !self.shared.stopping() {
            self.poll();
            // Lossless: what a caller's drain could not hand over yet waits here (never under the
            // draining lock, so callers are not held up) until the subscriber has room.
            if self.lossless {
                while !self.shared.stopping() && !self.flush(None) {
                    std::thread::sleep(ROOM_POLL);
                }
            }
            // Sleep in short slices so that shutdown is not held up by a long period.
            let until = Instant::now() + period;
            while !self.shared.stopping() {
                let now = Instant::now();
                if now >= until {
                    break;
                }
                std::thread::sleep((until - now).min(Duration::from_millis(20)));
            }
        }
        // One last drain so that the final iterations are not lost.
        self.poll();
    }

    /// Drains the executor's stats buffers and hands what they held to the subscribers, waiting
    /// up to [`SUBSCRIBER_GRACE`] for one a full buffer behind. Past the grace a lossy poller
    /// drops that subscriber's oldest batches; a lossless one keeps the rest for the stats thread
    /// (see [`Self::backlog`]).
    pub(crate) fn poll(&self) {
        {
            let _serialised = self.draining.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            match self.shared.handle().iteration_stats() {
                Ok(items) => {
                    self.shared.health.stats_poll(None);
                    let stats: Vec<Arc<IterationStats>> =
                        items.into_iter().map(|item| Arc::new(IterationStats::from_ffi(item))).collect();
                    if let Some(last) = stats.last()
                        && let Ok(mut latest) = self.latest_iteration.write()
                    {
                        *latest = Some((**last).clone());
                    }
                    self.iterations.queue(stats);
                }
                Err(e) => {
                    let message = format!("getLatestIterationStats failed: {}", e.what().lines().next().unwrap_or(""));
                    self.shared.health.stats_poll(Some(&message));
                }
            }
            if self.request_stats {
                match self.shared.handle().request_stats() {
                    Ok(items) => self.requests.queue(
                        items.into_iter().map(|item| Arc::new(RequestStatsPerIteration::from_ffi(item))).collect(),
                    ),
                    Err(e) => tracing::warn!(error = e.what(), "getLatestRequestStats failed"),
                }
            }
        }
        let grace = Instant::now() + SUBSCRIBER_GRACE;
        while !self.flush(Some(grace)) && Instant::now() < grace {
            std::thread::sleep(ROOM_POLL);
        }
    }

    /// Hands queued batches to the subscribers while they have room; past `deadline` (a lossy
    /// poller only) the rest goes out anyway. Returns whether nothing is left queued.
    fn flush(&self, deadline: Option<Instant>) -> bool {
        let force = !self.lossless && deadline.is_some_and(|d| Instant::now() >= d);
        let iterations = self.iterations.send(force);
        let requests = self.requests.send(force);
        iterations && requests
    }

    /// Batches drained from the executor but not yet handed to a subscriber (a lossless poller
    /// whose subscriber is a full buffer behind): a reader that must see every batch waits for
    /// this to reach 0 after [`Self::poll`].
    pub(crate) fn backlog(&self) -> usize {
        self.iterations.len() + self.requests.len()
    }

    /// The most recent iteration's stats, if any iteration has run.
    pub(crate) fn latest_iteration(&self) -> Option<IterationStats> {
        self.latest_iteration.read().ok().and_then(|s| s.clone())
    }

    /// Every iteration's stats from now on.
    pub(crate) fn subscribe_iterations(&self) -> broadcast::Receiver<Arc<IterationStats>> {
        self.iterations.tx.subscribe()
    }

    /// Per-request stats of every iteration from now on.
    pub(crate) fn subscribe_requests(&self) -> broadcast::Receiver<Arc<RequestStatsPerIteration>> {
        self.requests.tx.subscribe()
    }
}

/// How long a drain sleeps before looking again for room in a subscriber's buffer.
const ROOM_POLL: Duration = Duration::from_micros(200);

/// One broadcast and the batches drained for it that no subscriber has had room for yet.
#[derive(Debug)]
struct Outbox<T> {
    tx: broadcast::Sender<Arc<T>>,
    queued: Mutex<VecDeque<Arc<T>>>,
}

impl<T> Outbox<T> {
    fn new() -> Self {
        Outbox { tx: broadcast::channel(SUBSCRIBER_BUFFER).0, queued: Mutex::new(VecDeque::new()) }
    }

    fn queue(&self, items: Vec<Arc<T>>) {
        self.queued.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).extend(items);
    }

    fn len(&self) -> usize {
        self.queued.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    /// Sends queued batches in order while the slowest subscriber has room (all of them when
    /// `force`, or when nobody subscribes: the value is then only the latest). Returns whether
    /// the queue is empty.
    fn send(&self, force: bool) -> bool {
        let mut queued = self.queued.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while let Some(item) = queued.pop_front() {
            if !force && self.tx.receiver_count() > 0 && self.tx.len() >= SUBSCRIBER_BUFFER {
                queued.push_front(item);
                return false;
            }
            let _ = self.tx.send(item);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subscriber that reads in bursts receives every one of several buffers' worth of
    /// batches queued at once: the outbox hands them over as room frees, never dropping one.
    #[test]
    fn a_slow_subscriber_loses_nothing_while_batches_wait_for_room() {
        let outbox = Outbox::<u32>::new();
        let mut rx = outbox.tx.subscribe();
        let total = 3 * SUBSCRIBER_BUFFER as u32;
        // The reader starts only after the first send, so that send meets a full buffer
        // however fast the reader would have been.
        outbox.queue((0..total).map(Arc::new).collect());
        assert!(!outbox.send(false), "more than a buffer cannot go out at once");
        let reader = std::thread::spawn(move || {
            let (mut received, mut lagged, mut in_order) = (0_u32, 0_u64, true);
            loop {
                match rx.try_recv() {
                    Ok(value) => {
                        in_order &= *value == received;
                        received += 1;
                    }
                    Err(broadcast::error::TryRecvError::Lagged(n)) => lagged += n,
                    Err(broadcast::error::TryRecvError::Empty) => std::thread::sleep(Duration::from_millis(5)),
                    Err(broadcast::error::TryRecvError::Closed) => return (received, lagged, in_order),
                }
            }
        });
        while !outbox.send(false) {
            std::thread::sleep(ROOM_POLL);
        }
        drop(outbox);
        assert_eq!(reader.join().unwrap(), (total, 0, true));
    }

    /// A subscriber that stopped reading: forced (a lossy poller past its grace), the rest is
    /// sent and the subscriber loses its oldest batches; unforced, the rest stays queued.
    #[test]
    fn only_a_forced_send_drops_batches_for_a_stopped_subscriber() {
        let outbox = Outbox::<u32>::new();
        let _stopped = outbox.tx.subscribe();
        outbox.queue((0..2 * SUBSCRIBER_BUFFER as u32).map(Arc::new).collect());
        assert!(!outbox.send(false));
        assert_eq!((outbox.tx.len(), outbox.len()), (SUBSCRIBER_BUFFER, SUBSCRIBER_BUFFER));
        assert!(outbox.send(true));
        assert_eq!((outbox.tx.len(), outbox.len()), (SUBSCRIBER_BUFFER, 0));
    }

    /// Nobody subscribed: batches are not kept for a reader that does not exist.
    #[test]
    fn without_subscribers_nothing_waits() {
        let outbox = Outbox::<u32>::new();
        outbox.queue((0..2 * SUBSCRIBER_BUFFER as u32).map(Arc::new).collect());
        assert!(outbox.send(false));
        assert_eq!(outbox.len(), 0);
    }
}
