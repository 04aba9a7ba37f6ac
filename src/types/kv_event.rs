//! KV-cache events as plain data: what the executor's KV cache created, stored, removed or updated.

use serde::Serialize;

use crate::ffi::sys;

/// One event of the executor's KV cache (`KVCacheEvent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
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
#[non_exhaustive]
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

/// A [`KvEventStream`](crate::KvEventStream) subscriber fell so far behind that the oldest events it
/// had not read were dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("KV-cache event subscriber lagged: {missed} events were dropped")]
pub struct KvEventsLagged {
    /// Events this subscriber will never see.
    pub missed: u64,
}

impl KvCacheEvent {
    /// The event, or `None` for a kind of event the shim does not know (logged; the gap in
    /// event ids shows it).
    pub(crate) fn from_ffi(item: sys::KvEventItem) -> Option<Self> {
        let opt_i32 = |o: sys::OptI32| o.set.then_some(o.value);
        let opt_u64 = |o: sys::OptU64| o.set.then_some(o.value);
        let data = match item.kind {
            sys::KvEventKind::Created => {
                KvCacheEventData::Created { num_blocks_per_cache_level: item.num_blocks_per_cache_level }
            }
            sys::KvEventKind::Stored => KvCacheEventData::Stored {
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
            sys::KvEventKind::Removed => KvCacheEventData::Removed { block_hashes: item.block_hashes },
            sys::KvEventKind::Updated => KvCacheEventData::Updated {
                block_hash: item.updated_block_hash,
                cache_level: item
                    .cache_level_changed
                    .then_some(ValueChange { old: item.old_cache_level, new: item.new_cache_level }),
                priority: item
                    .priority_changed
                    .then_some(ValueChange { old: item.old_priority, new: item.new_priority }),
            },
            // `Unknown`, or a value outside the shared enum (cxx lets C++ pass any).
            _ => {
                tracing::warn!(event_id = item.event_id, "KV-cache event of a kind this build does not know dropped");
                return None;
            }
        };
        Some(KvCacheEvent {
            event_id: item.event_id,
            data,
            window_size: item.window_size,
            attention_dp_rank: opt_i32(item.attention_dp_rank),
        })
    }
}
