//! The gRPC server over loopback, through a tonic client: every RPC and the status codes.

mod common;

use std::time::{Duration, Instant};

use common::server::TestServer;
use futures::StreamExt;
use tonic::Code;
use trtllm::proto::smg::grpc::common as cpb;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::generate_response::Response as Kind;
use trtllm::server::ServeOptions;

fn request(id: &str, prompt: Vec<u32>, max_tokens: u32, streaming: bool) -> pb::GenerateRequest {
    pb::GenerateRequest {
        request_id: id.to_string(),
        tokenized: Some(pb::TokenizedInput {
            input_token_ids: prompt,
            ..Default::default()
        }),
        max_tokens,
        streaming,
        ignore_eos: true,
        output_config: Some(pb::OutputConfig {
            return_perf_metrics: true,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Every message of a Generate call, or its status.
async fn collect(
    client: &mut pb::trtllm_service_client::TrtllmServiceClient<tonic::transport::Channel>,
    req: pb::GenerateRequest,
) -> Result<Vec<pb::GenerateResponse>, tonic::Status> {
    let mut stream = client.generate(req).await?.into_inner();
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        out.push(item?);
    }
    Ok(out)
}

fn chunks_and_completes(
    messages: &[pb::GenerateResponse],
) -> (Vec<u32>, Vec<pb::GenerateComplete>) {
    let mut tokens = Vec::new();
    let mut completes = Vec::new();
    for m in messages {
        match m.response.as_ref().unwrap() {
            Kind::Chunk(c) => tokens.extend(&c.token_ids),
            Kind::Complete(c) => completes.push(c.clone()),
        }
    }
    (tokens, completes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_and_health_rpcs() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let health = client
        .health_check(pb::HealthCheckRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(health.status, "OK");
    let model = client
        .get_model_info(pb::GetModelInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(model.model_id, "trtllm-builtin-sim");
    assert_eq!(
        model.vocab_size as usize,
        trtllm::builtin::BUILTIN_VOCAB_SIZE
    );
    assert_eq!((model.max_input_len, model.max_seq_len), (4096, 8192));
    assert!(model.supported_features.iter().any(|f| f == "stop_strings"));
    let info = client
        .get_server_info(pb::GetServerInfoRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.backend, "tensorrt");
    assert_eq!((info.tensor_parallel_size, info.world_size), (1, 1));
    assert!(info.version.contains(env!("CARGO_PKG_VERSION")));
    let embed = client.embed(pb::EmbedRequest::default()).await.unwrap_err();
    assert_eq!(embed.code(), Code::Unimplemented);

    let channel = tonic::transport::Channel::from_shared(format!("http://{}", server.addr))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let reply = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "trtllm.TrtllmService".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        reply.status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_generate_sends_chunks_then_one_complete() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let messages = collect(&mut client, request("r1", vec![5, 6, 7], 12, true))
        .await
        .unwrap();
    assert!(messages.iter().all(|m| m.request_id == "r1"));
    let (tokens, completes) = chunks_and_completes(&messages);
    assert_eq!(tokens.len(), 12);
    assert_eq!(completes.len(), 1);
    assert!(
        matches!(messages.last().unwrap().response, Some(Kind::Complete(_))),
        "complete is last"
    );
    let done = &completes[0];
    assert_eq!(done.output_token_ids, tokens);
    assert_eq!(done.finish_reason, "length");
    assert_eq!((done.prompt_tokens, done.completion_tokens), (3, 12));
    let perf = done.perf_metrics.unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(perf.arrival_time > now - 60.0 && perf.arrival_time <= perf.first_token_time);
    assert!(perf.first_token_time <= perf.last_token_time && perf.last_token_time <= now + 1.0);
    // Running counts in chunks.
    let counts: Vec<u32> = messages
        .iter()
        .filter_map(|m| match &m.response {
            Some(Kind::Chunk(c)) => Some(c.completion_tokens),
            _ => None,
        })
        .collect();
    assert_eq!(counts, (1..=12).collect::<Vec<_>>());

    // The same tokens as the executor gives in process: the server adds nothing and drops nothing.
    let direct = server
        .executor
        .generate(trtllm::GenerationRequest::new(vec![5, 6, 7], 12).with_end_id(-1))
        .unwrap();
    assert_eq!(
        direct.collect_final().await.unwrap().token_ids(),
        tokens.as_slice()
    );

    let messages = collect(&mut client, request("r2", vec![5, 6, 7], 12, false))
        .await
        .unwrap();
    assert_eq!(messages.len(), 1, "non-streaming sends only complete");
    let (_, completes) = chunks_and_completes(&messages);
    assert_eq!(completes[0].output_token_ids, tokens);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_invalid_argument_naming_the_problem() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let cases: Vec<(pb::GenerateRequest, &str)> = vec![
        (request("a", vec![], 4, true), "prompt is empty"),
        (
            request("b", vec![1; 5000], 4, true),
            "max_input_len of 4096",
        ),
        (
            request("c", vec![1, 999_999], 4, true),
            "outside the vocabulary",
        ),
        (request("d", vec![1], 0, true), "max_tokens"),
        (
            request("e", vec![1; 4000], 5000, true),
            "max_seq_len of 8192",
        ),
        (
            pb::GenerateRequest {
                lora_config: Some(pb::LoraConfig::default()),
                ..request("f", vec![1], 4, true)
            },
            "lora_config",
        ),
        (
            pb::GenerateRequest {
                guided_decoding: Some(pb::GuidedDecodingParams::default()),
                ..request("g", vec![1], 4, true)
            },
            "guided_decoding",
        ),
        (
            pb::GenerateRequest {
                sampling_config: Some(pb::SamplingConfig {
                    temperature: Some(-1.0),
                    ..Default::default()
                }),
                ..request("h", vec![1], 4, true)
            },
            "temperature",
        ),
    ];
    for (req, needle) in cases {
        let status = collect(&mut client, req).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{needle}: {status:?}");
        assert!(
            status.message().contains(needle),
            "{needle} not in {:?}",
            status.message()
        );
    }
    // The server is unharmed.
    assert_eq!(
        chunks_and_completes(
            &collect(&mut client, request("ok", vec![1], 3, true))
                .await
                .unwrap()
        )
        .0
        .len(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_ids_abort_and_disconnect() {
    let server = TestServer::start(5.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let mut first = client
        .generate(request("dup", vec![1, 2], 400, true))
        .await
        .unwrap()
        .into_inner();
    assert!(first.next().await.is_some());
    let status = client
        .generate(request("dup", vec![1, 2], 4, true))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(status.code(), Code::AlreadyExists);

    let aborted = client
        .abort(pb::AbortRequest {
            request_id: "dup".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(aborted.success);
    let mut last = None;
    while let Some(item) = first.next().await {
        last = Some(item.unwrap());
    }
    match last.and_then(|m| m.response) {
        Some(Kind::Complete(c)) => assert_eq!(c.finish_reason, "abort"),
        other => panic!("expected a complete, got {other:?}"),
    }
    let unknown = client
        .abort(pb::AbortRequest {
            request_id: "nope".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!unknown.success && unknown.message.contains("nope"));

    // A client that drops its stream has its request cancelled at once.
    let mut gone = client
        .generate(request("gone", vec![3, 4], 400, true))
        .await
        .unwrap()
        .into_inner();
    assert!(gone.next().await.is_some());
    assert_eq!(server.executor.executor().in_flight(), 1);
    drop(gone);
    let started = Instant::now();
    while server.executor.executor().in_flight() > 0
        && started.elapsed() < Duration::from_millis(500)
    {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(server.executor.executor().in_flight(), 0);
    assert!(
        started.elapsed() < Duration::from_millis(50),
        "cancelled after {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_strings_and_stop_token_ids() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let tokenizer = server.tokenizer();
    let (tokens, _) = chunks_and_completes(
        &collect(&mut client, request("s0", vec![9, 9], 30, true))
            .await
            .unwrap(),
    );
    let text = tokenizer.decode(&tokens, true).unwrap();
    let chars: Vec<char> = text.chars().collect();
    let stop: String = chars[chars.len() / 2..chars.len() / 2 + 2].iter().collect();
    let req = pb::GenerateRequest {
        stop: vec![stop.clone()],
        ..request("s1", vec![9, 9], 30, true)
    };
    let (_, completes) = chunks_and_completes(&collect(&mut client, req).await.unwrap());
    let done = &completes[0];
    assert_eq!(done.finish_reason, "stop");
    assert_eq!(
        done.matched_stop,
        Some(pb::generate_complete::MatchedStop::MatchedStopStr(
            stop.clone()
        ))
    );
    let cut = text.find(&stop).unwrap();
    assert!(
        done.output_token_ids.len() < tokens.len(),
        "generation stopped early"
    );
    assert!(
        tokenizer
            .decode(&done.output_token_ids, true)
            .unwrap()
            .starts_with(&text[..cut])
    );

    let stop_id = tokens[4];
    let first = tokens.iter().position(|&t| t == stop_id).unwrap();
    let req = pb::GenerateRequest {
        stop_token_ids: vec![stop_id],
        ..request("s2", vec![9, 9], 30, true)
    };
    let (_, completes) = chunks_and_completes(&collect(&mut client, req).await.unwrap());
    assert_eq!(completes[0].finish_reason, "stop");
    assert_eq!(
        completes[0].matched_stop,
        Some(pb::generate_complete::MatchedStop::MatchedTokenId(stop_id))
    );
    assert_eq!(
        completes[0].output_token_ids,
        tokens[..first].to_vec(),
        "stop token excluded by default"
    );
    let req = pb::GenerateRequest {
        stop_token_ids: vec![stop_id],
        include_stop_token_in_output: true,
        ..request("s3", vec![9, 9], 30, true)
    };
    let (_, completes) = chunks_and_completes(&collect(&mut client, req).await.unwrap());
    assert_eq!(completes[0].output_token_ids, tokens[..=first].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_tokenizer_streams_a_zip_with_its_sha256() {
    use sha2::Digest;
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let mut stream = client
        .get_tokenizer(cpb::GetTokenizerRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut data = Vec::new();
    let mut shas = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        data.extend(chunk.data);
        shas.push(chunk.sha256);
    }
    assert!(
        shas[..shas.len() - 1].iter().all(String::is_empty),
        "sha256 only on the last chunk"
    );
    let digest: String = sha2::Sha256::digest(&data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(shas.last().unwrap(), &digest);
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(data)).unwrap();
    let mut names: Vec<String> = (0..archive.len())
        .map(|i| archive.by_index(i).unwrap().name().to_string())
        .collect();
    names.sort();
    assert!(names.contains(&"tokenizer.json".to_string()), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_deadline_and_concurrency_limits() {
    let options = ServeOptions {
        auth_token: Some("s3cret".into()),
        max_concurrent_requests: Some(1),
        ..Default::default()
    };
    let server = TestServer::start(5.0, options).await;
    let mut client = server.client().await;
    let status = client
        .health_check(pb::HealthCheckRequest {})
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::Unauthenticated);
    let authed = |mut r: tonic::Request<pb::GenerateRequest>| {
        r.metadata_mut()
            .insert("authorization", "Bearer s3cret".parse().unwrap());
        r
    };
    let mut wrong = tonic::Request::new(pb::HealthCheckRequest {});
    wrong
        .metadata_mut()
        .insert("authorization", "Bearer nope".parse().unwrap());
    assert_eq!(
        client.health_check(wrong).await.unwrap_err().code(),
        Code::Unauthenticated
    );

    let mut slow = client
        .generate(authed(tonic::Request::new(request(
            "slow",
            vec![1],
            400,
            true,
        ))))
        .await
        .unwrap()
        .into_inner();
    assert!(slow.next().await.is_some());
    let busy = client
        .generate(authed(tonic::Request::new(request(
            "busy",
            vec![1],
            4,
            true,
        ))))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(busy.code(), Code::ResourceExhausted);
    drop(slow);
    tokio::time::sleep(Duration::from_millis(50)).await;

    let mut timed = authed(tonic::Request::new(request("timed", vec![1], 400, true)));
    timed.set_timeout(Duration::from_millis(100));
    let mut stream = client.generate(timed).await.unwrap().into_inner();
    let mut code = None;
    while let Some(item) = stream.next().await {
        if let Err(status) = item {
            code = Some(status.code());
            break;
        }
    }
    assert!(
        matches!(code, Some(Code::DeadlineExceeded | Code::Cancelled)),
        "{code:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_fifty_six_concurrent_streams_lose_nothing() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let client = server.client().await;
    let mut tasks = Vec::new();
    for i in 0..256u32 {
        let mut client = client.clone();
        tasks.push(tokio::spawn(async move {
            let max_tokens = 1 + i % 13;
            let messages = collect(
                &mut client,
                request(&format!("c{i}"), vec![1 + i % 3000, 2], max_tokens, true),
            )
            .await
            .unwrap();
            let (tokens, completes) = chunks_and_completes(&messages);
            assert_eq!(completes.len(), 1);
            assert_eq!(tokens.len() as u32, max_tokens);
            assert_eq!(completes[0].output_token_ids, tokens);
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(server.executor.executor().in_flight(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_in_flight_streams_and_refuses_new_ones() {
    let options = ServeOptions {
        grace_period: Duration::from_secs(5),
        ..Default::default()
    };
    let mut server = TestServer::start(2.0, options).await;
    let mut client = server.client().await;
    let mut streams = Vec::new();
    for i in 0..4 {
        let mut stream = client
            .generate(request(&format!("d{i}"), vec![1, 2], 50, true))
            .await
            .unwrap()
            .into_inner();
        assert!(stream.next().await.is_some());
        streams.push(stream);
    }
    server.shutdown.take().unwrap().send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let health = client
        .health_check(pb::HealthCheckRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_ne!(health.status, "OK");
    let refused = client
        .generate(request("late", vec![1], 4, true))
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable);
    for mut stream in streams {
        let mut last = None;
        while let Some(item) = stream.next().await {
            last = Some(item.unwrap());
        }
        match last.and_then(|m| m.response) {
            Some(Kind::Complete(c)) => {
                assert_eq!(c.finish_reason, "length", "drained to completion")
            }
            other => panic!("expected a complete, got {other:?}"),
        }
    }
    tokio::time::timeout(Duration::from_secs(10), server.handle)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_event_subscription_reports_load() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let mut stream = client
        .subscribe_kv_events(cpb::SubscribeKvEventsRequest::default())
        .await
        .unwrap()
        .into_inner();
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.sequence_number, 1);
    let load = first.load.unwrap();
    assert!(load.load_only);
    assert_eq!(load.max_running_requests, 256);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_metrics_use_tritons_families_and_labels() {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics_addr = probe.local_addr().unwrap();
    drop(probe);
    let server = TestServer::start(
        1.0,
        ServeOptions {
            metrics_addr: Some(metrics_addr),
            ..Default::default()
        },
    )
    .await;
    let mut client = server.client().await;
    collect(&mut client, request("m1", vec![1, 2, 3], 5, true))
        .await
        .unwrap();
    let _ = collect(&mut client, request("m2", vec![], 5, true))
        .await
        .unwrap_err();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let body = http_get(metrics_addr, "/metrics").await;
    for needle in [
        "trtllm_requests_total{model=\"trtllm-builtin-sim\",version=\"",
        "outcome=\"length\"} 1",
        "outcome=\"invalidargument\"} 1",
        "trtllm_tokens_total{",
        "direction=\"output\"} 5",
        "trtllm_time_to_first_token_seconds_bucket",
        "nv_trt_llm_request_metrics{",
        "request_type=\"active\"",
        "nv_trt_llm_kv_cache_block_metrics{",
        "kv_cache_block_type=\"tokens_per\"} 32",
        "nv_trt_llm_inflight_batcher_metrics{",
        "inflight_batcher_specific_metric=\"total_context_tokens\"",
        "nv_trt_llm_runtime_memory_metrics{",
        "memory_type=\"gpu\"",
        "nv_trt_llm_general_metrics{",
        "general_type=\"iteration_counter\"",
    ] {
        assert!(body.contains(needle), "metrics lack {needle}:\n{body}");
    }
}

/// A minimal HTTP/1.1 GET over loopback.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response
}
