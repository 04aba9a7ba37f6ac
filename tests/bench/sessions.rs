//! Multi-turn sessions: every turn resends the previous prompt, its answer and a new message,
//! and the executor's KV block reuse serves the history (in process, over gRPC, on the virtual
//! clock).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use trtllm::AsyncExecutor;
use trtllm::bench::*;
use trtllm::sim::ClockMode;

/// The engine's KV block (reuse comes in whole blocks), from its config.json.
fn block_of(dir: &std::path::Path) -> u64 {
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    config["build_config"]["plugin_config"]["tokens_per_block"].as_u64().expect("tokens_per_block")
}

fn sessions(turns: u32, think_time: Duration) -> Workload {
    let plan = SessionPlan {
        script: SessionScript::Synthetic {
            vocab_size: 1000,
            first_len: 40,
            turn_len: 16,
            shared_prefix: 0,
            words: None,
        },
        turns,
        think_time,
        tokenizer: None,
        chat_template: false,
    };
    Workload {
        source: PromptSource::Sessions(Arc::new(plan)),
        output_len: Some(16),
        fallback_output_len: 16,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 5,
        guide: None,
        lengths: Default::default(),
    }
}

fn engine(clock: ClockMode) -> tempfile::TempDir {
    common::sim::engine_dir(|b| b.max_input_len(400).clock(clock))
}

/// What block reuse should serve of a turn: the previous turn's prompt and answer, in whole
/// blocks, never the whole prompt (its last token is always computed).
fn expected_cached(history: u64, prompt: u64, block: u64) -> u64 {
    (history / block * block).min(prompt - 1)
}

/// Checks every session in `records`: turns 1..=n in order, each prompt the previous prompt
/// plus its answer plus a 16-token message, and the history served from the KV cache.
fn check_history(records: &[RequestRecord], turns: u32, block: u64) {
    let mut by_session: std::collections::BTreeMap<u64, Vec<&RequestRecord>> = Default::default();
    for r in records.iter().filter(|r| r.is_measured()) {
        by_session.entry(r.session.expect("a session request has its session")).or_default().push(r);
    }
    assert!(by_session.len() >= 2, "{} sessions", by_session.len());
    let mut follow_ups = 0;
    for (session, mut turns_seen) in by_session {
        turns_seen.sort_by_key(|r| r.turn);
        for (k, pair) in turns_seen.windows(2).enumerate() {
            let (before, after) = (pair[0], pair[1]);
            assert_eq!(after.turn, Some(before.turn.unwrap() + 1), "session {session}: turns in order");
            let history = before.prompt_tokens + before.output_tokens;
            assert_eq!(after.prompt_tokens, history + 16, "session {session} turn {}", k + 2);
            assert_eq!(
                after.cached_tokens,
                expected_cached(history, after.prompt_tokens, block),
                "session {session} turn {}: the history is reused",
                k + 2
            );
            follow_ups += 1;
        }
        assert_eq!(turns_seen[0].cached_tokens, 0, "session {session}: a cold first turn");
        assert!(turns_seen.len() <= turns as usize);
    }
    assert!(follow_ups > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_turn_sends_the_previous_prompt_its_answer_and_a_new_message() {
    let dir = engine(ClockMode::Real);
    let executor = AsyncExecutor::load(dir.path(), common::sim::config().build().unwrap()).await.unwrap();
    let target = BenchTarget::InProcess(executor.clone());
    let workload = sessions(3, Duration::ZERO);
    let clock = RunClock::start();
    let mut sampler = workload.sampler(0, WorkloadPhase::Measure);
    let mut session = sampler.next_session();
    let mut turn = session.first().unwrap();
    let mut previous: Option<(Vec<u32>, Vec<u32>)> = None;
    for expected_turn in 1..=3 {
        assert_eq!(turn.tag.turn, expected_turn);
        if let Some((prompt, answer)) = &previous {
            let history: Vec<u32> = prompt.iter().chain(answer).copied().collect();
            assert_eq!(turn.prompt[..history.len()], history[..], "turn {expected_turn} starts with the history");
            assert_eq!(turn.prompt.len(), history.len() + 16);
        }
        let prompt = turn.prompt.clone();
        let spec = workload.session_request(&session, turn);
        let record = target.send(spec, &clock, u64::from(expected_turn), Phase::Measure).await;
        assert!(record.is_success(), "{:?}", record.error);
        assert_eq!((record.session, record.turn), (Some(session.id()), Some(expected_turn)));
        assert_eq!(record.answer_ids.len(), 16, "the answer's token ids are kept for the next turn");
        if let Some((before, answer)) = &previous {
            let history = (before.len() + answer.len()) as u64;
            assert_eq!(record.cached_tokens, expected_cached(history, prompt.len() as u64, block_of(dir.path())));
        }
        let answer = record.answer_ids.clone();
        previous = Some((prompt, answer.clone()));
        match session.next(&Answer::TokenIds(answer)) {
            Some(next) => turn = next.unwrap(),
            None => {
                assert_eq!(expected_turn, 3, "three turns, then the session is over");
                break;
            }
        }
    }
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_users_run_sessions_turn_by_turn_in_process() {
    let dir = engine(ClockMode::Real);
    let executor = AsyncExecutor::load(dir.path(), common::sim::config().build().unwrap()).await.unwrap();
    let target = BenchTarget::InProcess(executor.clone());
    let plan = LoadPlan { warmup: 2, ..LoadPlan::closed(3, 24) };
    let run =
        run_point(&target, &sessions(4, Duration::from_millis(5)), 0, &plan, &RunClock::start(), |_| {}).await.unwrap();
    assert_eq!(run.records.iter().filter(|r| r.is_measured()).count(), 24, "the budget counts turns");
    check_history(&run.records, 4, block_of(dir.path()));
    let summary = Summary::builder(RunInfo::default()).build(&run.records).unwrap().to_json();
    let turns = summary["sessions"]["turns"].as_array().unwrap();
    assert_eq!(turns[0]["cache_hit_rate"], 0.0);
    // Turn 2 resends 40 + 16 history tokens: one whole 32-token block of its 72 is reused.
    assert!(turns[1]["cache_hit_rate"].as_f64().unwrap() > 0.4, "{}", turns[1]);
    assert!(turns[3]["cache_hit_rate"].as_f64() > turns[1]["cache_hit_rate"].as_f64(), "history grows");
    assert!(turns[1]["mean_prompt_tokens"].as_f64() > turns[0]["mean_prompt_tokens"].as_f64());
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
}

/// A gRPC server whose engine takes the sessions' growing prompts.
async fn session_server() -> common::server::TestServer {
    common::server::TestServer::builder()
        .engine(|e| {
            e.limits.max_input_len = 400;
        })
        .start()
        .await
}

/// Two closed-loop users running three-turn sessions, `requests` in all, against `target`.
async fn run_sessions(target: &BenchTarget, requests: usize) -> PointRun {
    let plan = LoadPlan::closed(2, requests);
    run_point(target, &sessions(3, Duration::ZERO), 0, &plan, &RunClock::start(), |_| {}).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_over_grpc_carry_their_history() {
    let server = session_server().await;
    let target = BenchTarget::Grpc(GrpcTarget::connect(format!("http://{}", server.addr)).await.unwrap());
    check_history(&run_sessions(&target, 12).await.records, 3, block_of(server.dir.path()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_over_several_grpc_connections_carry_their_history() {
    let server = session_server().await;
    let endpoint = GrpcTarget::endpoint(format!("http://{}", server.addr)).unwrap();
    // Consecutive turns of a session go over different connections.
    let target = BenchTarget::Grpc(GrpcTarget::connect_pool(endpoint.clone(), 3).await.unwrap());
    check_history(&run_sessions(&target, 12).await.records, 3, block_of(server.dir.path()));
    // No connections asked for is one connection, not a division by zero.
    let single = BenchTarget::Grpc(GrpcTarget::connect_pool(endpoint, 0).await.unwrap());
    assert!(run_sessions(&single, 6).await.records.iter().all(|r| r.is_success()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_on_the_virtual_clock_carry_their_history_and_think() {
    let dir = engine(ClockMode::Virtual);
    let think = Duration::from_millis(500);
    let plan = LoadPlan { warmup: 2, ..LoadPlan::closed(2, 12) };
    let (run, _) = run_virtual_point(dir.path(), &sessions(3, think), 0, &plan, |_| {}).await.unwrap();
    check_history(&run.records, 3, block_of(dir.path()));
    // A user's next turn arrives its think time after the previous turn ended.
    let measured: Vec<&RequestRecord> = run.records.iter().filter(|r| r.is_measured()).collect();
    for r in measured.iter().filter(|r| r.turn == Some(2)) {
        let before = measured.iter().find(|o| o.session == r.session && o.turn == Some(1)).unwrap();
        let gap = r.send_s - before.end_s.unwrap();
        assert!((0.5..0.51).contains(&gap), "think time between turns: {gap}");
    }
    // The same seed gives the same simulated figures (users that finish together may take their
    // next sessions in either order, so compare the figures, not their order).
    let (again, _) = run_virtual_point(dir.path(), &sessions(3, think), 0, &plan, |_| {}).await.unwrap();
    let ttfts = |run: &PointRun| {
        let mut all: Vec<(Option<u32>, u64)> =
            run.records.iter().map(|r| (r.turn, (r.ttft_s().unwrap_or(0.0) * 1e9).round() as u64)).collect();
        all.sort_unstable();
        all
    };
    assert_eq!(ttfts(&run), ttfts(&again));
}
