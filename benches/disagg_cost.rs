//! The cost of disaggregation: TTFT split into prefill, the wait for the KV transfer, the transfer
//! and the first decode step, for 1p1d at 1k and 8k prompt tokens over NVLink 4 and over 400 Gb/s
//! InfiniBand, measured through the bench runner (one request at a time, in process, simulated
//! Llama-3.1-8B on an H100 in real time) beside the simulator's prediction (the timing model's
//! prefill, `trtllm::sim::transfer::kv_transfer`, one decode step).
//!
//! `cargo bench --bench disagg_cost` (`DISAGG_COST_REQUESTS=N` measured requests per row, default 6)

use std::time::Duration;

use trtllm::bench::{
    BenchTarget, DisaggBench, DisaggPrediction, EngineSimulation, LoadPlan, PromptSource, RunClock, RunInfo, Summary,
    Workload, run_point,
};
use trtllm::sim::{ModelPreset, SimulatedEngine};
use trtllm::{AsyncExecutor, CacheTransceiverConfig, ExecutorConfig, KvLinkPreset, ShutdownMode};

const PROMPTS: [usize; 2] = [1024, 8192];
const LINKS: [KvLinkPreset; 2] = [KvLinkPreset::NvLink4, KvLinkPreset::Ib400];
const OUTPUT: u32 = 8;

struct Row {
    prompt: usize,
    link: KvLinkPreset,
    predicted: [f64; 5],
    measured: [Option<f64>; 5],
    bytes_per_rank: f64,
}

async fn measure(dir: &std::path::Path, prompt: usize, link: KvLinkPreset, requests: usize) -> Row {
    let config = ExecutorConfig::builder()
        .cache_transceiver(CacheTransceiverConfig::new().kv_transfer_timeout(Duration::from_secs(60)))
        .sim_kv_link(link.link())
        .build()
        .unwrap();
    let prefill = AsyncExecutor::load(dir, config.clone()).await.unwrap();
    let decode = AsyncExecutor::load(dir, config).await.unwrap();
    let target = BenchTarget::Disaggregated(DisaggBench::in_process(vec![prefill.clone()], vec![decode.clone()]));
    let workload = Workload {
        source: PromptSource::Random { vocab_size: 32000, input_len: prompt, shared_prefix: 0 },
        output_len: Some(OUTPUT),
        fallback_output_len: OUTPUT,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: prompt as u64,
        guide: None,
        lengths: Default::default(),
    };
    let plan = LoadPlan { warmup: 1, ..LoadPlan::closed(1, requests) };
    let run = run_point(&target, &workload, 0, &plan, &RunClock::start(), |_| {}).await.unwrap();
    let summary = Summary::builder(RunInfo::default()).percentiles(&[50.0]).build(&run.records).unwrap();
    assert_eq!(summary.throughput.completed as usize, requests, "every request completes");
    let sim = EngineSimulation::read(dir).unwrap();
    let model = sim.perf_model().expect("a timed engine");
    let prediction = DisaggPrediction::new(
        model,
        prompt,
        sim.description().limits().max_num_tokens,
        sim.description().limits().tokens_per_block,
        link.link(),
        None,
    );
    let split = &summary.sections.disaggregation.as_ref().expect("a disaggregated run").ttft_split;
    let section = prediction.section(&serde_json::to_value(split).unwrap(), sim.time_scale());
    let parts = ["prefill", "transfer_wait", "transfer", "first_decode", "ttft"];
    let row = Row {
        prompt,
        link,
        predicted: parts.map(|p| section[p]["predicted_ms"].as_f64().unwrap_or(0.0)),
        measured: parts.map(|p| section[p]["measured_ms"].as_f64()),
        bytes_per_rank: prediction.transfer.bytes_per_rank,
    };
    prefill.shutdown(ShutdownMode::Cancel).await.unwrap();
    decode.shutdown(ShutdownMode::Cancel).await.unwrap();
    row
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let requests = std::env::var("DISAGG_COST_REQUESTS").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
    let dir = tempfile::tempdir().unwrap();
    SimulatedEngine::builder()
        .model(ModelPreset::by_id("llama-3.1-8b").unwrap())
        .gpu("h100-sxm")
        .max_input_len(8192)
        .max_seq_len(8192 + 64)
        .max_num_tokens(8192)
        .build()
        .write_to(dir.path())
        .unwrap();
    println!("1p1d, Llama-3.1-8B BF16 on a simulated H100 SXM, real time; {requests} requests per row, one at a time");
    println!("ms, predicted / measured mean (client clock; TTFT = the sum)");
    println!();
    println!("| prompt | link | KV per rank | prefill | transfer wait | transfer | first decode | TTFT |");
    println!("|---|---|---|---|---|---|---|---|");
    for prompt in PROMPTS {
        for link in LINKS {
            let row = measure(dir.path(), prompt, link, requests).await;
            let cells: Vec<String> = (0..5)
                .map(|i| match row.measured[i] {
                    Some(m) => format!("{:.2} / {:.2}", row.predicted[i], m),
                    None => format!("{:.2} / -", row.predicted[i]),
                })
                .collect();
            println!("| {} | {} | {:.0} MB | {} |", row.prompt, row.link, row.bytes_per_rank / 1e6, cells.join(" | "));
        }
    }
}
