//! The simulated GPU through the Rust API: engines built from model and GPU presets, the Rust performance
//! model agreeing with the C++ simulator run on its virtual clock, and the A6000 calibration.

use crate::common;

use std::time::Duration;

use trtllm::sim::perf_model::DEFAULT_FREE_GPU_MEMORY_FRACTION;
use trtllm::sim::{ClockMode, KvCacheDtype, ModelPreset, PerfModel, SimulatedEngine, WeightDtype};
use trtllm::{Executor, GenerationRequest};

/// A planning engine: the preset model on the preset GPU, virtual clock.
fn planning_engine(model: &str, gpu: &str) -> trtllm::sim::SimulatedEngineBuilder {
    SimulatedEngine::builder()
        .model(ModelPreset::by_id(model).expect("model preset"))
        .gpu(gpu)
        .max_input_len(4096)
        .max_seq_len(4608)
        .clock(ClockMode::Virtual)
}

/// Executor-side single-stream figures of one request: (TTFT ms, TPOT ms).
fn measure(executor: &Executor, prompt: usize, output: usize) -> (f64, f64) {
    // A prompt no earlier request shares a block with: block reuse would skip part of its prefill,
    // and the model predicts a cold one.
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let first = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tokens = (0..prompt as u32).map(|i| (first * 7919 + i * 31) % 30000).collect();
    let request = GenerationRequest::new(tokens, output as u32).with_perf_metrics(true);
    let drained = common::sim::drain(executor.enqueue(request).expect("enqueue"));
    let done = drained.done();
    assert_eq!(done.completion_tokens as usize, output);
    let perf = done.perf.as_ref().expect("perf metrics");
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let arrival = perf.arrival.expect("arrival");
    let first = perf.first_token.expect("first token");
    let last = perf.last_token.expect("last token");
    (ms(first - arrival), ms(last - first) / (output - 1) as f64)
}

fn load(engine: &SimulatedEngine) -> (tempfile::TempDir, Executor) {
    let dir = tempfile::tempdir().expect("temp dir");
    engine.write_to(dir.path()).expect("write engine");
    let executor = Executor::load(dir.path(), common::sim::config().build().unwrap()).expect("load");
    (dir, executor)
}

fn assert_close(what: &str, simulated: f64, predicted: f64) {
    // The simulator's clock has nanosecond ticks; everything else is the same double arithmetic.
    assert!(
        (simulated - predicted).abs() <= 1e-6 * predicted.max(1.0),
        "{what}: simulator {simulated} ms, model {predicted} ms"
    );
}

#[test]
fn perf_model_agrees_with_the_virtual_clock_simulator() {
    let cases = [
        planning_engine("qwen2.5-7b", "rtx-a6000"),
        planning_engine("tinyllama-1.1b", "l40s").max_input_len(2000).max_seq_len(2048),
        planning_engine("llama-3.1-8b", "h100-sxm")
            .tensor_parallel(2)
            .dtype(WeightDtype::Fp8)
            .kv_cache_dtype(KvCacheDtype::Fp8),
        planning_engine("llama-3.1-70b", "a100-sxm-80gb").tensor_parallel(4),
    ];
    for builder in cases {
        // A 2,048-token budget splits the longest prompt into chunks.
        let engine = builder.max_num_tokens(2048).build();
        let model = PerfModel::for_engine(&engine).expect("perf model");
        let (_dir, executor) = load(&engine);
        for prompt in [128, 1000, 3000].into_iter().filter(|&p| p <= engine.limits.max_input_len) {
            let (ttft, tpot) = measure(&executor, prompt, 32);
            let predicted =
                model.single_stream(prompt, 32, engine.limits.max_num_tokens, engine.limits.tokens_per_block);
            let label = format!("{} on {} tp{} prompt {prompt}", engine.model_name, engine.gpu, engine.tp_size);
            assert_close(&format!("{label} TTFT"), ttft, predicted.ttft_ms);
            assert_close(&format!("{label} TPOT"), tpot, predicted.tpot_ms);
        }
        executor.shutdown(trtllm::ShutdownMode::Cancel).expect("shutdown");
    }
}

#[test]
fn a6000_calibration_reproduces_qwen_decode_rate() {
    // The reference: Qwen2.5-7B-Instruct BF16 on one RTX A6000 decodes "about 44" tokens/s (43.5 to 44.5)
    // with ~360- and ~2,200-token prompts and 256 output tokens.
    let (_dir, executor) = load(&planning_engine("qwen2.5-7b", "rtx-a6000").build());
    for prompt in [360, 2200] {
        let (_, tpot) = measure(&executor, prompt, 256);
        let rate = 1000.0 / tpot;
        assert!((43.5..=44.5).contains(&rate), "prompt {prompt}: {rate:.2} tokens/s");
    }
}

#[test]
fn kv_capacity_comes_from_gpu_memory_unless_fixed() {
    let engine = planning_engine("llama-3.1-8b", "h100-sxm").build();
    let model = engine.perf_model().expect("fits");
    let reserve = model.runtime_reserve_bytes(
        engine.limits.max_num_tokens,
        engine.limits.max_batch_size,
        engine.limits.max_beam_width,
    );
    let tokens = model.kv_capacity_tokens(DEFAULT_FREE_GPU_MEMORY_FRACTION, reserve).unwrap();
    let blocks = |engine: &SimulatedEngine| {
        let (_dir, executor) = load(engine);
        let _ = measure(&executor, 16, 2);
        assert!(common::sim::eventually(Duration::from_secs(5), || executor.kv_cache_stats().is_some()));
        executor.kv_cache_stats().unwrap().max_num_blocks as u64
    };
    assert_eq!(blocks(&engine), tokens / engine.limits.tokens_per_block as u64);
    // Eight billion parameters in BF16 leave about 55 GiB of an H100 for the cache: ~450k tokens.
    assert!((400_000..500_000).contains(&tokens), "{tokens}");
    let fixed = SimulatedEngine { kv_cache_max_tokens: Some(3200), ..engine };
    assert_eq!(blocks(&fixed), 100);
}

#[test]
fn fixed_iteration_ms_still_overrides_the_model() {
    let (_dir, executor) = load(&planning_engine("llama-3.1-70b", "h200").iteration_ms(3.0).build());
    let (ttft, tpot) = measure(&executor, 1000, 8);
    assert_close("TTFT", ttft, 3.0);
    assert_close("TPOT", tpot, 3.0);
}

#[test]
fn engines_the_gpu_cannot_run_are_refused() {
    let fp8_on_ampere = planning_engine("llama-3.1-8b", "rtx-a6000").dtype(WeightDtype::Fp8).build();
    let err = fp8_on_ampere.perf_model().unwrap_err();
    assert!(err.to_string().contains("FP8 tensor cores"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    fp8_on_ampere.write_to(dir.path()).unwrap();
    let err = Executor::load(dir.path(), Default::default()).unwrap_err();
    assert!(err.to_string().contains("FP8 tensor cores"), "{err}");

    let too_big = planning_engine("llama-3.1-70b", "h100-sxm").build();
    let err = too_big.perf_model().unwrap_err();
    assert!(err.to_string().contains("does not fit"), "{err}");
    too_big.write_to(dir.path()).unwrap();
    let err = Executor::load(dir.path(), Default::default()).unwrap_err();
    assert!(err.to_string().contains("does not fit"), "{err}");
}

#[test]
fn builder_writes_a_tensorrt_llm_shaped_config() {
    let dir = tempfile::tempdir().unwrap();
    let engine = planning_engine("llama-3.1-70b", "h100-sxm")
        .tensor_parallel(4)
        .dtype(WeightDtype::Fp8)
        .kv_cache_dtype(KvCacheDtype::Fp8)
        .max_batch_size(64)
        .gpu_override("mfu", 0.5)
        .build();
    engine.write_to(dir.path()).unwrap();
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap()
    };
    let config = read("config.json");
    let pretrained = &config["pretrained_config"];
    assert_eq!(pretrained["architecture"], "LlamaForCausalLM");
    assert_eq!(pretrained["dtype"], "bfloat16");
    assert_eq!(pretrained["intermediate_size"], 28672);
    assert_eq!(pretrained["num_key_value_heads"], 8);
    assert_eq!(pretrained["head_size"], 128);
    assert_eq!(pretrained["max_position_embeddings"], 131072);
    assert_eq!(pretrained["mapping"]["tp_size"], 4);
    assert_eq!(pretrained["mapping"]["world_size"], 4);
    assert_eq!(pretrained["quantization"]["quant_algo"], "FP8");
    assert_eq!(pretrained["quantization"]["kv_cache_quant_algo"], "FP8");
    assert_eq!(config["build_config"]["max_batch_size"], 64);
    assert_eq!(config["build_config"]["plugin_config"]["paged_kv_cache"], true);
    assert_eq!(config["build_config"]["plugin_config"]["tokens_per_block"], 32);
    let simulation = read("simulation.json");
    assert_eq!(simulation["gpu"], "h100-sxm");
    assert_eq!(simulation["clock"], "virtual");
    assert_eq!(simulation["gpu_overrides"]["mfu"], 0.5);
    assert!(simulation.get("iteration_ms").is_none());
    let parsed = trtllm::EngineConfig::from_dir(dir.path()).unwrap();
    assert_eq!((parsed.tp_size(), parsed.world_size(), parsed.num_layers()), (4, 4, 80));
    assert_eq!(parsed.model_name(), "meta-llama/Llama-3.1-70B-Instruct");
    // The simulator loads it.
    let executor = Executor::load(dir.path(), Default::default()).expect("load");
    executor.shutdown(trtllm::ShutdownMode::Cancel).unwrap();
}

#[test]
fn cuda_graphs_cut_the_launch_cost_from_simulation_json_or_the_executor_config() {
    // A small model at batch 1, launched eagerly at 9 us per kernel (what PyTorch measured on the H100; the
    // preset's TensorRT enqueue of 3 us hides under the 4 us kernel floor): kernel launches bound the step.
    let eager = planning_engine("tinyllama-1.1b", "h100-sxm").gpu_override("launch_us", 9.0).build();
    let graphs = SimulatedEngine { cuda_graphs: true, ..eager.clone() };
    let text = serde_json::to_string(&graphs.simulation_json()).unwrap();
    assert!(text.contains("\"cuda_graphs\":true"), "{text}");

    let (_, eager_tpot) = measure(&load(&eager).1, 128, 16);
    let (_, graphs_tpot) = measure(&load(&graphs).1, 128, 16);
    let predicted = |engine: &SimulatedEngine| {
        let model = PerfModel::for_engine(engine).expect("perf model");
        model.single_stream(128, 16, engine.limits.max_num_tokens, engine.limits.tokens_per_block).tpot_ms
    };
    assert_close("eager TPOT", eager_tpot, predicted(&eager));
    assert_close("graphs TPOT", graphs_tpot, predicted(&graphs));
    // Graph replay launches each kernel for 1 us instead of 9 us of host enqueue: hundreds of kernels per step.
    let saved = eager_tpot - graphs_tpot;
    println!(
        "tinyllama-1.1b on h100-sxm, batch 1: TPOT {eager_tpot:.3} ms eager, {graphs_tpot:.3} ms with CUDA graphs"
    );
    assert!(saved > 0.1 * eager_tpot, "graphs save {saved:.3} ms of {eager_tpot:.3} ms");

    // The executor's CUDA graph mode (`trtllm bench --cuda-graphs`) turns them on for an engine without the setting.
    let dir = tempfile::tempdir().unwrap();
    eager.write_to(dir.path()).unwrap();
    let config = common::sim::config().cuda_graph_mode(true).build().unwrap();
    let executor = Executor::load(dir.path(), config).expect("load");
    let (_, tpot) = measure(&executor, 128, 16);
    assert_close("executor cuda_graph_mode TPOT", tpot, graphs_tpot);
}
