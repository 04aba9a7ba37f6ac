//! The server's KV event feed: executor KV-cache events cut into numbered, resendable batches.
//!
//! One feed per server numbers its batches 1, 2, 3 ... from when the server started, so that
//! every subscription sees the same numbers and a subscriber that reconnects can ask for the
//! batches it missed (`SubscribeKvEventsRequest::start_sequence_number`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use futures::{FutureExt, StreamExt};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::proto::smg::grpc::common as cpb;
use crate::proto::smg::grpc::common::kv_cache_event::Data;
use crate::{KvCacheEvent, KvCacheEventData, KvEventStream};

/// Batches kept for resuming subscribers. A subscriber that was away for longer than this many
/// batches gets OUT_OF_RANGE and rebuilds its view from a live subscription.
pub(crate) const HISTORY_BATCHES: usize = 1024;

/// Batches a live subscriber may fall behind by before its stream ends with DATA_LOSS.
const LIVE_BUFFER: usize = 1024;

/// Events put in one batch at most, so that one message stays small.
const MAX_EVENTS_PER_BATCH: usize = 512;

/// One batch of KV-cache events as the protocol carries them.
#[derive(Debug)]
pub(crate) struct FeedBatch {
    /// Consecutive from 1 over the server's life.
    pub(crate) sequence_number: u64,
    /// When the batch was cut.
    pub(crate) cut_at: Instant,
    /// The events, in the order the executor recorded them.
    pub(crate) events: Vec<cpb::KvCacheEvent>,
}

/// What a live subscriber receives.
#[derive(Debug, Clone)]
pub(crate) enum FeedItem {
    /// The next batch.
    Batch(Arc<FeedBatch>),
    /// Events were lost before they reached the feed (the executor's event buffer overflowed):
    /// what a subscriber knows about the cache is no longer complete.
    Lost {
        /// Events known to be missing.
        missed: u64,
    },
}

/// Where a new subscription starts.
#[derive(Debug)]
pub(crate) struct Subscription {
    /// Held batches from the requested start, oldest first.
    pub(crate) replay: Vec<Arc<FeedBatch>>,
    /// Everything after them; `None` when KV events are off or the executor has shut down.
    pub(crate) live: Option<broadcast::Receiver<FeedItem>>,
    /// The number of the batch before the first one this subscriber gets, which load-only
    /// batches repeat until an event batch follows.
    pub(crate) before_first: u64,
}

/// Why a subscription cannot start where it asked to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ResumeError {
    /// The requested batch was never sent: the number belongs to another server (or an
    /// earlier run of this one).
    #[error(
        "start_sequence_number {start} is ahead of this server's next KV event batch {next}: the number \
         is from another server or an earlier run of this one; subscribe with 0 and rebuild the view"
    )]
    Ahead {
        /// What was asked for.
        start: u64,
        /// The number the next batch will get.
        next: u64,
    },
    /// The requested batch is no longer held (or events were lost since).
    #[error(
        "start_sequence_number {start} is no longer held (the oldest KV event batch this server can \
         resend is {oldest}); subscribe with 0 and rebuild the view"
    )]
    Expired {
        /// What was asked for.
        start: u64,
        /// The oldest batch still held.
        oldest: u64,
    },
}

#[derive(Debug)]
struct Log {
    /// The number of the newest batch; 0 before the first.
    newest: u64,
    history: VecDeque<Arc<FeedBatch>>,
    /// Dropped when the executor's event stream ends.
    live: Option<broadcast::Sender<FeedItem>>,
}

/// The server's numbered KV event batches.
#[derive(Debug)]
pub(crate) struct KvFeed {
    log: Mutex<Log>,
    enabled: bool,
    /// Ends the task that cuts the batches, when the feed goes before the executor does.
    stop: CancellationToken,
}

impl Drop for KvFeed {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl KvFeed {
    /// A feed with no events: the executor was loaded without a KV event buffer.
    pub(crate) fn disabled() -> Arc<Self> {
        Arc::new(KvFeed {
            log: Mutex::new(Log { newest: 0, history: VecDeque::new(), live: None }),
            enabled: false,
            stop: CancellationToken::new(),
        })
    }

    /// A feed of `events`, cut into batches by a task on the current runtime. `block_size` is the
    /// engine's tokens per block, which every stored block reports.
    pub(crate) fn start(events: KvEventStream, block_size: i32) -> Arc<Self> {
        let (live, _) = broadcast::channel(LIVE_BUFFER);
        let feed = Arc::new(KvFeed {
            log: Mutex::new(Log { newest: 0, history: VecDeque::new(), live: Some(live) }),
            enabled: true,
            stop: CancellationToken::new(),
        });
        // Not a response-stream task: it ends when the executor shuts down, after the drain.
        let stop = feed.stop.clone();
        let weak = Arc::downgrade(&feed);
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = run(weak, events, block_size) => {}
            }
        });
        feed
    }

    /// Whether the executor records KV events.
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// A subscription from batch `start` on (0: from the next batch). The replay and the live
    /// receiver are taken under one lock, so no batch is missed or repeated between them.
    ///
    /// `start` names the first batch the subscriber wants. The gateway resubscribes with the
    /// last batch it applied; it then receives that batch once more, which it recognises by its
    /// number and skips, so neither reading loses a batch.
    pub(crate) fn subscribe(&self, start: u64) -> Result<Subscription, ResumeError> {
        let log = self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let live = log.live.as_ref().map(broadcast::Sender::subscribe);
        if start == 0 {
            return Ok(Subscription { replay: Vec::new(), live, before_first: log.newest });
        }
        let next = log.newest + 1;
        if start > next {
            return Err(ResumeError::Ahead { start, next });
        }
        let oldest = log.history.front().map_or(next, |b| b.sequence_number);
        if start < oldest {
            return Err(ResumeError::Expired { start, oldest });
        }
        let replay = log.history.iter().filter(|b| b.sequence_number >= start).cloned().collect();
        Ok(Subscription { replay, live, before_first: start - 1 })
    }

    fn publish(&self, events: Vec<cpb::KvCacheEvent>) {
        if events.is_empty() {
            return;
        }
        let mut log = self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        log.newest += 1;
        let batch = Arc::new(FeedBatch { sequence_number: log.newest, cut_at: Instant::now(), events });
        log.history.push_back(batch.clone());
        if log.history.len() > HISTORY_BATCHES {
            log.history.pop_front();
        }
        if let Some(live) = &log.live {
            // No subscriber is fine.
            let _ = live.send(FeedItem::Batch(batch));
        }
    }

    /// Events went missing: nobody can resume across the hole, and live subscribers are told.
    fn lose(&self, missed: u64) {
        tracing::warn!(missed, "KV-cache events were lost before the server read them; subscribers must resync");
        let mut log = self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        log.history.clear();
        if let Some(live) = &log.live {
            let _ = live.send(FeedItem::Lost { missed });
        }
    }

    fn close(&self) {
        let mut log = self.log.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        log.live.take();
    }
}

/// Cuts the executor's events into batches: whatever arrived together (one `getLatestEvents`
/// drain, or what piled up while the previous batch was cut) becomes one batch.
async fn run(feed: Weak<KvFeed>, mut events: KvEventStream, block_size: i32) {
    let mut last_id: Option<u64> = None;
    while let Some(first) = events.next().await {
        let Some(feed) = feed.upgrade() else { return };
        let mut pending = Vec::new();
        let mut item = Some(first);
        while let Some(next) = item.take() {
            match next {
                Ok(event) => {
                    // Ids are consecutive; a hole means the executor's buffer dropped events.
                    if let Some(previous) = last_id
                        && event.event_id > previous + 1
                    {
                        feed.publish(std::mem::take(&mut pending));
                        feed.lose(event.event_id - previous - 1);
                    }
                    last_id = Some(event.event_id);
                    pending.extend(to_proto(&event, block_size));
                }
                Err(lagged) => {
                    feed.publish(std::mem::take(&mut pending));
                    feed.lose(lagged.missed);
                    last_id = None;
                }
            }
            if pending.len() >= MAX_EVENTS_PER_BATCH {
                feed.publish(std::mem::take(&mut pending));
            }
            // Take what is ready now, without waiting.
            item = events.next().now_or_never().flatten();
        }
        feed.publish(pending);
    }
    if let Some(feed) = feed.upgrade() {
        feed.close();
    }
}

/// The protocol's form of an executor event; `None` for the events the protocol has no use for.
///
/// - Stored: each block with its hash, tokens, the engine's block size, LoRA task and cache level
///   (0: GPU, 1: host, which the gateway reads as the device and host tiers); the first block's
///   parent hash. Hashes are unsigned in the executor and `int64` on the wire: the bits are kept,
///   as the gateway does when it reads them back.
/// - Removed: the evicted hashes. The executor removes a block from its reuse tree at every
///   level at once, and the gateway reads a removal without a level as one from the device,
///   where our stored blocks are reported, so no level is set.
/// - Created (the cache's size, sent once when the executor starts, before any subscriber) and
///   Updated (a block moving between GPU and host memory, or its retention priority changing)
///   neither add nor remove a reusable block, which is all the gateway's prefix index tracks.
pub(crate) fn to_proto(event: &KvCacheEvent, block_size: i32) -> Option<cpb::KvCacheEvent> {
    let data = match &event.data {
        KvCacheEventData::Stored { parent_hash, blocks } => Data::Stored(cpb::KvBlocksStored {
            blocks: blocks
                .iter()
                .map(|b| cpb::KvBlock {
                    block_hash: b.block_hash as i64,
                    token_ids: b.token_ids.clone(),
                    block_size,
                    lora_id: b.lora_id.map(|id| id as i64),
                    cache_level: Some(b.cache_level),
                    extra_keys: Vec::new(),
                })
                .collect(),
            parent_block_hash: parent_hash.map(|h| h as i64),
            ..Default::default()
        }),
        KvCacheEventData::Removed { block_hashes } => Data::Removed(cpb::KvBlocksRemoved {
            block_hashes: block_hashes.iter().map(|&h| h as i64).collect(),
            ..Default::default()
        }),
        KvCacheEventData::Created { .. } | KvCacheEventData::Updated { .. } => return None,
    };
    Some(cpb::KvCacheEvent { event_id: event.event_id, data: Some(data) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoredBlock;

    fn event(event_id: u64, data: KvCacheEventData) -> KvCacheEvent {
        KvCacheEvent { event_id, data, window_size: 64, attention_dp_rank: None }
    }

    fn batch(feed: &KvFeed, id: u64) {
        feed.publish(vec![cpb::KvCacheEvent { event_id: id, data: None }]);
    }

    #[test]
    fn stored_blocks_keep_hash_bits_tokens_parent_and_level() {
        let stored = event(
            7,
            KvCacheEventData::Stored {
                parent_hash: Some(u64::MAX),
                blocks: vec![StoredBlock {
                    block_hash: 1 << 63,
                    token_ids: vec![1, 2, 3],
                    lora_id: Some(5),
                    cache_level: 1,
                    priority: 35,
                }],
            },
        );
        let proto = to_proto(&stored, 32).unwrap();
        assert_eq!(proto.event_id, 7);
        let Some(Data::Stored(s)) = proto.data else { panic!("{proto:?}") };
        assert_eq!(s.parent_block_hash, Some(-1));
        assert_eq!(s.blocks[0].block_hash as u64, 1 << 63);
        assert_eq!(s.blocks[0].token_ids, vec![1, 2, 3]);
        assert_eq!((s.blocks[0].block_size, s.blocks[0].lora_id, s.blocks[0].cache_level), (32, Some(5), Some(1)));
        assert_eq!(s.tier, None);
    }

    #[test]
    fn removed_keeps_hashes_and_created_and_updated_are_dropped() {
        let removed = to_proto(&event(3, KvCacheEventData::Removed { block_hashes: vec![9, u64::MAX] }), 32);
        let Some(Data::Removed(r)) = removed.unwrap().data else { panic!() };
        assert_eq!(r.block_hashes, vec![9, -1]);
        assert_eq!(r.cache_level, None);
        let created = event(0, KvCacheEventData::Created { num_blocks_per_cache_level: vec![4, 0] });
        assert!(to_proto(&created, 32).is_none());
        let updated = event(4, KvCacheEventData::Updated { block_hash: 9, cache_level: None, priority: None });
        assert!(to_proto(&updated, 32).is_none());
    }

    #[test]
    fn resuming_replays_from_the_requested_batch_and_refuses_what_is_not_held() {
        let (live, _) = broadcast::channel(4);
        let feed = KvFeed {
            log: Mutex::new(Log { newest: 0, history: VecDeque::new(), live: Some(live) }),
            enabled: true,
            stop: CancellationToken::new(),
        };
        for id in 0..3 {
            batch(&feed, id);
        }
        let numbers = |s: &Subscription| s.replay.iter().map(|b| b.sequence_number).collect::<Vec<_>>();
        let from_two = feed.subscribe(2).unwrap();
        assert_eq!((numbers(&from_two), from_two.before_first), (vec![2, 3], 1));
        let next = feed.subscribe(4).unwrap();
        assert_eq!((numbers(&next), next.before_first), (vec![], 3));
        let live = feed.subscribe(0).unwrap();
        assert_eq!((numbers(&live), live.before_first), (vec![], 3));
        assert_eq!(feed.subscribe(5).unwrap_err(), ResumeError::Ahead { start: 5, next: 4 });

        let mut receiver = feed.subscribe(0).unwrap().live.unwrap();
        feed.lose(2);
        assert!(matches!(receiver.try_recv(), Ok(FeedItem::Lost { missed: 2 })));
        assert_eq!(feed.subscribe(3).unwrap_err(), ResumeError::Expired { start: 3, oldest: 4 });
        batch(&feed, 9);
        assert_eq!(numbers(&feed.subscribe(4).unwrap()), vec![4]);
    }

    #[test]
    fn a_disabled_feed_has_nothing_to_resume() {
        let feed = KvFeed::disabled();
        assert!(!feed.enabled());
        let sub = feed.subscribe(1).unwrap();
        assert!(sub.replay.is_empty() && sub.live.is_none());
        assert_eq!(feed.subscribe(2).unwrap_err(), ResumeError::Ahead { start: 2, next: 1 });
    }
}
