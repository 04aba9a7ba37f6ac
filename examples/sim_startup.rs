//! How quickly a simulated executor with a very large KV cache starts, and how much memory it takes: TinyLlama on
//! an H200 with 8-token blocks gives a pool of about 737,000 blocks. Prints the load time, the process's resident
//! memory before and after loading (Linux), and the pool size the first iteration reports.
//!
//! ```sh
//! cargo run --example sim_startup [-- MODEL GPU TOKENS_PER_BLOCK]
//! ```

use std::time::{Duration, Instant};

use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine};
use trtllm::{Executor, ExecutorConfig, GenerationRequest};

/// A `/proc/self/status` field in KiB (Linux only; `None` elsewhere).
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(|| "n/a".to_string(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let model = args.next().unwrap_or_else(|| "tinyllama-1.1b".to_string());
    let gpu = args.next().unwrap_or_else(|| "h200".to_string());
    let tokens_per_block: usize = args.next().map_or(Ok(8), |arg| arg.parse())?;

    let dir = tempfile::tempdir()?;
    SimulatedEngine::builder()
        .model(ModelPreset::by_id(&model)?)
        .gpu(gpu.as_str())
        .tokens_per_block(tokens_per_block)
        .clock(ClockMode::Virtual)
        .build()
        .write_to(dir.path())?;

    let rss_before = status_kib("VmRSS:");
    let start = Instant::now();
    let executor = Executor::load(dir.path(), ExecutorConfig::builder().build()?)?;
    let load = start.elapsed();
    let rss_loaded = status_kib("VmRSS:");

    // One short request, so that an iteration reports the pool's size.
    let stream = executor.enqueue(GenerationRequest::new(vec![1, 2, 3, 4], 4))?;
    for item in stream.blocking_iter() {
        item?;
    }
    executor.refresh_stats();
    let blocks = executor.kv_cache_stats().map(|kv| kv.max_num_blocks);
    let rss_served = status_kib("VmRSS:");
    let start = Instant::now();
    drop(executor);
    let teardown = start.elapsed();

    println!("{model} on {gpu}, {tokens_per_block} tokens per block");
    match blocks {
        Some(blocks) => println!("  KV cache:          {blocks} blocks"),
        None => println!("  KV cache:          (no iteration stats yet)"),
    }
    println!("  load:              {:.1} ms", ms(load));
    println!("  teardown:          {:.1} ms", ms(teardown));
    println!("  RSS before load:   {}", mib(rss_before));
    println!("  RSS after load:    {}", mib(rss_loaded));
    println!("  RSS after request: {}", mib(rss_served));
    println!("  peak RSS:          {}", mib(status_kib("VmHWM:")));
    Ok(())
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
