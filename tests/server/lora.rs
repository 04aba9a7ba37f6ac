//! LoRA over gRPC: `lora_config` with the documented byte layout, first with weights and then by
//! task id; malformed adapters refused with INVALID_ARGUMENT; an uncached id ends its stream with
//! the executor's error; `lora` in `supported_features` and per-adapter request counts; KV
//! blocks reused per adapter, and stored blocks on `SubscribeKvEvents` carrying the adapter's id.

use std::time::Duration;

use futures::StreamExt;
use tonic::Code;
use trtllm::lora::{EngineLoraSettings, LoraConfig, LoraModule, LoraWeights, encode_wire, task_not_cached_message};
use trtllm::proto::smg::grpc::common as cpb;
use trtllm::proto::smg::grpc::common::kv_cache_event::Data;
use trtllm::proto::trtllm as pb;
use trtllm::server::ServeOptions;

use crate::common::server::{TestServer, chunks_and_completes, collect, free_port_addr, http_get, request};

/// A rank-4 adapter on attn_q of every layer of the built-in engine (which adapts more modules).
fn adapter(server: &TestServer, seed: u64) -> LoraWeights {
    let engine = server.executor.executor().engine().lora().cloned().expect("the built-in engine has LoRA");
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_reuse_is_per_adapter_and_stored_blocks_carry_the_lora_id() {
    let server =
        TestServer::builder().iteration_ms(1.0).config(|c| c.kv_cache_event_buffer_max_size(1024)).start().await;
    let block = server.executor.executor().engine().tokens_per_block() as u32;
    let mut client = server.client().await;
    let mut events = client.subscribe_kv_events(cpb::SubscribeKvEventsRequest::default()).await.unwrap().into_inner();

    // Two full blocks and one more token (always computed).
    let prompt: Vec<u32> = (7..7 + 2 * block + 1).collect();
    let mut cached = Vec::new();
    for (id, lora) in [
        ("a1", Some(LoraConfig::with_weights(5, adapter(&server, 1)))),
        ("b1", Some(LoraConfig::with_weights(6, adapter(&server, 2)))),
        ("base", None),
        ("a2", Some(LoraConfig::cached(5))),
    ] {
        let mut req = request(id, prompt.clone(), 2, false);
        if let Some(lora) = &lora {
            req = with_lora(req, lora);
        }
        let (_, completes) = chunks_and_completes(&collect(&mut client, req).await.unwrap());
        cached.push(completes[0].cached_tokens);
    }
    assert_eq!(cached, [0, 0, 0, 2 * block], "only adapter 5's own blocks serve adapter 5");

    // Stored first blocks of the prompt: one per adapter and one for the base model.
    let mut first_blocks: Vec<cpb::KvBlock> = Vec::new();
    while first_blocks.len() < 3 {
        let batch = tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .expect("a batch in time")
            .expect("the stream goes on")
            .unwrap();
        for event in batch.events {
            if let Some(Data::Stored(stored)) = event.data {
                first_blocks.extend(stored.blocks.into_iter().filter(|b| b.token_ids == prompt[..block as usize]));
            }
        }
    }
    let mut loras: Vec<Option<i64>> = first_blocks.iter().map(|b| b.lora_id).collect();
    loras.sort();
    assert_eq!(loras, [None, Some(5), Some(6)]);
}
