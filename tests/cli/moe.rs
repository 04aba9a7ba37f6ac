//! A Mixture-of-Experts engine end to end: `trtllm sim build` with expert parallelism, a model given
//! as a Hugging Face config.json, `trtllm bench` and `trtllm serve` on it, and `trtllm inspect`'s budget.

use crate::common;
use common::cli::{bench_token_prompts, stderr, trtllm};
use common::server::spawn_serve;
use futures::StreamExt;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;

/// Builds Mixtral 8x7B over 2 H100s as 2 expert-parallel ranks, on the virtual clock.
fn build_mixtral(out: &std::path::Path) -> String {
    let output = trtllm(&[
        "sim",
        "build",
        "--model",
        "mixtral-8x7b",
        "--gpu",
        "h100-sxm",
        "--tp",
        "2",
        "--moe-ep",
        "2",
        "--max-batch-size",
        "64",
        "--max-seq-len",
        "4096",
        "--clock",
        "virtual",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn sim_build_writes_the_expert_split_and_prints_the_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mixtral");
    let stdout = build_mixtral(&out);
    assert!(stdout.contains("46.7B parameters, 12.9B active") && stdout.contains("moe_tp 1 x moe_ep 2"), "{stdout}");
    for line in [
        "weights",
        "engine activations",
        "decoder buffers",
        "custom all-reduce buffers",
        "NCCL communicator buffers",
        "KV-cache pool",
    ] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("config.json")).unwrap()).unwrap();
    let pretrained = &config["pretrained_config"];
    assert_eq!(pretrained["architecture"], "MixtralForCausalLM");
    assert_eq!((pretrained["moe"]["num_experts"].as_u64(), pretrained["moe"]["top_k"].as_u64()), (Some(8), Some(2)));
    assert_eq!(pretrained["mapping"]["moe_ep_size"], 2);
    assert_eq!(pretrained["mapping"]["moe_tp_size"], 1);

    // `sim predict` lists the operations the iteration time folds, the expert pipeline among them.
    let predicted = trtllm(&["sim", "predict", "--engine-dir", out.to_str().unwrap(), "--decode", "16:512", "--json"]);
    assert!(predicted.status.success(), "{}", stderr(&predicted));
    let json: serde_json::Value = serde_json::from_slice(&predicted.stdout).unwrap();
    let ops = json["ops"].as_array().unwrap();
    let names: Vec<&str> = ops.iter().map(|op| op["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"expert gate/up (grouped)") && names.contains(&"MoE router"), "{names:?}");
    let sum: f64 =
        ops.iter().map(|op| op["ms"].as_f64().unwrap()).sum::<f64>() + json["time"]["overhead_ms"].as_f64().unwrap();
    assert!((sum - json["time"]["total_ms"].as_f64().unwrap()).abs() < 1e-9, "{json}");
    assert!(json["time"]["moe_ms"].as_f64().unwrap() > 0.0);

    let inspect = trtllm(&["inspect", "--engine-dir", out.to_str().unwrap()]);
    assert!(inspect.status.success(), "{}", stderr(&inspect));
    let doc: serde_json::Value = serde_json::from_slice(&inspect.stdout).unwrap();
    assert_eq!(doc["architecture"], "MixtralForCausalLM");
    assert!(doc["memory_budget"]["kv_tokens"].as_u64().unwrap() > 100_000, "{doc}");
    assert!(stderr(&inspect).contains("decoder buffers"), "{}", stderr(&inspect));

    // Expert parallelism must divide the experts and tp; an unknown architecture is refused by name.
    // The split's refusal names the flags, whichever rule (the engine's) it broke.
    let refused = |split: &[&str]| {
        let out = dir.path().join("refused");
        let mut args = vec!["sim", "build", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "4"];
        args.extend_from_slice(split);
        args.extend(["--output", out.to_str().unwrap()]);
        let bad = trtllm(&args);
        assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
        assert!(!out.exists(), "nothing is written");
        stderr(&bad)
    };
    let e = refused(&["--moe-ep", "3"]);
    assert!(e.contains("--moe-ep (3) must divide --tp (4)"), "{e}");
    let e = refused(&["--moe-ep", "2", "--moe-tp", "1"]);
    assert!(e.contains("--moe-tp (1) x --moe-ep (2) must equal --tp (4)"), "{e}");
    let bad = trtllm(&[
        "sim",
        "build",
        "--model",
        "mixtral-8x7b",
        "--gpu",
        "h100-sxm",
        "--tp",
        "16",
        "--moe-ep",
        "16",
        "--output",
        dir.path().join("x").to_str().unwrap(),
    ]);
    assert!(stderr(&bad).contains("must divide the 8 experts"), "{}", stderr(&bad));
}

#[test]
fn sim_build_takes_a_hugging_face_config_and_a_gpu_spec() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("my-qwen3-moe");
    std::fs::create_dir(&model).unwrap();
    let config = serde_json::json!({"architectures": ["Qwen3MoeForCausalLM"], "torch_dtype": "bfloat16",
        "vocab_size": 151936, "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
        "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "max_position_embeddings": 40960,
        "num_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 768, "eos_token_id": 151645});
    std::fs::write(model.join("config.json"), config.to_string()).unwrap();
    let presets = trtllm(&["sim", "presets", "--json"]);
    let presets: serde_json::Value = serde_json::from_slice(&presets.stdout).unwrap();
    let mut gpu = presets["gpus"].as_array().unwrap().iter().find(|g| g["id"] == "h100-sxm").unwrap().clone();
    gpu["id"] = "my-gpu".into();
    gpu["memory_gib"] = 64.into();
    let gpu_file = dir.path().join("gpu.json");
    std::fs::write(&gpu_file, gpu.to_string()).unwrap();
    let out = dir.path().join("engine");
    let output = trtllm(&[
        "sim",
        "build",
        "--model",
        model.to_str().unwrap(),
        "--gpu-spec",
        gpu_file.to_str().unwrap(),
        "--max-seq-len",
        "8192",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("30.5B parameters, 3.") && stdout.contains("my-gpu, 64.0 GiB"), "{stdout}");
    let executor = trtllm::Executor::load(&out, Default::default()).expect("the simulator loads it");
    executor.shutdown(trtllm::ShutdownMode::Cancel).unwrap();

    std::fs::write(model.join("config.json"), r#"{"architectures": ["GPT2LMHeadModel"], "vocab_size": 50257}"#)
        .unwrap();
    let refused = trtllm(&["sim", "build", "--model", model.to_str().unwrap(), "--gpu", "h100-sxm", "--output", "x"]);
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("MixtralForCausalLM"), "{}", stderr(&refused));
}

#[test]
fn bench_runs_on_a_mixtral_engine() {
    let dir = tempfile::tempdir().unwrap();
    let engine = dir.path().join("mixtral");
    build_mixtral(&engine);
    let (bench, _) = bench_token_prompts(dir.path(), &engine, (24, 8), |i| 100 + i * 37, |_| 32, &[]);
    assert!(bench.status.success(), "{}", stderr(&bench));
    let stdout = String::from_utf8_lossy(&bench.stdout);
    assert!(stdout.contains("24"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_on_a_mixtral_engine() {
    let dir = tempfile::tempdir().unwrap();
    let engine = dir.path().join("mixtral");
    build_mixtral(&engine);
    let (mut child, addr) = spawn_serve(&["--engine-dir", engine.to_str().unwrap()]);
    let channel = tonic::transport::Channel::from_shared(format!("http://{addr}")).unwrap().connect().await.unwrap();
    let mut client = TrtllmServiceClient::new(channel);
    let request = pb::GenerateRequest {
        request_id: "moe".into(),
        tokenized: Some(pb::TokenizedInput { input_token_ids: vec![1, 2, 3, 4], ..Default::default() }),
        max_tokens: 8,
        streaming: true,
        ignore_eos: true,
        ..Default::default()
    };
    let mut stream = client.generate(request).await.unwrap().into_inner();
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item.unwrap());
    }
    match last.and_then(|m| m.response) {
        Some(pb::generate_response::Response::Complete(c)) => assert_eq!(c.finish_reason, "length"),
        other => panic!("expected a complete response, got {other:?}"),
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
