//! `trtllm serve` as a process: it listens, answers, and exits 0 on SIGTERM, whether its streams
//! drain in time or the grace period runs out.

use crate::common;

use std::process::{Child, Command};
use std::time::Duration;

use common::server::spawn_serve;
use common::sim::eventually_some;
use futures::StreamExt;
use tonic::Code;
use tonic_health::pb::health_check_response::ServingStatus;
use trtllm::proto::smg::grpc::common as cpb;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;

fn sigterm(child: &Child) {
    // SAFETY: kill sends a signal to our own child process, whose pid we hold.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
}

async fn exits_cleanly(mut child: Child) {
    let exited = eventually_some(Duration::from_secs(20), Duration::from_millis(20), || {
        std::future::ready(child.try_wait().unwrap())
    })
    .await;
    let Some(status) = exited else {
        let _ = child.kill();
        panic!("server did not exit after SIGTERM");
    };
    assert!(status.success(), "exit status {status}");
}

fn long_request(id: &str, max_tokens: u32) -> pb::GenerateRequest {
    pb::GenerateRequest {
        request_id: id.into(),
        tokenized: Some(pb::TokenizedInput { input_token_ids: vec![1, 2, 3], ..Default::default() }),
        max_tokens,
        streaming: true,
        ignore_eos: true,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_streams_subscriptions_and_watches_then_exits_0() {
    let (child, addr) = spawn_serve(&["--grace-period-secs", "10", "--kv-heartbeat-ms", "50"]);
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    let mut client = TrtllmServiceClient::new(channel.clone());
    assert_eq!(client.health_check(pb::HealthCheckRequest {}).await.unwrap().into_inner().status, "OK");
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let mut watch =
        health.watch(tonic_health::pb::HealthCheckRequest { service: String::new() }).await.unwrap().into_inner();
    assert_eq!(watch.next().await.unwrap().unwrap().status, ServingStatus::Serving as i32);
    let mut kv = client.subscribe_kv_events(cpb::SubscribeKvEventsRequest::default()).await.unwrap().into_inner();
    assert!(kv.next().await.unwrap().is_ok());
    let mut stream = client.generate(long_request("sig", 20)).await.unwrap().into_inner();
    assert!(stream.next().await.is_some());

    sigterm(&child);
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item.unwrap());
    }
    match last.and_then(|m| m.response) {
        Some(pb::generate_response::Response::Complete(c)) => assert_eq!(c.finish_reason, "length"),
        other => panic!("the in-flight stream should drain to a complete, got {other:?}"),
    }
    let mut statuses = Vec::new();
    while let Some(update) = watch.next().await {
        statuses.push(update.expect("the watch ends cleanly").status);
    }
    assert_eq!(statuses.last(), Some(&(ServingStatus::NotServing as i32)));
    while let Some(batch) = kv.next().await {
        batch.expect("the subscription ends cleanly");
    }
    exits_cleanly(child).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_past_the_grace_period_cancels_with_unavailable_then_exits_0() {
    let (child, addr) = spawn_serve(&["--grace-period-secs", "0.3"]);
    let mut client = TrtllmServiceClient::connect(format!("http://{addr}")).await.unwrap();
    let mut stream = client.generate(long_request("endless", 8000)).await.unwrap().into_inner();
    assert!(stream.next().await.is_some());
    let mut kv = client.subscribe_kv_events(cpb::SubscribeKvEventsRequest::default()).await.unwrap().into_inner();
    assert!(kv.next().await.unwrap().is_ok());

    sigterm(&child);
    let mut terminal = None;
    while let Some(item) = stream.next().await {
        if let Err(status) = item {
            terminal = Some(status);
            break;
        }
    }
    let status = terminal.expect("a terminal status");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(status.message().contains("grace period"), "{}", status.message());
    while let Some(batch) = kv.next().await {
        batch.expect("the subscription ends cleanly");
    }
    exits_cleanly(child).await;
}

#[test]
fn bad_flags_are_refused_before_serving() {
    for args in [
        &["--tls-cert", "/nonexistent/cert.pem"][..],
        &["--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"],
        &["--grace-period-secs", "-1"],
        &["--kv-cache-free-gpu-memory-fraction", "1.5"],
        &["--max-beam-width", "4"],
        &["--health-without-auth"],
    ] {
        let output =
            Command::new(env!("CARGO_BIN_EXE_trtllm")).args(["serve", "--port", "0"]).args(args).output().unwrap();
        assert!(!output.status.success(), "{args:?} was accepted");
        assert!(output.stdout.is_empty(), "{args:?}: nothing was served");
        assert!(!output.stderr.is_empty(), "{args:?}: the error is explained");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_during_the_drain_exits_at_once() {
    let (mut child, addr) = spawn_serve(&["--grace-period-secs", "60"]);
    let mut client = TrtllmServiceClient::connect(format!("http://{addr}")).await.unwrap();
    let mut stream = client.generate(long_request("endless", 8000)).await.unwrap().into_inner();
    assert!(stream.next().await.is_some());

    sigterm(&child);
    // The drain waits for the stream (up to 60 s); the second signal must not.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(child.try_wait().unwrap().is_none(), "the first signal drains, it does not exit");
    sigterm(&child);
    let exited = eventually_some(Duration::from_secs(5), Duration::from_millis(20), || {
        std::future::ready(child.try_wait().unwrap())
    })
    .await;
    let Some(status) = exited else {
        let _ = child.kill();
        panic!("a second SIGTERM did not end the drain");
    };
    assert_eq!(status.code(), Some(130), "{status}");
}
