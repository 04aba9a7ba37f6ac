//! `SubscribeKvEvents`: a stream of `KvEventBatch`es carrying the executor's load (what the
//! gateway routes on) as heartbeats, ending with one last batch when the server drains.

use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Status;

use super::service::{ResponseStream, ServiceState};
use crate::proto::smg::grpc::common as cpb;

/// Numbers the batches of one subscription.
#[derive(Debug, Default)]
struct BatchNumbers {
    /// `KvEventBatch::sequence_number`: monotonic per stream, one per batch.
    sequence: u64,
    /// `EngineLoad::sample`: monotonic per stream, one per load record.
    sample: u64,
}

impl BatchNumbers {
    /// The next batch: `events` (possibly none) with the current load attached. A batch without
    /// events is a heartbeat (`load_only`).
    fn batch(&mut self, state: &ServiceState, events: Vec<cpb::KvCacheEvent>) -> cpb::KvEventBatch {
        self.sequence += 1;
        self.sample += 1;
        let mut load = engine_load(state, self.sample);
        load.load_only = events.is_empty();
        cpb::KvEventBatch {
            sequence_number: self.sequence,
            timestamp: state.wall.seconds(Some(Instant::now())),
            events,
            dp_rank: None,
            snapshot: None,
            load: Some(load),
        }
    }
}

/// Starts a subscription: a load heartbeat every `state.heartbeat` until the client leaves or the
/// server drains; on draining one final batch is sent and the stream ends with status OK.
pub(crate) fn subscribe(
    state: Arc<ServiceState>,
    _request: cpb::SubscribeKvEventsRequest,
) -> ResponseStream<cpb::KvEventBatch> {
    let (tx, rx) = mpsc::channel::<Result<cpb::KvEventBatch, Status>>(16);
    let tasks = state.lifecycle.tasks.clone();
    tasks.spawn(async move {
        let mut numbers = BatchNumbers::default();
        let mut heartbeat = tokio::time::interval(state.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            // The executor's KV cache events join here as another branch, each delivered as a
            // batch of events with the load attached.
            tokio::select! {
                _ = heartbeat.tick() => {}
                _ = state.lifecycle.draining.cancelled() => break,
                _ = tx.closed() => return,
            }
            if tx.send(Ok(numbers.batch(&state, Vec::new()))).await.is_err() {
                return;
            }
        }
        // The last word: the load as the server stops. A subscriber that stopped reading must not
        // hold up shutdown, hence the bounded wait.
        let last = numbers.batch(&state, Vec::new());
        let _ = tokio::time::timeout(std::time::Duration::from_secs(1), tx.send(Ok(last))).await;
    });
    Box::pin(ReceiverStream::new(rx))
}

/// What the gateway routes on: running and waiting requests, KV use, throughput.
fn engine_load(state: &ServiceState, sample: u64) -> cpb::EngineLoad {
    let executor = state.executor.executor();
    let latest = executor.latest_iteration_stats();
    let kv = latest.as_ref().and_then(|s| s.kv_cache);
    let gen_throughput = latest
        .as_ref()
        .and_then(|s| {
            let batch = s.inflight_batching?;
            (s.iter_latency_ms > 0.0).then(|| f64::from(batch.num_gen_requests) * 1e3 / s.iter_latency_ms)
        })
        .unwrap_or(0.0);
    cpb::EngineLoad {
        running_requests: latest.as_ref().map_or(0, |s| s.num_active_requests.max(0) as u32),
        waiting_requests: latest.as_ref().map_or(0, |s| s.num_queued_requests.max(0) as u32),
        token_usage: kv.map_or(0.0, |k| k.utilization()),
        gen_throughput,
        max_running_requests: state.limits.max_return_sequences,
        sample,
        load_only: true,
        cache_hit_rate: kv.map(|k| f64::from(k.cache_hit_rate)),
        num_used_tokens: kv.map(|k| k.used_num_blocks * k.tokens_per_block),
        max_total_num_tokens: kv.map(|k| k.max_num_blocks * k.tokens_per_block),
        ..Default::default()
    }
}
