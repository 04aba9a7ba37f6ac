//! How fast the simulator itself runs: simulated executor iterations per second at batch 256 on the
//! virtual clock (no sleeping), with non-streaming requests (one response each at the end: the
//! executor loop alone) and with streaming requests (256 token responses per iteration through the
//! Rust bindings), and how much faster than the simulated GPU that is. (An H200, so that the KV cache
//! holds all 256 requests at their full length.)
//!
//! The rate is taken over the window in which all 256 requests are decoding: from the iteration in
//! which the last one started to the iteration in which the first one finished (just before its final
//! response arrived). The virtual clock is held until all 256 are enqueued, so that a loaded host
//! cannot shorten the window.
//!
//! `cargo bench --bench sim_speed`

use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine};
use trtllm::{AsyncExecutor, ExecutorConfig, GenerationRequest};

const BATCH: usize = 256;
const PROMPT: usize = 128;
const OUTPUT: u32 = 2000;

struct Window {
    iterations: u64,
    wall_s: f64,
    simulated_s: f64,
}

async fn run(streaming: bool) -> Window {
    let dir = tempfile::tempdir().unwrap();
    SimulatedEngine::builder()
        .model(ModelPreset::by_id("llama-3.1-8b").unwrap())
        .gpu("h200")
        .max_batch_size(BATCH)
        .max_input_len(1024)
        .max_seq_len(4096)
        .clock(ClockMode::Virtual)
        .build()
        .write_to(dir.path())
        .unwrap();
    let config = ExecutorConfig::builder().stream_buffer(2 * OUTPUT as usize).build().unwrap();
    let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
    // No iteration starts until all requests are in: on a loaded host, enqueueing 256 requests could
    // otherwise take longer than the virtual clock needs to finish the first ones.
    let sim = executor.executor().sim_control().expect("a virtual-clock engine");
    let hold = sim.hold_arrivals(sim.now().unwrap()).unwrap();
    let mut finals: FuturesUnordered<_> = (0..BATCH)
        .map(|i| {
            let prompt: Vec<u32> = (0..PROMPT as u32).map(|t| 1 + (t * 31 + i as u32 * 7) % 30000).collect();
            let request = GenerationRequest::new(prompt, OUTPUT).with_streaming(streaming).with_perf_metrics(true);
            executor.enqueue(request).unwrap().collect_final()
        })
        .collect();
    sim.release_hold(hold).unwrap();
    let all_enqueued = Instant::now();
    let mut perf = Vec::new();
    let mut first_final = None;
    while let Some(done) = finals.next().await {
        first_final.get_or_insert_with(Instant::now);
        perf.push(done.unwrap().perf.unwrap());
    }
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
    let last_start = perf.iter().filter_map(|p| p.first_iter).max().unwrap();
    let first_end = perf.iter().filter_map(|p| p.last_iter).min().unwrap();
    let last_arrival = perf.iter().filter_map(|p| p.first_scheduled).max().unwrap();
    let first_done = perf.iter().filter_map(|p| p.last_token).min().unwrap();
    assert!(first_end > last_start + 100, "the requests did not overlap: enqueueing took too long");
    Window {
        iterations: first_end - last_start,
        wall_s: (first_final.unwrap() - all_enqueued).as_secs_f64(),
        simulated_s: (first_done - last_arrival).as_secs_f64(),
    }
}

fn main() {
    println!("build profile: {}", env!("TRTLLM_BUILD_PROFILE"));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    println!(
        "Simulator speed at batch {BATCH}: Llama-3.1-8B on a simulated H200, virtual clock, {PROMPT}+{OUTPUT} tokens per request"
    );
    for streaming in [false, true] {
        let window = runtime.block_on(run(streaming));
        println!(
            "  {:<13} {:>5} iterations in {:.3} s = {:>6.0} iterations/s ({:.1} simulated s: {:.0}x faster than the GPU)",
            if streaming { "streaming" } else { "non-streaming" },
            window.iterations,
            window.wall_s,
            window.iterations as f64 / window.wall_s,
            window.simulated_s,
            window.simulated_s / window.wall_s
        );
    }
}
