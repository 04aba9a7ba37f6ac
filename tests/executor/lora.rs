//! LoRA adapters through the executor: a PEFT adapter written by the test is sent once with its
//! weights and then by task id; an evicted adapter sent by id fails alone with TensorRT-LLM's
//! message; different adapters share a batch; bad adapters are refused before enqueue; KV blocks
//! are reused only under the adapter that computed them; adapters in use are never evicted.

use std::path::Path;
use std::time::Duration;

use safetensors::{Dtype, tensor::TensorView};
use serde_json::json;
use trtllm::lora::PeftCacheConfig;
use trtllm::lora::{LoraConfig, LoraModule, load_peft_adapter, task_not_cached_message};
use trtllm::sim::SimLora;
use trtllm::{Error, Executor, GenerationRequest, InvalidRequest, KvCacheEventData, SchedulerPolicy};

use crate::common::sim::{config, drain, engine_dir};

const HIDDEN: usize = 64;
const LAYERS: usize = 2;
/// 4 query heads and 2 KV heads of width 16: q out 64, v out 32.
const KV_OUT: usize = 32;

/// A small engine adapting q and v up to rank 8.
fn lora_engine() -> tempfile::TempDir {
    engine_dir(|b| {
        b.hidden_size(HIDDEN)
            .num_layers(LAYERS)
            .num_heads(4)
            .num_kv_heads(2)
            .intermediate_size(128)
            .lora(SimLora { target_modules: vec![LoraModule::AttnQ, LoraModule::AttnV], max_rank: 8 })
    })
}

/// Writes a PEFT adapter of rank `rank` on q_proj and v_proj of every layer (f32 values the test
/// chooses, seeded so that adapters differ).
fn write_adapter(dir: &Path, rank: usize, seed: usize) {
    let config = json!({ "peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank,
                         "target_modules": ["q_proj", "v_proj"], "task_type": "CAUSAL_LM" });
    std::fs::write(dir.join("adapter_config.json"), config.to_string()).unwrap();
    let mut tensors = Vec::new();
    for layer in 0..LAYERS {
        for (module, out) in [("q_proj", HIDDEN), ("v_proj", KV_OUT)] {
            let name =
                |side: char| format!("base_model.model.model.layers.{layer}.self_attn.{module}.lora_{side}.weight");
            for (side, shape) in [('A', vec![rank, HIDDEN]), ('B', vec![out, rank])] {
                let count = shape[0] * shape[1];
                let bytes: Vec<u8> =
                    (0..count).flat_map(|i| (((seed * 31 + layer * 7 + i) % 17) as f32 / 64.0).to_le_bytes()).collect();
                tensors.push((name(side), shape, bytes));
            }
        }
    }
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|(name, shape, bytes)| (name.clone(), TensorView::new(Dtype::F32, shape.clone(), bytes).unwrap()))
        .collect();
    std::fs::write(dir.join("adapter_model.safetensors"), safetensors::serialize(views, None).unwrap()).unwrap();
}

/// An adapter loaded for `executor`'s engine from a directory the test writes.
fn adapter(executor: &Executor, rank: usize, seed: usize) -> trtllm::lora::LoraWeights {
    let dir = tempfile::tempdir().unwrap();
    write_adapter(dir.path(), rank, seed);
    load_peft_adapter(dir.path(), executor.engine().lora().as_ref().expect("a LoRA engine")).unwrap()
}

fn request(lora: LoraConfig) -> GenerationRequest {
    GenerationRequest::new(vec![5, 6, 7, 8], 4).with_lora(lora)
}

#[test]
fn first_request_sends_weights_and_later_ones_the_task_id_alone() {
    let dir = lora_engine();
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let weights = adapter(&executor, 4, 1);
    assert_eq!(weights.shape()[0], 2 * LAYERS, "one row per module and layer");

    let first = drain(executor.enqueue(request(LoraConfig::with_weights(7, weights))).unwrap());
    assert_eq!(first.done().completion_tokens, 4);
    let again = drain(executor.enqueue(request(LoraConfig::cached(7))).unwrap());
    assert_eq!(again.done().completion_tokens, 4);

    let stats = executor.lora_cache_stats().expect("the simulator counts LoRA cache use");
    assert_eq!((stats.misses, stats.hits, stats.evictions), (1, 1, 0));
}

#[test]
fn an_unknown_task_id_without_weights_fails_that_request_with_the_upstream_error() {
    let dir = lora_engine();
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let failed = drain(executor.enqueue(request(LoraConfig::cached(99))).unwrap());
    let message = failed.terminal.expect_err("an uncached task id fails").to_string();
    assert!(message.contains(&task_not_cached_message(99)), "{message}");
}

#[test]
fn an_evicted_adapter_sent_by_id_fails_alone() {
    let dir = lora_engine();
    // Room on the host for one adapter: the second evicts the first.
    let probe = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let first = adapter(&probe, 4, 1);
    let second = adapter(&probe, 4, 2);
    drop(probe);
    let bytes = first.data().len() as u64;
    let peft = PeftCacheConfig { host_cache_size: Some(bytes + bytes / 2), ..PeftCacheConfig::default() };
    let executor = Executor::load(dir.path(), config().peft_cache(peft).build().unwrap()).unwrap();

    drain(executor.enqueue(request(LoraConfig::with_weights(1, first))).unwrap()).done();
    drain(executor.enqueue(request(LoraConfig::with_weights(2, second))).unwrap()).done();

    let streams = executor
        .enqueue_many(vec![
            request(LoraConfig::cached(1)),
            request(LoraConfig::cached(2)),
            GenerationRequest::new(vec![9; 4], 4),
        ])
        .unwrap();
    let results: Vec<_> = streams.into_iter().map(drain).collect();
    let message = results[0].terminal.as_ref().expect_err("task 1 was evicted").to_string();
    assert!(message.contains(&task_not_cached_message(1)), "{message}");
    assert_eq!(results[1].done().completion_tokens, 4, "the cached adapter still runs");
    assert_eq!(results[2].done().completion_tokens, 4, "a request without an adapter is unaffected");
    assert!(results.iter().all(|r| r.after_terminal == 0));
}

#[test]
fn requests_with_different_adapters_run_in_one_batch() {
    let dir = lora_engine();
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let requests = vec![
        request(LoraConfig::with_weights(1, adapter(&executor, 4, 1))),
        request(LoraConfig::with_weights(2, adapter(&executor, 8, 2))),
        GenerationRequest::new(vec![5, 6, 7, 8], 4),
    ];
    let done: Vec<_> = executor.enqueue_many(requests).unwrap().into_iter().map(drain).collect();
    let first_iters: Vec<_> = done.iter().map(|d| d.done().perf.as_ref().and_then(|p| p.first_iter)).collect();
    assert!(first_iters[0].is_some());
    assert!(first_iters.iter().all(|i| *i == first_iters[0]), "one batch: {first_iters:?}");
    let stats = executor.lora_cache_stats().unwrap();
    assert_eq!(stats.misses, 2);
}

#[test]
fn bad_adapters_are_refused_before_enqueue_naming_the_fault() {
    let dir = lora_engine();
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let settings = executor.engine().lora().cloned().unwrap();

    // A rank above max_lora_rank (8).
    let too_wide = adapter(&executor, 4, 1);
    let rows = too_wide.rows().iter().map(|r| trtllm::lora::LoraConfigRow { rank: 16, ..*r }).collect();
    let bad_rank =
        trtllm::lora::LoraWeights::new(rows, too_wide.row_len(), too_wide.dtype(), too_wide.data().to_vec()).unwrap();
    let err = executor.enqueue(request(LoraConfig::with_weights(3, bad_rank))).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidRequest(InvalidRequest::Lora { task_id: 3, reason }) if reason.contains("attn_q") && reason.contains("layer 0")),
        "{err}"
    );

    // A module the engine was not built to adapt (attn_k).
    let mut rows = adapter(&executor, 4, 1).rows().to_vec();
    rows[1].module = LoraModule::AttnK;
    let k =
        trtllm::lora::LoraWeights::new(rows, too_wide.row_len(), settings.dtype(), too_wide.data().to_vec()).unwrap();
    let err = executor.enqueue(request(LoraConfig::with_weights(4, k))).unwrap_err();
    assert!(err.to_string().contains("attn_k"), "{err}");

    // Nothing reached the executor.
    assert_eq!(executor.lora_cache_stats().unwrap(), trtllm::lora::LoraCacheStats::default());
}

#[test]
fn an_engine_without_lora_refuses_adapters() {
    let dir = engine_dir(|b| b);
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    assert!(executor.engine().lora().is_none());
    let err = executor.enqueue(request(LoraConfig::cached(1))).unwrap_err();
    assert!(matches!(err, Error::InvalidRequest(InvalidRequest::LoraNotSupported { task_id: 1 })), "{err}");
}

/// Tokens per KV-cache block of the simulated engines (the builder's default).
const BLOCK: u32 = 32;

/// Values of one rank-`rank` adapter from [`write_adapter`]: q (in 64, out 64) and v (in 64, out 32)
/// of every layer.
fn adapter_values(rank: usize) -> usize {
    LAYERS * rank * ((HIDDEN + HIDDEN) + (HIDDEN + KV_OUT))
}

#[test]
fn kv_blocks_are_reused_only_under_the_adapter_that_computed_them() {
    let dir = lora_engine();
    let config = config().kv_cache_event_buffer_max_size(256).build().unwrap();
    let executor = Executor::load(dir.path(), config).unwrap();
    // Three full blocks and one more token (always computed).
    let prompt: Vec<u32> = (1..=3 * BLOCK + 1).collect();
    let run = |lora: Option<LoraConfig>| {
        let request = GenerationRequest::new(prompt.clone(), 2);
        let request = match lora {
            Some(lora) => request.with_lora(lora),
            None => request,
        };
        drain(executor.enqueue(request).unwrap()).done().cached_tokens
    };

    assert_eq!(run(Some(LoraConfig::with_weights(1, adapter(&executor, 4, 1)))), Some(0));
    assert_eq!(run(Some(LoraConfig::with_weights(2, adapter(&executor, 4, 2)))), Some(0), "not adapter 1's blocks");
    assert_eq!(run(None), Some(0), "the base model reuses no adapter's blocks");
    assert_eq!(run(Some(LoraConfig::cached(1))), Some(3 * BLOCK), "adapter 1 reuses its own");
    assert_eq!(run(Some(LoraConfig::cached(2))), Some(3 * BLOCK), "adapter 2 reuses its own");
    assert_eq!(run(None), Some(3 * BLOCK), "the base model reuses its own");

    // Each run stored the same tokens once per adapter, under its task id and with its own hashes.
    let mut stored = Vec::new();
    while let Ok(batch) = executor.kv_cache_events(Duration::from_millis(200)) {
        if batch.is_empty() {
            break;
        }
        for event in batch {
            if let KvCacheEventData::Stored { blocks, .. } = event.data {
                stored.extend(blocks.into_iter().filter(|b| b.token_ids.len() == BLOCK as usize));
            }
        }
    }
    let first_blocks: Vec<_> = stored.iter().filter(|b| b.token_ids == prompt[..BLOCK as usize]).collect();
    let mut loras: Vec<Option<u64>> = first_blocks.iter().map(|b| b.lora_id).collect();
    loras.sort();
    assert_eq!(loras, [None, Some(1), Some(2)], "{stored:?}");
    let mut hashes: Vec<u64> = first_blocks.iter().map(|b| b.block_hash).collect();
    hashes.sort_unstable();
    hashes.dedup();
    assert_eq!(hashes.len(), 3, "equal tokens under different adapters hash differently");
    assert!(stored.iter().all(|b| b.lora_id.is_none() || first_blocks.iter().any(|f| f.lora_id == b.lora_id)));
}

/// A LoRA engine whose device cache holds one rank-4 adapter but not two, and whose host cache
/// holds `host_adapters` of them.
fn one_adapter_device(host_adapters: u64, policy: SchedulerPolicy) -> (tempfile::TempDir, Executor) {
    let dir = lora_engine();
    let probe = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let dtype = probe.engine().lora().as_ref().unwrap().dtype().size();
    drop(probe);
    let adapter_bytes = adapter_values(4) * dtype;
    // A device slot holds one module of one layer at the optimal adapter size (8) for the widest
    // module: hidden 64 + max(intermediate 128, (4 + 2·2)·16).
    let slot_bytes = 8 * (HIDDEN + 128) * dtype;
    let slots = (3 * adapter_bytes / 2).div_ceil(slot_bytes);
    assert!(slots * slot_bytes >= adapter_bytes && slots * slot_bytes < 2 * adapter_bytes);
    let peft = PeftCacheConfig {
        num_device_module_layer: slots as u32,
        host_cache_size: Some(host_adapters * adapter_bytes as u64 + adapter_bytes as u64 / 2),
        ..PeftCacheConfig::default()
    };
    let executor =
        Executor::load(dir.path(), config().peft_cache(peft).scheduler_policy(policy).build().unwrap()).unwrap();
    (dir, executor)
}

#[test]
fn an_adapter_in_use_is_never_evicted_and_a_request_waits_for_device_room() {
    for policy in [SchedulerPolicy::GuaranteedNoEvict, SchedulerPolicy::MaxUtilization] {
        let (_dir, executor) = one_adapter_device(4, policy);
        let long = GenerationRequest::new(vec![5, 6, 7, 8], 24)
            .with_lora(LoraConfig::with_weights(1, adapter(&executor, 4, 1)));
        let base = GenerationRequest::new(vec![5, 6, 7, 8], 4);
        let other = request(LoraConfig::with_weights(2, adapter(&executor, 4, 2)));
        let done: Vec<_> = executor.enqueue_many(vec![long, base, other]).unwrap().into_iter().map(drain).collect();
        assert!(done.iter().all(|d| d.after_terminal == 0));
        let perf = |i: usize| done[i].done().perf.expect("perf metrics");
        let (long, base, other) = (perf(0), perf(1), perf(2));
        assert_eq!(done[0].done().completion_tokens, 24);
        assert_eq!(done[2].done().completion_tokens, 4, "{policy:?}: the second adapter's request waits, not fails");
        assert_eq!(base.first_iter, long.first_iter, "{policy:?}: a request without an adapter does not wait");
        assert!(
            other.first_iter > long.last_iter,
            "{policy:?}: adapter 2 starts only after adapter 1's request is done: {:?} vs {:?}",
            other.first_iter,
            long.last_iter
        );
        // Adapter 1 left the device only once nobody used it.
        let stats = executor.lora_cache_stats().unwrap();
        assert_eq!((stats.misses, stats.hits, stats.evictions), (2, 0, 1), "{policy:?}");
    }
}

#[test]
fn a_host_cache_full_of_adapters_in_use_fails_the_new_adapter_with_the_upstream_error() {
    let (_dir, executor) = one_adapter_device(1, SchedulerPolicy::GuaranteedNoEvict);
    let long =
        GenerationRequest::new(vec![5, 6, 7, 8], 24).with_lora(LoraConfig::with_weights(1, adapter(&executor, 4, 1)));
    let other = request(LoraConfig::with_weights(2, adapter(&executor, 4, 2)));
    let done: Vec<_> = executor.enqueue_many(vec![long, other]).unwrap().into_iter().map(drain).collect();
    assert_eq!(done[0].done().completion_tokens, 24, "the adapter in use stays cached");
    let message = done[1].terminal.as_ref().expect_err("no room on the host").to_string();
    assert!(message.contains("Cache is full. There are no done tasks to evict"), "{message}");
    // Once the first request is done its adapter may go.
    assert_eq!(
        drain(executor.enqueue(request(LoraConfig::with_weights(2, adapter(&executor, 4, 2)))).unwrap())
            .done()
            .completion_tokens,
        4
    );
    let failed = drain(executor.enqueue(request(LoraConfig::cached(1))).unwrap());
    let message = failed.terminal.expect_err("adapter 1 was evicted once unused").to_string();
    assert!(message.contains(&task_not_cached_message(1)), "{message}");
}

/// The simulator sizes every module as the Rust side does (TensorRT-LLM's `createLoraModules`): on
/// Qwen3-30B-A3B, whose 32 query heads of 128 (4,096) are twice its hidden size, `attn_dense` is
/// hidden × hidden, and an adapter laid out so runs.
#[test]
fn attn_dense_is_hidden_by_hidden_when_the_query_width_differs() {
    use trtllm::lora::LoraWeights;
    use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine};
    let preset = ModelPreset::by_id("qwen3-30b-a3b").unwrap();
    assert_ne!(preset.shape.q_width(), preset.shape.hidden_size);
    let dir = tempfile::tempdir().unwrap();
    SimulatedEngine::builder()
        .model(preset)
        .gpu("h200")
        .max_input_len(256)
        .max_seq_len(512)
        .clock(ClockMode::Virtual)
        .lora(SimLora { target_modules: vec![LoraModule::AttnDense, LoraModule::AttnQ], max_rank: 8 })
        .build()
        .write_to(dir.path())
        .unwrap();
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let settings = executor.engine().lora().expect("a LoRA engine");
    let dense = settings.module_dims(LoraModule::AttnDense).unwrap();
    assert_eq!((dense.in_dim, dense.out_dim), (2048, 2048));
    let weights = LoraWeights::synthetic(settings, 4, 1).unwrap();
    let done = drain(executor.enqueue(request(LoraConfig::with_weights(3, weights))).unwrap());
    assert_eq!(done.done().completion_tokens, 4, "{:?}", done.done());
}
