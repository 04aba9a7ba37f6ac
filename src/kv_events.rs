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
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures::Stream;
use serde::Serialize;
use tokio::sync::broadcast;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;

use crate::error::{Error, Result};
use crate::executor::Inner;
use crate::ffi::sys;

/// How long one `getLatestEvents` call waits; it bounds how long stopping the poller takes.
const POLL_TIMEOUT_MS: u32 = 50;

/// One event of the executor's KV cache (`KVCacheEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KvCacheEvent {
    /// Consecutive per executor from 0 (the `Created` event); a gap means the executor's bounded event
    /// buffer dropped events before they were read.
    pub event_id: u64,
    /// What happened.
    pub data: KvCacheEventData,
    /// The attention window of the cache the event is about.
    pub window_size: i32,
    /// The attention data-parallel rank, when the executor runs attention DP.
    pub attention_dp_rank: Option<i32>,
}

/// What a [`KvCacheEvent`] reports (`KVCacheEventData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum KvCacheEventData {
    /// The cache was created with these many blocks per cache level (0: GPU, 1: host).
    Created {
        /// Blocks per cache level.
        num_blocks_per_cache_level: Vec<i32>,
    },
    /// Blocks became reusable. Each block's parent is the block before it; the first block's is
    /// `parent_hash` (`None` when it is the first block of a sequence).
    Stored {
        /// Hash of the first block's parent.
        parent_hash: Option<u64>,
        /// The blocks, in sequence order.
        blocks: Vec<StoredBlock>,
    },
    /// Blocks were evicted and are no longer reusable.
    Removed {
        /// Their hashes (a subtree is removed deepest block first).
        block_hashes: Vec<u64>,
    },
    /// A stored block moved between cache levels or changed priority.
    Updated {
        /// The block.
        block_hash: u64,
        /// Its cache level change, if it changed.
        cache_level: Option<ValueChange>,
        /// Its priority change, if it changed.
        priority: Option<ValueChange>,
    },
}

/// A block that became reusable (`KVCacheStoredBlockData`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredBlock {
    /// The block's hash, chained from its parent's hash and its own tokens.
    pub block_hash: u64,
    /// The token ids the block holds (a full block holds `tokens_per_block`).
    pub token_ids: Vec<u32>,
    /// The LoRA task of the request that computed it.
    pub lora_id: Option<u64>,
    /// 0: GPU memory, 1: host memory.
    pub cache_level: i32,
    /// Retention priority (TensorRT-LLM's default is 35).
    pub priority: i32,
}

/// An old and a new value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ValueChange {
    /// Before.
    pub old: i32,
    /// After.
    pub new: i32,
}

/// A [`KvEventStream`] subscriber fell so far behind that the oldest events it had not read were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("KV-cache event subscriber lagged: {missed} events were dropped")]
pub struct KvEventsLagged {
    /// Events this subscriber will never see.
    pub missed: u64,
}

impl KvCacheEvent {
    pub(crate) fn from_ffi(item: sys::KvEventItem) -> Self {
        let opt_i32 = |o: sys::OptI32| o.set.then_some(o.value);
        let opt_u64 = |o: sys::OptU64| o.set.then_some(o.value);
        let data = match item.kind {
            0 => KvCacheEventData::Created { num_blocks_per_cache_level: item.num_blocks_per_cache_level },
            1 => KvCacheEventData::Stored {
                parent_hash: opt_u64(item.parent_hash),
                blocks: item
                    .blocks
                    .into_iter()
                    .map(|b| StoredBlock {
                        block_hash: b.block_hash,
                        token_ids: b.token_ids.into_iter().map(|t| t.max(0) as u32).collect(),
                        lora_id: opt_u64(b.lora_id),
                        cache_level: b.cache_level,
                        priority: b.priority,
                    })
                    .collect(),
            },
            2 => KvCacheEventData::Removed { block_hashes: item.block_hashes },
            _ => KvCacheEventData::Updated {
                block_hash: item.updated_block_hash,
                cache_level: item
                    .cache_level_changed
                    .then_some(ValueChange { old: item.old_cache_level, new: item.new_cache_level }),
                priority: item
                    .priority_changed
                    .then_some(ValueChange { old: item.old_priority, new: item.new_priority }),
            },
        };
        KvCacheEvent {
            event_id: item.event_id,
            data,
            window_size: item.window_size,
            attention_dp_rank: opt_i32(item.attention_dp_rank),
        }
    }
}

/// Every KV-cache event from the moment of subscribing, as `Ok(event)`, or `Err(KvEventsLagged)` when this
/// subscriber fell behind by more than the executor's event buffer and missed some. Ends after the executor
/// shuts down, once the events recorded before that are delivered.
///
/// From [`Executor::subscribe_kv_events`](crate::Executor::subscribe_kv_events) or
/// [`AsyncExecutor::subscribe_kv_events`](crate::AsyncExecutor::subscribe_kv_events).
#[derive(Debug)]
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
        }
    }

    /// Starts the poller thread.
    pub(crate) fn start(inner: &Arc<Inner>) -> Result<()> {
        let Some(hub) = inner.kv_events.as_ref() else { return Ok(()) };
        let for_thread = inner.clone();
        let handle = std::thread::Builder::new()
            .name("trtllm-kv-events".to_string())
            .spawn(move || poll_loop(&for_thread))
            .map_err(|e| Error::Executor(format!("cannot start the trtllm-kv-events thread: {e}")))?;
        if let Ok(mut slot) = hub.thread.lock() {
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
        let sender = self.sender.lock().map_err(|_| Error::Executor("KV event hub poisoned".into()))?;
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

    fn publish(&self, events: Vec<KvCacheEvent>) {
        if events.is_empty() {
            return;
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
fn poll_loop(inner: &Arc<Inner>) {
    let Some(hub) = inner.kv_events.as_ref() else { return };
    loop {
        // Read the flag before draining: the drain after a stop request still returns the last events.
        let stopping = hub.stop.load(Ordering::Acquire);
        match inner.handle.kv_cache_events(POLL_TIMEOUT_MS) {
            Ok(items) => hub.publish(items.into_iter().map(KvCacheEvent::from_ffi).collect()),
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
