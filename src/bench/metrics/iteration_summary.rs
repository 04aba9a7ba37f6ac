//! The summary's `kv` and `iter` sections: the executor's KV-cache and iteration figures over a
//! point, or why the target gave none.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::iterations::IterationLog;
use super::stats::{mean, percentile};
use crate::{IterationStats, KvCacheStats};

/// A section the target may not be able to give: written `{"available": true, <figures>}`, or
/// `{"available": false, "reason": ...}` (a gRPC server exposes no iteration statistics).
///
/// ```rust
/// use trtllm::bench::{Availability, IterSection};
///
/// let section: IterSection = Availability::Unavailable("not exposed over gRPC".into());
/// let json = serde_json::to_value(&section).unwrap();
/// assert_eq!(json, serde_json::json!({"available": false, "reason": "not exposed over gRPC"}));
/// let back: IterSection = serde_json::from_value(json).unwrap();
/// assert_eq!(back, section);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Availability<T> {
    /// The figures.
    Available(T),
    /// Why there are none.
    Unavailable(String),
}

impl<T> Availability<T> {
    /// The figures, when available.
    pub fn figures(&self) -> Option<&T> {
        match self {
            Availability::Available(t) => Some(t),
            Availability::Unavailable(_) => None,
        }
    }
}

#[derive(Serialize)]
struct AvailableRef<'a, T> {
    available: bool,
    #[serde(flatten)]
    figures: &'a T,
}

#[derive(Serialize, Deserialize)]
struct UnavailableFields {
    available: bool,
    #[serde(default)]
    reason: String,
}

impl<T: Serialize> Serialize for Availability<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Availability::Available(figures) => AvailableRef { available: true, figures }.serialize(serializer),
            Availability::Unavailable(reason) => {
                UnavailableFields { available: false, reason: reason.clone() }.serialize(serializer)
            }
        }
    }
}

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Availability<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        if value.get("available") == Some(&Value::Bool(false)) {
            let fields: UnavailableFields = serde_json::from_value(value).map_err(serde::de::Error::custom)?;
            return Ok(Availability::Unavailable(fields.reason));
        }
        serde_json::from_value(value).map(Availability::Available).map_err(serde::de::Error::custom)
    }
}

/// The summary's `kv`.
pub type KvSection = Availability<KvFigures>;

/// The summary's `iter`.
pub type IterSection = Availability<IterFigures>;

/// `kv`: KV-cache utilisation over the phase, and block reuse within it (the executor's
/// cumulative counters minus their value when the phase began).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KvFigures {
    /// Iterations that carried KV figures.
    pub iterations: usize,
    /// Highest used share of the cache's blocks.
    pub max_utilization: f64,
    /// Mean used share.
    pub mean_utilization: f64,
    /// 99th percentile of the used share.
    pub p99_utilization: f64,
    /// Blocks the cache holds (the last iteration's figure).
    pub max_num_blocks: Option<i32>,
    /// Tokens per block.
    pub tokens_per_block: Option<i32>,
    /// Blocks reused from earlier requests during the phase.
    pub reused_blocks: Option<i64>,
    /// Blocks looked up for reuse and not found.
    pub missed_blocks: Option<i64>,
    /// Blocks newly allocated.
    pub new_allocated_blocks: Option<i64>,
    /// reused / (reused + missed); `null` without lookups.
    pub cache_hit_rate: Option<f64>,
    /// Where the counters start: the measured phase, or the executor's start.
    pub counted_from: String,
}

/// `iter`: forward-pass count, latency and batch figures, and how many iterations were lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterFigures {
    /// Forward passes (entries with active requests).
    pub count: usize,
    /// Entries that reported an idle executor, counted apart.
    pub idle_entries: usize,
    /// Entries the collector lost (it fell behind the executor).
    pub lost_iterations: u64,
    /// Iteration numbers absent between the first and the last received.
    pub missing_iterations: u64,
    /// Mean iteration latency, ms.
    pub mean_latency_ms: Option<f64>,
    /// Median iteration latency, ms.
    pub p50_latency_ms: Option<f64>,
    /// 99th percentile iteration latency, ms.
    pub p99_latency_ms: Option<f64>,
    /// Mean requests in the batch.
    pub mean_active_requests: Option<f64>,
    /// Most requests in the batch.
    pub max_active_requests: f64,
    /// Mean requests waiting.
    pub mean_queued_requests: Option<f64>,
    /// Most requests waiting.
    pub max_queued_requests: f64,
    /// Most requests paused.
    pub max_paused_requests: f64,
    /// Mean context tokens per iteration.
    pub mean_context_tokens: Option<f64>,
    /// Most context tokens in one iteration.
    pub max_context_tokens: f64,
}

impl IterationLog {
    /// The `kv` section: utilisation over the phase, and block reuse within it.
    pub fn kv_summary(&self) -> KvSection {
        let kv: Vec<KvCacheStats> = self.iterations.iter().filter_map(|s| s.kv_cache).collect();
        let mut utilization: Vec<f64> = kv.iter().map(KvCacheStats::utilization).collect();
        utilization.sort_by(f64::total_cmp);
        let last = kv.last();
        let base = self.baseline_kv;
        let delta = |pick: fn(&KvCacheStats) -> i32| {
            last.map(|l| i64::from(pick(l)) - base.as_ref().map_or(0, |b| i64::from(pick(b))))
        };
        let reused = delta(|k| k.reused_blocks);
        let missed = delta(|k| k.missed_blocks);
        let cache_hit_rate = match (reused, missed) {
            (Some(r), Some(m)) if r + m > 0 => Some(r as f64 / (r + m) as f64),
            _ => None,
        };
        Availability::Available(KvFigures {
            iterations: kv.len(),
            max_utilization: utilization.last().copied().unwrap_or(0.0),
            mean_utilization: mean(&utilization).unwrap_or(0.0),
            p99_utilization: percentile(&utilization, 99.0).unwrap_or(0.0),
            max_num_blocks: last.map(|k| k.max_num_blocks),
            tokens_per_block: last.map(|k| k.tokens_per_block),
            reused_blocks: reused,
            missed_blocks: missed,
            new_allocated_blocks: delta(|k| k.alloc_new_blocks),
            cache_hit_rate,
            counted_from: if base.is_some() { "start of the measured phase" } else { "executor start" }.into(),
        })
    }

    /// The `iter` section. The entries that report an idle executor (nothing active, no
    /// forward pass, latency 0) are counted apart, so they do not pull the figures down.
    pub fn iter_summary(&self) -> IterSection {
        let (iterations, idle): (Vec<&IterationStats>, Vec<&IterationStats>) =
            self.iterations.iter().partition(|s| s.num_active_requests > 0);
        let latency: Vec<f64> = iterations.iter().map(|s| s.iter_latency_ms).collect();
        let active: Vec<f64> = iterations.iter().map(|s| f64::from(s.num_active_requests)).collect();
        let queued: Vec<f64> = iterations.iter().map(|s| f64::from(s.num_queued_requests)).collect();
        let paused: Vec<f64> =
            iterations.iter().filter_map(|s| s.inflight_batching).map(|b| f64::from(b.num_paused_requests)).collect();
        let ctx: Vec<f64> =
            iterations.iter().filter_map(|s| s.inflight_batching).map(|b| f64::from(b.num_ctx_tokens)).collect();
        let max = |v: &[f64]| v.iter().copied().fold(0.0, f64::max);
        Availability::Available(IterFigures {
            count: iterations.len(),
            idle_entries: idle.len(),
            lost_iterations: self.lagged,
            missing_iterations: self.missing_iterations(),
            mean_latency_ms: mean(&latency),
            p50_latency_ms: percentile(&latency, 50.0),
            p99_latency_ms: percentile(&latency, 99.0),
            mean_active_requests: mean(&active),
            max_active_requests: max(&active),
            mean_queued_requests: mean(&queued),
            max_queued_requests: max(&queued),
            max_paused_requests: max(&paused),
            mean_context_tokens: mean(&ctx),
            max_context_tokens: max(&ctx),
        })
    }
}
