//! Prints the simulator's single-user predictions for every model × GPU preset (the tables in
//! docs/simulator.md): decode tokens/s and TTFT at 128, 1k and 8k prompt tokens, next to the
//! bandwidth bound. Each figure comes from running the simulated executor on its virtual clock and
//! reading the request's perf metrics; the Rust performance model is checked against every one.
//!
//! Run: `cargo run --release --example sim_predictions`

use std::time::Duration;

use trtllm::sim::{ClockMode, GpuPreset, KvCacheDtype, ModelPreset, SimulatedEngine, WeightDtype};
use trtllm::{Executor, ExecutorConfig, GenerationRequest, ShutdownMode, StreamEvent};

const PROMPTS: [usize; 3] = [128, 1024, 8192];
const OUTPUT: usize = 128;

/// Executor-side (TTFT ms, decode tokens/s) of one request, from its perf metrics.
fn run_request(executor: &Executor, prompt: usize) -> anyhow::Result<(f64, f64)> {
    let request = GenerationRequest::new(vec![100; prompt], OUTPUT as u32).with_perf_metrics(true);
    let mut done = None;
    for event in executor.enqueue(request)?.blocking_iter() {
        if let StreamEvent::Final(output) = event? {
            done = Some(output);
        }
    }
    let done = done.ok_or_else(|| anyhow::anyhow!("no final output"))?;
    let perf = done.perf.ok_or_else(|| anyhow::anyhow!("no perf metrics"))?;
    let (Some(arrival), Some(first), Some(last)) = (perf.arrival, perf.first_token, perf.last_token) else {
        anyhow::bail!("incomplete perf metrics");
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    Ok((ms(first - arrival), (OUTPUT - 1) as f64 / (ms(last - first) / 1000.0)))
}

/// The smallest tensor-parallel size (1, 2, 4, 8) whose GPUs hold the weights and one 8k-token request.
fn engine_for(model: &ModelPreset, gpu: &GpuPreset, dtype: WeightDtype, kv: KvCacheDtype) -> Option<SimulatedEngine> {
    let max_seq_len = model.max_position_embeddings.min(8192 + OUTPUT);
    [1, 2, 4, 8].into_iter().find_map(|tp| {
        let engine = SimulatedEngine::builder()
            .model(model)
            .gpu(&gpu.id)
            .tensor_parallel(tp)
            .dtype(dtype)
            .kv_cache_dtype(kv)
            .max_seq_len(max_seq_len)
            .max_input_len(max_seq_len - OUTPUT)
            .max_num_tokens(8192)
            .max_batch_size(256)
            .clock(ClockMode::Virtual)
            .build();
        let perf = engine.perf_model().ok()?;
        let reserve = perf.runtime_reserve_bytes(engine.limits.max_num_tokens, engine.limits.max_batch_size, 1);
        let capacity = perf.kv_capacity_tokens(trtllm::sim::perf_model::DEFAULT_FREE_GPU_MEMORY_FRACTION, reserve);
        (capacity.ok()? >= max_seq_len as u64).then_some(engine)
    })
}

fn table(dtype: WeightDtype, kv: KvCacheDtype, gpus: &[&GpuPreset]) -> anyhow::Result<String> {
    let mut out = String::from(
        "| Model | GPU | TP | Weights/GPU (GiB) | BW bound (tok/s) | Decode tok/s @128 | @1k | @8k | TTFT ms @128 | @1k | @8k |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut worst = 0.0f64;
    for model in ModelPreset::all() {
        for gpu in gpus {
            let Some(engine) = engine_for(model, gpu, dtype, kv) else {
                out += &format!("| {} | {} | n/a | | | | | | | | |\n", model.id, gpu.id);
                continue;
            };
            let perf = engine.perf_model()?;
            let dir = tempfile::tempdir()?;
            engine.write_to(dir.path())?;
            // Cold prompts: one executor measures every prompt length, and block reuse would
            // serve the shorter prompts' blocks to the longer ones.
            let config = ExecutorConfig::builder().kv_cache_enable_block_reuse(false).build()?;
            let executor = Executor::load(dir.path(), config)?;
            let (mut decode, mut ttft) = (Vec::new(), Vec::new());
            for prompt in PROMPTS {
                if prompt > engine.limits.max_input_len {
                    decode.push("n/a".to_string());
                    ttft.push("n/a".to_string());
                    continue;
                }
                let (ttft_ms, tokens_per_s) = run_request(&executor, prompt)?;
                let predicted =
                    perf.single_stream(prompt, OUTPUT, engine.limits.max_num_tokens, engine.limits.tokens_per_block);
                worst = worst
                    .max((ttft_ms / predicted.ttft_ms - 1.0).abs())
                    .max((tokens_per_s / predicted.decode_tokens_per_s - 1.0).abs());
                decode.push(format!("{tokens_per_s:.1}"));
                ttft.push(if ttft_ms < 100.0 { format!("{ttft_ms:.1}") } else { format!("{ttft_ms:.0}") });
            }
            executor.shutdown(ShutdownMode::Cancel)?;
            out += &format!(
                "| {} | {} | {} | {:.1} | {:.1} | {} | {} |\n",
                model.id,
                gpu.id,
                engine.tp_size,
                perf.weight_bytes_per_gpu() / (1024.0 * 1024.0 * 1024.0),
                perf.bandwidth_bound_tokens_per_s(),
                decode.join(" | "),
                ttft.join(" | ")
            );
        }
    }
    out += &format!("\n(Rust performance model vs simulator: largest relative difference {worst:.1e})\n");
    Ok(out)
}

fn main() -> anyhow::Result<()> {
    let all: Vec<&GpuPreset> = GpuPreset::all().iter().collect();
    println!("## BF16 weights, 16-bit KV cache\n");
    println!("{}", table(WeightDtype::Bf16, KvCacheDtype::Auto, &all)?);
    let fp8: Vec<&GpuPreset> = all.iter().copied().filter(|gpu| gpu.has_fp8()).collect();
    println!("## FP8 weights, FP8 KV cache (Ada and Hopper)\n");
    println!("{}", table(WeightDtype::Fp8, KvCacheDtype::Fp8, &fp8)?);
    Ok(())
}
