//! KV-cache block reuse and KV-cache events on the simulated executor: one prompt sent twice, the events a
//! cache-aware router would consume, and the prompt tokens the second request was served from cache.
//!
//! ```sh
//! cargo run --example kv_events
//! ```

use std::time::Duration;

use futures::StreamExt;
use trtllm::sim::SimulatedEngine;
use trtllm::{AsyncExecutor, ExecutorConfig, GenerationRequest, KvCacheEventData};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    SimulatedEngine::builder().iteration_ms(5.0).build().write_to(dir.path())?;
    let config = ExecutorConfig::builder().kv_cache_event_buffer_max_size(1024).build()?;
    let executor = AsyncExecutor::load(dir.path(), config).await?;
    let block = executor.executor().engine().tokens_per_block();

    let mut events = executor.subscribe_kv_events()?;
    let printer = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(event) => event,
                Err(lagged) => {
                    println!("  ({lagged})");
                    continue;
                }
            };
            match &event.data {
                KvCacheEventData::Created { num_blocks_per_cache_level } => {
                    println!("event {}: cache created, blocks per level {num_blocks_per_cache_level:?}", event.event_id)
                }
                KvCacheEventData::Stored { parent_hash, blocks } => {
                    println!(
                        "event {}: {} block(s) stored after parent {parent_hash:x?}",
                        event.event_id,
                        blocks.len()
                    );
                    for b in blocks {
                        println!(
                            "    {:016x}: {} tokens, first {:?}",
                            b.block_hash,
                            b.token_ids.len(),
                            b.token_ids.first()
                        );
                    }
                }
                KvCacheEventData::Removed { block_hashes } => {
                    println!("event {}: {} block(s) evicted", event.event_id, block_hashes.len())
                }
                KvCacheEventData::Updated { block_hash, .. } => {
                    println!("event {}: block {block_hash:016x} updated", event.event_id)
                }
            }
        }
        println!("event stream ended");
    });

    // Four full blocks and one more token: the second request reuses the four blocks.
    let prompt: Vec<u32> = (1..=(4 * block as u32 + 1)).collect();
    for attempt in ["first", "second"] {
        let done = executor.enqueue(GenerationRequest::new(prompt.clone(), 16))?.collect_final().await?;
        let ttft = done.ttft().unwrap_or_default();
        println!(
            "{attempt} request: {} of {} prompt tokens from cache, TTFT {:.1} ms",
            done.cached_tokens.unwrap_or(0),
            done.prompt_tokens,
            ttft.as_secs_f64() * 1e3
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if let Some(kv) = executor.executor().kv_cache_stats() {
        println!("cache: {} reused, {} missed, hit rate {:.2}", kv.reused_blocks, kv.missed_blocks, kv.cache_hit_rate);
    }
    executor.shutdown(trtllm::ShutdownMode::Drain { timeout: Duration::from_secs(5) }).await?;
    printer.await?;
    Ok(())
}
