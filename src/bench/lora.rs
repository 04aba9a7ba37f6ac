//! LoRA traffic for `trtllm bench --lora-adapters N`: synthetic adapters with uniform or Zipf
//! popularity, sent with their weights when the executor's host cache does not hold them (first
//! use, or after eviction) and by task id otherwise, and the summary's `lora` section.
//!
//! The traffic keeps a mirror of the executor's host adapter cache (same capacity, same LRU
//! order): requests are enqueued one at a time under its lock, in the order the executor admits
//! them, so the mirror knows exactly when a task id alone would fail with "not found in cache".
//! The summary classes requests as device-cache hits or misses by [`device_replay`].

pub mod device_replay;
mod section;

use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use crate::AsyncExecutor;
use crate::GenerationRequest;
use crate::bench::metrics::record::{Phase, RequestRecord};
use crate::bench::metrics::stats::{mean, median};
use crate::lora::{EngineLoraSettings, LoraCacheStats, LoraConfig, LoraError, LoraModule, LoraWeights};
use device_replay::DeviceCacheModel;
pub use section::{ByDeviceCache, CacheCounts, DeviceCacheCounters, LoraGroup, LoraSection};

/// TensorRT-LLM's host adapter cache when `PeftCacheConfig` gives no size (1 GiB).
pub const DEFAULT_HOST_CACHE_BYTES: u64 = 1 << 30;

/// What adapters to send and how often each is used.
#[derive(Debug, Clone, PartialEq)]
pub struct LoraTrafficSpec {
    /// Distinct adapters (task ids `1..=adapters`).
    pub adapters: usize,
    /// Rank of every adapter, on q and v of every layer (PEFT's default targets; every module the
    /// engine adapts when it does not adapt both).
    pub rank: u32,
    /// Zipf exponent of adapter popularity: adapter `k` is picked with weight `1 / k^zipf`
    /// (0: uniform).
    pub zipf: f64,
    /// Seed of the adapter picks.
    pub seed: u64,
    /// The executor's host adapter cache, bytes (the mirror's capacity).
    pub host_cache_bytes: u64,
    /// The cache configuration every executor of the run gets.
    pub peft_cache: Option<crate::lora::PeftCacheConfig>,
}

/// Synthetic adapters and the host-cache mirror; see the module docs.
#[derive(Debug)]
pub struct LoraTraffic {
    settings: EngineLoraSettings,
    spec: LoraTrafficSpec,
    cdf: Vec<f64>,
    adapter_bytes: u64,
    /// Task ids the executor's host cache holds, most recently used first.
    host: Mutex<VecDeque<u64>>,
    /// For requests the executor may admit out of enqueue order (scheduled arrivals on the
    /// virtual clock): task ids whose weights a finished request carried, so the executor has
    /// them. Until then every request of the task carries the weights again.
    confirmed: Mutex<HashSet<u64>>,
    executor: Mutex<Option<(AsyncExecutor, LoraCacheStats)>>,
    /// The device cache the replay assumes, when its size is known.
    device_cache: Option<DeviceCacheModel>,
}

impl LoraTraffic {
    /// Adapters for an engine with `settings`. Errors when the rank exceeds the engine's maximum
    /// or an adapter would not fit the host cache.
    pub fn new(settings: EngineLoraSettings, spec: LoraTrafficSpec) -> Result<Self, LoraError> {
        if spec.rank == 0 || spec.rank > settings.max_rank() {
            return Err(LoraError::InvalidSettings(format!(
                "--lora-rank {} is outside 1..={} (the engine's max_lora_rank)",
                spec.rank,
                settings.max_rank()
            )));
        }
        // Adapters target q and v, PEFT's default for Llama-style models, when the engine adapts
        // both; otherwise every module the engine adapts.
        let peft_default = [LoraModule::AttnQ, LoraModule::AttnV];
        let settings = if peft_default.iter().all(|m| settings.targets(*m)) {
            EngineLoraSettings::new(
                peft_default.to_vec(),
                settings.max_rank(),
                settings.dtype(),
                settings.num_layers(),
                *settings.model_dims(),
            )?
        } else {
            settings
        };
        let per_layer: u64 =
            settings.modules().filter_map(|m| settings.module_dims(m)).map(|d| d.row_values(spec.rank) as u64).sum();
        let adapter_bytes = per_layer * u64::from(settings.num_layers()) * settings.dtype().size() as u64;
        if adapter_bytes > spec.host_cache_bytes {
            return Err(LoraError::InvalidSettings(format!(
                "one adapter takes {adapter_bytes} bytes, more than the host cache's {}",
                spec.host_cache_bytes
            )));
        }
        let weights: Vec<f64> = (1..=spec.adapters.max(1)).map(|k| (k as f64).powf(-spec.zipf)).collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let cdf = weights.iter().map(|w| {
            acc += w / total;
            acc
        });
        let cdf = cdf.collect();
        Ok(Self {
            settings,
            spec,
            cdf,
            adapter_bytes,
            host: Mutex::new(VecDeque::new()),
            confirmed: Mutex::new(HashSet::new()),
            executor: Mutex::new(None),
            device_cache: None,
        })
    }

    /// Sets the device cache's capacity in bytes, so that the summary can class requests as
    /// device-cache hits or misses (see [`device_replay`]).
    pub fn with_device_cache_bytes(mut self, capacity_bytes: f64) -> Self {
        self.device_cache = Some(DeviceCacheModel { capacity_bytes, adapter_bytes: self.adapter_bytes as f64 });
        self
    }

    /// The spec this traffic follows.
    pub fn spec(&self) -> &LoraTrafficSpec {
        &self.spec
    }

    /// Bytes of one adapter's weights (unpadded).
    pub fn adapter_bytes(&self) -> u64 {
        self.adapter_bytes
    }

    /// The task id request `index` uses: a deterministic draw from the popularity distribution.
    pub fn task_for(&self, index: u64) -> u64 {
        // splitmix64 of (seed, index): the same request index picks the same adapter every run.
        let mut z = self.spec.seed.wrapping_add(index.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_add(0x6a09_e667);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let u = (z >> 11) as f64 / (1u64 << 53) as f64;
        let slot = self.cdf.partition_point(|&c| c <= u).min(self.cdf.len() - 1);
        slot as u64 + 1
    }

    /// Attaches request `index`'s adapter: weights when the host cache does not hold it, the task
    /// id alone when it does. Returns the task id and whether weights were sent. Callers enqueue
    /// in the order they call this (see [`LoraTraffic::enqueue`]).
    fn attach(
        &self,
        host: &mut VecDeque<u64>,
        index: u64,
        request: GenerationRequest,
    ) -> (GenerationRequest, u64, bool) {
        let task = self.task_for(index);
        if let Some(at) = host.iter().position(|&t| t == task) {
            host.remove(at);
            host.push_front(task);
            return (request.with_lora(LoraConfig::cached(task)), task, false);
        }
        let capacity = (self.spec.host_cache_bytes / self.adapter_bytes.max(1)).max(1) as usize;
        while host.len() >= capacity {
            host.pop_back();
        }
        host.push_front(task);
        let weights = self.weights(task);
        (request.with_lora(LoraConfig::with_weights(task, weights)), task, true)
    }

    fn weights(&self, task: u64) -> LoraWeights {
        // The spec's rank was checked against the engine in `new`, so this cannot fail.
        LoraWeights::synthetic(&self.settings, self.spec.rank, task).expect("rank checked in LoraTraffic::new")
    }

    /// Attaches request `index`'s adapter and enqueues it with `enqueue` while holding the mirror,
    /// so that the executor sees requests in the mirror's order. Returns the task id, whether
    /// weights were sent, and what `enqueue` returned.
    pub fn enqueue<T>(
        &self,
        index: u64,
        request: GenerationRequest,
        enqueue: impl FnOnce(GenerationRequest) -> T,
    ) -> (u64, bool, T) {
        let mut host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        let (request, task, with_weights) = self.attach(&mut host, index, request);
        (task, with_weights, enqueue(request))
    }

    /// As [`LoraTraffic::enqueue`], for requests the executor may admit in another order than
    /// they were enqueued (scheduled arrivals): the task id alone only once a request carrying
    /// the task's weights has finished ([`LoraTraffic::confirm`]) and the mirror still holds it.
    pub fn enqueue_unordered<T>(
        &self,
        index: u64,
        request: GenerationRequest,
        enqueue: impl FnOnce(GenerationRequest) -> T,
    ) -> (u64, bool, T) {
        let mut host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        let mut confirmed = self.confirmed.lock().unwrap_or_else(|e| e.into_inner());
        let task = self.task_for(index);
        if !confirmed.contains(&task) {
            // Out of the mirror, the next attach sends the weights (and places the task first).
            host.retain(|&t| t != task);
        }
        let (request, task, with_weights) = self.attach(&mut host, index, request);
        confirmed.retain(|t| host.contains(t));
        (task, with_weights, enqueue(request))
    }

    /// Records that a request carrying `task`'s weights has finished: see
    /// [`LoraTraffic::enqueue_unordered`].
    pub fn confirm(&self, task: u64) {
        let host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        if host.contains(&task) {
            self.confirmed.lock().unwrap_or_else(|e| e.into_inner()).insert(task);
        }
    }

    /// Attaches adapters to requests enqueued together in this order (one `enqueue_many`).
    pub fn attach_all(&self, requests: Vec<(u64, GenerationRequest)>) -> Vec<(GenerationRequest, u64, bool)> {
        let mut host = self.host.lock().unwrap_or_else(|e| e.into_inner());
        requests.into_iter().map(|(index, request)| self.attach(&mut host, index, request)).collect()
    }

    /// Starts over with a new executor (a virtual-clock point loads its own): its caches are
    /// empty, so the mirror is too.
    pub fn reset(&self, executor: AsyncExecutor) {
        self.host.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.confirmed.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.watch(executor);
    }

    /// Remembers the executor whose cache counters the summary reports (per point: the change
    /// since the previous point).
    pub fn watch(&self, executor: AsyncExecutor) {
        let start = executor.executor().lora_cache_stats().unwrap_or_default();
        *self.executor.lock().unwrap_or_else(|e| e.into_inner()) = Some((executor, start));
    }

    /// The cache counters since the previous call (or [`LoraTraffic::watch`]).
    fn cache_delta(&self) -> Option<LoraCacheStats> {
        let mut guard = self.executor.lock().unwrap_or_else(|e| e.into_inner());
        let (executor, last) = guard.as_mut()?;
        let now = executor.executor().lora_cache_stats()?;
        let delta = LoraCacheStats {
            hits: now.hits - last.hits,
            misses: now.misses - last.misses,
            evictions: now.evictions - last.evictions,
        };
        *last = now;
        Some(delta)
    }

    /// The summary's `lora` section for one point's records.
    pub fn section(&self, records: &[RequestRecord]) -> LoraSection {
        let measured = |r: &RequestRecord| r.phase == Phase::Measure && r.lora_task.is_some();
        let group = |keep: &dyn Fn(usize, &RequestRecord) -> bool| {
            let done: Vec<&RequestRecord> = records
                .iter()
                .enumerate()
                .filter(|(i, r)| measured(r) && r.error.is_none() && keep(*i, r))
                .map(|(_, r)| r)
                .collect();
            let ttft: Vec<f64> = done.iter().filter_map(|r| r.ttft_s()).map(|s| s * 1e3).collect();
            let tpot: Vec<f64> = done.iter().filter_map(|r| r.tpot_s()).map(|s| s * 1e3).collect();
            LoraGroup {
                requests: done.len(),
                mean_ttft_ms: mean(&ttft),
                median_ttft_ms: median(&ttft),
                mean_tpot_ms: mean(&tpot),
            }
        };
        let mut used: Vec<u64> = records.iter().filter(|r| measured(r)).filter_map(|r| r.lora_task).collect();
        used.sort_unstable();
        used.dedup();
        let failed = records.iter().filter(|r| measured(r) && r.error.is_some()).count();
        let cache = self.cache_delta();
        let by_device_cache = self.device_cache.map(|model| {
            let replay = device_replay::replay(model, records);
            ByDeviceCache {
                hit: group(&|i, _| replay.hit[i] == Some(true)),
                miss: group(&|i, _| replay.hit[i] == Some(false)),
                replayed: CacheCounts { hits: replay.hits, misses: replay.misses, evictions: replay.evictions },
                device_cache_adapters: model.slots(),
                method: "replayed from each request's firstScheduledTime and lastTokenTime (RequestPerfMetrics) \
                         with the device cache's size and rules: pinned while in use, else LRU"
                    .into(),
            }
        });
        LoraSection {
            adapters: self.spec.adapters,
            adapters_used: used.len(),
            rank: self.spec.rank,
            zipf: self.spec.zipf,
            adapter_bytes: self.adapter_bytes,
            failed_requests: failed,
            sent_with_weights: group(&|_, r| r.lora_with_weights),
            sent_by_task_id: group(&|_, r| !r.lora_with_weights),
            by_device_cache,
            device_cache: cache.map(|c| DeviceCacheCounters {
                counters: CacheCounts { hits: c.hits, misses: c.misses, evictions: c.evictions },
                source: "the simulated executor's own counters (TensorRT-LLM reports none)".into(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lora::{LoraDtype, ModelDims};

    fn traffic(adapters: usize, zipf: f64, host_adapters: u64) -> LoraTraffic {
        let dims = ModelDims { hidden_size: 16, intermediate_size: 32, num_heads: 2, num_kv_heads: 2, head_size: 8 };
        let settings =
            EngineLoraSettings::new(vec![LoraModule::AttnQ, LoraModule::AttnV], 8, LoraDtype::F16, 2, dims).unwrap();
        // q and v at rank 4: 4·(16+16) values each, 2 layers, 2 bytes.
        let bytes = 2 * 2 * 4 * 32 * 2;
        let spec = LoraTrafficSpec {
            adapters,
            rank: 4,
            zipf,
            seed: 3,
            host_cache_bytes: host_adapters * bytes,
            peft_cache: None,
        };
        let traffic = LoraTraffic::new(settings, spec).unwrap();
        assert_eq!(traffic.adapter_bytes(), bytes);
        traffic
    }

    #[test]
    fn zipf_popularity_favours_low_task_ids_and_zero_is_uniform() {
        let count = |t: &LoraTraffic, task: u64| (0..20_000).filter(|&i| t.task_for(i) == task).count();
        let zipf = traffic(8, 1.0, 8);
        // Weights 1/k: adapter 1 is picked 8 times as often as adapter 8.
        let ratio = count(&zipf, 1) as f64 / count(&zipf, 8) as f64;
        assert!((6.0..10.0).contains(&ratio), "{ratio}");
        assert!((0..20_000).all(|i| (1..=8).contains(&zipf.task_for(i))));
        let uniform = traffic(8, 0.0, 8);
        let ratio = count(&uniform, 1) as f64 / count(&uniform, 8) as f64;
        assert!((0.85..1.15).contains(&ratio), "{ratio}");
    }

    #[test]
    fn weights_go_exactly_when_the_host_cache_lacks_the_adapter() {
        let traffic = traffic(4, 0.0, 2);
        let mut host = VecDeque::new();
        let mut send = |task: u64| {
            // Find a request index that picks `task`.
            let index = (0..).find(|&i| traffic.task_for(i) == task).unwrap();
            let (request, picked, with_weights) = traffic.attach(&mut host, index, GenerationRequest::new(vec![1], 1));
            assert_eq!(picked, task);
            assert_eq!(request.lora().unwrap().weights.is_some(), with_weights);
            with_weights
        };
        // Room for two: 1 and 2 are cached, 3 evicts 1 (least recently used), so 1 needs weights again.
        let sent: Vec<bool> = [1, 2, 1, 3, 2, 1].into_iter().map(&mut send).collect();
        assert_eq!(sent, [true, true, false, true, true, true]);
    }
}
