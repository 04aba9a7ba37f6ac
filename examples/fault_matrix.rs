//! Fault matrix: for every simulator fault kind (simulation.json `faults`), starts `trtllm serve` on
//! the built-in engine with that fault and prints what a client sees.
//!
//! Columns: the fault; the outcomes of six sequential Generate calls and of one stream dropped
//! after its first chunk (which makes the server cancel it); `grpc.health.v1` Check and
//! `HealthCheck` afterwards; one more Generate call; whether the process is alive; how it exits on
//! SIGTERM. Every call has a 10 s limit ("hung" when it runs out). Loopback only.
//!
//! ```text
//! cargo run --example fault_matrix            # or scripts/fault-matrix.sh
//! ```

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tonic::transport::Channel;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;

const LIMIT: Duration = Duration::from_secs(10);
const FAIL_TOKEN: u32 = 13;

/// The faults to try: a name for the row and the `faults` object.
fn faults() -> Vec<(&'static str, Value)> {
    let mut rows = vec![("none", json!(null))];
    for (method, after) in [
        ("constructor", 0),
        ("enqueueRequest", 3),
        ("awaitResponses", 5),
        ("cancelRequest", 0),
        ("getLatestIterationStats", 3),
        ("getLatestRequestStats", 3),
        ("shutdown", 0),
    ] {
        rows.push((method, json!({ "throw_in": method, "throw_after_calls": after })));
    }
    rows.push((
        "enqueueRequest non-std",
        json!({ "throw_in": "enqueueRequest", "throw_after_calls": 3, "throw_non_std": true }),
    ));
    rows.push((
        "awaitResponses non-std",
        json!({ "throw_in": "awaitResponses", "throw_after_calls": 5, "throw_non_std": true }),
    ));
    rows.push(("fail_prompt_token", json!({ "fail_prompt_token": FAIL_TOKEN })));
    rows.push(("fail_all_from_iteration 50", json!({ "fail_all_from_iteration": 50 })));
    rows.push(("stall_iteration 5 (3 s)", json!({ "stall_iteration": 5, "stall_ms": 3000 })));
    rows
}

fn write_engine(dir: &Path, faults: &Value) -> Result<(), String> {
    trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir).map_err(|e| e.to_string())?;
    let path = dir.join("simulation.json");
    let mut simulation: Value = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| e.to_string())?,
        Err(_) => json!({}),
    };
    if !faults.is_null() {
        simulation["faults"] = faults.clone();
    }
    std::fs::write(&path, simulation.to_string()).map_err(|e| e.to_string())
}

fn start(binary: &str, dir: &Path) -> Result<(Child, String), (Child, String)> {
    let mut child = Command::new(binary)
        .args(["serve", "--host", "127.0.0.1", "--port", "0", "--engine-dir"])
        .arg(dir)
        .args(["--grace-period-secs", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {binary}: {e}"));
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    match line.trim().strip_prefix("listening on ") {
        Some(addr) => Ok((child, addr.to_string())),
        None => {
            let status = wait_exit(&mut child, Duration::from_secs(5));
            Err((child, format!("did not start ({status})")))
        }
    }
}

fn wait_exit(child: &mut Child, limit: Duration) -> String {
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code().map_or_else(|| format!("{status}"), |c| format!("exit {c}")),
            Ok(None) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return "hung (killed)".into();
            }
        }
    }
}

fn request(prompt: Vec<u32>) -> pb::GenerateRequest {
    pb::GenerateRequest {
        tokenized: Some(pb::TokenizedInput { input_token_ids: prompt, ..Default::default() }),
        max_tokens: 16,
        streaming: true,
        ignore_eos: true,
        ..Default::default()
    }
}

/// One Generate call to its end: "OK", a status code name, or "hung".
async fn generate(client: &mut TrtllmServiceClient<Channel>, prompt: Vec<u32>) -> String {
    let call = async {
        let mut stream = client.generate(request(prompt)).await?.into_inner();
        let mut terminal = "no terminal".to_string();
        while let Some(message) = stream.next().await {
            if let Some(pb::generate_response::Response::Complete(c)) = message?.response {
                terminal = format!("OK {}", c.finish_reason);
            }
        }
        Ok::<_, tonic::Status>(terminal)
    };
    match tokio::time::timeout(LIMIT, call).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(status)) => format!("{:?}", status.code()),
        Err(_) => "hung".into(),
    }
}

/// A stream dropped after its first message, which makes the server cancel the request.
async fn dropped_stream(client: &mut TrtllmServiceClient<Channel>) -> String {
    let call = async {
        let mut stream = client.generate(request(vec![1, 2, 3])).await?.into_inner();
        stream.next().await.transpose()?;
        Ok::<_, tonic::Status>("dropped")
    };
    match tokio::time::timeout(LIMIT, call).await {
        Ok(Ok(outcome)) => outcome.into(),
        Ok(Err(status)) => format!("{:?}", status.code()),
        Err(_) => "hung".into(),
    }
}

async fn health(channel: Channel) -> (String, String) {
    let mut standard = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let check = tonic_health::pb::HealthCheckRequest { service: String::new() };
    let standard = match tokio::time::timeout(LIMIT, standard.check(check)).await {
        Ok(Ok(reply)) => match reply.into_inner().status {
            1 => "SERVING".to_string(),
            2 => "NOT_SERVING".to_string(),
            other => format!("status {other}"),
        },
        Ok(Err(status)) => format!("{:?}", status.code()),
        Err(_) => "hung".into(),
    };
    let mut ours = TrtllmServiceClient::new(channel);
    let ours = match tokio::time::timeout(LIMIT, ours.health_check(pb::HealthCheckRequest {})).await {
        Ok(Ok(reply)) => reply.into_inner().status,
        Ok(Err(status)) => format!("{:?}", status.code()),
        Err(_) => "hung".into(),
    };
    (standard, ours)
}

fn sigterm(child: &mut Child) -> String {
    // SAFETY: kill only sends a signal to our own child process, whose pid we hold.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    wait_exit(child, Duration::from_secs(15))
}

/// Runs one row: the cells after the fault's name.
async fn row(binary: &str, faults: &Value, fail_token: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
    if let Err(why) = write_engine(dir.path(), faults) {
        return vec![format!("engine dir: {why}")];
    }
    let (mut child, addr) = match start(binary, dir.path()) {
        Ok(started) => started,
        Err((_, why)) => return vec![why, "-".into(), "-".into(), "-".into(), "-".into(), "no".into(), "-".into()],
    };
    let channel = match Channel::from_shared(format!("http://{addr}")).map(|c| c.connect_timeout(LIMIT)) {
        Ok(endpoint) => endpoint.connect().await,
        Err(e) => panic!("address {addr}: {e}"),
    };
    let Ok(channel) = channel else {
        let exit = sigterm(&mut child);
        return vec!["cannot connect".into(), "-".into(), "-".into(), "-".into(), "-".into(), "?".into(), exit];
    };
    let mut client = TrtllmServiceClient::new(channel.clone());
    let mut outcomes = Vec::new();
    for i in 0..6 {
        let prompt = if fail_token && i == 0 { vec![1, FAIL_TOKEN, 3] } else { vec![1, 2, 3] };
        outcomes.push(generate(&mut client, prompt).await);
    }
    let dropped = dropped_stream(&mut client).await;
    tokio::time::sleep(Duration::from_millis(500)).await; // stats polls and the cancel happen meanwhile
    let (standard, ours) = health(channel).await;
    let next = generate(&mut client, vec![1, 2, 3]).await;
    let alive = if matches!(child.try_wait(), Ok(None)) { "yes" } else { "no" };
    let exit = sigterm(&mut child);
    vec![summarize(&outcomes), dropped, standard, ours, next, alive.into(), exit]
}

/// "OK length x4, Unavailable x2" from a list of outcomes, in first-seen order.
fn summarize(outcomes: &[String]) -> String {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for outcome in outcomes {
        match counts.iter_mut().find(|(o, _)| o == outcome) {
            Some((_, n)) => *n += 1,
            None => counts.push((outcome, 1)),
        }
    }
    counts.iter().map(|(o, n)| format!("{o} x{n}")).collect::<Vec<_>>().join(", ")
}

#[tokio::main]
async fn main() {
    let binary = std::env::args().nth(1).unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.parent()?.join("trtllm")))
            .map_or_else(|| "trtllm".into(), |path| path.display().to_string())
    });
    let header =
        ["fault", "6 requests", "dropped stream", "grpc.health.v1", "HealthCheck", "next request", "alive", "SIGTERM"];
    println!("| {} |", header.join(" | "));
    println!("|{}", "---|".repeat(header.len()));
    for (name, faults) in faults() {
        let cells = row(&binary, &faults, name == "fail_prompt_token").await;
        println!("| {name} | {} |", cells.join(" | "));
    }
}
