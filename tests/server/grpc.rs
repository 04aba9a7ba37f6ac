//! The gRPC server over loopback, through a tonic client: every RPC and the status codes.

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::server::{TestServer, chunks_and_completes, collect, drain, request};
use common::sim::{eventually_async, eventually_some};
use futures::StreamExt;
use tonic::Code;
use trtllm::proto::smg::grpc::common as cpb;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::generate_response::Response as Kind;
use trtllm::server::ServeOptions;

fn sampling(id: &str, prompt: Vec<u32>, max_tokens: u32, s: pb::SamplingConfig) -> pb::GenerateRequest {
    pb::GenerateRequest { sampling_config: Some(s), ..request(id, prompt, max_tokens, true) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_and_health_rpcs() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let health = client.health_check(pb::HealthCheckRequest {}).await.unwrap().into_inner();
    assert_eq!(health.status, "OK");
    let model = client.get_model_info(pb::GetModelInfoRequest {}).await.unwrap().into_inner();
    assert_eq!(model.model_id, "trtllm-builtin-sim");
    assert_eq!(model.vocab_size as usize, trtllm::builtin::BUILTIN_VOCAB_SIZE);
    assert_eq!((model.max_input_len, model.max_seq_len), (4096, 8192));
    assert!(model.supported_features.iter().any(|f| f == "stop_strings"));
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.unwrap().into_inner();
    assert_eq!(info.backend, "tensorrt");
    assert_eq!((info.tensor_parallel_size, info.world_size), (1, 1));
    assert!(info.version.contains(env!("CARGO_PKG_VERSION")));
    let embed = client.embed(pb::EmbedRequest::default()).await.unwrap_err();
    assert_eq!(embed.code(), Code::Unimplemented);

    use tonic_health::pb::health_check_response::ServingStatus;
    let mut health = tonic_health::pb::health_client::HealthClient::new(server.channel().await);
    for service in ["", "trtllm.TrtllmService"] {
        let reply =
            health.check(tonic_health::pb::HealthCheckRequest { service: service.into() }).await.unwrap().into_inner();
        assert_eq!(reply.status, ServingStatus::Serving as i32, "{service:?}");
    }
    let unknown = health.check(tonic_health::pb::HealthCheckRequest { service: "no.Such".into() }).await.unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_generate_sends_chunks_then_one_complete() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let messages = collect(&mut client, request("r1", vec![5, 6, 7], 12, true)).await.unwrap();
    assert!(messages.iter().all(|m| m.request_id == "r1"));
    let (tokens, completes) = chunks_and_completes(&messages);
    assert_eq!(tokens.len(), 12);
    assert_eq!(completes.len(), 1);
    assert!(matches!(messages.last().unwrap().response, Some(Kind::Complete(_))), "complete is last");
    let done = &completes[0];
    assert_eq!(done.output_token_ids, tokens);
    assert_eq!(done.finish_reason, "length");
    assert_eq!((done.prompt_tokens, done.completion_tokens), (3, 12));
    let perf = done.perf_metrics.unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
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
    let direct = server.executor.enqueue(trtllm::GenerationRequest::new(vec![5, 6, 7], 12).with_end_id(None)).unwrap();
    assert_eq!(direct.collect_final().await.unwrap().token_ids(), tokens.as_slice());

    let messages = collect(&mut client, request("r2", vec![5, 6, 7], 12, false)).await.unwrap();
    assert_eq!(messages.len(), 1, "non-streaming sends only complete");
    let (_, completes) = chunks_and_completes(&messages);
    assert_eq!(completes[0].output_token_ids, tokens);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_invalid_argument_naming_the_problem() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let vocab = trtllm::builtin::BUILTIN_VOCAB_SIZE as u32;
    let cases: Vec<(pb::GenerateRequest, &str)> = vec![
        (request("a", vec![], 4, true), "prompt is empty"),
        (request("b", vec![1; 5000], 4, true), "max_input_len of 4096"),
        (request("c", vec![1, 999_999], 4, true), "outside the vocabulary"),
        (request("d", vec![1], 0, true), "max_tokens"),
        (request("e", vec![1; 4000], 5000, true), "max_seq_len of 8192"),
        (
            pb::GenerateRequest {
                lora_config: Some(pb::LoraConfig { task_id: -1, ..Default::default() }),
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
            sampling("h", vec![1], 4, pb::SamplingConfig { temperature: Some(-1.0), ..Default::default() }),
            "temperature",
        ),
        (
            sampling("i", vec![1], 4, pb::SamplingConfig { temperature: Some(f32::NAN), ..Default::default() }),
            "temperature",
        ),
        // Amplification: each would allocate per-sequence state or flood the executor.
        (
            sampling("j", vec![1], 4, pb::SamplingConfig { num_return_sequences: u32::MAX, ..Default::default() }),
            "num_return_sequences = 4294967295 exceeds this server's limit of 256",
        ),
        (
            sampling("k", vec![1], 4, pb::SamplingConfig { beam_width: 64, ..Default::default() }),
            "beam_width = 64 exceeds this server's max beam width of 1",
        ),
        (
            pb::GenerateRequest { stop_token_ids: vec![1, vocab + 5], ..request("l", vec![1], 4, true) },
            "stop_token_ids[1]",
        ),
        (pb::GenerateRequest { bad_token_ids: vec![vocab], ..request("m", vec![1], 4, true) }, "bad_token_ids[0]"),
        (
            pb::GenerateRequest { stop: vec!["x".into(); 2000], ..request("n", vec![1], 4, true) },
            "stop has 2000 entries, over the limit of 1024",
        ),
        (
            pb::GenerateRequest { request_id: "r".repeat(5000), ..request("", vec![1], 4, true) },
            "request_id is 5000 bytes",
        ),
        (
            pb::GenerateRequest {
                output_config: Some(pb::OutputConfig { logprobs: Some(5), ..Default::default() }),
                ..request("o", vec![1], 4, true)
            },
            "output_config.logprobs = 5",
        ),
    ];
    for (req, needle) in cases {
        let status = collect(&mut client, req).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{needle}: {status:?}");
        assert!(status.message().contains(needle), "{needle} not in {:?}", status.message());
    }
    // The server is unharmed, and nothing leaked into the executor.
    assert_eq!(chunks_and_completes(&collect(&mut client, request("ok", vec![1], 3, true)).await.unwrap()).0.len(), 3);
    assert_eq!(server.executor.executor().in_flight(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temperature_zero_is_accepted_as_greedy() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    // What the gateway sends for an OpenAI request with temperature 0.
    let greedy = pb::SamplingConfig {
        temperature: Some(0.0),
        top_p: Some(1.0),
        repetition_penalty: Some(1.0),
        num_return_sequences: 1,
        beam_width: 1,
        ..Default::default()
    };
    let messages = collect(&mut client, sampling("g0", vec![4, 5], 6, greedy)).await.unwrap();
    let (tokens, completes) = chunks_and_completes(&messages);
    assert_eq!(tokens.len(), 6);
    assert_eq!(completes[0].finish_reason, "length");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_ids_abort_and_disconnect() {
    let server = TestServer::start(5.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let mut first = client.generate(request("dup", vec![1, 2], 400, true)).await.unwrap().into_inner();
    assert!(first.next().await.is_some());
    let status = client.generate(request("dup", vec![1, 2], 4, true)).await.map(|_| ()).unwrap_err();
    assert_eq!(status.code(), Code::AlreadyExists);

    let aborted = client.abort(pb::AbortRequest { request_id: "dup".into() }).await.unwrap().into_inner();
    assert!(aborted.success);
    let (messages, status) = drain(&mut first).await;
    assert!(status.is_none(), "an aborted request ends with a complete, not an error: {status:?}");
    match messages.last().and_then(|m| m.response.clone()) {
        Some(Kind::Complete(c)) => assert_eq!(c.finish_reason, "abort"),
        other => panic!("expected a complete, got {other:?}"),
    }
    let unknown = client.abort(pb::AbortRequest { request_id: "nope".into() }).await.unwrap().into_inner();
    assert!(!unknown.success && unknown.message.contains("nope"));

    // A client that drops its stream has its request cancelled at once.
    let mut gone = client.generate(request("gone", vec![3, 4], 400, true)).await.unwrap().into_inner();
    assert!(gone.next().await.is_some());
    assert_eq!(server.executor.executor().in_flight(), 1);
    drop(gone);
    let started = Instant::now();
    eventually_async(Duration::from_millis(500), || std::future::ready(server.executor.executor().in_flight() == 0))
        .await;
    assert_eq!(server.executor.executor().in_flight(), 0);
    assert!(started.elapsed() < Duration::from_millis(50), "cancelled after {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_reused_right_after_its_complete_names_the_new_request() {
    let server = TestServer::start(2.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    for round in 0..10 {
        // The first request completes; the client reuses its id as soon as it sees the complete,
        // before its stream has formally ended.
        let mut first = client.generate(request("again", vec![1, 2], 2, true)).await.unwrap().into_inner();
        loop {
            let message = first.next().await.expect("a complete").unwrap();
            if matches!(message.response, Some(Kind::Complete(_))) {
                break;
            }
        }
        let mut second = client
            .generate(request("again", vec![1, 2], 400, true))
            .await
            .unwrap_or_else(|s| panic!("round {round}: reusing a finished id was refused: {s:?}"))
            .into_inner();
        assert!(second.next().await.is_some());
        // The first request's cleanup must not have unregistered the second: Abort finds it.
        let abort = client.abort(pb::AbortRequest { request_id: "again".into() }).await.unwrap().into_inner();
        assert!(abort.success, "round {round}: {}", abort.message);
        let (messages, status) = drain(&mut second).await;
        assert!(status.is_none());
        match messages.last().and_then(|m| m.response.clone()) {
            Some(Kind::Complete(c)) => assert_eq!(c.finish_reason, "abort"),
            other => panic!("expected a complete, got {other:?}"),
        }
        // Abort after the complete: nothing is in flight under that id any more.
        let late = client.abort(pb::AbortRequest { request_id: "again".into() }).await.unwrap().into_inner();
        assert!(!late.success, "round {round}: {}", late.message);
        assert!(first.next().await.is_none());
    }
    server.wait_executor_idle(Duration::from_secs(2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_strings_and_stop_token_ids() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let tokenizer = server.tokenizer();
    let (tokens, _) = chunks_and_completes(&collect(&mut client, request("s0", vec![9, 9], 30, true)).await.unwrap());
    let text = tokenizer.decode(&tokens, true).unwrap();
    let chars: Vec<char> = text.chars().collect();
    let stop: String = chars[chars.len() / 2..chars.len() / 2 + 2].iter().collect();
    let req = pb::GenerateRequest { stop: vec![stop.clone()], ..request("s1", vec![9, 9], 30, true) };
    let (_, completes) = chunks_and_completes(&collect(&mut client, req).await.unwrap());
    let done = &completes[0];
    assert_eq!(done.finish_reason, "stop");
    assert_eq!(done.matched_stop, Some(pb::generate_complete::MatchedStop::MatchedStopStr(stop.clone())));
    let cut = text.find(&stop).unwrap();
    assert!(done.output_token_ids.len() < tokens.len(), "generation stopped early");
    assert!(tokenizer.decode(&done.output_token_ids, true).unwrap().starts_with(&text[..cut]));

    let stop_id = tokens[4];
    let first = tokens.iter().position(|&t| t == stop_id).unwrap();
    let req = pb::GenerateRequest { stop_token_ids: vec![stop_id], ..request("s2", vec![9, 9], 30, true) };
    let (_, completes) = chunks_and_completes(&collect(&mut client, req).await.unwrap());
    assert_eq!(completes[0].finish_reason, "stop");
    assert_eq!(completes[0].matched_stop, Some(pb::generate_complete::MatchedStop::MatchedTokenId(stop_id)));
    assert_eq!(completes[0].output_token_ids, tokens[..first].to_vec(), "stop token excluded by default");
    let req = pb::GenerateRequest {
        stop_token_ids: vec![stop_id],
        include_stop_token_in_output: true,
        ..request("s3", vec![9, 9], 30, true)
    };
    let (_, completes) = chunks_and_completes(&collect(&mut client, req).await.unwrap());
    assert_eq!(completes[0].output_token_ids, tokens[..=first].to_vec());
}

/// One sequence of a stream: the tokens of its chunks, where its chunks were, where its complete was.
#[derive(Debug, Default)]
struct SequenceView {
    tokens: Vec<u32>,
    chunks_at: Vec<usize>,
    complete_at: Option<usize>,
}

/// The messages of a stream, per sequence.
fn by_sequence(messages: &[pb::GenerateResponse]) -> HashMap<u32, SequenceView> {
    let mut out: HashMap<u32, SequenceView> = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        match m.response.as_ref().unwrap() {
            Kind::Chunk(c) => {
                let entry = out.entry(c.sequence_index).or_default();
                entry.tokens.extend(&c.token_ids);
                entry.chunks_at.push(i);
            }
            Kind::Complete(c) => {
                let entry = out.entry(c.sequence_index).or_default();
                assert!(entry.complete_at.is_none(), "one complete per sequence");
                entry.complete_at = Some(i);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_sequences_each_end_with_their_own_complete() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let n3 = pb::SamplingConfig { num_return_sequences: 3, ..Default::default() };
    let messages = collect(&mut client, sampling("n3", vec![7, 8], 10, n3)).await.unwrap();
    let sequences = by_sequence(&messages);
    assert_eq!(sequences.len(), 3);
    let completes = chunks_and_completes(&messages).1;
    let mut outputs = Vec::new();
    for (index, view) in &sequences {
        let (tokens, chunk_positions) = (&view.tokens, &view.chunks_at);
        let complete_at = view.complete_at.expect("every sequence has a complete");
        assert!(chunk_positions.iter().all(|&p| p < complete_at), "sequence {index}: its complete is its last message");
        let complete = completes.iter().find(|c| c.sequence_index == *index).unwrap();
        assert_eq!(&complete.output_token_ids, tokens, "sequence {index}");
        assert_eq!((complete.finish_reason.as_str(), complete.completion_tokens), ("length", 10));
        outputs.push(tokens.clone());
    }
    outputs.sort();
    outputs.dedup();
    assert_eq!(outputs.len(), 3, "independent sequences");

    // Not streaming: just the three completes.
    let n3 = pb::SamplingConfig { num_return_sequences: 3, ..Default::default() };
    let req = pb::GenerateRequest { streaming: false, ..sampling("n3b", vec![7, 8], 10, n3) };
    let messages = collect(&mut client, req).await.unwrap();
    let (chunk_tokens, completes) = chunks_and_completes(&messages);
    assert!(chunk_tokens.is_empty());
    let mut indices: Vec<u32> = completes.iter().map(|c| c.sequence_index).collect();
    indices.sort();
    assert_eq!(indices, vec![0, 1, 2]);
    for c in &completes {
        assert_eq!(c.output_token_ids, sequences[&c.sequence_index].tokens, "same tokens as when streaming");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_sequence_reports_the_stop_it_matched() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let tokenizer = server.tokenizer();
    let n2 = || pb::SamplingConfig { num_return_sequences: 2, ..Default::default() };
    let free = by_sequence(&collect(&mut client, sampling("free", vec![3, 3], 40, n2())).await.unwrap());
    let (seq0, seq1) = (&free[&0].tokens, &free[&1].tokens);

    // A token only sequence 1 produces stops sequence 1 alone.
    let only1 = *seq1.iter().skip(3).find(|t| !seq0.contains(t)).expect("sequences differ");
    let req = pb::GenerateRequest { stop_token_ids: vec![only1], ..sampling("tok", vec![3, 3], 40, n2()) };
    let completes = chunks_and_completes(&collect(&mut client, req).await.unwrap()).1;
    let c0 = completes.iter().find(|c| c.sequence_index == 0).unwrap();
    let c1 = completes.iter().find(|c| c.sequence_index == 1).unwrap();
    assert_eq!((c0.finish_reason.as_str(), &c0.matched_stop), ("length", &None));
    assert_eq!(c1.finish_reason, "stop");
    assert_eq!(c1.matched_stop, Some(pb::generate_complete::MatchedStop::MatchedTokenId(only1)));

    // A stop string only sequence 1's text contains.
    let (text0, text1) = (tokenizer.decode(seq0, true).unwrap(), tokenizer.decode(seq1, true).unwrap());
    let chars: Vec<char> = text1.chars().collect();
    let stop = (chars.len() / 3..chars.len() - 3)
        .map(|i| chars[i..i + 3].iter().collect::<String>())
        .find(|s| !text0.contains(s.as_str()) && !s.trim().is_empty())
        .expect("a string only sequence 1 has");
    let req = pb::GenerateRequest { stop: vec![stop.clone()], ..sampling("str", vec![3, 3], 40, n2()) };
    let completes = chunks_and_completes(&collect(&mut client, req).await.unwrap()).1;
    let c0 = completes.iter().find(|c| c.sequence_index == 0).unwrap();
    let c1 = completes.iter().find(|c| c.sequence_index == 1).unwrap();
    assert_eq!(c0.matched_stop, None, "sequence 0 did not meet {stop:?}");
    assert_eq!(c0.output_token_ids, *seq0);
    assert_eq!(c1.finish_reason, "stop");
    assert_eq!(c1.matched_stop, Some(pb::generate_complete::MatchedStop::MatchedStopStr(stop)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_words_are_never_generated() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let tokenizer = server.tokenizer();
    let (free, _) = chunks_and_completes(&collect(&mut client, request("b0", vec![6, 1], 40, true)).await.unwrap());

    let banned = free[2];
    let req = pb::GenerateRequest { bad_token_ids: vec![banned], ..request("b1", vec![6, 1], 40, true) };
    let (tokens, completes) = chunks_and_completes(&collect(&mut client, req).await.unwrap());
    assert_eq!(tokens.len(), 40);
    assert!(!tokens.contains(&banned), "bad token {banned} generated");
    assert_eq!(completes[0].output_token_ids, tokens);

    // A bad string is tokenized server-side: pick a token that encodes back to itself.
    let (word, id) = free
        .iter()
        .filter(|&&t| t != banned)
        .find_map(|&t| {
            let word = tokenizer.decode(&[t], false).ok()?;
            (tokenizer.encode(&word, false).ok()? == vec![t]).then_some((word, t))
        })
        .expect("a token that round-trips");
    let req = pb::GenerateRequest { bad: vec![word.clone()], ..request("b2", vec![6, 1], 40, true) };
    let (tokens, _) = chunks_and_completes(&collect(&mut client, req).await.unwrap());
    assert!(!tokens.contains(&id), "bad string {word:?} ({id}) generated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_is_resource_exhausted() {
    let server =
        TestServer::builder().iteration_ms(5.0).config(|c| c.max_batch_size(1).max_queue_size(1)).start().await;
    let mut client = server.client().await;
    let mut running = client.generate(request("q0", vec![1], 400, true)).await.unwrap().into_inner();
    assert!(running.next().await.is_some(), "q0 is running, the queue is empty");
    // q1 waits in the queue (the batch holds one request); q2 finds the queue full.
    let mut queued = client.generate(request("q1", vec![2], 4, true)).await.unwrap().into_inner();
    let full = client.generate(request("q2", vec![3], 4, true)).await.map(|_| ()).unwrap_err();
    assert_eq!(full.code(), Code::ResourceExhausted, "{full:?}");
    assert!(full.message().contains("queue"), "{}", full.message());
    drop(running);
    let (messages, status) = drain(&mut queued).await;
    assert!(status.is_none(), "the queued request runs once the batch frees up: {status:?}");
    assert_eq!(chunks_and_completes(&messages).0.len(), 4);
    server.wait_executor_idle(Duration::from_secs(2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_limit_is_resource_exhausted() {
    let options = ServeOptions { max_concurrent_requests: Some(1), ..Default::default() };
    let server = TestServer::start(5.0, options).await;
    let mut client = server.client().await;
    let mut slow = client.generate(request("slow", vec![1], 400, true)).await.unwrap().into_inner();
    assert!(slow.next().await.is_some());
    let busy = client.generate(request("busy", vec![1], 4, true)).await.map(|_| ()).unwrap_err();
    assert_eq!(busy.code(), Code::ResourceExhausted);
    drop(slow);
    server.wait_executor_idle(Duration::from_secs(2)).await;
    // The slot comes back with the request.
    let ok = eventually_some(Duration::from_secs(1), Duration::from_millis(10), || {
        let mut client = client.clone();
        async move {
            match collect(&mut client, request("after", vec![1], 2, true)).await {
                Ok(messages) => Some(messages),
                Err(status) if status.code() == Code::ResourceExhausted => None,
                Err(status) => panic!("{status:?}"),
            }
        }
    })
    .await;
    assert_eq!(chunks_and_completes(&ok.expect("slot released")).0.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadlines_end_with_deadline_exceeded_and_free_the_executor() {
    let options = ServeOptions { default_deadline: Some(Duration::from_millis(300)), ..Default::default() };
    let server = TestServer::start(5.0, options).await;
    let mut client = server.client().await;

    // The client's deadline.
    let mut timed = tonic::Request::new(request("timed", vec![1], 2000, true));
    timed.set_timeout(Duration::from_millis(100));
    let mut stream = client.generate(timed).await.unwrap().into_inner();
    let (messages, status) = drain(&mut stream).await;
    let status = status.expect("an error status");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(status.message().contains("request's deadline"), "{}", status.message());
    assert!(messages.iter().all(|m| matches!(m.response, Some(Kind::Chunk(_)))), "no complete before the error");
    server.wait_executor_idle(Duration::from_secs(1)).await;

    // The server's default request timeout, for a client that sets none.
    let mut stream = client.generate(request("untimed", vec![1], 2000, true)).await.unwrap().into_inner();
    let (_, status) = drain(&mut stream).await;
    let status = status.expect("an error status");
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(status.message().contains("server's request timeout"), "{}", status.message());
    server.wait_executor_idle(Duration::from_secs(1)).await;

    // Short requests are untouched.
    let messages = collect(&mut client, request("quick", vec![1], 3, true)).await.unwrap();
    assert_eq!(chunks_and_completes(&messages).1[0].finish_reason, "length");
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
            let messages =
                collect(&mut client, request(&format!("c{i}"), vec![1 + i % 3000, 2], max_tokens, true)).await.unwrap();
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
async fn get_tokenizer_streams_a_zip_with_its_sha256() {
    use sha2::Digest;
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let mut client = server.client().await;
    let mut stream = client.get_tokenizer(cpb::GetTokenizerRequest {}).await.unwrap().into_inner();
    let mut data = Vec::new();
    let mut shas = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        data.extend(chunk.data);
        shas.push(chunk.sha256);
    }
    assert!(shas[..shas.len() - 1].iter().all(String::is_empty), "sha256 only on the last chunk");
    let digest: String = sha2::Sha256::digest(&data).iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(shas.last().unwrap(), &digest);
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(data)).unwrap();
    let names: Vec<String> = (0..archive.len()).map(|i| archive.by_index(i).unwrap().name().to_string()).collect();
    assert!(names.contains(&"tokenizer.json".to_string()), "{names:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kv_event_subscription_reports_load() {
    let options = ServeOptions { kv_heartbeat: Duration::from_millis(20), ..Default::default() };
    let server = TestServer::start(1.0, options).await;
    let mut client = server.client().await;
    let mut stream = client.subscribe_kv_events(cpb::SubscribeKvEventsRequest::default()).await.unwrap().into_inner();
    let mut batches = Vec::new();
    for _ in 0..3 {
        batches.push(stream.next().await.unwrap().unwrap());
    }
    // Load-only batches repeat the last event batch's number (none yet): the gateway never
    // counts them as batches.
    let numbers: Vec<u64> = batches.iter().map(|b| b.sequence_number).collect();
    assert_eq!(numbers, vec![0, 0, 0]);
    let samples: Vec<u64> = batches.iter().map(|b| b.load.as_ref().unwrap().sample).collect();
    assert_eq!(samples, vec![1, 2, 3]);
    let load = batches[0].load.clone().unwrap();
    assert!(load.load_only && batches[0].events.is_empty());
    assert_eq!(load.max_running_requests, 256);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflection_lists_the_services_v1_and_v1alpha() {
    let server = TestServer::start(1.0, ServeOptions::default()).await;
    let expected = ["grpc.health.v1.Health", "trtllm.TrtllmService"];

    use tonic_reflection::pb::v1;
    let mut client = v1::server_reflection_client::ServerReflectionClient::new(server.channel().await);
    let ask = v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(v1::server_reflection_request::MessageRequest::ListServices(String::new())),
    };
    let mut replies = client.server_reflection_info(futures::stream::iter([ask])).await.unwrap().into_inner();
    let reply = replies.next().await.unwrap().unwrap();
    let Some(v1::server_reflection_response::MessageResponse::ListServicesResponse(list)) = reply.message_response
    else {
        panic!("unexpected reply {reply:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for name in expected {
        assert!(names.iter().any(|n| n == name), "v1 lacks {name}: {names:?}");
    }

    use tonic_reflection::pb::v1alpha;
    let mut client = v1alpha::server_reflection_client::ServerReflectionClient::new(server.channel().await);
    let ask = v1alpha::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(v1alpha::server_reflection_request::MessageRequest::ListServices(String::new())),
    };
    let mut replies = client.server_reflection_info(futures::stream::iter([ask])).await.unwrap().into_inner();
    let reply = replies.next().await.unwrap().unwrap();
    let Some(v1alpha::server_reflection_response::MessageResponse::ListServicesResponse(list)) = reply.message_response
    else {
        panic!("unexpected reply {reply:?}");
    };
    let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
    for name in expected {
        assert!(names.iter().any(|n| n == name), "v1alpha lacks {name}: {names:?}");
    }
}
