//! Shutdown: draining with subscriptions and watches open, the grace period running out, clients
//! that stop reading, and an executor that fails.

use crate::common;

use std::time::Duration;

use common::server::{TestServer, chunks_and_completes, drain, request};
use futures::StreamExt;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use trtllm::proto::smg::grpc::common as cpb;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::generate_response::Response as Kind;
use trtllm::server::ServeOptions;
use trtllm::sim::SimFaults;

type Health = tonic_health::pb::health_client::HealthClient<tonic::transport::Channel>;

async fn watch(health: &mut Health, service: &str) -> tonic::Streaming<tonic_health::pb::HealthCheckResponse> {
    let mut stream =
        health.watch(tonic_health::pb::HealthCheckRequest { service: service.into() }).await.unwrap().into_inner();
    assert_eq!(stream.next().await.unwrap().unwrap().status, ServingStatus::Serving as i32);
    stream
}

async fn check(health: &mut Health, service: &str) -> i32 {
    health.check(tonic_health::pb::HealthCheckRequest { service: service.into() }).await.unwrap().into_inner().status
}

/// Waits for the server task to return (it must, however the streams ended).
async fn stopped(server: TestServer) {
    tokio::time::timeout(Duration::from_secs(20), server.handle).await.expect("the server stopped").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn draining_ends_subscriptions_and_watches_and_lets_requests_finish() {
    let options = ServeOptions {
        grace_period: Duration::from_secs(10),
        kv_heartbeat: Duration::from_millis(50),
        ..Default::default()
    };
    let mut server = TestServer::start(2.0, options).await;
    let mut client = server.client().await;
    let mut health = Health::new(server.channel().await);
    let mut overall = watch(&mut health, "").await;
    let mut service = watch(&mut health, "trtllm.TrtllmService").await;
    let mut kv = client.subscribe_kv_events(cpb::SubscribeKvEventsRequest::default()).await.unwrap().into_inner();
    assert!(kv.next().await.unwrap().is_ok());
    let mut streams = Vec::new();
    for i in 0..4 {
        let mut stream = client.generate(request(&format!("d{i}"), vec![1, 2], 80, true)).await.unwrap().into_inner();
        assert!(stream.next().await.is_some());
        streams.push(stream);
    }

    server.signal_shutdown();
    // Each watch reports NOT_SERVING, then ends cleanly.
    for stream in [&mut overall, &mut service] {
        let (updates, status) = drain(stream).await;
        assert!(status.is_none(), "a watch ends with OK: {status:?}");
        assert_eq!(updates.last().map(|u| u.status), Some(ServingStatus::NotServing as i32));
    }
    // The KV subscription sends its last batch and ends cleanly.
    let (batches, status) = drain(&mut kv).await;
    assert!(status.is_none(), "{status:?}");
    assert!(batches.iter().all(|b| b.load.is_some()));
    // New work is refused while in-flight requests drain, and health says so.
    let refused = client.generate(request("late", vec![1], 4, true)).await.map(|_| ()).unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
    assert_ne!(client.health_check(pb::HealthCheckRequest {}).await.unwrap().into_inner().status, "OK");
    assert_eq!(check(&mut health, "").await, ServingStatus::NotServing as i32);
    assert_eq!(check(&mut health, "trtllm.TrtllmService").await, ServingStatus::NotServing as i32);
    // A watch opened while draining is told at once and ends.
    let mut late_watch =
        health.watch(tonic_health::pb::HealthCheckRequest { service: String::new() }).await.unwrap().into_inner();
    let (updates, status) = drain(&mut late_watch).await;
    assert!(status.is_none());
    assert_eq!(updates.last().map(|u| u.status), Some(ServingStatus::NotServing as i32));

    for mut stream in streams {
        let (messages, status) = drain(&mut stream).await;
        assert!(status.is_none(), "{status:?}");
        let (_, completes) = chunks_and_completes(&messages);
        assert_eq!(completes.len(), 1);
        assert_eq!(completes[0].finish_reason, "length", "drained to completion");
    }
    stopped(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_grace_period_ends_every_stream_ends_with_unavailable() {
    let options = ServeOptions {
        grace_period: Duration::from_millis(300),
        kv_heartbeat: Duration::from_millis(50),
        ..Default::default()
    };
    let mut server = TestServer::start(5.0, options).await;
    let mut client = server.client().await;
    let mut health = Health::new(server.channel().await);
    let mut watcher = watch(&mut health, "").await;
    let mut kv = client.subscribe_kv_events(cpb::SubscribeKvEventsRequest::default()).await.unwrap().into_inner();
    let mut long = Vec::new();
    for i in 0..3 {
        let mut stream = client.generate(request(&format!("l{i}"), vec![1, 2], 4000, true)).await.unwrap().into_inner();
        assert!(stream.next().await.is_some());
        long.push(stream);
    }
    let quiet = client.generate(request("quiet", vec![3], 4000, false)).await.unwrap().into_inner();
    let n2 = pb::GenerateRequest {
        sampling_config: Some(pb::SamplingConfig { num_return_sequences: 2, ..Default::default() }),
        ..request("pair", vec![4], 4000, true)
    };
    let mut pair = client.generate(n2).await.unwrap().into_inner();
    assert!(pair.next().await.is_some());
    long.push(pair);
    long.push(quiet);
    server.signal_shutdown();

    for (i, stream) in long.iter_mut().enumerate() {
        let (messages, status) = drain(stream).await;
        let status = status.unwrap_or_else(|| panic!("stream {i} ended without a terminal error"));
        assert_eq!(status.code(), Code::Unavailable, "stream {i}: {status:?}");
        assert!(status.message().contains("grace period"), "{}", status.message());
        assert!(messages.iter().all(|m| matches!(m.response, Some(Kind::Chunk(_)))), "no complete before it");
    }
    let (_, status) = drain(&mut watcher).await;
    assert!(status.is_none());
    let (_, status) = drain(&mut kv).await;
    assert!(status.is_none());
    assert_eq!(server.executor.executor().in_flight(), 0, "the executor dropped them all");
    stopped(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_stop_reading_do_not_hold_up_shutdown() {
    let options = ServeOptions {
        grace_period: Duration::from_millis(200),
        shutdown_timeout: Duration::from_secs(2),
        kv_heartbeat: Duration::from_millis(1),
        ..Default::default()
    };
    let mut server = TestServer::builder().iteration_ms(0.2).options(options).start().await;
    let mut client = server.client().await;
    // Streams that are never read again: a fast generation and a fast heartbeat.
    let _generation = client.generate(request("flood", vec![1], 8000, true)).await.unwrap().into_inner();
    let _kv = client.subscribe_kv_events(cpb::SubscribeKvEventsRequest::default()).await.unwrap().into_inner();
    // Deliberate: time for the unread streams to fill every buffer between us and the server, which
    // is the situation under test; no event marks that point.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.signal_shutdown();
    stopped(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executor_error_mid_stream_is_unavailable() {
    let server = TestServer::builder()
        .iteration_ms(2.0)
        .engine(|e| e.faults = SimFaults { fail_all_from_iteration: Some(150), ..Default::default() })
        .start()
        .await;
    let mut client = server.client().await;
    // The forward failure fails every active request at once: the executor as a whole is failing
    // (one failing request alone would be INTERNAL, see tests/server/reliability.rs). All three
    // must be running when it comes (300 ms in, each far from done), or the first to fail would
    // fail alone: each has streamed a token before the next is sent.
    let mut streams = Vec::new();
    for i in 0..3 {
        let mut stream =
            client.generate(request(&format!("doomed-{i}"), vec![1, 2], 1000, true)).await.unwrap().into_inner();
        let first = stream.message().await.unwrap().expect("a first message");
        assert!(matches!(first.response, Some(Kind::Chunk(_))), "{first:?}");
        streams.push(stream);
    }
    for mut stream in streams {
        let (messages, status) = drain(&mut stream).await;
        let status = status.expect("a terminal error");
        assert_eq!(status.code(), Code::Unavailable, "{status:?}");
        assert!(status.message().contains("forwardAsync"), "{}", status.message());
        assert!(messages.iter().all(|m| matches!(m.response, Some(Kind::Chunk(_)))));
    }
    assert_eq!(server.executor.executor().in_flight(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_executor_turns_health_not_serving() {
    // awaitResponses starts throwing after ~1000 polls (seconds at 5 ms when idle, faster while
    // tokens flow): the response thread dies mid-stream.
    let server = TestServer::builder()
        .iteration_ms(2.0)
        .engine(|e| {
            e.faults =
                SimFaults { throw_in: Some("awaitResponses".into()), throw_after_calls: 1000, ..Default::default() }
        })
        .start()
        .await;
    let mut client = server.client().await;
    let mut health = Health::new(server.channel().await);
    assert_eq!(client.health_check(pb::HealthCheckRequest {}).await.unwrap().into_inner().status, "OK");
    let mut watcher = watch(&mut health, "trtllm.TrtllmService").await;

    let mut stream = client.generate(request("victim", vec![1, 2], 4000, true)).await.unwrap().into_inner();
    let (_, status) = drain(&mut stream).await;
    let status = status.expect("a terminal error");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("awaitResponses"), "{}", status.message());

    let update = tokio::time::timeout(Duration::from_secs(5), watcher.next()).await.expect("a health update");
    assert_eq!(update.unwrap().unwrap().status, ServingStatus::NotServing as i32);
    assert_eq!(check(&mut health, "").await, ServingStatus::NotServing as i32);
    assert_eq!(check(&mut health, "trtllm.TrtllmService").await, ServingStatus::NotServing as i32);
    let reply = client.health_check(pb::HealthCheckRequest {}).await.unwrap().into_inner().status;
    assert_ne!(reply, "OK");
    assert!(reply.contains("executor"), "{reply}");
    let refused = client.generate(request("after", vec![1], 4, true)).await.map(|_| ()).unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
}
