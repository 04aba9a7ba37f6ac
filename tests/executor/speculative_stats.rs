//! Speculative decoding in the iteration statistics: `avg_num_decoded_tokens_per_iter` and
//! `SpecDecodingStats` count what the steps really decoded, and add up to the request's figures.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common;

use common::sim::{config, drain, engine_dir};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::TryRecvError;
use trtllm::sim::SimulatedSpeculation;
use trtllm::speculative::SpeculativeDecodingMode;
use trtllm::{Executor, GenerationRequest, IterationStats};

/// Every iteration entry up to the idle one that follows the request's last step (bounded wait).
fn iterations_until_idle(rx: &mut Receiver<Arc<IterationStats>>) -> Vec<Arc<IterationStats>> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        match rx.try_recv() {
            Ok(stats) => {
                let idle = stats.num_active_requests == 0 && stats.iter_latency_ms == 0.0;
                let worked = seen.iter().any(|s: &Arc<IterationStats>| s.num_active_requests > 0);
                seen.push(stats);
                if idle && worked {
                    return seen;
                }
            }
            Err(TryRecvError::Empty) => std::thread::sleep(Duration::from_millis(5)),
            Err(TryRecvError::Lagged(_)) => panic!("the test fell behind the iteration stats"),
            Err(TryRecvError::Closed) => break,
        }
    }
    panic!("no idle iteration entry after the request: {} entries seen", seen.len());
}

#[test]
fn medusa_iterations_report_the_tokens_and_drafts_each_step_decoded() {
    // Acceptance 1: the prompt's pass samples 1 token, then every step emits 4 drafts + 1.
    let dir = engine_dir(|b| b.speculation(SimulatedSpeculation::new(SpeculativeDecodingMode::Medusa, 4, 1.0)));
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let mut rx = executor.subscribe_iteration_stats();
    let out = drain(executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 21)).unwrap());
    let done = out.done();
    let iterations = iterations_until_idle(&mut rx);

    let spec: Vec<_> = iterations.iter().filter_map(|s| s.spec_decoding).collect();
    assert_eq!(spec.len(), iterations.len(), "a Medusa engine reports SpecDecodingStats every iteration");
    let drafted: i64 = spec.iter().map(|s| s.num_draft_tokens).sum();
    let accepted: i64 = spec.iter().map(|s| s.num_accepted_tokens).sum();
    let metrics = done.perf.expect("perf metrics").speculative;
    assert_eq!(drafted, i64::from(metrics.draft_tokens));
    assert_eq!(accepted, i64::from(metrics.accepted_draft_tokens));
    assert_eq!(accepted, 16);
    let verifying: Vec<_> = spec.iter().filter(|s| s.num_requests_with_draft_tokens > 0).collect();
    assert_eq!(verifying.len(), 4, "four verification steps");
    for s in &verifying {
        assert_eq!(s.num_requests_with_draft_tokens, 1);
        assert_eq!(s.acceptance_length, 5.0, "4 accepted drafts + 1 token per step");
        // A fixed iteration_ms: no drafter time is modelled.
        assert_eq!(s.draft_overhead, 0.0);
    }

    // The running average of the one generating request: 1 token after the prompt's pass, then
    // 6/2, 11/3, 16/4, 21/5 tokens per step.
    let averages: Vec<f32> = iterations
        .iter()
        .filter_map(|s| s.inflight_batching)
        .filter(|b| b.num_gen_requests > 0)
        .map(|b| b.avg_num_decoded_tokens_per_iter)
        .collect();
    let expected = [3.0, 11.0 / 3.0, 4.0, 21.0 / 5.0];
    assert_eq!(averages.len(), expected.len(), "{averages:?}");
    for (got, want) in averages.iter().zip(expected) {
        assert!((got - want).abs() < 1e-5, "{averages:?}");
    }
    assert!((done.avg_decoded_tokens_per_iter - 21.0 / 5.0).abs() < 1e-5);
}

#[test]
fn plain_iterations_decode_one_token_per_step_and_report_no_speculation() {
    let dir = engine_dir(|b| b);
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let mut rx = executor.subscribe_iteration_stats();
    drain(executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 8)).unwrap());
    let iterations = iterations_until_idle(&mut rx);
    assert!(iterations.iter().all(|s| s.spec_decoding.is_none()));
    let generating: Vec<_> =
        iterations.iter().filter_map(|s| s.inflight_batching).filter(|b| b.num_gen_requests > 0).collect();
    assert_eq!(generating.len(), 7, "one prompt pass, then 7 plain steps");
    assert!(generating.iter().all(|b| b.avg_num_decoded_tokens_per_iter == 1.0));
    // Iterations without a generating request average nothing.
    assert!(
        iterations
            .iter()
            .filter_map(|s| s.inflight_batching)
            .filter(|b| b.num_gen_requests == 0)
            .all(|b| b.avg_num_decoded_tokens_per_iter == 0.0)
    );
}

/// The drafter's time from first principles: `passes × bytes read / achieved bandwidth` (one
/// memory-bound request on an H100), with Llama-3.1-8B's shape.
fn expected_drafter_ms(mode: SpeculativeDecodingMode, draft_len: usize) -> f64 {
    let shape = trtllm::sim::ModelPreset::by_id("llama-3.1-8b").unwrap().shape;
    let gpu = trtllm::sim::GpuPreset::by_id("h100-sxm").unwrap();
    let (h, v) = (shape.hidden_size as f64, shape.vocab_size as f64);
    let (q, kv) = ((shape.num_heads * shape.head_size) as f64, (shape.num_kv_heads * shape.head_size) as f64);
    let (passes, params) = match mode {
        // 4 heads: a residual block and an LM head each, one pass.
        SpeculativeDecodingMode::Medusa => (1.0, draft_len as f64 * (h * h + v * h)),
        // A decoder layer, its 2h -> h input projection and the LM head, per tree level.
        _ => {
            let layer = h * q + 2.0 * h * kv + q * h + 3.0 * h * shape.intermediate_size as f64;
            (draft_len as f64, layer + 2.0 * h * h + v * h)
        }
    };
    passes * params * 2.0 / (gpu.bandwidth_gb_s * 1e9 * gpu.bandwidth_efficiency) * 1e3
}

#[test]
fn medusa_and_eagle_drafters_cost_what_their_weights_take_to_read() {
    use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine};
    for (mode, expected_ms) in [(SpeculativeDecodingMode::Medusa, 1.488), (SpeculativeDecodingMode::Eagle, 2.132)] {
        let engine = SimulatedEngine::builder()
            .model(ModelPreset::by_id("llama-3.1-8b").unwrap())
            .gpu("h100-sxm")
            .clock(ClockMode::Virtual)
            .speculation(SimulatedSpeculation::new(mode, 4, 0.7))
            .build();
        let dir = tempfile::tempdir().unwrap();
        engine.write_to(dir.path()).unwrap();
        let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
        let mut rx = executor.subscribe_iteration_stats();
        drain(executor.enqueue(GenerationRequest::new((1..=64).collect(), 16)).unwrap());
        let iterations = iterations_until_idle(&mut rx);
        let drafting: Vec<_> = iterations
            .iter()
            .filter_map(|s| s.spec_decoding.map(|d| (s.iter_latency_ms, d)))
            .filter(|(_, d)| d.iter_latency_ms > 0.0)
            .collect();
        // The prompt's pass drafts too, and every verification step.
        let steps = iterations.iter().filter(|s| s.spec_decoding.is_some_and(|d| d.num_draft_tokens > 0)).count();
        assert_eq!(drafting.len(), steps + 1, "{mode:?}");
        let model = expected_drafter_ms(mode, 4);
        assert!((model - expected_ms).abs() < 0.01, "{mode:?}: {model} ms from the shape");
        for (iteration_ms, d) in drafting {
            // One request: memory-bound, the same weights read whatever it drafts.
            assert!((d.iter_latency_ms - model).abs() < 1e-9, "{mode:?}: {} vs {model}", d.iter_latency_ms);
            assert!((d.draft_overhead - d.iter_latency_ms / iteration_ms).abs() < 1e-12);
            // A sixth to a quarter of a ~7 ms step plus the drafter.
            assert!(d.draft_overhead > 0.15 && d.draft_overhead < 0.35, "{mode:?}: {}", d.draft_overhead);
        }
    }
}
