//! `SubscribeKvEvents`: the executor's KV-cache events and load as a stream of `KvEventBatch`es.
//!
//! Each batch carries the engine's load; load-only heartbeats go out while no events come.
//!
//! What the Shepherd Model Gateway relies on, and so what this stream does:
//! - Event batches are numbered consecutively; the gateway takes a jump as lost batches and
//!   resubscribes asking for them, so the numbers are the server's, shared by every
//!   subscription, and batches are kept for resending ([`super::kv_feed`]).
//! - A load-only batch (`EngineLoad::load_only`, no events) repeats the number of the last event
//!   batch: the gateway reads its load and never counts it as a batch.
//! - OUT_OF_RANGE when the requested start cannot be served, DATA_LOSS when events were lost
//!   mid-stream: the gateway then drops what it learned from this worker and subscribes afresh.
//! - UNIMPLEMENTED would make the gateway stop subscribing for good, and with it stop reading
//!   this worker's load, so an executor without KV events still streams load-only batches.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Response, Status};

use super::engine_load::LoadTracker;
use super::kv_feed::{FeedBatch, FeedItem};
use super::replies::ResponseStream;
use super::state::ServiceState;
use crate::proto::smg::grpc::common as cpb;

/// Response header saying whether the stream carries KV events (`on`) or only load (`off`).
pub const KV_EVENTS_HEADER: &str = "trtllm-kv-events";

/// How long the last batch may wait for a subscriber that stopped reading, on shutdown.
const LAST_BATCH_TIMEOUT: Duration = Duration::from_secs(1);

/// Numbers and sends the batches of one subscription.
struct Outbox {
    tx: mpsc::Sender<Result<cpb::KvEventBatch, Status>>,
    state: Arc<ServiceState>,
    load: Arc<LoadTracker>,
    /// The last event batch's number, which load-only batches repeat.
    sequence: u64,
    /// `EngineLoad::sample`: one per load record sent on this stream.
    sample: u64,
}

impl Outbox {
    fn message(&mut self, sequence_number: u64, cut_at: Instant, events: Vec<cpb::KvCacheEvent>) -> cpb::KvEventBatch {
        self.sample += 1;
        let mut load = self.load.load(self.state.executor.executor(), self.sample);
        load.load_only = events.is_empty();
        load.disaggregation = self.state.disagg.figures(self.state.executor.executor());
        cpb::KvEventBatch {
            sequence_number,
            timestamp: self.state.wall.seconds(Some(cut_at)),
            events,
            dp_rank: None,
            snapshot: None,
            load: Some(load),
        }
    }

    /// Sends an event batch with the load now; false once the client is gone.
    async fn batch(&mut self, batch: &FeedBatch) -> bool {
        self.sequence = batch.sequence_number;
        let message = self.message(batch.sequence_number, batch.cut_at, batch.events.clone());
        self.tx.send(Ok(message)).await.is_ok()
    }

    /// Sends a load-only batch; false once the client is gone.
    async fn heartbeat(&mut self) -> bool {
        let message = self.message(self.sequence, Instant::now(), Vec::new());
        self.tx.send(Ok(message)).await.is_ok()
    }
}

/// The next item of a live feed; never resolves without one.
async fn next_item(live: &mut Option<broadcast::Receiver<FeedItem>>) -> Result<FeedItem, broadcast::error::RecvError> {
    match live {
        Some(receiver) => receiver.recv().await,
        None => std::future::pending().await,
    }
}

/// Starts a subscription.
///
/// `start_sequence_number` 0 streams the batches cut from now on; N resends the held batches
/// from N on first, then continues live; a number this server never sent or no longer holds is
/// refused with OUT_OF_RANGE. `load_records_before_first_batch` sends a load-only batch at once,
/// before any event batch; otherwise the first load record rides on the first batch, or on a
/// heartbeat one period in. While no event batch is sent for a heartbeat period a load-only
/// batch goes out. When the server drains, one last load-only batch is sent and the stream
/// ends with status OK.
pub(crate) fn subscribe(
    state: Arc<ServiceState>,
    request: cpb::SubscribeKvEventsRequest,
) -> Result<Response<ResponseStream<cpb::KvEventBatch>>, Status> {
    let (feed, load) = state.kv.get(&state.executor);
    let subscription =
        feed.subscribe(request.start_sequence_number).map_err(|e| Status::out_of_range(e.to_string()))?;
    let (tx, rx) = mpsc::channel::<Result<cpb::KvEventBatch, Status>>(16);
    let tasks = state.lifecycle.tasks.clone();
    let heartbeat = state.heartbeat;
    let draining = state.lifecycle.draining.clone();
    let mut out = Outbox { tx, state, load, sequence: subscription.before_first, sample: 0 };
    tasks.spawn(async move {
        if request.load_records_before_first_batch && !out.heartbeat().await {
            return;
        }
        for batch in &subscription.replay {
            if !out.batch(batch).await {
                return;
            }
        }
        let mut live = subscription.live;
        let mut quiet_since = tokio::time::Instant::now();
        loop {
            tokio::select! {
                biased;
                _ = draining.cancelled() => break,
                _ = out.tx.closed() => return,
                item = next_item(&mut live) => match item {
                    Ok(FeedItem::Batch(batch)) => {
                        if !out.batch(&batch).await {
                            return;
                        }
                        quiet_since = tokio::time::Instant::now();
                    }
                    Ok(FeedItem::Lost { missed }) => {
                        let _ = out.tx.send(Err(lost(missed, "the executor's KV event buffer overflowed"))).await;
                        return;
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        let _ = out.tx.send(Err(lost(missed, "this subscriber fell behind"))).await;
                        return;
                    }
                    // The executor shut down; load heartbeats go on until the server drains.
                    Err(broadcast::error::RecvError::Closed) => live = None,
                },
                _ = tokio::time::sleep_until(quiet_since + heartbeat) => {
                    if !out.heartbeat().await {
                        return;
                    }
                    quiet_since = tokio::time::Instant::now();
                }
            }
        }
        // The last word: the load as the server stops. A subscriber that stopped reading must not
        // hold up shutdown, hence the bounded wait.
        let _ = tokio::time::timeout(LAST_BATCH_TIMEOUT, out.heartbeat()).await;
    });
    let mut response: Response<ResponseStream<cpb::KvEventBatch>> = Response::new(Box::pin(ReceiverStream::new(rx)));
    let flag = if feed.enabled() { "on" } else { "off" };
    response.metadata_mut().insert(KV_EVENTS_HEADER, tonic::metadata::MetadataValue::from_static(flag));
    Ok(response)
}

/// DATA_LOSS: the subscriber's view of the cache is incomplete from here on.
fn lost(missed: u64, why: &str) -> Status {
    Status::data_loss(format!(
        "{missed} KV-cache events or batches were lost ({why}); drop what this stream reported and \
         subscribe again with start_sequence_number 0"
    ))
}
