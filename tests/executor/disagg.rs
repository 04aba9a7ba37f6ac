//! Disaggregated prefill and decode between two simulated executors in one process: the same tokens
//! as aggregated serving, the context side's blocks held until taken or expired, cancellation on
//! either leg during the transfer, refused pairings and handoffs, and nothing left in any map.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::sim::{config, drain, engine_dir, eventually};
use tempfile::TempDir;
use trtllm::sim::SimulatedEngineBuilder;
use trtllm::{
    CacheTransceiverConfig, Error, ErrorKind, Executor, FinishReason, GenerationRequest, HandoffError, KvHandoff,
    KvLink, RequestType, SamplingParams,
};

/// A context and a generation executor on the same engine, both with a cache transceiver.
struct Pair {
    _dir: TempDir,
    context: Executor,
    generation: Executor,
}

fn transceiver(timeout: Option<Duration>) -> CacheTransceiverConfig {
    let config = CacheTransceiverConfig::new();
    match timeout {
        Some(t) => config.kv_transfer_timeout(t),
        None => config,
    }
}

fn pair_with(
    tune: impl FnOnce(SimulatedEngineBuilder) -> SimulatedEngineBuilder,
    timeout: Option<Duration>,
    link: Option<KvLink>,
) -> Pair {
    let dir = engine_dir(tune);
    let load = |link: Option<KvLink>| {
        let mut c = config().cache_transceiver(transceiver(timeout)).request_stats_max_iterations(64);
        if let Some(link) = link {
            c = c.sim_kv_link(link);
        }
        Executor::load(dir.path(), c.build().unwrap()).expect("load")
    };
    let (context, generation) = (load(None), load(link));
    Pair { _dir: dir, context, generation }
}

fn pair() -> Pair {
    pair_with(|b| b, None, None)
}

/// A link over which a 100-token prompt's KV cache (2.25 MB on the test engine) takes `seconds` to move.
fn slow_link(seconds: f64) -> KvLink {
    KvLink { bandwidth_gb_s: 0.00225 / seconds, latency_us: 0.0, efficiency: 1.0 }
}

fn greedy(prompt: Vec<u32>, max_tokens: u32) -> GenerationRequest {
    GenerationRequest::new(prompt, max_tokens).with_sampling(SamplingParams::default().top_k(1))
}

/// KV blocks in use on `executor`, from its latest iteration stats.
fn used_blocks(executor: &Executor) -> i32 {
    executor.refresh_stats();
    executor.kv_cache_stats().map_or(0, |s| s.used_num_blocks)
}

#[test]
fn a_greedy_request_run_disaggregated_gives_the_aggregated_tokens() {
    let p = pair();
    let prompt: Vec<u32> = (1..=70).collect();
    let aggregated = drain(p.generation.enqueue(greedy(prompt.clone(), 12)).unwrap());
    assert_eq!(aggregated.done().completion_tokens, 12);

    let prefill = drain(p.context.enqueue_prefill(greedy(prompt.clone(), 12)).unwrap());
    assert_eq!(prefill.after_terminal, 0);
    let context_final = prefill.done();
    assert_eq!(context_final.token_ids(), &aggregated.done().token_ids()[..1], "the context leg makes the first token");
    assert_eq!(context_final.finish_reason, FinishReason::NotFinished, "generation goes on elsewhere");
    let handoff = context_final.handoff.clone().expect("the context-only final carries the handoff");
    assert_eq!(handoff.first_tokens(), &aggregated.done().token_ids()[..1]);
    assert_eq!(handoff.prompt_tokens(), Some(70));
    assert_eq!(handoff.engine(), Some(p.context.fingerprint()));

    // The handoff travels as bytes.
    let handoff = KvHandoff::from_bytes(&handoff.to_bytes()).unwrap();
    let mut stats = p.generation.subscribe_request_stats();
    let decoded = drain(p.generation.decode(greedy(prompt, 12), handoff).unwrap());
    assert_eq!(decoded.after_terminal, 0);
    let done = decoded.done();
    assert_eq!(done.token_ids(), aggregated.done().token_ids(), "disaggregated tokens equal aggregated ones");
    assert_eq!(decoded.tokens(), done.token_ids(), "the stream's chunks carry every token, the first included");
    assert_eq!(done.finish_reason, FinishReason::Length);
    let perf = done.perf.expect("perf metrics");
    let (start, end) = (perf.kv_transfer_start.expect("transfer start"), perf.kv_transfer_end.expect("transfer end"));
    assert!(end >= start && perf.kv_cache_size > 0, "{perf:?}");

    // The generation side reports the transfer in its request stats too.
    let mut seen = None;
    assert!(eventually(Duration::from_secs(5), || {
        p.generation.refresh_stats();
        while let Ok(iteration) = stats.try_recv() {
            seen = seen.or(iteration.requests.iter().find_map(|r| r.dis_serving));
        }
        seen.is_some()
    }));
    let seen = seen.unwrap();
    assert_eq!(seen.kv_cache_size, perf.kv_cache_size);
    assert!(seen.kv_cache_transfer_ms >= 0.0);

    // Nothing stays in any route map, and the context side's blocks went with the transfer.
    assert_eq!((p.context.in_flight(), p.generation.in_flight()), (0, 0));
    assert!(eventually(Duration::from_secs(5), || used_blocks(&p.context) == 0), "context blocks still held");
}

#[test]
fn a_handoff_is_good_once() {
    let p = pair();
    let request = greedy(vec![3, 4, 5, 6], 6);
    let prefilled = p.context.prefill(request.clone()).unwrap();
    let first = drain(p.generation.decode(request.clone(), prefilled.handoff.clone()).unwrap());
    assert_eq!(first.done().completion_tokens, 6);
    let again = drain(p.generation.decode(request, prefilled.handoff).unwrap());
    match &again.terminal {
        Err(Error::Handoff(HandoffError::Unavailable(reason))) => {
            assert!(reason.contains("holds no KV blocks"), "{reason}")
        }
        other => panic!("a taken handoff must be refused, got {other:?}"),
    }
    assert_eq!(again.terminal.as_ref().unwrap_err().kind().grpc_code().0, "FAILED_PRECONDITION");
    assert_eq!(p.generation.in_flight(), 0);
}

#[test]
fn a_handoff_never_taken_frees_the_context_blocks_after_the_timeout() {
    let p = pair_with(|b| b, Some(Duration::from_millis(300)), None);
    let before = used_blocks(&p.context);
    let mut iterations = p.context.subscribe_iteration_stats();
    let request = greedy((1..=100).collect(), 8);
    let prefilled = p.context.prefill(request.clone()).unwrap();
    // Held for the transfer: 100 prompt tokens fill 4 blocks of 32 tokens, still in use after the final.
    let mut most = 0;
    assert!(eventually(Duration::from_secs(5), || {
        p.context.refresh_stats();
        while let Ok(stats) = iterations.try_recv() {
            most = most.max(stats.kv_cache.map_or(0, |kv| kv.used_num_blocks));
        }
        most >= before + 4
    }));
    assert!(
        eventually(Duration::from_secs(10), || used_blocks(&p.context) == before),
        "the context side still holds the blocks after the timeout"
    );
    // Expired: the generation side refuses it.
    let late = drain(p.generation.decode(request, prefilled.handoff).unwrap());
    assert!(matches!(late.terminal, Err(Error::Handoff(HandoffError::Unavailable(_)))), "{:?}", late.terminal);
    assert_eq!((p.context.in_flight(), p.generation.in_flight()), (0, 0));
}

#[test]
fn cancelling_the_generation_leg_during_the_transfer_ends_it_and_frees_both_sides() {
    // Long enough that the cancel always lands during the transfer.
    let p = pair_with(|b| b, None, Some(slow_link(30.0)));
    let request = greedy((1..=100).collect(), 8);
    let prefilled = p.context.prefill(request.clone()).unwrap();
    let held = used_blocks(&p.context);
    assert!(held > 0);
    let stream = p.generation.decode(request.clone(), prefilled.handoff.clone()).unwrap();
    // The transfer of 100 tokens over the slow link takes far longer than this.
    assert!(eventually(Duration::from_secs(2), || used_blocks(&p.generation) > 0), "transfer never started");
    stream.cancel();
    let out = drain(stream);
    assert_eq!(out.done().finish_reason, FinishReason::Cancelled);
    assert!(out.done().token_ids().is_empty());
    assert_eq!(out.after_terminal, 0);
    assert_eq!(p.generation.in_flight(), 0);
    assert!(eventually(Duration::from_secs(5), || used_blocks(&p.generation) == 0), "receiver blocks kept");
    // The abandoned transfer releases the context side's blocks at once.
    assert!(eventually(Duration::from_secs(5), || used_blocks(&p.context) == 0), "context blocks kept");
}

#[test]
fn cancelling_the_context_leg_during_the_transfer_fails_the_generation_leg() {
    // Long enough for the cancel to land during the transfer on a busy host, short enough to wait out.
    let p = pair_with(|b| b, None, Some(slow_link(3.0)));
    let request = greedy((1..=100).collect(), 8);
    let prefilled = p.context.prefill(request.clone()).unwrap();
    let stream = p.generation.decode(request, prefilled.handoff).unwrap();
    assert!(eventually(Duration::from_secs(2), || used_blocks(&p.generation) > 0), "transfer never started");
    p.context.cancel(prefilled.output.request_id).unwrap();
    assert!(eventually(Duration::from_secs(5), || used_blocks(&p.context) == 0), "a cancel releases held blocks");
    let out = drain(stream);
    match &out.terminal {
        Err(Error::Handoff(HandoffError::Unavailable(reason))) => assert!(reason.contains("released"), "{reason}"),
        other => panic!("expected the transfer to fail, got {other:?}"),
    }
    assert_eq!(out.after_terminal, 0);
    assert_eq!((p.context.in_flight(), p.generation.in_flight()), (0, 0));
    assert!(eventually(Duration::from_secs(5), || used_blocks(&p.generation) == 0));
}

#[test]
fn engines_that_do_not_pair_are_refused() {
    let context_dir = engine_dir(|b| b);
    let load = |dir: &std::path::Path| {
        Executor::load(dir, config().cache_transceiver(CacheTransceiverConfig::new()).build().unwrap()).unwrap()
    };
    let context = load(context_dir.path());
    let request = greedy(vec![1, 2, 3], 4);
    let prefilled = context.prefill(request.clone()).unwrap();
    type Tune = Box<dyn Fn(SimulatedEngineBuilder) -> SimulatedEngineBuilder>;
    let cases: [(&str, Tune); 3] = [
        ("model", Box::new(|b| b.num_layers(4))),
        ("tp_size", Box::new(|b| b.tensor_parallel(2))),
        ("kv_cache_dtype", Box::new(|b| b.kv_cache_dtype(trtllm::sim::KvCacheDtype::Int8))),
    ];
    for (what, tune) in cases {
        let dir = engine_dir(tune);
        let generation = load(dir.path());
        let err = generation.decode(request.clone(), prefilled.handoff.clone()).unwrap_err();
        match &err {
            Error::Handoff(HandoffError::EngineMismatch { what: differs, .. }) => assert_eq!(*differs, what),
            other => panic!("{what}: expected a mismatch, got {other:?}"),
        }
        assert_eq!(err.kind(), ErrorKind::Configuration);
        assert_eq!(err.kind().grpc_code().0, "FAILED_PRECONDITION");
        // Without this crate's fingerprint (a handoff from its parts), the executor refuses it itself.
        let bare = KvHandoff::from_parts(
            prefilled.handoff.context_request_id(),
            prefilled.handoff.first_tokens().to_vec(),
            prefilled.handoff.state().to_vec(),
        );
        let out = drain(generation.decode(request.clone(), bare).unwrap());
        match &out.terminal {
            Err(Error::Handoff(HandoffError::Unavailable(reason))) => {
                assert!(reason.contains("does not pair"), "{reason}")
            }
            other => panic!("{what}: expected the executor to refuse, got {other:?}"),
        }
        assert_eq!(generation.in_flight(), 0);
    }
}

#[test]
fn corrupt_handoff_bytes_are_an_invalid_argument() {
    let p = pair();
    let request = greedy(vec![5, 6, 7], 4);
    let prefilled = p.context.prefill(request.clone()).unwrap();
    let mut bytes = prefilled.handoff.to_bytes();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    let err = Error::from(KvHandoff::from_bytes(&bytes).unwrap_err());
    assert!(matches!(err, Error::Handoff(HandoffError::Corrupt(_))));
    assert_eq!(err.kind().grpc_code().0, "INVALID_ARGUMENT");
    // A state the executor cannot read (as trtllm-serve's kv_cache_blocks might carry) is refused the same way.
    let garbage = KvHandoff::from_parts(prefilled.handoff.context_request_id(), vec![1], b"not a state".to_vec());
    let out = drain(p.generation.decode(request, garbage).unwrap());
    let err = out.terminal.unwrap_err();
    assert!(matches!(err, Error::Handoff(HandoffError::Corrupt(_))), "{err:?}");
    assert_eq!(err.kind().grpc_code().0, "INVALID_ARGUMENT");
    assert_eq!(p.generation.in_flight(), 0);
}

#[test]
fn executors_without_a_transceiver_run_no_disaggregated_request() {
    let dir = engine_dir(|b| b);
    let executor = Executor::load(dir.path(), config().build().unwrap()).unwrap();
    let err = executor.prefill(greedy(vec![1, 2], 4)).unwrap_err();
    assert!(matches!(err, Error::Handoff(HandoffError::NoTransceiver(_))), "{err:?}");
    assert_eq!(err.kind().grpc_code().0, "FAILED_PRECONDITION");
    // The executor itself refuses one enqueued directly.
    let raw = drain(executor.enqueue(greedy(vec![1, 2], 4).with_request_type(RequestType::ContextOnly)).unwrap());
    assert!(matches!(raw.terminal, Err(Error::RequestRejected(ref m)) if m.contains("CacheTransceiverConfig")));
    assert_eq!(executor.in_flight(), 0);
}

/// Where `prefill_in_a_child_process` finds its engine, and its transfer timeout.
const CHILD_ENGINE_DIR: &str = "TRTLLM_TEST_DISAGG_CHILD_ENGINE";
const CHILD_TIMEOUT_MS: &str = "TRTLLM_TEST_DISAGG_CHILD_TIMEOUT_MS";

fn cross_process_request() -> GenerationRequest {
    greedy((1..=70).collect(), 12)
}

/// The context side of `a_handoff_crosses_a_process_boundary`, run in a child process: prefills and prints the
/// handoff's bytes. Does nothing when run on its own.
#[test]
#[ignore = "run by a_handoff_crosses_a_process_boundary in a child process"]
fn prefill_in_a_child_process() {
    let Ok(dir) = std::env::var(CHILD_ENGINE_DIR) else { return };
    let timeout = std::env::var(CHILD_TIMEOUT_MS).ok().and_then(|t| t.parse().ok()).map(Duration::from_millis);
    let context = Executor::load(dir, config().cache_transceiver(transceiver(timeout)).build().unwrap()).unwrap();
    let prefilled = context.prefill(cross_process_request()).unwrap();
    let hex: String = prefilled.handoff.to_bytes().iter().map(|b| format!("{b:02x}")).collect();
    println!("HANDOFF {hex}");
}

/// Runs the prefill in another process (this test binary again) and returns its handoff.
fn prefill_in_another_process(dir: &Path, timeout_ms: Option<u64>) -> KvHandoff {
    let mut command = Command::new(std::env::current_exe().expect("the test binary"));
    command
        .args(["--ignored", "--exact", "executor::disagg::prefill_in_a_child_process", "--nocapture"])
        .env(CHILD_ENGINE_DIR, dir);
    if let Some(ms) = timeout_ms {
        command.env(CHILD_TIMEOUT_MS, ms.to_string());
    }
    let output = command.output().expect("run the child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let hex = stdout.lines().find_map(|l| l.strip_prefix("HANDOFF ")).unwrap_or_else(|| panic!("no handoff: {stdout}"));
    let bytes: Vec<u8> =
        (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex")).collect();
    KvHandoff::from_bytes(&bytes).expect("the handoff decodes")
}

#[test]
fn a_handoff_crosses_a_process_boundary() {
    let dir = engine_dir(|b| b);
    let generation =
        Executor::load(dir.path(), config().cache_transceiver(CacheTransceiverConfig::new()).build().unwrap()).unwrap();
    let aggregated = drain(generation.enqueue(cross_process_request()).unwrap());
    let handoff = prefill_in_another_process(dir.path(), None);
    let decoded = drain(generation.decode(cross_process_request(), handoff).unwrap());
    assert_eq!(decoded.done().token_ids(), aggregated.done().token_ids(), "decoded from another process's prefill");
    // Across processes the receiver judges expiry by the state's wall-clock deadline.
    let expiring = prefill_in_another_process(dir.path(), Some(1));
    std::thread::sleep(Duration::from_millis(20));
    let late = drain(generation.decode(cross_process_request(), expiring).unwrap());
    match &late.terminal {
        Err(Error::Handoff(HandoffError::Unavailable(reason))) => assert!(reason.contains("expired"), "{reason}"),
        other => panic!("an expired handoff must be refused, got {other:?}"),
    }
    assert_eq!(generation.in_flight(), 0);
}
