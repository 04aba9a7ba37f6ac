//! LoRA over gRPC: `lora_config` with the documented byte layout, first with weights and then by
//! task id; malformed adapters refused with INVALID_ARGUMENT; an uncached id ends its stream with
//! the executor's error; `lora` in `supported_features` and per-adapter request counts.

use tonic::Code;
use trtllm::lora::{EngineLoraSettings, LoraConfig, LoraModule, LoraWeights, encode_wire, task_not_cached_message};
use trtllm::proto::trtllm as pb;
use trtllm::server::ServeOptions;

use crate::common::server::{TestServer, chunks_and_completes, collect, free_port_addr, http_get, request};

/// A rank-4 adapter on attn_q of every layer of the built-in engine (which adapts more modules).
fn adapter(server: &TestServer, seed: u64) -> LoraWeights {
    let engine = server.executor.executor().engine().lora.clone().expect("the built-in engine has LoRA");
    let q_only = EngineLoraSettings::new(
        vec![LoraModule::AttnQ],
        engine.max_rank(),
        engine.dtype(),
        engine.num_layers(),
        *engine.model_dims(),
    )
    .unwrap();
    LoraWeights::synthetic(&q_only, 4, seed).unwrap()
}

fn with_lora(mut req: pb::GenerateRequest, lora: &LoraConfig) -> pb::GenerateRequest {
    let wire = encode_wire(lora);
    req.lora_config =
        Some(pb::LoraConfig { task_id: wire.task_id, weights: wire.weights, config_json: wire.config_json });
    req
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lora_config_round_trip() {
    let metrics_addr = free_port_addr();
    let options = ServeOptions { metrics_addr: Some(metrics_addr), ..Default::default() };
    let server = TestServer::start(1.0, options).await;
    let mut client = server.client().await;
    let model = client.get_model_info(pb::GetModelInfoRequest {}).await.unwrap().into_inner();
    assert!(model.supported_features.iter().any(|f| f == "lora"), "{:?}", model.supported_features);

    let first = with_lora(request("a", vec![1, 2, 3], 4, true), &LoraConfig::with_weights(5, adapter(&server, 1)));
    let (tokens, completes) = chunks_and_completes(&collect(&mut client, first).await.unwrap());
    assert_eq!((tokens.len(), completes.len()), (4, 1));
    let by_id = with_lora(request("b", vec![1, 2, 3], 4, true), &LoraConfig::cached(5));
    let (tokens, _) = chunks_and_completes(&collect(&mut client, by_id).await.unwrap());
    assert_eq!(tokens.len(), 4);

    // An id never sent with weights: the stream ends with the executor's error.
    let unknown = with_lora(request("c", vec![1, 2, 3], 4, true), &LoraConfig::cached(6));
    let status = collect(&mut client, unknown).await.unwrap_err();
    assert!(status.message().contains(&task_not_cached_message(6)), "{status:?}");

    // Weights that do not divide into the config's rows, and a negative task id.
    let mut bad = with_lora(request("d", vec![1], 4, true), &LoraConfig::with_weights(7, adapter(&server, 2)));
    bad.lora_config.as_mut().unwrap().weights.as_mut().unwrap().pop();
    let status = collect(&mut client, bad).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("lora_config"), "{status:?}");
    let mut negative = request("e", vec![1], 4, true);
    negative.lora_config = Some(pb::LoraConfig { task_id: -1, ..Default::default() });
    assert_eq!(collect(&mut client, negative).await.unwrap_err().code(), Code::InvalidArgument);

    let metrics = http_get(metrics_addr, "/metrics").await;
    let line = metrics.lines().find(|l| l.starts_with("trtllm_lora_requests_total") && l.contains("task_id=\"5\""));
    assert!(line.is_some_and(|l| l.ends_with(" 2")), "{metrics}");
}
