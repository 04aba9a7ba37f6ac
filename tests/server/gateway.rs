//! Our workers behind the real Shepherd Model Gateway (`smg` from the test venv): registration,
//! spread, cache-aware routing from our KV events, a killed worker, client disconnect, drain.
//! Skipped (with the reason) only when the venv cannot be built and `TRTLLM_SKIP_PY_TESTS=1`.

use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::task::JoinSet;

use crate::common::gateway::{Gateway, smg_executable};
use crate::common::server::{TestServer, spawn_serve};

/// Seeded words: distinct prompts whose texts share exactly the prefixes we build.
fn words(seed: u64, count: usize) -> String {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            format!("w{}", state % 997)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn hit_rate(workers: &[TestServer]) -> (f64, Vec<i32>) {
    let (mut reused, mut missed, mut looked_up) = (0, 0, Vec::new());
    for worker in workers {
        worker.executor.executor().refresh_stats();
        let kv = worker.executor.executor().kv_cache_stats().expect("kv stats");
        reused += kv.reused_blocks;
        missed += kv.missed_blocks;
        looked_up.push(kv.reused_blocks + kv.missed_blocks);
    }
    (f64::from(reused) / f64::from((reused + missed).max(1)), looked_up)
}

/// One policy's run of the prefix-heavy workload on two fresh workers: (hit rate from the
/// workers' counters, p50 one-token latency, blocks looked up per worker).
async fn prefix_run(smg: &(std::path::PathBuf, std::path::PathBuf), policy: &str) -> (f64, f64, Vec<i32>) {
    // Each worker's KV cache holds about 4 of the 6 prefixes: spreading every prefix over both
    // workers (round robin) makes them evict each other; keeping each on one worker does not.
    let mut workers = Vec::new();
    for _ in 0..2 {
        let server = TestServer::builder()
            .engine(|e| {
                e.time_scale = 4.0;
                e.kv_cache_max_tokens = Some(4096);
            })
            .start()
            .await;
        workers.push(server);
    }
    let addrs: Vec<_> = workers.iter().map(|w| w.addr).collect();
    let tokenizer = workers[0].dir.path().join("tokenizer");
    let gateway = Gateway::start(smg, &addrs, policy, &tokenizer).await;
    let prefixes: Vec<String> = (0..6).map(|p| words(100 + p, 400)).collect();
    let mut order_state = 7_u64;
    let mut latencies = Vec::new();
    for request in 0..30 {
        order_state = order_state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let prefix = &prefixes[((order_state >> 33) % 6) as usize];
        let prompt = format!("{prefix} question {request}: {}", words(1000 + request, 8));
        let start = Instant::now();
        let reply = gateway.complete(&prompt, 1, true).await;
        latencies.push(start.elapsed().as_secs_f64());
        reply.unwrap_or_else(|e| panic!("{policy} request {request}: {e}"));
    }
    // The first touch of each prefix misses either way; compare the steady state too.
    latencies.sort_by(f64::total_cmp);
    let (rate, looked_up) = hit_rate(&workers);
    (rate, latencies[latencies.len() / 2], looked_up)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cache_aware_routing_beats_round_robin_on_shared_prefixes() {
    let Some(smg) = smg_executable() else { return };
    let (rr_rate, rr_p50, rr_spread) = prefix_run(&smg, "round_robin").await;
    let (ca_rate, ca_p50, ca_spread) = prefix_run(&smg, "cache_aware").await;
    eprintln!(
        "round_robin: hit rate {rr_rate:.3}, p50 {:.1} ms, blocks looked up per worker {rr_spread:?}; \
         cache_aware: hit rate {ca_rate:.3}, p50 {:.1} ms, {ca_spread:?}",
        rr_p50 * 1e3,
        ca_p50 * 1e3
    );
    // Both workers registered (Gateway::start waits for it) and both got requests.
    assert!(rr_spread.iter().all(|&n| n > 0), "round robin left a worker idle: {rr_spread:?}");
    assert!(ca_rate > rr_rate + 0.1, "cache_aware {ca_rate:.3} vs round_robin {rr_rate:.3}");
    assert!(ca_p50 < rr_p50, "p50 one-token latency: cache_aware {ca_p50:.4} s vs round_robin {rr_p50:.4} s");
}

/// Clients sending one-after-another completions until `stop`; each result with its start time.
fn clients(
    gateway: &Arc<Gateway>,
    count: usize,
    max_tokens: u32,
    stop: &Arc<AtomicBool>,
) -> JoinSet<Vec<(Instant, Result<(), String>)>> {
    let mut set = JoinSet::new();
    for client in 0..count {
        let (gateway, stop) = (gateway.clone(), stop.clone());
        set.spawn(async move {
            let mut results = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let prompt = format!("client {client} request {n}: {}", words(client as u64 * 1000 + n, 12));
                let result = gateway.complete(&prompt, max_tokens, true).await.map(|_| ());
                results.push((started, result));
                n += 1;
            }
            results
        });
    }
    set
}

fn signal(child: &Child, name: &str) {
    let status = std::process::Command::new("kill").args([format!("-{name}"), child.id().to_string()]).status();
    assert!(status.is_ok_and(|s| s.success()), "kill -{name}");
}

/// Two `trtllm serve` processes behind the gateway, a load of `clients`, and `fault` applied to
/// the second worker mid-run: every request started after it must succeed.
async fn fault_run(signal_name: &str) -> Option<(usize, usize, Child)> {
    let smg = smg_executable()?;
    let (mut first, a) = spawn_serve(&[]);
    let (second, b) = spawn_serve(&[]);
    let addrs = [a.parse().unwrap(), b.parse().unwrap()];
    let tokenizer = tempfile::tempdir().unwrap();
    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), tokenizer.path()).unwrap();
    let gateway = Arc::new(Gateway::start(&smg, &addrs, "round_robin", &tokenizer.path().join("tokenizer")).await);
    let stop = Arc::new(AtomicBool::new(false));
    let mut set = clients(&gateway, 4, 24, &stop);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let fault_at = Instant::now();
    signal(&second, signal_name);
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Relaxed);
    let mut after = (0, 0);
    let mut failures_after = Vec::new();
    while let Some(results) = set.join_next().await {
        for (started, result) in results.unwrap() {
            if started > fault_at {
                after.0 += 1;
                if let Err(e) = result {
                    after.1 += 1;
                    failures_after.push(e);
                }
            }
        }
    }
    assert!(
        failures_after.is_empty(),
        "{} of {} requests after kill -{signal_name} failed: {failures_after:?}",
        after.1,
        after.0
    );
    let _ = first.kill();
    let _ = first.wait();
    Some((after.0, after.1, second))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_gets_no_more_requests_and_none_fails_after() {
    let Some((sent_after, failed_after, mut killed)) = fault_run("KILL").await else { return };
    let _ = killed.wait();
    assert_eq!(failed_after, 0);
    assert!(sent_after > 4, "the run went on after the kill: {sent_after} requests");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_draining_worker_lets_the_gateway_move_on() {
    let Some((sent_after, failed_after, mut drained)) = fault_run("TERM").await else { return };
    assert_eq!(failed_after, 0);
    assert!(sent_after > 4, "the run went on after SIGTERM: {sent_after} requests");
    // The worker drained and exited on its own.
    let deadline = Instant::now() + Duration::from_secs(10);
    while drained.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the worker did not exit after SIGTERM");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_disconnect_aborts_the_request_on_the_worker() {
    let Some(smg) = smg_executable() else { return };
    let worker = TestServer::builder().start().await;
    let gateway = Gateway::start(&smg, &[worker.addr], "round_robin", &worker.dir.path().join("tokenizer")).await;
    // About 3000 × 7 ms of decoding: only an abort ends it within seconds.
    let response = gateway.stream("tell me everything", 3000).await;
    assert!(response.status().is_success(), "{}", response.status());
    let mut body = response.bytes_stream();
    let first = body.next().await.expect("a first SSE chunk").unwrap();
    assert!(!first.is_empty());
    assert_eq!(worker.executor.executor().in_flight(), 1);
    drop(body);
    worker.wait_executor_idle(Duration::from_secs(5)).await;
}

/// The gateway looks for the model's `config.json` beside the tokenizer on every chat request and,
/// without one, asks the Hugging Face Hub; offline, that cost whole DNS timeouts (5 s, 10 s) per
/// request. The built-in engine's tokenizer directory carries one.
#[test]
fn the_builtin_tokenizer_carries_the_model_config_the_gateway_reads() {
    let dir = tempfile::tempdir().unwrap();
    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join("tokenizer").join("config.json")).unwrap();
    let config: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(config["model_type"], "llama");
    assert_eq!(config["vocab_size"], trtllm::builtin::BUILTIN_VOCAB_SIZE);
}

/// With the model config found locally, 16 chat completions in flight with `ignore_eos` (what a
/// benchmark sends) all finish in well under the 5 s the Hub lookup used to add.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_completions_through_the_gateway_do_not_stall() {
    let Some(smg) = smg_executable() else { return };
    let worker = TestServer::start(2.0, trtllm::server::ServeOptions::default()).await;
    let gateway =
        Arc::new(Gateway::start(&smg, &[worker.addr], "round_robin", &worker.dir.path().join("tokenizer")).await);
    let mut tasks = Vec::new();
    for i in 0..48 {
        let gateway = gateway.clone();
        tasks.push(tokio::spawn(async move {
            let body = serde_json::json!({"model": "trtllm-builtin-sim", "max_tokens": 16, "ignore_eos": true,
                "messages": [{"role": "user", "content": format!("question {i}")}]});
            let started = std::time::Instant::now();
            let response = gateway.client.post(format!("{}/v1/chat/completions", gateway.base)).json(&body).send();
            let status = response.await.unwrap().status();
            (status, started.elapsed())
        }));
        if i >= 16 {
            // 16 in flight: wait for the oldest before sending the next.
            let (status, took) = tasks.remove(0).await.unwrap();
            assert!(status.is_success() && took < Duration::from_secs(3), "{status} after {took:?}");
        }
    }
    for task in tasks {
        let (status, took) = task.await.unwrap();
        assert!(status.is_success() && took < Duration::from_secs(3), "{status} after {took:?}");
    }
}
