//! Reliability at CI scale: the fault matrix (each simulator fault × what the client gets × health ×
//! the next request × the server alive), health that follows the executor's real state and recovers
//! with it, failed cancels made visible, message-size limits, silent connections, and a scaled-down
//! soak that checks every stream. The long runs are `scripts/soak.sh` and `scripts/fault-matrix.sh`.

use crate::common;

use std::time::Duration;

use common::server::{Client, TestServer, chunks_and_completes, collect, drain, free_port_addr, http_get, request};
use common::sim::eventually_async;
use futures::StreamExt;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use trtllm::proto::smg::grpc::common as cpb;
use trtllm::proto::trtllm as pb;
use trtllm::server::ServeOptions;
use trtllm::sim::SimFaults;

type Health = tonic_health::pb::health_client::HealthClient<tonic::transport::Channel>;

const FAIL_TOKEN: u32 = 13;

fn throw_in(method: &str, after: u64) -> SimFaults {
    SimFaults { throw_in: Some(method.into()), throw_after_calls: after, ..Default::default() }
}

async fn server_with(faults: SimFaults, options: ServeOptions) -> TestServer {
    TestServer::builder().iteration_ms(1.0).engine(|e| e.faults = faults).options(options).start().await
}

/// "OK" or the status code of one Generate call of 16 tokens.
async fn outcome(client: &mut Client, prompt: Vec<u32>) -> String {
    let call = collect(client, request("", prompt, 16, true));
    match tokio::time::timeout(Duration::from_secs(10), call).await {
        Ok(Ok(_)) => "OK".into(),
        Ok(Err(status)) => format!("{:?}", status.code()),
        Err(_) => "hung".into(),
    }
}

/// grpc.health.v1 for the whole server, and HealthCheck's message.
async fn health(server: &TestServer) -> (ServingStatus, String) {
    let mut standard = Health::new(server.channel().await);
    let status = standard
        .check(tonic_health::pb::HealthCheckRequest { service: String::new() })
        .await
        .unwrap()
        .into_inner()
        .status;
    let status = ServingStatus::try_from(status).unwrap();
    let mut client = server.client().await;
    let message = client.health_check(pb::HealthCheckRequest {}).await.unwrap().into_inner().status;
    (status, message)
}

/// One matrix row's observations.
#[derive(Debug)]
struct Row {
    outcomes: Vec<String>,
    health: ServingStatus,
    message: String,
    next: String,
    alive: bool,
}

async fn row(faults: SimFaults, first_prompt: Vec<u32>) -> (Row, TestServer) {
    let server = server_with(faults, ServeOptions::default()).await;
    let mut client = server.client().await;
    let mut outcomes = vec![outcome(&mut client, first_prompt).await];
    for _ in 0..5 {
        outcomes.push(outcome(&mut client, vec![1, 2, 3]).await);
    }
    // The stats poller runs every 10 ms and health is sampled every 100 ms.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (health, message) = health(&server).await;
    let next = outcome(&mut client, vec![1, 2, 3]).await;
    let alive = !server.handle.is_finished();
    (Row { outcomes, health, message, next, alive }, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matrix_no_fault_serves() {
    let (row, _server) = row(SimFaults::default(), vec![1, 2, 3]).await;
    assert!(row.outcomes.iter().all(|o| o == "OK"), "{row:?}");
    assert_eq!(
        (row.health, row.message.as_str(), row.next.as_str(), row.alive),
        (ServingStatus::Serving, "OK", "OK", true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matrix_failing_enqueue_turns_health_not_serving() {
    let (row, _server) = row(throw_in("enqueueRequest", 3), vec![1, 2, 3]).await;
    assert_eq!(row.outcomes, ["OK", "OK", "OK", "Unavailable", "Unavailable", "Unavailable"], "{row:?}");
    assert_eq!(row.health, ServingStatus::NotServing, "{row:?}");
    assert!(row.message.starts_with("UNHEALTHY") && row.message.contains("enqueue"), "{row:?}");
    assert_eq!((row.next.as_str(), row.alive), ("Unavailable", true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matrix_every_request_failing_turns_health_not_serving_and_unavailable() {
    let (row, _server) =
        row(SimFaults { fail_all_from_iteration: Some(40), ..Default::default() }, vec![1, 2, 3]).await;
    assert_eq!(row.outcomes.last().map(String::as_str), Some("Unavailable"), "{row:?}");
    assert_eq!(row.health, ServingStatus::NotServing, "{row:?}");
    assert!(row.message.contains("requests all failed"), "{row:?}");
    assert_eq!((row.next.as_str(), row.alive), ("Unavailable", true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matrix_a_failing_prompt_is_internal_and_the_server_stays_serving() {
    let (row, _server) =
        row(SimFaults { fail_prompt_token: Some(FAIL_TOKEN), ..Default::default() }, vec![1, FAIL_TOKEN]).await;
    assert_eq!(row.outcomes, ["Internal", "OK", "OK", "OK", "OK", "OK"], "gateways do not retry INTERNAL: {row:?}");
    assert_eq!(
        (row.health, row.message.as_str(), row.next.as_str(), row.alive),
        (ServingStatus::Serving, "OK", "OK", true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matrix_failing_stats_poll_is_reported_not_silent() {
    let (row, _server) = row(throw_in("getLatestIterationStats", 3), vec![1, 2, 3]).await;
    assert!(row.outcomes.iter().all(|o| o == "OK"), "requests still run: {row:?}");
    assert_eq!(row.health, ServingStatus::NotServing, "{row:?}");
    assert!(row.message.contains("iteration stats"), "{row:?}");
    assert_eq!((row.next.as_str(), row.alive), ("OK", true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matrix_stopped_response_thread_is_fatal() {
    let (row, _server) = row(throw_in("awaitResponses", 5), vec![1, 2, 3]).await;
    assert_eq!(row.outcomes.last().map(String::as_str), Some("Unavailable"), "{row:?}");
    assert_eq!(row.health, ServingStatus::NotServing, "{row:?}");
    assert!(row.message.contains("response thread"), "{row:?}");
    assert_eq!((row.next.as_str(), row.alive), ("Unavailable", true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matrix_stalled_iteration_delays_but_serves() {
    let (row, _server) =
        row(SimFaults { stall_iteration: Some(5), stall_ms: 1000.0, ..Default::default() }, vec![1, 2, 3]).await;
    assert!(row.outcomes.iter().all(|o| o == "OK"), "{row:?}");
    assert_eq!((row.health, row.next.as_str(), row.alive), (ServingStatus::Serving, "OK", true));
}

/// A stream of requests whose guides the grammar engine cannot compile: each is refused as that
/// request's error before it reaches the executor, and health stays SERVING (a client cannot take a
/// worker out of routing with bad input). Requests with good guides still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_guides_are_invalid_argument_and_leave_health_serving() {
    let dir = tempfile::tempdir().unwrap();
    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path()).unwrap();
    let tokenizer = trtllm::text::Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap();
    let server =
        TestServer::builder().iteration_ms(0.2).config(|c| c.guided_decoding_from_tokenizer(&tokenizer)).start().await;
    let mut client = server.client().await;
    use pb::guided_decoding_params::GuideType;
    let guided = |guide_type: GuideType, guide: &str| {
        let mut request = request("", vec![1, 2, 3], 8, true);
        request.guided_decoding = Some(pb::GuidedDecodingParams { guide_type: guide_type as i32, guide: guide.into() });
        request
    };
    let bad = [
        (GuideType::JsonSchema, r##"{"type": "object", "properties": {"a": {"$ref": "#/nope"}}}"##),
        (GuideType::JsonSchema, r##"{"$ref": "#/nope"}"##),
        (GuideType::EbnfGrammar, "root ::= missing_rule"),
    ];
    for round in 0..4 {
        for (guide_type, guide) in bad {
            let status = collect(&mut client, guided(guide_type, guide)).await.expect_err("a bad guide is refused");
            assert_eq!(status.code(), Code::InvalidArgument, "round {round}, {guide}: {status:?}");
            assert!(status.message().contains("guided_decoding."), "{}", status.message());
            assert!(!status.message().contains("Encountered an error"), "{}", status.message());
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(health(&server).await, (ServingStatus::Serving, "OK".to_string()));
    let good = guided(GuideType::JsonSchema, r#"{"type": "object", "properties": {"n": {"type": "integer"}}}"#);
    collect(&mut client, good).await.expect("a good guide still runs");
    assert_eq!(server.executor.executor().health(), Vec::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_recovers_when_requests_succeed_again() {
    let server =
        server_with(SimFaults { fail_prompt_token: Some(FAIL_TOKEN), ..Default::default() }, ServeOptions::default())
            .await;
    let mut client = server.client().await;
    // One bad prompt is that request's problem (INTERNAL, not retried); the third in a row makes
    // the executor count as failing, so it is UNAVAILABLE (retry elsewhere).
    assert_eq!(outcome(&mut client, vec![1, FAIL_TOKEN]).await, "Internal");
    assert_eq!(outcome(&mut client, vec![1, FAIL_TOKEN]).await, "Internal");
    assert_eq!(outcome(&mut client, vec![1, FAIL_TOKEN]).await, "Unavailable");
    let unhealthy =
        eventually_async(Duration::from_secs(2), || async { health(&server).await.0 == ServingStatus::NotServing })
            .await;
    assert!(unhealthy, "three failures in a row: {:?}", health(&server).await);
    assert_eq!(outcome(&mut client, vec![1, FAIL_TOKEN]).await, "Unavailable", "the executor now counts as failing");
    // Requests are still admitted, so recovery shows: one success flips health back.
    assert_eq!(outcome(&mut client, vec![1, 2, 3]).await, "OK");
    let recovered =
        eventually_async(Duration::from_secs(2), || async { health(&server).await.0 == ServingStatus::Serving }).await;
    assert!(recovered, "{:?}", health(&server).await);
    assert_eq!(health(&server).await.1, "OK");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_reasons_and_failed_cancels_show_in_metrics() {
    let metrics_addr = free_port_addr();
    let options = ServeOptions { metrics_addr: Some(metrics_addr), ..Default::default() };
    let server = server_with(throw_in("cancelRequest", 0), options).await;
    let mut client = server.client().await;
    let mut stream = client.generate(request("walks-away", vec![1, 2, 3], 2000, true)).await.unwrap().into_inner();
    assert!(stream.next().await.unwrap().is_ok());
    drop(stream);
    // The cancel throws: the request runs on, and that is counted rather than logged as cancelled.
    let shown = |text: &str| {
        let failures = text.lines().find(|l| l.starts_with("trtllm_cancel_failures")).unwrap_or_default();
        text.contains("outcome=\"cancel_failed\"") && failures.split_whitespace().last().is_some_and(|v| v != "0")
    };
    let counted =
        eventually_async(Duration::from_secs(5), || async { shown(&http_get(metrics_addr, "/metrics").await) }).await;
    let text = http_get(metrics_addr, "/metrics").await;
    assert!(counted, "{text}");
    assert!(!text.contains("outcome=\"cancelled\""), "{text}");
    assert!(server.executor.executor().cancel_failures() >= 1);
    assert!(text.contains("trtllm_health_issue{") && text.contains("reason=\"stats_poll\"} 0"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_stats_poll_shows_in_the_health_metric() {
    let metrics_addr = free_port_addr();
    let options = ServeOptions { metrics_addr: Some(metrics_addr), ..Default::default() };
    let server = server_with(throw_in("getLatestIterationStats", 3), options).await;
    let _ = server.channel().await; // up, and so is the metrics endpoint
    let shown = eventually_async(Duration::from_secs(5), || async {
        http_get(metrics_addr, "/metrics").await.contains("reason=\"stats_poll\"} 1")
    })
    .await;
    assert!(shown, "{}", http_get(metrics_addr, "/metrics").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_replies_are_resource_exhausted() {
    let options = ServeOptions { max_message_size: 4096, ..Default::default() };
    let server = server_with(SimFaults::default(), options).await;
    let mut client = server.client().await;
    // Certain to exceed the limit: refused before any work.
    let refused = collect(&mut client, request("big", vec![1, 2, 3], 5000, false)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(server.executor.executor().cancel_failures() == 0 && server.executor.executor().in_flight() == 0);
    // Likely but not certain to exceed it: found when the reply is built, with the same code.
    let mut req = request("big-later", vec![1, 2, 3], 3000, false);
    req.output_config = None;
    let late = collect(&mut client, req).await.unwrap_err();
    assert_eq!(late.code(), Code::ResourceExhausted, "not OUT_OF_RANGE: {late:?}");
    // A reply under the limit is unaffected.
    let small = collect(&mut client, request("small", vec![1, 2, 3], 500, false)).await.unwrap();
    assert_eq!(chunks_and_completes(&small).1[0].output_token_ids.len(), 500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_requests_are_resource_exhausted() {
    let options = ServeOptions { max_message_size: 4096, ..Default::default() };
    let server = server_with(SimFaults::default(), options).await;
    let mut client = server.client().await;
    // 3,000 token ids of 2 bytes each: over the 4 KiB limit before it is decoded.
    let prompt: Vec<u32> = (0..3000).map(|i| 200 + i % 1000).collect();
    let refused = collect(&mut client, request("too-big", prompt, 4, true)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "not OUT_OF_RANGE: {refused:?}");
    assert!(refused.message().contains("too large"), "{refused:?}");
    assert_eq!(server.executor.executor().in_flight(), 0);
    // The connection and the server go on: a request under the limit is served.
    let small = collect(&mut client, request("small", vec![1, 2, 3], 4, true)).await.unwrap();
    assert_eq!(chunks_and_completes(&small).1[0].output_token_ids.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_tokenizer_chunks_fit_the_message_limit() {
    let options = ServeOptions { max_message_size: 4096, ..Default::default() };
    let server = server_with(SimFaults::default(), options).await;
    let mut client = server.client().await;
    let mut stream = client.get_tokenizer(cpb::GetTokenizerRequest::default()).await.unwrap().into_inner();
    let mut chunks = Vec::new();
    while let Some(chunk) = stream.next().await {
        chunks.push(chunk.expect("every chunk fits"));
    }
    assert!(chunks.len() > 1, "a tokenizer over 4 KiB comes in several chunks");
    assert!(chunks.iter().all(|c| c.data.len() <= 4096));
    assert!(!chunks.last().unwrap().sha256.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_connection_is_closed_after_the_handshake_timeout() {
    use tokio::io::AsyncReadExt;
    let options = ServeOptions { handshake_timeout: Duration::from_millis(300), ..Default::default() };
    let server = server_with(SimFaults::default(), options).await;
    let _ = server.channel().await; // up
    let mut silent = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    let mut buf = [0u8; 64];
    // The server's own preface may arrive first; then the connection must close.
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match silent.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "a connection that never sends the preface must be closed");
    // A real client is unaffected.
    let mut client = server.client().await;
    assert_eq!(outcome(&mut client, vec![1, 2, 3]).await, "OK");
}

/// CI-scale soak: many concurrent streams, every one checked: contiguous tokens, exactly one
/// terminal message, nothing after it; afterwards nothing is left in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_every_stream_complete_and_nothing_left_behind() {
    const STREAMS: usize = 240;
    const CONCURRENT: usize = 48;
    const TOKENS: u32 = 24;
    let server = TestServer::builder().iteration_ms(0.5).start().await;
    let client = server.client().await;
    let checked = futures::stream::iter(0..STREAMS)
        .map(|i| {
            let mut client = client.clone();
            async move {
                let mut stream = client
                    .generate(request(&format!("soak-{i}"), vec![1, 2, 3 + (i % 50) as u32], TOKENS, true))
                    .await
                    .map_err(|s| format!("stream {i}: {s:?}"))?
                    .into_inner();
                let (messages, status) = drain(&mut stream).await;
                if let Some(status) = status {
                    return Err(format!("stream {i}: {status:?}"));
                }
                let mut seen = 0;
                for (n, message) in messages.iter().enumerate() {
                    match &message.response {
                        Some(pb::generate_response::Response::Chunk(c)) => {
                            seen += c.token_ids.len() as u32;
                            if c.completion_tokens != seen {
                                return Err(format!("stream {i}: tokens not contiguous at message {n}"));
                            }
                        }
                        Some(pb::generate_response::Response::Complete(c)) => {
                            if n + 1 != messages.len() || c.output_token_ids.len() as u32 != TOKENS {
                                return Err(format!("stream {i}: complete at {n} of {}", messages.len()));
                            }
                        }
                        None => return Err(format!("stream {i}: empty message")),
                    }
                }
                if seen != TOKENS {
                    return Err(format!("stream {i}: {seen} of {TOKENS} tokens"));
                }
                Ok(())
            }
        })
        .buffer_unordered(CONCURRENT)
        .collect::<Vec<_>>()
        .await;
    let failures: Vec<_> = checked.into_iter().filter_map(Result::err).collect();
    assert!(
        failures.is_empty(),
        "{} of {STREAMS} streams failed: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    server.wait_executor_idle(Duration::from_secs(5)).await;
    let (status, message) = health(&server).await;
    assert_eq!((status, message.as_str()), (ServingStatus::Serving, "OK"));
    // Every request id is free again (the live table kept nothing).
    let mut client = server.client().await;
    let reused = collect(&mut client, request("soak-0", vec![1, 2], 2, true)).await;
    assert!(reused.is_ok_and(|m| !m.is_empty()), "the id soak-0 is free again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_load_knows_the_kv_capacity_before_the_first_iteration() {
    let server = TestServer::builder()
        .iteration_ms(1.0)
        .config(|c| c.kv_cache_event_buffer_max_size(1024))
        .options(ServeOptions { kv_heartbeat: Duration::from_millis(50), ..Default::default() })
        .start()
        .await;
    let mut client = server.client().await;
    let mut kv = client.subscribe_kv_events(cpb::SubscribeKvEventsRequest::default()).await.unwrap().into_inner();
    // No request has run: no iteration stats exist yet.
    assert!(server.executor.executor().latest_iteration_stats().is_none());
    let mut capacity = None;
    for _ in 0..20 {
        let batch = kv.next().await.unwrap().unwrap();
        capacity = batch.load.and_then(|l| l.max_total_num_tokens);
        if capacity.is_some() {
            break;
        }
    }
    let capacity = capacity.expect("max_total_num_tokens from the KV cache's configuration");
    assert!(capacity > 0);
    assert_eq!(Some(capacity as u64), server.executor.executor().kv_cache_capacity_tokens());
}

/// A client that stops reading for a while loses nothing and does not get its request cancelled
/// for being slow: the chunks that wait while it lags reach it coalesced into fewer messages,
/// every token once and in order, with running counts that add up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lagging_client_gets_coalesced_chunks_and_every_token() {
    const TOKENS: u32 = 400;
    let server = TestServer::builder()
        .iteration_ms(2.0)
        // 64 ms of tokens: without coalescing, a client that lags longer (250 ms below) overflows
        // the request's buffer and the request is cancelled as too slow. (With 1 ms iterations,
        // the server's forwarding task stalled 32 ms on a busy 2-core host, coalescing or not.)
        .config(|c| c.stream_buffer(32))
        .start()
        .await;
    server.channel().await; // up
    // A 1 KiB HTTP/2 window: a few dozen unread messages hold the server's sends back.
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .initial_stream_window_size(1024)
        .connect()
        .await
        .unwrap();
    let mut client = pb::trtllm_service_client::TrtllmServiceClient::new(channel);
    let mut stream = client.generate(request("lagging", vec![1, 2, 3], TOKENS, true)).await.unwrap().into_inner();
    tokio::time::sleep(Duration::from_millis(250)).await;
    let (messages, status) = drain(&mut stream).await;
    let (streamed, completes) = chunks_and_completes(&messages);
    assert!(status.is_none(), "{status:?} after {} messages, {} tokens", messages.len(), streamed.len());
    assert_eq!(streamed.len(), TOKENS as usize);
    assert_eq!(completes[0].output_token_ids, streamed, "every token once, in order");
    let chunks: Vec<&pb::GenerateStreamChunk> = messages
        .iter()
        .filter_map(|m| match &m.response {
            Some(pb::generate_response::Response::Chunk(c)) => Some(c),
            _ => None,
        })
        .collect();
    assert!(chunks.iter().any(|c| c.token_ids.len() > 10), "coalesced: {} messages", chunks.len());
    let mut running = 0;
    for chunk in chunks {
        running += chunk.token_ids.len() as u32;
        assert_eq!(chunk.completion_tokens, running);
    }
}
