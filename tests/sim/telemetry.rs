//! The simulated GPU telemetry per executor: each simulated executor keeps its own, so two in one
//! process (a disaggregated deployment runs several) never mix their activity, and each one's
//! FLOPs and bytes are its own engine's operations folded over the batches it ran.

use crate::common;

use trtllm::sim::telemetry::SimTelemetry;
use trtllm::sim::{BatchWork, ClockMode, ModelPreset, PerfModel, SimulatedEngine};
use trtllm::{Executor, ExecutorConfig, GenerationRequest};

const PROMPT: usize = 40;
const OUTPUT: usize = 6;

/// The FLOPs and bytes one request of `PROMPT` tokens generating `OUTPUT` tokens costs on `model`: its
/// prefill, then a decoding step per further token.
fn expected_load(model: &PerfModel) -> (f64, f64) {
    let mut works = vec![*BatchWork::default().add_context(PROMPT as f64, 0.0, true)];
    works.extend((1..OUTPUT).map(|i| *BatchWork::default().add_generation((PROMPT + i - 1) as f64, 1.0)));
    works.iter().map(|w| model.iteration_load(w).1).fold((0.0, 0.0), |(f, b), l| (f + l.flops, b + l.bytes))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

#[test]
fn two_executors_of_different_models_each_report_their_own_operations() {
    let engines = [
        SimulatedEngine::builder().clock(ClockMode::Virtual).build(),
        SimulatedEngine::builder()
            .model(ModelPreset::by_id("qwen2.5-7b").unwrap())
            .gpu("h100-sxm")
            .max_input_len(1024)
            .max_seq_len(2048)
            .clock(ClockMode::Virtual)
            .build(),
    ];
    let dirs: Vec<_> = engines
        .iter()
        .map(|engine| {
            let dir = tempfile::tempdir().unwrap();
            engine.write_to(dir.path()).unwrap();
            dir
        })
        .collect();
    let executors: Vec<Executor> =
        dirs.iter().map(|d| Executor::load(d.path(), ExecutorConfig::default()).unwrap()).collect();
    let telemetry: Vec<SimTelemetry> = executors.iter().map(|e| SimTelemetry::of(e).expect("simulated")).collect();
    // Both run at once, one request each.
    std::thread::scope(|scope| {
        for executor in &executors {
            scope.spawn(move || {
                let prompt = (0..PROMPT as u32).map(|i| 1 + i * 7 % 3000).collect();
                let drained =
                    common::sim::drain(executor.enqueue(GenerationRequest::new(prompt, OUTPUT as u32)).unwrap());
                assert_eq!(drained.done().completion_tokens as usize, OUTPUT);
            });
        }
    });
    let activity: Vec<_> = telemetry.iter().map(SimTelemetry::take).collect();
    for (i, engine) in engines.iter().enumerate() {
        let model = PerfModel::for_engine(engine).unwrap();
        let (flops, bytes) = expected_load(&model);
        let a = &activity[i];
        assert!(a.iterations >= OUTPUT as u64, "executor {i}: {a:?}");
        assert!(close(a.flops, flops), "executor {i}: {} FLOPs, its operations {flops}", a.flops);
        assert!(close(a.bytes, bytes), "executor {i}: {} bytes, its operations {bytes}", a.bytes);
        assert_eq!(telemetry[i].idle_memory_bytes(), model.weight_bytes_per_gpu());
        assert_eq!(telemetry[i].memory_total_bytes(), model.gpu().memory_bytes());
    }
    // The models differ by far more than any mixing could hide.
    assert!(activity[1].flops > 5.0 * activity[0].flops, "{activity:?}");
}
