//! KV-cache events: which blocks the executor's KV cache made reusable and which it evicted, for cache-aware routing.
//!
//! With `ExecutorConfig::kv_cache_event_buffer_max_size` > 0 the executor records a [`KvCacheEvent`] whenever its
//! KV cache is created, stores blocks for reuse (their hashes chain each block to its parent, and they carry the
//! real token ids) or removes them. `getLatestEvents` drains what the executor recorded, so one poller thread per
//! executor reads them and fans them out: to any number of [`KvEventStream`] subscribers
//! ([`Executor::subscribe_kv_events`](crate::Executor::subscribe_kv_events)) and to a bounded queue that
//! [`Executor::kv_cache_events`](crate::Executor::kv_cache_events) drains.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures::Stream;
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use super::shared::Shared;
use crate::error::{Error, Result};
use crate::types::kv_event::{KvCacheEvent, KvCacheEventData, KvEventsLagged};

/// How long one `getLatestEvents` call waits; it bounds how long stopping the poller takes.
const POLL_TIMEOUT_MS: u32 = 50;

/// Every KV-cache event from the moment of subscribing, as `Ok(event)`, or `Err(KvEventsLagged)` when this
/// subscriber fell behind by more than the executor's event buffer and missed some. Ends after the executor
/// shuts down, once the events recorded before that are delivered.
///
/// From [`Executor::subscribe_kv_events`](crate::Executor::subscribe_kv_events) or
/// [`AsyncExecutor::subscribe_kv_events`](crate::AsyncExecutor::subscribe_kv_events).
#[derive(Debug)]
#[must_use = "a KvEventStream only receives events while it is kept"]
pub struct KvEventStream {
    inner: BroadcastStream<Arc<KvCacheEvent>>,
}

impl KvEventStream {
    /// Blocks for the next item; `None` once the stream ended. Must not be called from an async runtime
    /// thread (use the `Stream` implementation there).
    pub fn blocking_next(&mut self) -> Option<Result<Arc<KvCacheEvent>, KvEventsLagged>> {
        futures::executor::block_on(futures::StreamExt::next(self))
    }
}

impl Stream for KvEventStream {
    type Item = Result<Arc<KvCacheEvent>, KvEventsLagged>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.inner).poll_next(cx).map(|item| {
            item.map(|event| event.map_err(|BroadcastStreamRecvError::Lagged(missed)| KvEventsLagged { missed }))
        })
    }
}

/// The events [`Executor::kv_cache_events`](crate::Executor::kv_cache_events) has not returned yet.
#[derive(Debug, Default)]
struct Backlog {
    events: VecDeque<KvCacheEvent>,
    closed: bool,
}

/// The fan-out of one executor's KV-cache events: the poller thread, its subscribers and the backlog.
#[derive(Debug)]
pub(crate) struct KvEventHub {
    capacity: usize,
    /// Dropped when the poller ends, which ends every subscriber's stream.
    sender: Mutex<Option<broadcast::Sender<Arc<KvCacheEvent>>>>,
    backlog: Mutex<Backlog>,
    arrived: Condvar,
    stop: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// The GPU KV cache's size in blocks, from the Created event the executor records at start.
    created_blocks: OnceLock<u64>,
}

impl KvEventHub {
    /// A hub buffering up to `capacity` events per subscriber and in the backlog (the executor's own
    /// buffer size, so that nothing here drops what the executor would have kept).
    pub(crate) fn new(capacity: u64) -> Self {
        let capacity = usize::try_from(capacity).unwrap_or(usize::MAX).clamp(1, 1 << 16);
        let (sender, _) = broadcast::channel(capacity);
        KvEventHub {
            capacity,
            sender: Mutex::new(Some(sender)),
            backlog: Mutex::new(Backlog::default()),
            arrived: Condvar::new(),
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
            created_blocks: OnceLock::new(),
        }
    }

    /// Starts the poller thread, reading `shared`'s executor.
    pub(crate) fn start(self: &Arc<Self>, shared: Arc<Shared>) -> Result<()> {
        let hub = self.clone();
        let handle = std::thread::Builder::new()
            .name("trtllm-kv-events".to_string())
            .spawn(move || poll_loop(&hub, &shared))
            .map_err(|source| Error::Thread { name: "trtllm-kv-events", source })?;
        if let Ok(mut slot) = self.thread.lock() {
            *slot = Some(handle);
        }
        Ok(())
    }

    /// Stops and joins the poller. Call after the executor shut down, so that its last events are read first.
    pub(crate) fn stop_and_join(&self) {
        self.stop.store(true, Ordering::Release);
        let handle = self.thread.lock().ok().and_then(|mut slot| slot.take());
        if let Some(handle) = handle {
            let _ = handle.join();
        }
        // Also when the poller never ran.
        self.close();
    }

    pub(crate) fn subscribe(&self) -> Result<KvEventStream> {
        let sender = self.sender.lock().map_err(|_| Error::Internal("KV event hub poisoned".into()))?;
        match sender.as_ref() {
            Some(sender) => Ok(KvEventStream { inner: BroadcastStream::new(sender.subscribe()) }),
            None => Err(Error::ShutDown),
        }
    }

    /// Returns the backlog, waiting up to `timeout` for an event when it is empty.
    pub(crate) fn take(&self, timeout: Duration) -> Vec<KvCacheEvent> {
        let deadline = Instant::now() + timeout;
        let Ok(mut backlog) = self.backlog.lock() else { return Vec::new() };
        while backlog.events.is_empty() && !backlog.closed {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match self.arrived.wait_timeout(backlog, deadline - now) {
                Ok((guard, _)) => backlog = guard,
                Err(_) => return Vec::new(),
            }
        }
        backlog.events.drain(..).collect()
    }

    /// The GPU KV cache's size in blocks, once the executor's Created event has arrived.
    pub(crate) fn created_blocks(&self) -> Option<u64> {
        self.created_blocks.get().copied()
    }

    fn publish(&self, events: Vec<KvCacheEvent>) {
        if events.is_empty() {
            return;
        }
        for event in &events {
            if let KvCacheEventData::Created { num_blocks_per_cache_level } = &event.data
                && let Some(&gpu) = num_blocks_per_cache_level.first()
            {
                let _ = self.created_blocks.set(u64::try_from(gpu).unwrap_or(0));
            }
        }
        if let Ok(sender) = self.sender.lock()
            && let Some(sender) = sender.as_ref()
        {
            for event in &events {
                // No subscriber is fine.
                let _ = sender.send(Arc::new(event.clone()));
            }
        }
        if let Ok(mut backlog) = self.backlog.lock() {
            backlog.events.extend(events);
            // Like the executor's own buffer: the oldest go first.
            let excess = backlog.events.len().saturating_sub(self.capacity);
            backlog.events.drain(..excess);
        }
        self.arrived.notify_all();
    }

    fn close(&self) {
        if let Ok(mut sender) = self.sender.lock() {
            sender.take();
        }
        if let Ok(mut backlog) = self.backlog.lock() {
            backlog.closed = true;
        }
        self.arrived.notify_all();
    }
}

/// The body of the poller thread: drains the executor until stopped, then once more.
fn poll_loop(hub: &KvEventHub, shared: &Shared) {
    loop {
        // Read the flag before draining: the drain after a stop request still returns the last events.
        let stopping = hub.stop.load(Ordering::Acquire);
        match shared.handle().kv_cache_events(POLL_TIMEOUT_MS) {
            Ok(items) => hub.publish(items.into_iter().filter_map(KvCacheEvent::from_ffi).collect()),
            Err(e) => {
                tracing::debug!(error = e.what(), "getLatestEvents failed");
                if !stopping {
                    std::thread::sleep(Duration::from_millis(u64::from(POLL_TIMEOUT_MS)));
                }
            }
        }
        if stopping {
            break;
        }
    }
    hub.close();
}
