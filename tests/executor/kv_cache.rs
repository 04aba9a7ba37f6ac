//! KV-cache block reuse and KV-cache events through the Rust API (and `cached_tokens` over gRPC).

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use common::server::TestServer;
use common::sim::{config, drain, engine_dir, eventually_async};
use futures::{FutureExt, StreamExt};
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::generate_response::Response as Kind;
use trtllm::server::ServeOptions;
use trtllm::{
    AsyncExecutor, Error, Executor, ExecutorConfig, GenerationRequest, KvCacheEvent, KvCacheEventData, KvEventStream,
    ShutdownMode,
};

/// Tokens per KV-cache block of the simulated engines (the builder's default).
const BLOCK: u32 = 32;

fn prompt(len: u32, first: u32) -> Vec<u32> {
    (first..first + len).collect()
}

fn load(
    tune: impl FnOnce(trtllm::ExecutorConfigBuilder) -> trtllm::ExecutorConfigBuilder,
) -> (tempfile::TempDir, Executor) {
    let dir = engine_dir(|b| b);
    let executor = Executor::load(dir.path(), tune(config()).build().unwrap()).expect("load");
    (dir, executor)
}

/// Context tokens of every iteration with context work, since the last call.
fn context_tokens(
    executor: &Executor,
    stats: &mut tokio::sync::broadcast::Receiver<std::sync::Arc<trtllm::IterationStats>>,
) -> Vec<i32> {
    executor.refresh_stats();
    let mut out = Vec::new();
    while let Ok(s) = stats.try_recv() {
        if let Some(b) = s.inflight_batching.filter(|b| b.num_context_requests > 0) {
            out.push(b.num_ctx_tokens);
        }
    }
    out
}

#[test]
fn a_repeated_prompt_is_served_from_cache_with_the_same_tokens() {
    let (_dir, executor) = load(|c| c);
    let mut stats = executor.subscribe_iteration_stats();
    // Three full blocks and one more token, which is always computed.
    let input = prompt(3 * BLOCK + 1, 1);
    let first = drain(executor.enqueue(GenerationRequest::new(input.clone(), 6)).unwrap());
    assert_eq!(first.done().cached_tokens, Some(0));
    assert_eq!(context_tokens(&executor, &mut stats), vec![3 * BLOCK as i32 + 1]);

    let second = drain(executor.enqueue(GenerationRequest::new(input.clone(), 6)).unwrap());
    assert_eq!(second.tokens(), first.tokens(), "reuse does not change the output");
    let done = second.done();
    assert_eq!(done.cached_tokens, Some(3 * BLOCK));
    assert_eq!(second.chunks[0].cached_tokens, Some(3 * BLOCK), "chunks carry it too");
    let perf = done.perf.expect("perf metrics by default");
    assert_eq!((perf.num_reused_blocks, perf.num_missed_blocks), (3, 1));
    assert_eq!(perf.cached_tokens(BLOCK, done.prompt_tokens), 3 * BLOCK);
    assert_eq!(context_tokens(&executor, &mut stats), vec![1], "only the last prompt token is prefilled");
    let kv = executor.kv_cache_stats().expect("kv stats");
    assert_eq!((kv.reused_blocks, kv.missed_blocks), (3, 5));
    assert!((kv.cache_hit_rate - 3.0 / 8.0).abs() < 1e-6);

    // Without perf metrics the executor does not say.
    let quiet = drain(executor.enqueue(GenerationRequest::new(input, 2).with_perf_metrics(false)).unwrap());
    assert_eq!(quiet.done().cached_tokens, None);
}

#[test]
fn reuse_off_serves_nothing_from_cache() {
    let (_dir, executor) = load(|c| c.kv_cache_enable_block_reuse(false));
    let input = prompt(2 * BLOCK + 1, 1);
    let first = drain(executor.enqueue(GenerationRequest::new(input.clone(), 4)).unwrap());
    let second = drain(executor.enqueue(GenerationRequest::new(input, 4)).unwrap());
    assert_eq!(second.tokens(), first.tokens());
    assert_eq!(second.done().cached_tokens, Some(0));
    executor.refresh_stats();
    let kv = executor.kv_cache_stats().expect("kv stats");
    assert_eq!((kv.reused_blocks, kv.cache_hit_rate), (0, 0.0));
}

#[test]
fn copy_on_partial_reuse_decides_whether_a_block_others_build_on_is_reused() {
    // Either way only the whole block [1..32] counts as reused; copying saves the partly matched tokens' prefill.
    for (copy, reused_blocks, computed) in [(true, 1, 24), (false, 1, 32)] {
        let (_dir, executor) = load(|c| c.kv_cache_copy_on_partial_reuse(copy));
        let mut stats = executor.subscribe_iteration_stats();
        // The first request caches [1..32], [33..64] and, when it ends, the partial block [65..80] after them.
        drain(executor.enqueue(GenerationRequest::new(prompt(80, 1), 1)).unwrap());
        context_tokens(&executor, &mut stats);
        // The second shares [1..32] and 8 tokens of [33..64]. That block has a cached successor, so its 8
        // tokens are reused only by copying them into a fresh block; without copying they are computed.
        let mut input = prompt(40, 1);
        input.extend(prompt(24, 900));
        let second = drain(executor.enqueue(GenerationRequest::new(input, 1)).unwrap());
        let perf = second.done().perf.as_ref().expect("perf metrics");
        assert_eq!(perf.reused_blocks(), reused_blocks, "copy_on_partial_reuse {copy}");
        assert_eq!(context_tokens(&executor, &mut stats), vec![computed], "copy_on_partial_reuse {copy}");
    }
}

/// Events of a stream until a `Stored` event with `count` blocks or more arrived.
/// Regression: a partly matched block (e.g. only a shared chat-template header) used to count as a whole reused
/// block, so unrelated prompts reported almost all their tokens cached and the hit rate neared 1.
#[test]
fn cached_tokens_count_only_whole_blocks_served_from_cache() {
    let (_dir, executor) = load(|c| c);
    // A 16-token prompt, then an unrelated one sharing only its first 5 tokens (a template header).
    let header = prompt(5, 1);
    let mut a = header.clone();
    a.extend(prompt(11, 100));
    let mut b = header;
    b.extend(prompt(11, 500));
    drain(executor.enqueue(GenerationRequest::new(a, 2)).unwrap());
    let second = drain(executor.enqueue(GenerationRequest::new(b, 2)).unwrap());
    assert_eq!(second.done().cached_tokens, Some(0), "a shared header is not a cached block");
    let perf = second.done().perf.expect("perf metrics");
    assert_eq!((perf.reused_blocks(), perf.num_missed_blocks), (0, 1));

    // 2.5 blocks shared (80 tokens) out of 90: the 2 whole blocks are cached, the half block is not.
    let shared = prompt(80, 300);
    let mut c = shared.clone();
    c.extend(prompt(10, 500));
    let mut d = shared;
    d.extend(prompt(10, 700));
    drain(executor.enqueue(GenerationRequest::new(c, 2)).unwrap());
    let fourth = drain(executor.enqueue(GenerationRequest::new(d, 2)).unwrap());
    assert_eq!(fourth.done().cached_tokens, Some(2 * BLOCK));
    executor.refresh_stats();
    let kv = executor.kv_cache_stats().expect("kv stats");
    // Reused: 2 whole blocks; missed: 1 + 1 (first pair), 3 (third), 1 (the fourth's half block).
    assert_eq!((kv.reused_blocks, kv.missed_blocks), (2, 6));
}

async fn until_stored(stream: &mut KvEventStream, blocks: usize) -> Vec<KvCacheEvent> {
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        let event = (*item.expect("no lag")).clone();
        let done = matches!(&event.data, KvCacheEventData::Stored { blocks: b, .. } if b.len() >= blocks);
        out.push(event);
        if done {
            break;
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_subscribers_receive_the_same_events_and_end_on_shutdown() {
    let dir = engine_dir(|b| b);
    let config = config().kv_cache_event_buffer_max_size(256).build().unwrap();
    let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
    let mut a = executor.subscribe_kv_events().unwrap();
    let mut b = executor.subscribe_kv_events().unwrap();
    let input = prompt(2 * BLOCK + 1, 7);
    executor.enqueue(GenerationRequest::new(input.clone(), 3)).unwrap().collect_final().await.unwrap();
    let mut seen_a = tokio::time::timeout(Duration::from_secs(5), until_stored(&mut a, 2)).await.unwrap();
    let mut seen_b = tokio::time::timeout(Duration::from_secs(5), until_stored(&mut b, 2)).await.unwrap();
    // The Created event may have been delivered between the two subscriptions.
    for seen in [&mut seen_a, &mut seen_b] {
        seen.retain(|e| !matches!(e.data, KvCacheEventData::Created { .. }));
    }
    assert_eq!(seen_a, seen_b);
    assert_eq!(seen_a.len(), 1);
    let KvCacheEventData::Stored { parent_hash, blocks } = &seen_a.last().unwrap().data else { unreachable!() };
    assert_eq!(*parent_hash, None);
    assert_eq!(blocks[0].token_ids, input[..32]);
    assert_eq!(blocks[1].token_ids, input[32..64]);

    executor.shutdown(ShutdownMode::Cancel).await.unwrap();
    // Whatever is left arrives, then both streams end.
    for stream in [&mut a, &mut b] {
        let rest = tokio::time::timeout(Duration::from_secs(5), stream.collect::<Vec<_>>()).await.unwrap();
        assert!(rest.iter().all(|item| item.is_ok()));
    }
    assert!(matches!(executor.subscribe_kv_events(), Err(Error::ShutDown)));
}

#[test]
fn kv_cache_events_drains_created_stored_and_removed_in_order() {
    // A cache of four blocks: the second prompt evicts the first one's blocks.
    let dir = engine_dir(|b| b);
    let config = config().kv_cache_max_tokens(4 * BLOCK).kv_cache_event_buffer_max_size(256).build().unwrap();
    let executor = Executor::load(dir.path(), config).unwrap();
    let wait = Duration::from_secs(5);
    let created = executor.kv_cache_events(wait).unwrap();
    assert_eq!(created[0].event_id, 0);
    assert_eq!(created[0].data, KvCacheEventData::Created { num_blocks_per_cache_level: vec![4, 0] });

    drain(executor.enqueue(GenerationRequest::new(prompt(2 * BLOCK + 1, 1), 1)).unwrap());
    let mut stored_hashes = HashSet::new();
    let mut events = Vec::new();
    while stored_hashes.len() < 3 {
        let batch = executor.kv_cache_events(wait).unwrap();
        assert!(!batch.is_empty(), "stored events arrive");
        for event in batch {
            if let KvCacheEventData::Stored { blocks, .. } = &event.data {
                stored_hashes.extend(blocks.iter().map(|b| b.block_hash));
            }
            events.push(event);
        }
    }
    // Ids are consecutive after the Created event.
    let ids: Vec<u64> = events.iter().map(|e| e.event_id).collect();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());

    drain(executor.enqueue(GenerationRequest::new(prompt(3 * BLOCK + 1, 500), 1)).unwrap());
    let mut removed = HashSet::new();
    while removed.is_empty() {
        let batch = executor.kv_cache_events(wait).unwrap();
        assert!(!batch.is_empty(), "removed events arrive");
        for event in batch {
            if let KvCacheEventData::Removed { block_hashes } = event.data {
                removed.extend(block_hashes);
            }
        }
    }
    assert_eq!(removed, stored_hashes, "evicting the first prompt's blocks reports each of them");

    executor.shutdown(ShutdownMode::Cancel).unwrap();
    let started = std::time::Instant::now();
    let _rest = executor.kv_cache_events(wait).unwrap();
    assert!(executor.kv_cache_events(wait).unwrap().is_empty());
    assert!(started.elapsed() < Duration::from_secs(4), "after shutdown, reads return at once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_subscriber_is_told_it_lagged() {
    let dir = engine_dir(|b| b);
    let config = config().kv_cache_event_buffer_max_size(2).build().unwrap();
    let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
    let mut slow = executor.subscribe_kv_events().unwrap();
    // Sees the same events as `slow`; read as they come, it tells how many were published.
    let mut probe = executor.subscribe_kv_events().unwrap();
    // Each request stores its context blocks, then its generated ones: more than two events unread.
    for i in 0..4 {
        let input = prompt(BLOCK + 1, 1 + 100 * i);
        executor.enqueue(GenerationRequest::new(input, BLOCK)).unwrap().collect_final().await.unwrap();
    }
    let mut published = 0;
    let overflowed = eventually_async(Duration::from_secs(5), || {
        while let Some(Some(item)) = probe.next().now_or_never() {
            published += item.map_or_else(|lagged| lagged.missed, |_| 1);
        }
        std::future::ready(published > 2)
    })
    .await;
    assert!(overflowed, "{published} events published");
    let first = tokio::time::timeout(Duration::from_secs(5), slow.next()).await.unwrap().unwrap();
    let lagged = first.expect_err("the oldest events were dropped");
    assert!(lagged.missed >= 1, "{lagged}");
    assert!(slow.next().await.unwrap().is_ok(), "then the stream goes on");
}

#[test]
fn kv_events_are_refused_when_off() {
    let (_dir, executor) = load(|c| c);
    assert!(matches!(executor.kv_cache_events(Duration::from_millis(1)), Err(Error::KvEventsDisabled)));
    assert!(matches!(executor.subscribe_kv_events(), Err(Error::KvEventsDisabled)));
    let config = ExecutorConfig::default();
    assert_eq!(config.kv_cache_event_buffer_max_size, 0, "off by default, as in TensorRT-LLM");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_complete_and_chunks_report_cached_prompt_tokens() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let block = server.executor.executor().engine().tokens_per_block() as u32;
    let request = |id: &str| pb::GenerateRequest {
        request_id: id.to_string(),
        tokenized: Some(pb::TokenizedInput { input_token_ids: prompt(2 * block + 1, 10), ..Default::default() }),
        max_tokens: 3,
        streaming: true,
        ignore_eos: true,
        ..Default::default()
    };
    let mut cached = Vec::new();
    for id in ["first", "second"] {
        let mut stream = client.generate(request(id)).await.unwrap().into_inner();
        let mut per_message = Vec::new();
        while let Some(message) = stream.next().await {
            match message.unwrap().response.unwrap() {
                Kind::Chunk(c) => per_message.push(c.cached_tokens),
                Kind::Complete(c) => per_message.push(c.cached_tokens),
            }
        }
        cached.push(per_message);
    }
    assert!(cached[0].iter().all(|&c| c == 0), "{cached:?}");
    assert!(cached[1].iter().all(|&c| c == 2 * block), "{cached:?}");
}
