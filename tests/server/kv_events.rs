//! `SubscribeKvEvents` over gRPC: the executor's stored and removed blocks, batch numbers and
//! resuming, load records and heartbeats, the end of the stream on drain, and an executor
//! without KV events.

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use common::server::{Client, TestServer, TestServerBuilder, chunks_and_completes, collect, drain, request};
use futures::StreamExt;
use tonic::Code;
use trtllm::proto::smg::grpc::common as cpb;
use trtllm::proto::smg::grpc::common::kv_cache_event::Data;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
use trtllm::server::{KV_EVENTS_HEADER, ServeOptions};

/// Long enough that a quiet stream is visibly quiet between heartbeats, short enough for tests.
const HEARTBEAT: Duration = Duration::from_millis(40);
/// How long any expected batch may take to arrive on a loaded machine.
const PATIENCE: Duration = Duration::from_secs(20);

fn builder() -> TestServerBuilder {
    TestServer::builder().iteration_ms(1.0).options(ServeOptions { kv_heartbeat: HEARTBEAT, ..Default::default() })
}

fn with_events(builder: TestServerBuilder) -> TestServerBuilder {
    builder.config(|c| c.kv_cache_event_buffer_max_size(1024))
}

/// The raw call: the response (with its headers) or the status it was refused with.
async fn subscribe_call(
    client: &mut Client,
    start_sequence_number: u64,
    load_first: bool,
) -> Result<tonic::Response<tonic::Streaming<cpb::KvEventBatch>>, tonic::Status> {
    client
        .subscribe_kv_events(cpb::SubscribeKvEventsRequest {
            start_sequence_number,
            load_records_before_first_batch: load_first,
        })
        .await
}

async fn subscribe(
    client: &mut Client,
    start_sequence_number: u64,
    load_first: bool,
) -> tonic::Streaming<cpb::KvEventBatch> {
    subscribe_call(client, start_sequence_number, load_first).await.unwrap().into_inner()
}

async fn next(stream: &mut tonic::Streaming<cpb::KvEventBatch>) -> cpb::KvEventBatch {
    tokio::time::timeout(PATIENCE, stream.next())
        .await
        .expect("a batch in time")
        .expect("the stream goes on")
        .expect("a batch, not an error")
}

/// Batches until `done` says the events seen so far are enough; every batch is returned.
async fn until(
    stream: &mut tonic::Streaming<cpb::KvEventBatch>,
    mut done: impl FnMut(&[cpb::KvEventBatch]) -> bool,
) -> Vec<cpb::KvEventBatch> {
    let mut batches = Vec::new();
    while !done(&batches) {
        batches.push(next(stream).await);
    }
    batches
}

fn stored_blocks(batches: &[cpb::KvEventBatch]) -> Vec<cpb::KvBlock> {
    events(batches)
        .filter_map(|e| match e.data {
            Some(Data::Stored(s)) => Some(s.blocks),
            _ => None,
        })
        .flatten()
        .collect()
}

fn removed_hashes(batches: &[cpb::KvEventBatch]) -> HashSet<i64> {
    events(batches)
        .filter_map(|e| match e.data {
            Some(Data::Removed(r)) => Some(r.block_hashes),
            _ => None,
        })
        .flatten()
        .collect()
}

fn events(batches: &[cpb::KvEventBatch]) -> impl Iterator<Item = cpb::KvCacheEvent> + '_ {
    batches.iter().flat_map(|b| b.events.iter().cloned())
}

fn event_batches(batches: &[cpb::KvEventBatch]) -> Vec<&cpb::KvEventBatch> {
    batches.iter().filter(|b| !b.events.is_empty()).collect()
}

fn prompt(len: u32, first: u32) -> Vec<u32> {
    (first..first + len).collect()
}

async fn generate(client: &mut Client, id: &str, prompt: Vec<u32>) -> u32 {
    let messages = collect(client, request(id, prompt, 1, false)).await.unwrap();
    let (_, completes) = chunks_and_completes(&messages);
    completes[0].cached_tokens
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_request_streams_its_stored_blocks_and_a_repeat_is_served_from_them() {
    let server = with_events(builder()).start().await;
    let block = server.executor.executor().engine().tokens_per_block() as u32;
    let mut client = server.client().await;
    let mut stream = subscribe(&mut client, 0, false).await;

    // Two full blocks and one more token: the last token is always computed, never cached.
    let tokens = prompt(2 * block + 1, 7);
    assert_eq!(generate(&mut client, "first", tokens.clone()).await, 0);
    let batches = until(&mut stream, |b| stored_blocks(b).len() >= 2).await;
    let blocks = stored_blocks(&batches);
    // The full blocks; the executor may also store the partial block holding the rest.
    for partial in &blocks[2..] {
        assert!(partial.token_ids.len() < block as usize, "{batches:?}");
    }
    assert_eq!(blocks[0].token_ids, tokens[..block as usize]);
    assert_eq!(blocks[1].token_ids, tokens[block as usize..2 * block as usize]);
    for b in &blocks[..2] {
        assert_eq!(b.block_size, block as i32);
        assert_eq!(b.cache_level, Some(0), "stored on the GPU");
        assert_eq!(b.lora_id, None);
    }
    assert_ne!(blocks[0].block_hash, blocks[1].block_hash);
    let first_store = events(&batches)
        .find_map(|e| match e.data {
            Some(Data::Stored(s)) => Some(s),
            _ => None,
        })
        .unwrap();
    assert_eq!(first_store.parent_block_hash, None, "the first block starts a sequence");
    // Event batches carry the load too, and are not load-only.
    for b in event_batches(&batches) {
        assert!(!b.load.as_ref().unwrap().load_only, "{b:?}");
        assert!(b.timestamp > 1.6e9, "seconds since the Unix epoch");
    }

    // The same prompt again is served from those blocks.
    assert_eq!(generate(&mut client, "again", tokens).await, 2 * block, "the repeat reuses both blocks");
    drop(stream);
    // The load follows the executor's stats, which arrive shortly after the iteration ran.
    let mut fresh = subscribe(&mut client, 0, true).await;
    let batches =
        until(&mut fresh, |b| b.last().and_then(|b| b.load.as_ref()?.cache_hit_rate).is_some_and(|hit| hit > 0.0))
            .await;
    let hit = batches.last().unwrap().load.as_ref().unwrap().cache_hit_rate;
    // The first request's lookups missed, the repeat's hit.
    assert!(hit.is_some_and(|hit| hit < 1.0), "{hit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicted_blocks_stream_as_removed_events() {
    // A cache of four blocks: the second prompt needs them all and evicts the first's blocks.
    let engine_block = trtllm::builtin::builtin_engine().limits.tokens_per_block as u32;
    let server = with_events(builder()).config(|c| c.kv_cache_max_tokens(4 * engine_block)).start().await;
    let block = server.executor.executor().engine().tokens_per_block() as u32;
    assert_eq!(block, engine_block);
    let mut client = server.client().await;
    let mut stream = subscribe(&mut client, 0, false).await;

    generate(&mut client, "small", prompt(2 * block + 1, 1)).await;
    let first = until(&mut stream, |b| stored_blocks(b).len() >= 2).await;
    let stored: HashSet<i64> = stored_blocks(&first).iter().map(|b| b.block_hash).collect();

    generate(&mut client, "large", prompt(3 * block + 1, 500)).await;
    let second = until(&mut stream, |b| stored.iter().all(|h| removed_hashes(b).contains(h))).await;
    let removed = removed_hashes(&second);
    assert!(stored.is_subset(&removed), "every evicted block is reported: stored {stored:?}, removed {removed:?}");
    let all: Vec<cpb::KvEventBatch> = first.into_iter().chain(second).collect();
    let ids: Vec<u64> = events(&all).map(|e| e.event_id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "event ids increase: {ids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_numbers_are_consecutive_shared_and_resumable() {
    let server = with_events(builder()).start().await;
    let block = server.executor.executor().engine().tokens_per_block() as u32;
    let mut client = server.client().await;
    let mut stream = subscribe(&mut client, 0, false).await;

    // Three unrelated prompts, each run once the one before has had its blocks reported: at least
    // three event batches, however late the server's poll comes on a loaded host.
    let mut batches = Vec::new();
    for i in 0..3 {
        let first = 1000 * (i + 1);
        generate(&mut client, &format!("p{i}"), prompt(block + 1, first)).await;
        let stored_it = |b: &[cpb::KvEventBatch]| stored_blocks(b).iter().any(|k| k.token_ids.first() == Some(&first));
        batches.extend(until(&mut stream, stored_it).await);
    }
    let numbers: Vec<u64> = event_batches(&batches).iter().map(|b| b.sequence_number).collect();
    assert!(numbers.len() >= 3, "{batches:?}");
    assert_eq!(numbers[0], 1, "the server's first event batch");
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "consecutive: {numbers:?}");
    // A load-only batch repeats the number of the event batch before it.
    let mut last = 0;
    for b in &batches {
        if b.events.is_empty() {
            assert!(b.load.as_ref().unwrap().load_only);
            assert_eq!(b.sequence_number, last, "{batches:?}");
        } else {
            last = b.sequence_number;
        }
    }

    // Resuming from the second batch resends it and what followed, with the same events.
    let newest = *numbers.last().unwrap();
    let mut resumed = subscribe(&mut client, 2, false).await;
    let mut replayed = Vec::new();
    while replayed.len() < (newest - 1) as usize {
        let b = next(&mut resumed).await;
        if !b.events.is_empty() {
            replayed.push(b);
        }
    }
    let original: Vec<&cpb::KvEventBatch> = event_batches(&batches)[1..].to_vec();
    assert_eq!(
        replayed.iter().map(|b| (b.sequence_number, &b.events)).collect::<Vec<_>>(),
        original.iter().map(|b| (b.sequence_number, &b.events)).collect::<Vec<_>>()
    );
    // ... and goes on live, numbered as every other subscriber sees it.
    generate(&mut client, "later", prompt(block + 1, 3500)).await;
    let live = until(&mut resumed, |b| !stored_blocks(b).is_empty()).await;
    let theirs = until(&mut stream, |b| !stored_blocks(b).is_empty()).await;
    let number = |bs: &[cpb::KvEventBatch]| event_batches(bs)[0].sequence_number;
    assert_eq!(number(&live), newest + 1);
    assert_eq!(number(&theirs), newest + 1);

    // A number this server never sent is refused.
    let ahead = subscribe_call(&mut client, newest + 10, false).await.unwrap_err();
    assert_eq!(ahead.code(), Code::OutOfRange, "{ahead:?}");
    assert!(ahead.message().contains("subscribe with 0"), "{ahead:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_server_sends_load_only_heartbeats() {
    let server = with_events(builder()).start().await;
    let mut client = server.client().await;
    let response = subscribe_call(&mut client, 0, true).await.unwrap();
    assert_eq!(response.metadata().get(KV_EVENTS_HEADER).unwrap(), "on", "the stream says it carries KV events");
    let mut stream = response.into_inner();
    let mut batches = Vec::new();
    for _ in 0..4 {
        batches.push(next(&mut stream).await);
    }
    for b in &batches {
        let load = b.load.as_ref().unwrap();
        assert!(load.load_only && b.events.is_empty(), "{b:?}");
        assert_eq!(b.sequence_number, 0, "no event batch yet");
        assert_eq!((load.running_requests, load.waiting_requests), (0, 0));
        assert_eq!(load.age_ms, 0, "idle figures are exact");
        assert!(load.max_running_requests > 0);
        assert_eq!(load.num_used_tokens.unwrap_or(0), 0);
    }
    let samples: Vec<u64> = batches.iter().map(|b| b.load.as_ref().unwrap().sample).collect();
    assert_eq!(samples, vec![1, 2, 3, 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_load_counts_a_running_request_and_its_kv_tokens() {
    let server = with_events(
        TestServer::builder().iteration_ms(5.0).options(ServeOptions { kv_heartbeat: HEARTBEAT, ..Default::default() }),
    )
    .start()
    .await;
    let mut client = server.client().await;
    let mut stream = subscribe(&mut client, 0, false).await;
    let mut generation = client.generate(request("long", prompt(100, 1), 2000, true)).await.unwrap().into_inner();
    assert!(generation.next().await.unwrap().is_ok(), "the request runs");

    let batches = until(&mut stream, |b| {
        b.last()
            .and_then(|b| b.load.as_ref())
            .is_some_and(|l| l.running_requests == 1 && l.num_used_tokens.unwrap_or(0) > 0 && l.gen_throughput > 0.0)
    })
    .await;
    let load = batches.last().unwrap().load.clone().unwrap();
    assert_eq!(load.waiting_requests, 0);
    let used = load.num_used_tokens.unwrap();
    let total = load.max_total_num_tokens.unwrap();
    assert!(used >= 100 && used <= total, "the prompt's blocks are in use: {load:?}");
    assert!(load.token_usage > 0.0 && load.token_usage <= 1.0, "{load:?}");
    assert!((load.token_usage - f64::from(used) / f64::from(total)).abs() < 1e-9, "{load:?}");
    assert_eq!(load.queues.unwrap().waiting, 0);
    drop(generation);
    server.wait_executor_idle(PATIENCE).await;
    let idle =
        until(&mut stream, |b| b.last().and_then(|b| b.load.as_ref()).is_some_and(|l| l.running_requests == 0)).await;
    let load = idle.last().unwrap().load.clone().unwrap();
    assert_eq!(load.num_used_tokens, Some(0), "{load:?}");
    assert_eq!(load.token_usage, 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draining_ends_the_subscription_with_a_last_load_record_and_ok() {
    let mut server = with_events(builder()).start().await;
    let mut client = server.client().await;
    let mut stream = subscribe(&mut client, 0, true).await;
    next(&mut stream).await;
    server.signal_shutdown();
    let (batches, status) = tokio::time::timeout(PATIENCE, drain(&mut stream)).await.expect("the stream ends");
    assert!(status.is_none(), "ends with OK: {status:?}");
    let last = batches.last().expect("a last batch");
    assert!(last.load.as_ref().unwrap().load_only);
    tokio::time::timeout(PATIENCE, server.handle).await.expect("the server stops").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_event_buffer_the_stream_carries_load_only() {
    // The library's default: no KV event buffer.
    let server = builder().start().await;
    let block = server.executor.executor().engine().tokens_per_block() as u32;
    let mut client = server.client().await;
    let response = subscribe_call(&mut client, 0, false).await.unwrap();
    assert_eq!(response.metadata().get(KV_EVENTS_HEADER).unwrap(), "off");
    let mut stream = response.into_inner();
    generate(&mut client, "unseen", prompt(2 * block + 1, 1)).await;
    for _ in 0..5 {
        let b = next(&mut stream).await;
        assert!(b.events.is_empty() && b.load.as_ref().unwrap().load_only, "{b:?}");
        assert_eq!(b.sequence_number, 0);
    }
    let refused = subscribe_call(&mut client, 5, false).await.unwrap_err();
    assert_eq!(refused.code(), Code::OutOfRange);
}

/// `trtllm serve` with `extra` flags; its address, and the process (killed on drop).
struct Served(std::process::Child, String);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(extra: &[&str]) -> Served {
    let args: Vec<&str> = ["--kv-heartbeat-ms", "50"].into_iter().chain(extra.iter().copied()).collect();
    let (child, addr) = common::server::spawn_serve(&args);
    Served(child, addr)
}

async fn serve_client(served: &Served) -> Client {
    let channel =
        tonic::transport::Channel::from_shared(format!("http://{}", served.1)).unwrap().connect().await.unwrap();
    TrtllmServiceClient::new(channel)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trtllm_serve_streams_kv_events_by_default_and_the_flag_turns_them_off() {
    let served = serve(&[]);
    let mut client = serve_client(&served).await;
    let response = subscribe_call(&mut client, 0, false).await.unwrap();
    assert_eq!(response.metadata().get(KV_EVENTS_HEADER).unwrap(), "on");
    let mut stream = response.into_inner();
    generate(&mut client, "cli", prompt(200, 1)).await;
    let batches = until(&mut stream, |b| !stored_blocks(b).is_empty()).await;
    assert_eq!(stored_blocks(&batches)[0].token_ids[0], 1);
    drop(served);

    let off = serve(&["--kv-cache-event-buffer-size", "0"]);
    let mut client = serve_client(&off).await;
    let response = subscribe_call(&mut client, 0, false).await.unwrap();
    assert_eq!(response.metadata().get(KV_EVENTS_HEADER).unwrap(), "off");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_events_end_the_stream_with_data_loss_and_forbid_resuming_across_them() {
    // An executor buffer of one event: a request that stores blocks in several events at once
    // overflows it before the server reads it.
    let server = builder().config(|c| c.kv_cache_event_buffer_max_size(1)).start().await;
    let block = server.executor.executor().engine().tokens_per_block() as u32;
    let mut client = server.client().await;
    let mut stream = subscribe(&mut client, 0, false).await;
    let mut status = None;
    for i in 0..20 {
        generate(&mut client, &format!("burst{i}"), prompt(3 * block + 1, 100 * i + 1)).await;
        if let Ok(Some(Err(s))) = tokio::time::timeout(HEARTBEAT * 3, async {
            loop {
                match stream.next().await {
                    Some(Ok(_)) => continue,
                    other => return other,
                }
            }
        })
        .await
        {
            status = Some(s);
            break;
        }
    }
    let status = status.expect("the overflow is reported");
    assert_eq!(status.code(), Code::DataLoss, "{status:?}");
    assert!(status.message().contains("start_sequence_number 0"), "{status:?}");
    let refused = subscribe_call(&mut client, 1, false).await.unwrap_err();
    assert_eq!(refused.code(), Code::OutOfRange, "no resuming across lost events");
    // A fresh subscription works.
    let mut fresh = subscribe(&mut client, 0, true).await;
    assert!(next(&mut fresh).await.load.is_some());
}

/// A gauge of the worker's Prometheus endpoint: `family{label="value"}`.
fn gauge(body: &str, family: &str, label: &str) -> f64 {
    let prefix = format!("{family}{{");
    body.lines()
        .find(|l| l.starts_with(&prefix) && l.contains(label))
        .and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or_else(|| panic!("no {family} {label} in\n{body}"))
}

/// What the gateway routes on, checked against the worker's own figures under closed-loop load:
/// 10 clients on a 4-request batch (so requests wait), prompts sharing a 64-token prefix (so
/// blocks are reused), a KV cache small enough that usage is far from 0 or 1.
///
/// Only fresh heartbeats (sent at most 10 ms before they are read) are compared. Tolerances,
/// because the load record and the worker's figures cannot be read at the same instant: one
/// 20 ms iteration may pass between them, in which a request or two finish or are enqueued and
/// at most 12 blocks are allocated or freed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_load_the_engine_load_matches_the_workers_own_figures() {
    const CLIENTS: usize = 10;
    const BATCH: i64 = 4;
    let metrics_addr = common::server::free_port_addr();
    let heartbeat = Duration::from_millis(100);
    let options = ServeOptions { kv_heartbeat: heartbeat, metrics_addr: Some(metrics_addr), ..Default::default() };
    let server = with_events(
        TestServer::builder()
            .iteration_ms(20.0)
            .engine(|e| {
                e.limits.max_batch_size = BATCH as usize;
                e.kv_cache_max_tokens = Some(4096);
            })
            .options(options),
    )
    .start()
    .await;
    let mut client = server.client().await;
    let mut stream = subscribe(&mut client, 0, false).await;

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let open = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let (mut client, stop, open) = (server.client().await, stop.clone(), open.clone());
        clients.push(tokio::spawn(async move {
            let mut n = 0_u32;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                // The shared prefix, then tokens of this request's own.
                let mut tokens = prompt(64, 1);
                tokens.extend(prompt(32, 1000 + (c as u32) * 100 + n * 37 % 97));
                open.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let reply = collect(&mut client, request(&format!("load-{c}-{n}"), tokens, 24, true)).await;
                open.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                reply.unwrap();
                n += 1;
            }
        }));
    }

    let (mut samples, mut exact_running, mut exact_blocks, mut saw_waiting) = (0, 0, 0, false);
    let mut last_hit_rate = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(6);
    while tokio::time::Instant::now() < deadline {
        let batch = next(&mut stream).await;
        // Load-only heartbeats, fresh: a record that waited in the stream while the test was
        // busy describes an earlier moment than the figures read now.
        let sent_unix_s = batch.timestamp;
        let Some(load) = batch.load.filter(|_| batch.events.is_empty()) else { continue };
        let now_unix_s = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        if sent_unix_s > 0.0 && now_unix_s - sent_unix_s > 0.010 {
            continue;
        }
        let in_flight_client = open.load(std::sync::atomic::Ordering::SeqCst);
        let stats = server.executor.executor().latest_iteration_stats();
        let in_flight = server.executor.executor().in_flight() as i64;
        let body = common::server::http_get(metrics_addr, "/metrics").await;
        let kv = stats.and_then(|s| s.kv_cache);
        let looked_up = kv.is_some_and(|k| k.reused_blocks + k.missed_blocks > 0);
        if in_flight_client < CLIENTS as i64 - 2 || !looked_up {
            continue; // Still ramping up: the first requests not yet sent or not yet scheduled.
        }
        let kv = kv.unwrap();
        samples += 1;
        let active = gauge(&body, "nv_trt_llm_request_metrics", "request_type=\"active\"") as i64;
        let running = i64::from(load.running_requests);
        let waiting = i64::from(load.waiting_requests);
        assert!(running <= BATCH, "{load:?}");
        assert!((running - active).abs() <= 1, "running {running}, the executor's active {active}");
        assert!(
            (running + waiting - in_flight).abs() <= 2,
            "running {running} + waiting {waiting} vs {in_flight} requests in the executor"
        );
        exact_running += usize::from(running == active);
        saw_waiting |= waiting > 0;

        let used = gauge(&body, "nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type=\"used\"");
        let max = gauge(&body, "nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type=\"max\"");
        let tokens_per = gauge(&body, "nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type=\"tokens_per\"");
        let load_blocks = load.token_usage * max;
        assert!((load_blocks - used).abs() <= 12.0, "token_usage {} vs used {used} of {max} blocks", load.token_usage);
        assert!(load.token_usage > 0.0 && load.token_usage < 1.0, "{load:?}");
        assert_eq!(f64::from(load.max_total_num_tokens.unwrap()), max * tokens_per);
        exact_blocks += usize::from((load_blocks - used).abs() < 1e-6);

        let hit_rate = load.cache_hit_rate.expect("blocks were looked up, so a hit rate is reported");
        assert!((hit_rate - f64::from(kv.cache_hit_rate)).abs() <= 0.05, "{hit_rate} vs {}", kv.cache_hit_rate);
        last_hit_rate = Some(hit_rate);
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for c in clients {
        c.await.unwrap();
    }
    assert!(samples >= 10, "only {samples} load records under full load");
    assert!(saw_waiting, "10 clients on a batch of 4 must leave requests waiting");
    // Most records are read within the same iteration as the worker's figures: exact there.
    assert!(exact_running * 2 >= samples, "running exact in {exact_running} of {samples}");
    assert!(exact_blocks * 2 >= samples, "KV blocks exact in {exact_blocks} of {samples}");
    // Every prompt shares 2 of its 3 blocks with the others.
    assert!(last_hit_rate.unwrap() > 0.3, "{last_hit_rate:?}");
}
