//! `trtllm bench` through the real smg gateway in front of a `trtllm serve` worker: random
//! prompts arrive with exactly the tokens asked for (the chat template included), and sessions
//! are sent as chat messages whose history the worker's KV cache reuses.

use crate::common;

use common::cli::read_json;
use common::gateway::{Gateway, smg_executable};
use common::server::TestServer;
use serde_json::Value;

async fn bench(gateway: &Gateway, extra: &[&str]) -> Value {
    let out = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = ["bench", "--target", &format!("{}/v1", gateway.base), "--concurrency", "2"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(["--output-dir".to_string(), out.path().to_str().unwrap().to_string()]);
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_trtllm")).args(&args).output().unwrap()
    })
    .await
    .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let name = std::fs::read_dir(out.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with("c2_") && n.ends_with(".json"))
        .unwrap();
    read_json(&out.path().join(name))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_gateway_prompts_have_the_length_asked_and_sessions_reuse_their_history() {
    let Some(smg) = smg_executable() else { return };
    let worker = TestServer::builder().start().await;
    let tokenizer = worker.dir.path().join("tokenizer");
    let gateway = Gateway::start(&smg, &[worker.addr], "round_robin", &tokenizer).await;

    let random = bench(&gateway, &["--input-len", "128", "--output-len", "8", "--num-prompts", "8"]).await;
    assert_eq!(random["completed"], 8);
    assert_eq!(random["workload"]["prompt_tokens_actual_mean"], 128.0, "{:#}", random["workload"]);
    assert_eq!(random["min_prompt_tokens"], 128);

    let sessions = bench(
        &gateway,
        &["--turns", "3", "--input-len", "96", "--turn-input-len", "16", "--output-len", "8", "--num-prompts", "12"],
    )
    .await;
    let turns = sessions["sessions"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 3, "{:#}", sessions["sessions"]);
    assert_eq!(turns[0]["mean_prompt_tokens"], 96.0, "the first turn, template included");
    let prompt = |t: &Value| t["mean_prompt_tokens"].as_f64().unwrap();
    assert!(prompt(&turns[1]) > prompt(&turns[0]) + 16.0 && prompt(&turns[2]) > prompt(&turns[1]) + 16.0);
    assert!(turns[2]["mean_cached_tokens"].as_f64().unwrap() > 0.0, "{}", turns[2]);
}
