//! The summary's `lora` section: the adapters, latency by how each request's adapter was sent
//! and by whether the device cache held it, and the executor's cache counters.

use serde::{Deserialize, Serialize};

/// The summary's `lora` (`--lora-adapters N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoraSection {
    /// Distinct adapters of the traffic.
    pub adapters: usize,
    /// Those the measured requests used.
    pub adapters_used: usize,
    /// Every adapter's rank.
    pub rank: u32,
    /// Zipf exponent of adapter popularity (0: uniform).
    pub zipf: f64,
    /// One adapter's weights, bytes.
    pub adapter_bytes: u64,
    /// Measured requests with an adapter that failed.
    pub failed_requests: usize,
    /// Requests that carried their adapter's weights (the host cache lacked it).
    pub sent_with_weights: LoraGroup,
    /// Requests that named their adapter by task id alone.
    pub sent_by_task_id: LoraGroup,
    /// Requests by whether the device cache held their adapter (`null` when its size is not
    /// known).
    pub by_device_cache: Option<ByDeviceCache>,
    /// The executor's device-cache counters over the point (`null` when it reports none).
    pub device_cache: Option<DeviceCacheCounters>,
}

/// Latency of one group of successful measured LoRA requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LoraGroup {
    /// Requests in the group.
    pub requests: usize,
    /// Mean TTFT, ms (`null` without requests).
    pub mean_ttft_ms: Option<f64>,
    /// Median TTFT, ms.
    pub median_ttft_ms: Option<f64>,
    /// Mean TPOT, ms.
    pub mean_tpot_ms: Option<f64>,
}

/// `lora.by_device_cache`: requests classed as device-cache hits or misses by replaying the
/// cache's rules over their executor stamps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ByDeviceCache {
    /// Requests whose adapter was on the device.
    pub hit: LoraGroup,
    /// Requests whose adapter was copied to the device first.
    pub miss: LoraGroup,
    /// The replay's own counts.
    pub replayed: CacheCounts,
    /// Adapters the device cache holds.
    pub device_cache_adapters: usize,
    /// How the requests were classed.
    pub method: String,
}

/// `lora.device_cache`: the executor's counters and where they come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceCacheCounters {
    /// Hits, misses and evictions over the point.
    #[serde(flatten)]
    pub counters: CacheCounts,
    /// Who counted them.
    pub source: String,
}

/// Device-cache hits, misses and evictions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheCounts {
    /// Requests whose adapter was already on the device.
    pub hits: u64,
    /// Requests whose adapter was copied host → device first.
    pub misses: u64,
    /// Adapters evicted to make room.
    pub evictions: u64,
}
