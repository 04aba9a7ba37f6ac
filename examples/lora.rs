//! LoRA adapters on one engine: writes a small PEFT adapter directory (`adapter_config.json` +
//! `adapter_model.safetensors`, as Hugging Face PEFT saves one), loads it for a simulated engine
//! built with LoRA, sends it once with its weights and then by task id alone, and shows what
//! happens to an id the executor has not cached.
//!
//! ```text
//! cargo run --example lora
//! ```

use std::path::Path;

use safetensors::{Dtype, tensor::TensorView};
use trtllm::lora::{LoraConfig, LoraModule, load_peft_adapter};
use trtllm::sim::{SimLora, SimulatedEngine};
use trtllm::{Executor, ExecutorConfig, GenerationRequest, StreamEvent};

const HIDDEN: usize = 256;
const LAYERS: usize = 4;
const KV_OUT: usize = 128; // 4 KV heads of 32

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // A small engine built with LoRA on q and v, ranks up to 16.
    let engine_dir = tempfile::tempdir()?;
    SimulatedEngine::builder()
        .hidden_size(HIDDEN)
        .num_layers(LAYERS)
        .num_heads(8)
        .num_kv_heads(4)
        .intermediate_size(512)
        .vocab_size(1000)
        .iteration_ms(2.0)
        .lora(SimLora { target_modules: vec![LoraModule::AttnQ, LoraModule::AttnV], max_rank: 16 })
        .build()
        .write_to(engine_dir.path())?;
    let executor = Executor::load(engine_dir.path(), ExecutorConfig::default())?;

    // The adapter directory, as PEFT writes it; load_peft_adapter lays it out for this engine.
    let adapter_dir = tempfile::tempdir()?;
    write_peft_adapter(adapter_dir.path(), 8)?;
    let settings = executor.engine().lora().ok_or("the engine has no LoRA")?;
    let weights = load_peft_adapter(adapter_dir.path(), settings)?;
    println!("adapter: {} rows of {} {} values", weights.shape()[0], weights.shape()[1], weights.dtype());

    // First use: weights and config go with the request and the executor caches them.
    run(&executor, "first use, with weights", LoraConfig::with_weights(42, weights))?;
    // Later: the task id alone.
    run(&executor, "by task id", LoraConfig::cached(42))?;
    // An id never sent with weights fails that request with TensorRT-LLM's message.
    run(&executor, "unknown task id", LoraConfig::cached(7))?;
    if let Some(stats) = executor.lora_cache_stats() {
        println!("device cache (simulator's counters): {stats:?}");
    }
    Ok(())
}

fn run(executor: &Executor, label: &str, lora: LoraConfig) -> Result<(), Box<dyn std::error::Error>> {
    let stream = executor.enqueue(GenerationRequest::new(vec![11, 12, 13, 14], 8).with_lora(lora))?;
    for event in stream.blocking_iter() {
        match event {
            Ok(StreamEvent::Final(done)) => println!("{label}: {} tokens", done.completion_tokens),
            Ok(StreamEvent::Chunk(_)) => {}
            Err(e) => println!("{label}: error: {e}"),
        }
    }
    Ok(())
}

/// Writes `adapter_config.json` and `adapter_model.safetensors` for a rank-`rank` adapter on
/// q_proj and v_proj of every layer (f32 values).
fn write_peft_adapter(dir: &Path, rank: usize) -> Result<(), Box<dyn std::error::Error>> {
    let config = serde_json::json!({
        "peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank,
        "target_modules": ["q_proj", "v_proj"], "task_type": "CAUSAL_LM"
    });
    std::fs::write(dir.join("adapter_config.json"), config.to_string())?;
    let mut tensors = Vec::new();
    for layer in 0..LAYERS {
        for (module, out) in [("q_proj", HIDDEN), ("v_proj", KV_OUT)] {
            for (side, shape) in [("A", [rank, HIDDEN]), ("B", [out, rank])] {
                let name = format!("base_model.model.model.layers.{layer}.self_attn.{module}.lora_{side}.weight");
                let bytes: Vec<u8> =
                    (0..shape[0] * shape[1]).flat_map(|i| ((i % 13) as f32 / 100.0).to_le_bytes()).collect();
                tensors.push((name, shape.to_vec(), bytes));
            }
        }
    }
    let views = tensors
        .iter()
        .map(|(name, shape, bytes)| Ok((name.clone(), TensorView::new(Dtype::F32, shape.clone(), bytes)?)))
        .collect::<Result<Vec<_>, safetensors::SafeTensorError>>()?;
    std::fs::write(dir.join("adapter_model.safetensors"), safetensors::serialize(views, None)?)?;
    Ok(())
}
