//! KV-cache events: blocks stored when a prompt's context is cached, hashes that chain and stay the
//! same for the same tokens, and removals when the cache evicts.
//!
//! Upstream: `KVCacheEvent` / `KVCacheStoredData` / `KVCacheRemovedData` in
//! cpp/include/tensorrt_llm/executor/executor.h and types.h (v1.1.0/v1.2.0), enabled by
//! `KvCacheConfig::eventBufferMaxSize`; examples/cpp/executor/executorExampleKvEvents.cpp reads them
//! the same way (`getKVCacheEventManager()->getLatestEvents`).

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;
use trtllm::{KvCacheEventData, KvEventStream};

use crate::harness::{skip, target};

/// A stored block as seen in the events: its tokens and its parent's hash.
#[derive(Debug, Clone)]
struct Seen {
    tokens: Vec<u32>,
    parent: Option<u64>,
}

/// Reads events until `done` says so or 20 s pass; stored blocks by hash, and removed hashes.
async fn watch(
    events: &mut KvEventStream,
    stored: &mut HashMap<u64, Seen>,
    removed: &mut Vec<u64>,
    mut done: impl FnMut(&HashMap<u64, Seen>, &[u64]) -> bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done(stored, removed) {
        let Ok(next) = tokio::time::timeout_at(deadline, events.next()).await else {
            return false;
        };
        match next.map(|e| e.map(|e| e.data.clone())) {
            Some(Ok(KvCacheEventData::Stored { parent_hash, blocks })) => {
                let mut parent = parent_hash;
                for block in blocks {
                    stored.insert(block.block_hash, Seen { tokens: block.token_ids.clone(), parent });
                    parent = Some(block.block_hash);
                }
            }
            Some(Ok(KvCacheEventData::Removed { block_hashes })) => removed.extend(block_hashes),
            Some(Ok(_)) => {}
            Some(Err(lagged)) => panic!("the KV event subscriber lagged: {lagged:?}"),
            None => return false,
        }
    }
    true
}

/// The hashes of the chain of stored blocks that hold `tokens` block by block from the start.
fn chain(stored: &HashMap<u64, Seen>, tokens: &[u32], block: usize) -> Vec<u64> {
    let mut hashes = Vec::new();
    for (i, want) in tokens.chunks_exact(block).enumerate() {
        let parent = hashes.last().copied();
        let found = stored.iter().find(|(_, s)| s.tokens == want && (i == 0 || s.parent == parent));
        match found {
            Some((hash, _)) => hashes.push(*hash),
            None => break,
        }
    }
    hashes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompts_full_blocks_are_stored_with_chained_hashes_that_stay_stable() {
    let t = target();
    if let Some(reason) = t.no_block_reuse() {
        return skip("kv_events stored", reason);
    }
    let block = t.block();
    let mut events = t.executor.subscribe_kv_events().expect("KV events are on");
    let shared = t.unique_prompt(500, 2 * block);
    let first: Vec<u32> = [shared.clone(), t.unique_prompt(501, block + 1)].concat();
    let second: Vec<u32> = [shared.clone(), t.unique_prompt(502, block + 1)].concat();
    t.executor.enqueue(t.request(first.clone(), 2)).unwrap().collect_final().await.unwrap();

    let (mut stored, mut removed) = (HashMap::new(), Vec::new());
    let full = 3 * block;
    let found = watch(&mut events, &mut stored, &mut removed, |s, _| chain(s, &first[..full], block).len() == 3).await;
    assert!(found, "the first prompt's 3 full blocks were not all stored: {:?}", chain(&stored, &first[..full], block));
    let first_chain = chain(&stored, &first[..full], block);
    assert_eq!(stored[&first_chain[0]].parent, None, "a sequence's first block has no parent");

    let done = t.executor.enqueue(t.request(second.clone(), 2)).unwrap().collect_final().await.unwrap();
    let found = watch(&mut events, &mut stored, &mut removed, |s, _| chain(s, &second[..full], block).len() == 3).await;
    assert!(found, "the second prompt's third block was not stored");
    let second_chain = chain(&stored, &second[..full], block);
    assert_eq!(second_chain[..2], first_chain[..2], "the same tokens at the same place hash the same");
    assert_ne!(second_chain[2], first_chain[2], "different tokens hash differently");
    if let Some(cached) = done.cached_tokens {
        // Reuse is reported when perf metrics are on; evictions by other traffic may leave less.
        assert!(cached as usize <= 2 * block, "cached {cached} tokens of a {} token shared prefix", 2 * block);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evicted_blocks_are_reported_removed() {
    let t = target();
    if let Some(reason) = t.no_block_reuse() {
        return skip("kv_events removed", reason);
    }
    let block = t.block();
    let mut events = t.executor.subscribe_kv_events().expect("KV events are on");
    let prompt = t.unique_prompt(510, 2 * block + 1);
    t.executor.enqueue(t.request(prompt.clone(), 1)).unwrap().collect_final().await.unwrap();
    let (mut stored, mut removed) = (HashMap::new(), Vec::new());
    let ok =
        watch(&mut events, &mut stored, &mut removed, |s, _| chain(s, &prompt[..2 * block], block).len() == 2).await;
    assert!(ok, "the prompt's blocks were not stored");
    let ours = chain(&stored, &prompt[..2 * block], block);

    // Fill the (capped) cache with other prompts until the executor evicts ours.
    let flood_len = (t.engine.max_input_len() - 1).min(2048);
    let floods = 2 * t.kv_cache_tokens as usize / flood_len + 4;
    for i in 0..floods {
        let flood = t.unique_prompt(10_000 + i as u64, flood_len);
        t.executor.enqueue(t.request(flood, 1)).unwrap().collect_final().await.unwrap();
        if ours.iter().any(|h| removed.contains(h)) {
            break;
        }
        // Read what has arrived so far without waiting for anything in particular.
        let _ =
            tokio::time::timeout(Duration::from_millis(1), watch(&mut events, &mut stored, &mut removed, |_, _| false))
                .await;
    }
    let ok = watch(&mut events, &mut stored, &mut removed, |_, r| ours.iter().any(|h| r.contains(h))).await;
    assert!(
        ok,
        "after {floods} prompts of {flood_len} tokens in a {}-token cache, none of {ours:?} was removed",
        t.kv_cache_tokens
    );
}
