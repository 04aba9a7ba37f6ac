//! The stats thread: drains the executor's iteration and request stats and fans them out.

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
    latest_iteration: RwLock<Option<IterationStats>>,
    /// Held while draining the executor's stats buffers: the stats thread and `poll` from a caller
    /// both drain, and unserialised they could publish batches out of order.
    draining: Mutex<()>,
    iteration_tx: broadcast::Sender<Arc<IterationStats>>,
    request_stats_tx: broadcast::Sender<Arc<RequestStatsPerIteration>>,
}

impl StatsPoller {
    pub(crate) fn new(shared: Arc<Shared>, request_stats: bool) -> Self {
        let (iteration_tx, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        let (request_stats_tx, _) = broadcast::channel(SUBSCRIBER_BUFFER);
        StatsPoller {
            shared,
            request_stats,
            latest_iteration: RwLock::new(None),
            draining: Mutex::new(()),
            iteration_tx,
            request_stats_tx,
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

    /// Drains the executor's stats buffers and publishes what they held.
    pub(crate) fn poll(&self) {
        let _serialised = self.draining.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match self.shared.handle().iteration_stats() {
            Ok(items) => {
                self.shared.health.stats_poll(None);
                let mut last = None;
                let mut room = Room::until(Instant::now() + SUBSCRIBER_GRACE);
                for item in items {
                    let stats = Arc::new(IterationStats::from_ffi(item));
                    room.wait(&self.iteration_tx);
                    // No receivers is fine: the value is still kept as the latest.
                    let _ = self.iteration_tx.send(stats.clone());
                    last = Some(stats);
                }
                if let Some(last) = last
                    && let Ok(mut latest) = self.latest_iteration.write()
                {
                    *latest = Some((*last).clone());
                }
            }
            Err(e) => {
                let message = format!("getLatestIterationStats failed: {}", e.what().lines().next().unwrap_or(""));
                self.shared.health.stats_poll(Some(&message));
            }
        }
        if self.request_stats {
            match self.shared.handle().request_stats() {
                Ok(items) => {
                    let mut room = Room::until(Instant::now() + SUBSCRIBER_GRACE);
                    for item in items {
                        room.wait(&self.request_stats_tx);
                        let _ = self.request_stats_tx.send(Arc::new(RequestStatsPerIteration::from_ffi(item)));
                    }
                }
                Err(e) => tracing::warn!(error = e.what(), "getLatestRequestStats failed"),
            }
        }
    }

    /// The most recent iteration's stats, if any iteration has run.
    pub(crate) fn latest_iteration(&self) -> Option<IterationStats> {
        self.latest_iteration.read().ok().and_then(|s| s.clone())
    }

    /// Every iteration's stats from now on.
    pub(crate) fn subscribe_iterations(&self) -> broadcast::Receiver<Arc<IterationStats>> {
        self.iteration_tx.subscribe()
    }

    /// Per-request stats of every iteration from now on.
    pub(crate) fn subscribe_requests(&self) -> broadcast::Receiver<Arc<RequestStatsPerIteration>> {
        self.request_stats_tx.subscribe()
    }
}

/// One drain's bounded wait for subscribers that are a full buffer behind.
struct Room {
    deadline: Instant,
}

impl Room {
    fn until(deadline: Instant) -> Self {
        Room { deadline }
    }

    /// Returns once the slowest subscriber has room for one more batch, or when the drain's grace
    /// is spent (then the send drops that subscriber's oldest batch, which it reports as lagged).
    fn wait<T>(&mut self, tx: &broadcast::Sender<T>) {
        while tx.len() >= SUBSCRIBER_BUFFER && Instant::now() < self.deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A subscriber that reads in bursts, with pauses far shorter than the grace, receives every
    /// one of several buffers' worth of batches sent in one drain.
    #[test]
    fn a_slow_subscriber_within_the_grace_loses_nothing() {
        let (tx, mut rx) = broadcast::channel::<u32>(SUBSCRIBER_BUFFER);
        let total = 3 * SUBSCRIBER_BUFFER as u32;
        let reader = std::thread::spawn(move || {
            let (mut received, mut lagged) = (0_u32, 0_u64);
            loop {
                match rx.try_recv() {
                    Ok(_) => received += 1,
                    Err(broadcast::error::TryRecvError::Lagged(n)) => lagged += n,
                    Err(broadcast::error::TryRecvError::Empty) => std::thread::sleep(Duration::from_millis(5)),
                    Err(broadcast::error::TryRecvError::Closed) => return (received, lagged),
                }
            }
        });
        let mut room = Room::until(Instant::now() + Duration::from_secs(30));
        for value in 0..total {
            room.wait(&tx);
            tx.send(value).unwrap();
        }
        drop(tx);
        assert_eq!(reader.join().unwrap(), (total, 0));
    }

    /// A subscriber that stopped reading holds a drain up only for the grace: the rest is sent
    /// (and the subscriber loses its oldest batches).
    #[test]
    fn a_stopped_subscriber_holds_the_drain_only_for_the_grace() {
        let (tx, _stopped) = broadcast::channel::<u32>(SUBSCRIBER_BUFFER);
        let start = Instant::now();
        let mut room = Room::until(start + Duration::from_millis(50));
        for value in 0..2 * SUBSCRIBER_BUFFER as u32 {
            room.wait(&tx);
            tx.send(value).unwrap();
        }
        assert!(start.elapsed() < Duration::from_secs(5), "the drain waited past its grace");
        assert_eq!(tx.len(), SUBSCRIBER_BUFFER);
    }
}
