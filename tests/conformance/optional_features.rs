//! Features an engine has only when it was built with them: LoRA adapters and speculative
//! decoding. Each test says why it skipped when the engine lacks the feature.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use trtllm::lora::{LoraConfig, LoraWeights};
use trtllm::{Error, FinishReason, KvCacheEventData};

use crate::common::sim::drain;
use crate::harness::{executor, skip, target};

/// A task id no other test uses.
const TASK: u64 = 27_001;

/// Upstream: `LoraConfig(taskId, weights, config)` on the request; the first request of a task
/// carries the weights and later ones the id alone, and an unknown id without weights is an error
/// response for that request (cpp/include/tensorrt_llm/executor/executor.h `LoraConfig`; the
/// PEFT cache's "not found in cache" error, cpp/tensorrt_llm/batch_manager/peftCacheManager.cpp,
/// v1.1.0/v1.2.0). Stored KV blocks carry the task id (`KVCacheStoredBlockData::loraId`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lora_adapter_is_sent_once_then_used_by_id_and_tags_its_kv_blocks() {
    let t = target();
    let Some(settings) = t.engine.lora() else {
        return skip("lora", "the engine was built without the LoRA plugin (trtllm-build --lora_plugin)");
    };
    let weights = LoraWeights::synthetic(settings, settings.max_rank().min(8), 1).expect("a synthetic adapter");
    let mut events = t.executor.subscribe_kv_events().expect("KV events are on");
    let block = t.block();
    let prompt = t.unique_prompt(600, 2 * block + 1);
    let first = t.request(prompt.clone(), 4).with_lora(LoraConfig::with_weights(TASK, weights));
    let done = t.executor.enqueue(first).unwrap().collect_final().await.expect("the adapter's first request");
    assert_eq!((done.finish_reason, done.completion_tokens), (FinishReason::Length, 4));
    let again = t.request(t.unique_prompt(601, 5), 4).with_lora(LoraConfig::cached(TASK));
    let done = t.executor.enqueue(again).unwrap().collect_final().await.expect("a request naming the cached task");
    assert_eq!(done.completion_tokens, 4);

    let unknown = t.request(t.unique_prompt(602, 5), 4).with_lora(LoraConfig::cached(TASK + 99));
    match t.executor.enqueue(unknown).unwrap().collect_final().await {
        Err(error @ (Error::RequestRejected(_) | Error::RequestFailed(_))) => assert!(!error.to_string().is_empty()),
        other => panic!("an unknown task id without weights: expected the request's own error, got {other:?}"),
    }

    // The first prompt's blocks were stored tagged with the task id.
    if let Some(reason) = t.no_block_reuse() {
        return skip("lora KV-event ids", reason);
    }
    let mut lora_ids = HashMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !lora_ids.contains_key(&prompt[..block]) {
        let Ok(Some(Ok(event))) = tokio::time::timeout_at(deadline, events.next()).await else { break };
        if let KvCacheEventData::Stored { blocks, .. } = &event.data {
            for b in blocks {
                lora_ids.insert(b.token_ids.clone(), b.lora_id);
            }
        }
    }
    assert_eq!(lora_ids.get(&prompt[..block]), Some(&Some(TASK)), "the stored block carries the LoRA task id");
}

/// Upstream: engines built with `--speculative_decoding_mode` (medusa, eagle, lookahead_decoding)
/// draft and verify inside the executor; greedy output equals plain decoding and the request's
/// `SpecDecodingStats`/perf metrics count drafted and accepted tokens
/// (docs/source/advanced/speculative-decoding.md, v1.1.0/v1.2.0). Draft-target engines need a draft
/// model per step, which `trtllm bench --draft-engine-dir` exercises instead.
#[test]
fn a_speculative_engine_completes_requests_and_counts_accepted_drafts() {
    let t = target();
    let Some(mode) = t.speculative_mode() else {
        return skip("speculative", "the engine was built without speculative decoding");
    };
    if mode == "draft_tokens_external" {
        return skip("speculative", "a draft-target engine needs a draft model; run `trtllm bench --draft-engine-dir`");
    }
    let out = drain(executor().enqueue(t.request(t.unique_prompt(700, 8), 48)).unwrap());
    assert_eq!(out.after_terminal, 0);
    let done = out.done();
    assert_eq!((done.finish_reason, done.completion_tokens), (FinishReason::Length, 48));
    assert_eq!(out.tokens().len(), 48, "every token streamed once, several per chunk when drafts are accepted");
    let spec = done.perf.expect("perf metrics").speculative;
    assert!(spec.accepted_draft_tokens <= spec.draft_tokens, "{spec:?}");
    assert!(done.decoding_iterations <= 48);
}
