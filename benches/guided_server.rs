//! Guided decoding through the gRPC server: tokens/s of guided (JSON schema) vs unguided streaming
//! `Generate` calls at 1, 64 and 256 concurrent streams, sent by a tonic client over loopback to the
//! `trtllm.TrtllmService` server running in this process on a zero-latency (virtual clock)
//! simulated engine; next to the same requests enqueued in process on the same executor, so the
//! difference is what the server path adds. Then the wall time from sending a `Generate` call to
//! its first chunk (medians of 5) for an unguided request, the first request with a new schema (the grammar
//! compiles) and a repeat of it (a copy from the simulator's grammar cache).
//!
//! The engine is the built-in one (its shipped 3.7k-token byte-level BPE tokenizer is the guided
//! decoding vocabulary and the server's tokenizer) with a virtual clock. Every request has the same
//! 32-token prompts, at most 128 new tokens, `ignore_eos` (unguided streams run to 128 tokens; a
//! guided one ends where its JSON is complete) and a per-stream seed. A gRPC figure includes
//! protobuf encoding and decoding, tonic and HTTP/2 on loopback (one connection per 64 streams),
//! the server's request validation and text layer, and its per-chunk response messages; there is
//! no detokenisation (the server returns token ids and the requests have no stop strings). Guided
//! outputs are checked after the timing: every one that ended at a stop id must decode to JSON that
//! validates against the schema.
//!
//! `cargo bench --bench guided_server`

#[cfg(not(trtllm_real))]
mod bench {
    use std::time::{Duration, Instant};

    use futures::StreamExt;
    use futures::stream::FuturesUnordered;
    use tokio::sync::oneshot;
    use tonic::transport::Channel;
    use trtllm::guided::GuidedDecodingParams;
    use trtllm::proto::trtllm as pb;
    use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
    use trtllm::server::{ServeOptions, serve};
    use trtllm::sim::ClockMode;
    use trtllm::text::Tokenizer;
    use trtllm::{AsyncExecutor, ExecutorConfig, GenerationRequest, SamplingParams};

    type Client = TrtllmServiceClient<Channel>;

    const OUTPUT: u32 = 128;
    const PROMPT_LEN: u32 = 32;
    /// Concurrent streams per HTTP/2 connection (below any server stream limit).
    const STREAMS_PER_CONNECTION: usize = 64;

    fn schema(variant: usize) -> String {
        format!(
            r#"{{"type": "object", "properties": {{"name_{variant}": {{"type": "string", "maxLength": 24}},
            "age": {{"type": "integer", "minimum": 0, "maximum": 120}},
            "tags": {{"type": "array", "items": {{"enum": ["red", "green", "blue"]}}, "maxItems": 4}}}},
            "required": ["name_{variant}", "age"]}}"#
        )
    }

    fn prompt(stream: usize, vocab: u32) -> Vec<u32> {
        (0..PROMPT_LEN).map(|t| 10 + (t * 31 + stream as u32 * 7) % (vocab - 10)).collect()
    }

    /// The served executor, its tokenizer, the server's address and how to stop it.
    struct Served {
        _dir: tempfile::TempDir,
        executor: AsyncExecutor,
        tokenizer: Tokenizer,
        addr: std::net::SocketAddr,
        stop: oneshot::Sender<()>,
        task: tokio::task::JoinHandle<()>,
    }

    async fn start() -> Served {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = trtllm::builtin::builtin_engine();
        engine.clock = ClockMode::Virtual;
        engine.limits.max_batch_size = 256;
        engine.limits.max_num_tokens = 16_384;
        engine.kv_cache_max_tokens = Some(1 << 20);
        trtllm::builtin::write_engine(&engine, dir.path()).unwrap();
        let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap();
        let config = ExecutorConfig::builder()
            .stream_buffer(4 * OUTPUT as usize)
            .guided_decoding_from_tokenizer(&tokenizer)
            .build()
            .unwrap();
        let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let (served, served_tokenizer) = (executor.clone(), tokenizer.clone());
        let options = ServeOptions { addr, ..ServeOptions::default() };
        let task = tokio::spawn(async move {
            serve(served, Some(served_tokenizer), options, listener, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        Served { _dir: dir, executor, tokenizer, addr, stop, task }
    }

    async fn connect(addr: std::net::SocketAddr) -> Client {
        let url = format!("http://{addr}");
        for _ in 0..200 {
            if let Ok(client) = TrtllmServiceClient::connect(url.clone()).await {
                return client;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the server at {url} did not come up");
    }

    fn grpc_request(stream: usize, vocab: u32, guide: Option<&str>) -> pb::GenerateRequest {
        pb::GenerateRequest {
            request_id: format!("r{stream}"),
            tokenized: Some(pb::TokenizedInput { input_token_ids: prompt(stream, vocab), ..Default::default() }),
            max_tokens: OUTPUT,
            streaming: true,
            ignore_eos: true,
            sampling_config: Some(pb::SamplingConfig { seed: Some(stream as u64), ..Default::default() }),
            guided_decoding: guide.map(|g| pb::GuidedDecodingParams {
                guide_type: pb::guided_decoding_params::GuideType::JsonSchema as i32,
                guide: g.to_string(),
            }),
            ..Default::default()
        }
    }

    /// The tokens of one streaming `Generate` call and its finish reason.
    async fn generate(mut client: Client, request: pb::GenerateRequest) -> (Vec<u32>, String) {
        use pb::generate_response::Response as Kind;
        let mut stream = client.generate(request).await.expect("Generate accepted").into_inner();
        let (mut tokens, mut finish) = (Vec::new(), String::new());
        while let Some(message) = stream.next().await {
            match message.expect("no error status").response {
                Some(Kind::Chunk(chunk)) => tokens.extend(chunk.token_ids),
                Some(Kind::Complete(complete)) => finish = complete.finish_reason,
                None => {}
            }
        }
        (tokens, finish)
    }

    /// Every stream's tokens and finish reason, and the wall seconds, for `streams` concurrent calls.
    async fn through_grpc(
        clients: &[Client],
        first: usize,
        streams: usize,
        vocab: u32,
        guide: Option<&str>,
    ) -> (Vec<(Vec<u32>, String)>, f64) {
        let start = Instant::now();
        let calls: FuturesUnordered<_> = (first..first + streams)
            .map(|i| generate(clients[(i - first) / STREAMS_PER_CONNECTION].clone(), grpc_request(i, vocab, guide)))
            .collect();
        let outputs: Vec<_> = calls.collect().await;
        (outputs, start.elapsed().as_secs_f64())
    }

    /// Completion tokens and wall seconds for the same requests enqueued in process.
    async fn in_process(
        executor: &AsyncExecutor,
        first: usize,
        streams: usize,
        vocab: u32,
        guide: Option<&str>,
    ) -> (u64, f64) {
        let start = Instant::now();
        let mut finals: FuturesUnordered<_> = (first..first + streams)
            .map(|i| {
                let mut request = GenerationRequest::new(prompt(i, vocab), OUTPUT)
                    .with_streaming(true)
                    .with_end_id(None)
                    .with_sampling(SamplingParams::default().seed(i as u64));
                if let Some(guide) = guide {
                    request = request.with_guided_decoding(GuidedDecodingParams::json_schema(guide));
                }
                executor.enqueue(request).unwrap().collect_final()
            })
            .collect();
        let mut tokens = 0u64;
        while let Some(done) = finals.next().await {
            tokens += u64::from(done.unwrap().completion_tokens);
        }
        (tokens, start.elapsed().as_secs_f64())
    }

    /// Panics unless every guided output that ended at a stop id is JSON valid against `schema`.
    fn check_conforming(tokenizer: &Tokenizer, schema: &str, outputs: &[(Vec<u32>, String)]) -> usize {
        let schema: serde_json::Value = serde_json::from_str(schema).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let mut complete = 0;
        for (tokens, finish) in outputs.iter().filter(|(_, finish)| finish == "stop") {
            let text = tokenizer.decode(tokens, true).unwrap();
            let value: serde_json::Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("guided output {text:?} ({finish}): {e}"));
            assert!(validator.is_valid(&value), "guided output {text:?} does not validate");
            complete += 1;
        }
        complete
    }

    /// Wall time from sending a streaming `Generate` call to its first chunk.
    async fn first_chunk(client: &Client, vocab: u32, guide: Option<&str>) -> Duration {
        use pb::generate_response::Response as Kind;
        let mut request = grpc_request(0, vocab, guide);
        request.max_tokens = 16;
        let start = Instant::now();
        let mut stream = client.clone().generate(request).await.expect("Generate accepted").into_inner();
        let mut first = None;
        while let Some(message) = stream.next().await {
            if let Some(Kind::Chunk(_)) = message.expect("no error status").response {
                first.get_or_insert_with(|| start.elapsed());
            }
        }
        first.unwrap_or_else(|| start.elapsed())
    }

    fn median(mut samples: Vec<Duration>) -> Duration {
        samples.sort();
        samples[samples.len() / 2]
    }

    fn per_s(tokens: u64, seconds: f64) -> f64 {
        tokens as f64 / seconds
    }

    pub fn main() {
        println!("build profile: {}", env!("TRTLLM_BUILD_PROFILE"));
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        runtime.block_on(run());
    }

    async fn run() {
        let served = start().await;
        let vocab = served.tokenizer.vocab_size() as u32;
        let mut clients = Vec::new();
        for _ in 0..256usize.div_ceil(STREAMS_PER_CONNECTION) {
            clients.push(connect(served.addr).await);
        }
        let guide = schema(0);
        println!(
            "Guided decoding through the gRPC server: built-in engine ({vocab}-token tokenizer), virtual clock, \
             streaming, {PROMPT_LEN}-token prompts, up to {OUTPUT} tokens, JSON schema guide"
        );
        // Warm-up: connections, the first compilation of the schema, the lexer states it builds.
        through_grpc(&clients, 0, 8, vocab, Some(&guide)).await;
        println!(
            "| streams | unguided in process | unguided gRPC | guided in process | guided gRPC | per guided token, gRPC |"
        );
        println!("|---|---|---|---|---|---|");
        for streams in [1usize, 64, 256] {
            // Rounds of the four modes in turn (other prompts and seeds each round) until 256 streams ran.
            let rounds = 256 / streams;
            let mut totals = [(0u64, 0f64); 4];
            let (mut stopped, mut sent) = (0, 0);
            for round in 0..rounds {
                let first = round * streams;
                let add = |total: &mut (u64, f64), (tokens, seconds): (u64, f64)| {
                    total.0 += tokens;
                    total.1 += seconds;
                };
                add(&mut totals[0], in_process(&served.executor, first, streams, vocab, None).await);
                let (outputs, seconds) = through_grpc(&clients, first, streams, vocab, None).await;
                add(&mut totals[1], (outputs.iter().map(|(t, _)| t.len() as u64).sum(), seconds));
                add(&mut totals[2], in_process(&served.executor, first, streams, vocab, Some(&guide)).await);
                let (outputs, seconds) = through_grpc(&clients, first, streams, vocab, Some(&guide)).await;
                add(&mut totals[3], (outputs.iter().map(|(t, _)| t.len() as u64).sum(), seconds));
                stopped += check_conforming(&served.tokenizer, &guide, &outputs);
                sent += outputs.len();
            }
            let [plain, plain_grpc, guided, guided_grpc] = totals.map(|(tokens, seconds)| per_s(tokens, seconds));
            println!(
                "| {streams} | {plain:.0} tok/s | {plain_grpc:.0} tok/s | {guided:.0} tok/s | {guided_grpc:.0} tok/s | \
                 {:.0} µs |",
                1e6 / guided_grpc,
            );
            println!(
                "  ({streams} streams x {rounds} rounds: tokens unguided {} in process / {} gRPC, guided {} / {}; \
                 {stopped} of {sent} gRPC guided outputs ended at a stop id, all valid JSON for the schema)",
                totals[0].0, totals[1].0, totals[2].0, totals[3].0
            );
        }
        // Medians of 5: unguided calls; the first call of 5 schemas never sent before; 5 repeats of one.
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let mut unguided = Vec::new();
        let mut fresh = Vec::new();
        let mut again = Vec::new();
        for round in 0..5 {
            unguided.push(first_chunk(&clients[0], vocab, None).await);
            let new_schema = schema(100 + round);
            fresh.push(first_chunk(&clients[0], vocab, Some(&new_schema)).await);
            again.push(first_chunk(&clients[0], vocab, Some(&new_schema)).await);
        }
        println!(
            "Send to first chunk through gRPC (wall, median of 5): unguided {:.2} ms, first request of a new schema \
             {:.2} ms, the same schema again {:.2} ms",
            ms(median(unguided)),
            ms(median(fresh)),
            ms(median(again))
        );
        drop(clients);
        let _ = served.stop.send(());
        let _ = served.task.await;
        served.executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();
    }
}

#[cfg(not(trtllm_real))]
fn main() {
    bench::main();
}

/// The simulator's grammar engine is what this measures; a TensorRT-LLM build has nothing to serve it.
#[cfg(trtllm_real)]
fn main() {
    println!("guided_server: guided decoding in the simulator is not built against TensorRT-LLM");
}
