//! Statistics: per iteration, per request and of the KV cache, as the executor reports them.
//!
//! Upstream: `Executor::getLatestIterationStats` / `getLatestRequestStats` and the `IterationStats`,
//! `RequestStats` and `KvCacheStats` structs of cpp/include/tensorrt_llm/executor/types.h
//! (v1.1.0/v1.2.0); only the leader records them. Request stats need
//! `ExecutorConfig::requestStatsMaxIterations` > 0 (the harness sets 1000).

use std::time::{Duration, Instant};

use crate::common::sim::drain;
use crate::harness::{executor, target};
use trtllm::RequestStage;

#[test]
fn iteration_and_kv_cache_stats_describe_the_work() {
    let t = target();
    let mut iterations = executor().subscribe_iteration_stats();
    let out = drain(executor().enqueue(t.request(t.unique_prompt(400, 40), 8)).unwrap());
    assert_eq!(out.done().completion_tokens, 8);
    executor().refresh_stats();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = Vec::new();
    let mut quiet_since = Instant::now();
    loop {
        match iterations.try_recv() {
            Ok(stats) => {
                seen.push(stats);
                quiet_since = Instant::now();
            }
            Err(_)
                if Instant::now() > deadline
                    || (!seen.is_empty() && quiet_since.elapsed() > Duration::from_millis(50)) =>
            {
                break;
            }
            Err(_) => {
                std::thread::sleep(Duration::from_millis(5));
                executor().refresh_stats();
            }
        }
    }
    assert!(!seen.is_empty(), "no iteration stats within 5 s of a finished request");
    let iters: Vec<u64> = seen.iter().map(|s| s.iter).collect();
    // Non-decreasing, not increasing: when the active list empties the executor records one more entry
    // for the idle executor under the next iteration's number, which the next forward pass reuses
    // (TensorRT-LLM's behaviour, mirrored in cpp/sim/src/execution_loop.cpp).
    assert!(iters.windows(2).all(|w| w[0] <= w[1]), "iteration numbers never go back: {iters:?}");
    assert!(seen.iter().any(|s| s.num_active_requests >= 1 || s.num_completed_requests >= 1));
    for stats in &seen {
        assert!(stats.iter_latency_ms >= 0.0);
        assert!(stats.max_num_active_requests as usize <= t.engine.max_batch_size().max(1));
        if let Some(kv) = &stats.kv_cache {
            assert!(kv.max_num_blocks > 0 && kv.free_num_blocks <= kv.max_num_blocks, "{kv:?}");
            assert_eq!(kv.tokens_per_block as usize, t.block());
        }
    }
    let kv = executor().kv_cache_stats().expect("the executor reports KV-cache stats");
    assert!(kv.max_num_blocks > 0);
    let capacity = kv.max_num_blocks as u64 * kv.tokens_per_block as u64;
    assert!(
        capacity <= u64::from(t.kv_cache_tokens) + kv.tokens_per_block as u64,
        "the KV cap is honoured: {capacity}"
    );
}

#[test]
fn request_stats_follow_a_request_to_completion() {
    let t = target();
    let mut stats = executor().subscribe_request_stats();
    let stream = executor().enqueue(t.request(t.unique_prompt(401, 20), 12)).unwrap();
    let id = stream.request_id();
    drain(stream);
    executor().refresh_stats();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut stages = Vec::new();
    let mut generated = 0;
    while Instant::now() < deadline && !stages.contains(&RequestStage::GenerationComplete) {
        match stats.try_recv() {
            Ok(iteration) => {
                for r in iteration.requests.iter().filter(|r| r.id == id) {
                    stages.push(r.stage);
                    generated = generated.max(r.num_generated_tokens);
                }
            }
            Err(_) => {
                std::thread::sleep(Duration::from_millis(5));
                executor().refresh_stats();
            }
        }
    }
    assert!(!stages.is_empty(), "request {id} never appeared in the request stats");
    assert!(stages.contains(&RequestStage::GenerationComplete), "stages seen: {stages:?}");
    assert!(generated > 0 && generated <= 12, "generated {generated} tokens");
}
