//! A sliding-window model's KV cache as TensorRT-LLM's cyclic cache keeps it: a sequence holds the blocks of
//! at most its attention window, so sequences longer than the pool still run, side by side.

use crate::common;

use serde_json::json;
use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine};
use trtllm::{Executor, GenerationRequest, GenerationStream};

/// A small Mistral-shaped model with a 128-token window (or none), in a pool of 256 tokens (8 blocks of 32).
fn executor(window: Option<usize>) -> (tempfile::TempDir, Executor) {
    let mut config = json!({
        "architectures": ["MistralForCausalLM"], "torch_dtype": "bfloat16", "vocab_size": 1000,
        "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 512, "max_position_embeddings": 4096});
    if let Some(window) = window {
        config["sliding_window"] = json!(window);
    }
    let preset = ModelPreset::from_config("tiny-mistral", &config).unwrap();
    let engine = SimulatedEngine::builder()
        .model(&preset)
        .gpu("h100-sxm")
        .max_input_len(128)
        .max_seq_len(1024)
        .tokens_per_block(32)
        .kv_cache_max_tokens(256)
        .clock(ClockMode::Virtual)
        .build();
    let dir = tempfile::tempdir().unwrap();
    engine.write_to(dir.path()).unwrap();
    let executor = Executor::load(dir.path(), common::sim::config().build().unwrap()).expect("load");
    (dir, executor)
}

fn request(first: u32) -> GenerationRequest {
    GenerationRequest::new((first..first + 100).collect(), 600).with_perf_metrics(true)
}

/// Enqueues one request per first token while the virtual clock holds, so they all arrive before it
/// runs: otherwise the first could finish before the next is enqueued.
fn enqueue_together(executor: &Executor, firsts: &[u32]) -> Vec<GenerationStream> {
    let sim = executor.sim_control().expect("a virtual-clock engine");
    let hold = sim.hold_arrivals(sim.now().unwrap()).unwrap();
    let streams = firsts.iter().map(|&first| executor.enqueue(request(first)).unwrap()).collect();
    sim.release_hold(hold).unwrap();
    streams
}

#[test]
fn a_sequence_holds_at_most_its_window_of_blocks() {
    // 700 tokens need 22 blocks of full attention: more than the pool's 8, so the request is refused.
    let (_dir, full) = executor(None);
    let refused = common::sim::drain(full.enqueue(request(1)).unwrap());
    let err = refused.terminal.unwrap_err().to_string();
    assert!(err.contains("needs 22 KV-cache blocks") && err.contains("holds only 8 blocks"), "{err}");

    // With a 128-token window each needs 4 blocks, so two run together in the 8-block pool to the end.
    let (_dir, windowed) = executor(Some(128));
    let mut streams = enqueue_together(&windowed, &[1, 200]).into_iter().map(common::sim::drain);
    let (a, b) = (streams.next().unwrap(), streams.next().unwrap());
    assert_eq!((a.done().completion_tokens, b.done().completion_tokens), (600, 600));
    let (a, b) = (a.done().perf.unwrap(), b.done().perf.unwrap());
    assert!(b.first_token.unwrap() < a.last_token.unwrap(), "the second ran beside the first, not after it");

    // A third does not fit beside them: it waits for a sequence to end.
    let (_dir, windowed) = executor(Some(128));
    let streams = enqueue_together(&windowed, &[1, 201, 401]);
    let perf: Vec<_> = streams.into_iter().map(|s| common::sim::drain(s).done().perf.unwrap()).collect();
    let first_end = perf.iter().map(|p| p.last_token.unwrap()).min().unwrap();
    let started_last = perf.iter().map(|p| p.first_token.unwrap()).max().unwrap();
    assert!(started_last >= first_end, "the third started only after a sequence released its blocks");
}
