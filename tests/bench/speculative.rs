//! The bench through the draft-target loop: every request runs in a `SpeculativeExecutor`, its
//! client-side times are recorded like any target's and the summary's `speculative` section
//! adds up the loop's rounds.

use crate::common;

use serde_json::Value;
use trtllm::AsyncExecutor;
use trtllm::bench::*;
use trtllm::sim::SimulatedSpeculation;
use trtllm::speculative::{DraftLength, SpeculativeDecodingMode, SpeculativeExecutor};

async fn draft_target(agreement: f64, length: DraftLength) -> (Vec<tempfile::TempDir>, BenchTarget) {
    let target_dir = common::sim::engine_dir(|b| {
        b.iteration_ms(1.0).speculation(SimulatedSpeculation::new(SpeculativeDecodingMode::DraftTokensExternal, 8, 0.7))
    });
    let draft_dir =
        common::sim::engine_dir(|b| b.iteration_ms(0.5).speculation(SimulatedSpeculation::draft_model(agreement)));
    let config = || common::sim::config().build().unwrap();
    let target = AsyncExecutor::load(target_dir.path(), config()).await.unwrap();
    let draft = AsyncExecutor::load(draft_dir.path(), config()).await.unwrap();
    let speculative = SpeculativeExecutor::new(draft, target, length).unwrap();
    (vec![target_dir, draft_dir], BenchTarget::DraftTarget(DraftTargetBench::new(speculative)))
}

fn workload(output_len: u32) -> Workload {
    Workload {
        source: PromptSource::Random { vocab_size: 1000, input_len: 16, shared_prefix: 0 },
        output_len: Some(output_len),
        fallback_output_len: output_len,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 5,
        guide: None,
        lengths: Default::default(),
    }
}

fn summary(run: &PointRun) -> Value {
    Summary::builder(RunInfo { max_concurrency: Some(4), ..RunInfo::default() }).build(&run.records).unwrap().to_json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loop_fills_the_speculative_section_and_the_latencies() {
    let (_dirs, target) = draft_target(0.7, DraftLength::fixed(4)).await;
    let plan = LoadPlan { warmup: 1, ..LoadPlan::closed(4, 8) };
    let run = run_point(&target, &workload(24), 0, &plan, &RunClock::start(), |_| {}).await.unwrap();
    let measured: Vec<&RequestRecord> = run.records.iter().filter(|r| r.is_measured()).collect();
    assert_eq!(measured.len(), 8);
    let (mut steps, mut accepted, mut drafted) = (0, 0, 0);
    for r in &measured {
        assert!(r.is_success(), "{:?}", r.error);
        assert_eq!(r.output_tokens, 24);
        assert_eq!(r.chunk_tokens(), 24, "the chunks carry every token");
        let s = r.speculative.expect("the loop's counts");
        // One chunk per round; each round emits its accepted drafts + the target's token.
        assert_eq!(r.chunks.len() as u64, s.decoding_steps);
        assert_eq!(s.decoding_steps + s.accepted_draft_tokens, 24);
        assert!(s.accepted_draft_tokens <= s.draft_tokens);
        assert!(r.ttft_s().is_some() && r.tpot_s().is_some());
        (steps, accepted, drafted) =
            (steps + s.decoding_steps, accepted + s.accepted_draft_tokens, drafted + s.draft_tokens);
    }
    assert!(accepted > 0 && accepted < drafted, "agreement 0.7 accepts some drafts, not all");
    let json = summary(&run);
    let section = &json["speculative"];
    assert_eq!(section["accepted_draft_tokens"], accepted);
    assert_eq!(section["draft_tokens"], drafted);
    assert_eq!(section["draft_tokens_wasted"], drafted - accepted);
    let per_step = section["tokens_per_step"].as_f64().unwrap();
    assert!((per_step - (8.0 * 24.0) / steps as f64).abs() < 1e-9, "{section}");
    // The iteration statistics are the target's.
    assert!(run.iterations.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adaptive_draft_that_always_agrees_takes_fewer_rounds_than_a_fixed_one() {
    let plan = LoadPlan { warmup: 0, ..LoadPlan::closed(1, 2) };
    let mut rounds = Vec::new();
    for length in [DraftLength::fixed(2), DraftLength::adaptive(2, 1, 8)] {
        let (_dirs, target) = draft_target(1.0, length).await;
        let run = run_point(&target, &workload(40), 0, &plan, &RunClock::start(), |_| {}).await.unwrap();
        let s = summary(&run);
        assert_eq!(s["speculative"]["acceptance_rate"], 1.0, "a draft that always agrees");
        rounds.push(run.records.iter().map(|r| r.speculative.unwrap().decoding_steps).sum::<u64>());
    }
    // Fixed 2: 3 tokens per round (13 rounds, then the last token alone). Adaptive: one more
    // draft after every fully accepted round, 3 + 4 + 5 + 6 + 7 + 8 tokens, then the last 7.
    assert_eq!(rounds, vec![2 * 14, 2 * 7]);
}
