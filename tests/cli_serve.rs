//! `trtllm serve` as a process: it listens, answers, and exits 0 on SIGTERM after draining.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_and_exits_cleanly_on_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["serve", "--port", "0", "--grace-period-secs", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .expect("listening line")
        .to_string();
    let mut client = TrtllmServiceClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    assert_eq!(
        client
            .health_check(pb::HealthCheckRequest {})
            .await
            .unwrap()
            .into_inner()
            .status,
        "OK"
    );
    let request = pb::GenerateRequest {
        request_id: "sig".into(),
        tokenized: Some(pb::TokenizedInput {
            input_token_ids: vec![1, 2, 3],
            ..Default::default()
        }),
        max_tokens: 20,
        streaming: true,
        ignore_eos: true,
        ..Default::default()
    };
    let mut stream = client.generate(request).await.unwrap().into_inner();
    assert!(stream.next().await.is_some());
    // SAFETY: kill sends a signal to our own child process, whose pid we hold.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item.unwrap());
    }
    match last.and_then(|m| m.response) {
        Some(pb::generate_response::Response::Complete(c)) => assert_eq!(c.finish_reason, "length"),
        other => panic!("the in-flight stream should drain to a complete, got {other:?}"),
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "server did not exit after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(status.success(), "exit status {status}");
}
