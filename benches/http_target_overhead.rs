//! What the OpenAI-compatible HTTP target adds over in process, measured the way
//! `runner_overhead` measures the gRPC target: one simulated executor (10 ms iterations, real
//! time) serves alternating in-process and HTTP rounds of 256 streams x 32 tokens (order swapped
//! every round, after one HTTP run that opens the connections), and the TTFT and ITL percentile
//! differences of each round are reported with their median over rounds. The front also stamps
//! its own TTFT (handler entry to the executor's first chunk) and each round's fan-in (first to
//! last request reaching it), which say where the added TTFT goes.
//!
//! The HTTP side is a minimal OpenAI front written here (axum, one SSE event per executor
//! response, then the usage chunk and `[DONE]`), so the figure is the HTTP target itself (request
//! encoding, reqwest, HTTP/1.1, SSE parsing, client-side detokenized counting) plus an
//! HTTP server's cost, with no gateway, tokenizer or template on the server side. The executor's
//! first-token stamps do not travel over the OpenAI protocol, so unlike gRPC there is no
//! per-request delivery figure.
//!
//! A second part measures the HTTP client alone against a zero-latency local OpenAI mock (every
//! reply's chunks are ready at once, no executor): TTFT (request to first content chunk) and the
//! tokens/s the target parses, at the same 256 streams, over HTTP/1.1 and h2c; and the same
//! requests from a bare reqwest client (no tokenizer, SSE framing or record), whose first-bytes
//! time is the transport, the mock and the host's scheduling without the target.
//!
//! `cargo bench --bench http_target_overhead`

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Value, json};
use trtllm::bench::{
    BenchTarget, HttpOptions, LoadPlan, OpenAiApi, OpenAiTarget, Phase, PromptSource, RequestRecord, RunClock,
    Workload, percentile, run_point,
};
use trtllm::sim::SimulatedEngine;
use trtllm::text::Tokenizer;
use trtllm::{AsyncExecutor, ExecutorConfig, GenerationRequest, SamplingParams, StreamEvent};

// The allocator the `trtllm` command uses (src/main.rs), so the figures are the command's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const STREAMS: usize = 256;
const OUTPUT_LEN: u32 = 32;
const INPUT_LEN: usize = 16;
const ROUNDS: usize = 6;
const MODEL: &str = "trtllm-builtin-sim";

async fn start_executor() -> (tempfile::TempDir, AsyncExecutor) {
    let dir = tempfile::tempdir().unwrap();
    SimulatedEngine::builder()
        .vocab_size(32000)
        .max_batch_size(1024)
        .max_num_tokens(65536)
        .iteration_ms(10.0)
        .time_scale(1.0)
        .kv_cache_max_tokens(4_000_000)
        .build()
        .write_to(dir.path())
        .expect("engine dir");
    let config = ExecutorConfig::builder().stream_buffer(4096).build().unwrap();
    let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
    (dir, executor)
}

#[derive(Clone)]
struct Front {
    executor: AsyncExecutor,
    /// Distinct prompts, so no request is served from another's KV blocks.
    next: Arc<AtomicU32>,
    /// Per request, the front's own TTFT: handler entry to the executor's first chunk (s).
    first_chunk: Arc<std::sync::Mutex<Vec<f64>>>,
    /// When each request reached the handler (the round's fan-in spread).
    entered: Arc<std::sync::Mutex<Vec<std::time::Instant>>>,
}

fn sse(doc: &Value) -> Result<Bytes, Infallible> {
    Ok(Bytes::from(format!("data: {doc}\n\n")))
}

/// `POST /v1/chat/completions`: the request's `max_tokens` from the executor, streamed.
async fn chat(State(front): State<Front>, body: Bytes) -> Response {
    let entered = std::time::Instant::now();
    front.entered.lock().unwrap().push(entered);
    let mut first_chunk = Some(front.first_chunk.clone());
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let max_tokens = request["max_tokens"].as_u64().unwrap_or(1) as u32;
    let first = front.next.fetch_add(INPUT_LEN as u32, Ordering::Relaxed) % 30_000;
    let prompt: Vec<u32> = (first..first + INPUT_LEN as u32).collect();
    let generation = GenerationRequest::new(prompt, max_tokens)
        .with_streaming(true)
        .with_sampling(SamplingParams::default().min_tokens(max_tokens));
    let stream = front.executor.enqueue(generation).expect("enqueue");
    let events = stream.flat_map(move |item| {
        let docs: Vec<Value> = match item {
            Ok(StreamEvent::Chunk(chunk)) => {
                if let Some(sink) = first_chunk.take() {
                    sink.lock().unwrap().push(entered.elapsed().as_secs_f64());
                }
                vec![json!({"choices": [{"index": 0, "delta": {"content": " tok".repeat(chunk.token_ids.len())}}]})]
            }
            Ok(StreamEvent::Final(done)) => vec![
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": done.finish_reason.as_openai_str()}]}),
                json!({"choices": [], "usage": {"prompt_tokens": done.prompt_tokens,
                    "completion_tokens": done.completion_tokens}}),
            ],
            Err(e) => vec![json!({"error": {"message": e.to_string()}})],
        };
        futures::stream::iter(docs.into_iter().map(|d| sse(&d)))
    });
    let done = futures::stream::once(async { Ok::<_, Infallible>(Bytes::from_static(b"data: [DONE]\n\n")) });
    Response::builder().header("content-type", "text/event-stream").body(Body::from_stream(events.chain(done))).unwrap()
}

/// The zero-latency mock's `POST /v1/chat/completions`: every chunk of the reply at once.
async fn mock_chat(body: Bytes) -> Response {
    let request: Value = serde_json::from_slice(&body).unwrap_or_default();
    let max_tokens = request["max_tokens"].as_u64().unwrap_or(1);
    let mut reply = String::with_capacity(64 * (max_tokens as usize + 3));
    for _ in 0..max_tokens {
        reply.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"}}]}\n\n");
    }
    reply.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n");
    reply.push_str(&format!(
        "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{INPUT_LEN},\"completion_tokens\":{max_tokens}}}}}\n\n"
    ));
    reply.push_str("data: [DONE]\n\n");
    Response::builder().header("content-type", "text/event-stream").body(Body::from(reply)).unwrap()
}

/// Serves the zero-latency mock on a loopback port (HTTP/1.1 and h2c); the base URL.
async fn serve_mock() -> String {
    let app = axum::Router::new()
        .route("/v1/models", axum::routing::get(models))
        .route("/v1/chat/completions", axum::routing::post(mock_chat));
    serve_both(app).await
}

/// The transport and the mock alone: the same requests sent with a bare reqwest client (body
/// prepared once, no tokenizer, no SSE framing or record), each timed from send to its first
/// body bytes and read to the end. Per round: the first-bytes times (s) and the elapsed time.
async fn raw_round(client: &reqwest::Client, url: &str, tokens: u32) -> (Vec<f64>, f64) {
    let body = serde_json::to_vec(&json!({
        "model": MODEL, "max_tokens": tokens, "stream": true,
        "messages": [{"role": "user", "content": "a b c d e f g h i j k l m n o p"}],
    }))
    .unwrap();
    let started = std::time::Instant::now();
    let requests = (0..STREAMS).map(|_| {
        let request = client.post(url).header("content-type", "application/json").body(body.clone());
        async move {
            let sent = std::time::Instant::now();
            let mut response = request.send().await.expect("mock reply");
            let first = response.chunk().await.expect("body");
            let ttfb = sent.elapsed().as_secs_f64();
            assert!(first.is_some());
            while response.chunk().await.expect("body").is_some() {}
            ttfb
        }
    });
    let handles: Vec<_> = requests.map(tokio::spawn).collect();
    let mut ttfb = Vec::with_capacity(STREAMS);
    for handle in handles {
        ttfb.push(handle.await.unwrap());
    }
    (ttfb, started.elapsed().as_secs_f64())
}

async fn models() -> axum::Json<Value> {
    axum::Json(json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]}))
}

/// What the front records: per request its own TTFT (s) and when it entered the handler.
type FrontStamps = (Arc<std::sync::Mutex<Vec<f64>>>, Arc<std::sync::Mutex<Vec<std::time::Instant>>>);

/// Serves the front on a loopback port; the base URL.
async fn serve_front(executor: &AsyncExecutor, front_stamps: FrontStamps) -> String {
    let (first_chunk, entered) = front_stamps;
    let front = Front { executor: executor.clone(), next: Arc::new(AtomicU32::new(0)), first_chunk, entered };
    let app = axum::Router::new()
        .route("/v1/models", axum::routing::get(models))
        .route("/v1/chat/completions", axum::routing::post(chat))
        .with_state(front);
    serve_both(app).await
}

/// Serves `app` on a loopback port, HTTP/1.1 and h2 (prior knowledge) on the same port, with
/// `TCP_NODELAY` as production servers set it; the base URL.
async fn serve_both(app: axum::Router) -> String {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    use hyper_util::service::TowerToHyperService;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            let _ = stream.set_nodelay(true);
            let service = TowerToHyperService::new(app.clone());
            tokio::spawn(async move {
                let mut builder = auto::Builder::new(TokioExecutor::new());
                builder.http2().max_concurrent_streams(4096);
                let _ = builder.serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    format!("http://{addr}/v1")
}

async fn run(target: &BenchTarget) -> Vec<RequestRecord> {
    run_tokens(target, OUTPUT_LEN).await
}

async fn run_tokens(target: &BenchTarget, output_len: u32) -> Vec<RequestRecord> {
    let workload = Workload {
        // Ids the shipped tokenizer knows: the HTTP target turns them into text with it.
        source: PromptSource::Random {
            vocab_size: trtllm::builtin::BUILTIN_VOCAB_SIZE,
            input_len: INPUT_LEN,
            shared_prefix: 0,
        },
        output_len: Some(output_len),
        fallback_output_len: output_len,
        ignore_eos: true,
        end_id: None,
        streaming: true,
        seed: 1,
        guide: None,
        lengths: Default::default(),
    };
    let plan = LoadPlan::closed(STREAMS, STREAMS);
    let run = run_point(target, &workload, 0, &plan, &RunClock::start(), |_| {}).await.expect("valid plan");
    let failed: Vec<&RequestRecord> = run.records.iter().filter(|r| !r.is_success()).collect();
    assert!(failed.is_empty(), "{} requests failed, e.g. {:?}", failed.len(), failed[0].error);
    run.records.into_iter().filter(|r| r.phase == Phase::Measure).collect()
}

fn ms(values: &[f64], p: f64) -> f64 {
    percentile(values, p).unwrap_or(f64::NAN) * 1e3
}

fn median(values: &[f64]) -> f64 {
    percentile(values, 50.0).unwrap_or(f64::NAN)
}

fn rounds(values: &[f64]) -> String {
    let parts: Vec<String> = values.iter().map(|v| format!("{v:.2}")).collect();
    format!("[{}]", parts.join(", "))
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    println!("build profile: {}", env!("TRTLLM_BUILD_PROFILE"));
    let (_dir, executor) = start_executor().await;
    let scratch = tempfile::tempdir().unwrap();
    let builtin = trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), scratch.path()).unwrap();
    let tokenizer = Tokenizer::from_dir(builtin.join("tokenizer")).unwrap();
    let front_ttft = Arc::new(std::sync::Mutex::new(Vec::new()));
    let entered = Arc::new(std::sync::Mutex::new(Vec::new()));
    let base = serve_front(&executor, (front_ttft.clone(), entered.clone())).await;
    let ttfts = |records: &[RequestRecord]| records.iter().filter_map(RequestRecord::ttft_s).collect::<Vec<_>>();
    let itls = |records: &[RequestRecord]| records.iter().flat_map(RequestRecord::itl_s).collect::<Vec<_>>();
    // HTTP/1.1 (the row) and then h2c, one connection carrying every stream.
    for http2 in [false, true] {
        let version = if http2 { "h2c" } else { "HTTP/1.1" };
        let options = HttpOptions { streams: STREAMS, http2_prior_knowledge: http2 };
        let http = OpenAiTarget::connect_with(&base, None, OpenAiApi::Chat, None, options)
            .await
            .unwrap()
            .with_tokenizer(tokenizer.clone());
        let (in_process, http) = (BenchTarget::InProcess(executor.clone()), BenchTarget::OpenAi(http));

        // Per figure: the in-process and HTTP samples of every round, and each round's difference.
        let mut added: [Vec<f64>; 4] = Default::default();
        // One HTTP run first opens the pooled connections (the mock part below does the same).
        run(&http).await;
        front_ttft.lock().unwrap().clear();
        entered.lock().unwrap().clear();
        let mut fan_in = Vec::new();
        let (mut local_ttft, mut remote_ttft, mut local_itl, mut remote_itl) = (vec![], vec![], vec![], vec![]);
        for round in 0..ROUNDS {
            let (local, remote) = if round % 2 == 0 {
                let local = run(&in_process).await;
                (local, run(&http).await)
            } else {
                let remote = run(&http).await;
                (run(&in_process).await, remote)
            };
            let (lt, rt, li, ri) = (ttfts(&local), ttfts(&remote), itls(&local), itls(&remote));
            let stamps = std::mem::take(&mut *entered.lock().unwrap());
            if let (Some(first), Some(last)) = (stamps.iter().min(), stamps.iter().max()) {
                fan_in.push(last.duration_since(*first).as_secs_f64() * 1e3);
            }
            for (i, (l, r, p)) in
                [(&lt, &rt, 50.0), (&lt, &rt, 99.0), (&li, &ri, 50.0), (&li, &ri, 99.0)].iter().enumerate()
            {
                added[i].push(ms(r, *p) - ms(l, *p));
            }
            local_ttft.extend(lt);
            remote_ttft.extend(rt);
            local_itl.extend(li);
            remote_itl.extend(ri);
        }
        println!(
            "{}HTTP target over in process, {version}: {STREAMS} streams, 10 ms iterations, {OUTPUT_LEN} tokens, {ROUNDS} \
             interleaved rounds (ms; added = median over rounds of the per-round difference):",
            if http2 { "\n" } else { "" }
        );
        let rows = [
            ("p50 TTFT", &local_ttft, &remote_ttft, 50.0, 0),
            ("p99 TTFT", &local_ttft, &remote_ttft, 99.0, 1),
            ("p50 ITL", &local_itl, &remote_itl, 50.0, 2),
            ("p99 ITL", &local_itl, &remote_itl, 99.0, 3),
        ];
        for (name, local, remote, p, i) in rows {
            println!(
                "  {name}: in process {:.2}, HTTP {:.2}; added {:.2}, per round {}",
                ms(local, p),
                ms(remote, p),
                median(&added[i]),
                rounds(&added[i])
            );
        }
        // Where the added TTFT goes: the front's own share (handler entry to the executor's first
        // chunk: waiting for the next iteration, the executor), the rest being the client's request
        // path, the request's transport and parsing, and the first chunk's delivery and parsing.
        let front = front_ttft.lock().unwrap().clone();
        println!(
            "  HTTP front's own TTFT (handler entry to the executor's first chunk): p50 {:.2}, p99 {:.2}; the rest of HTTP \
             TTFT (client request path, transport, delivery) p50 {:.2}, p99 {:.2}",
            ms(&front, 50.0),
            ms(&front, 99.0),
            ms(&remote_ttft, 50.0) - ms(&front, 50.0),
            ms(&remote_ttft, 99.0) - ms(&front, 99.0)
        );
        println!(
            "  fan-in: first to last of a round's {STREAMS} requests reaching the front, per round {} ms (10 ms iterations: \
             a request later than its iteration's start waits for the next)",
            rounds(&fan_in)
        );
    }
    executor.shutdown(trtllm::ShutdownMode::Cancel).await.unwrap();

    // The target's per-request tokenizer work, on one thread: the prompt's ids to text before
    // sending, and counting the reply's tokens after the stream (as vLLM's bench does).
    let counting = Tokenizer::from_dir(builtin.join("tokenizer")).unwrap();
    let prompt: Vec<u32> = (1000..1000 + INPUT_LEN as u32).collect();
    let reply = " tok".repeat(256);
    let started = std::time::Instant::now();
    for _ in 0..STREAMS {
        std::hint::black_box(counting.decode(std::hint::black_box(&prompt), false).unwrap());
    }
    let decode_us = started.elapsed().as_secs_f64() / STREAMS as f64 * 1e6;
    let started = std::time::Instant::now();
    for _ in 0..STREAMS {
        std::hint::black_box(counting.encode(std::hint::black_box(&reply), false).unwrap());
    }
    let encode_us = started.elapsed().as_secs_f64() / STREAMS as f64 * 1e6;
    println!(
        "\nThe target's tokenizer work per request, one thread: prompt ids to text ({INPUT_LEN} tokens) {decode_us:.1} \
         us, counting a 256-token reply {encode_us:.1} us"
    );

    // The client alone: a mock with every chunk ready at once, so what is measured is the
    // request, the connection, SSE parsing and the record. The first round opens the connections.
    const MOCK_ROUNDS: usize = 4;
    const MOCK_TOKENS: u32 = 256;
    let mock_base = serve_mock().await;
    println!(
        "\nHTTP client alone, zero-latency OpenAI mock: {STREAMS} streams x {MOCK_TOKENS} tokens, {} rounds after a \
         connection-opening one:",
        MOCK_ROUNDS - 1
    );
    for http2 in [false, true] {
        let options = HttpOptions { streams: STREAMS, http2_prior_knowledge: http2 };
        let mock = OpenAiTarget::connect_with(&mock_base, None, OpenAiApi::Chat, None, options).await.unwrap();
        let builtin_tokenizer = Tokenizer::from_dir(builtin.join("tokenizer")).unwrap();
        let mock = BenchTarget::OpenAi(mock.with_tokenizer(builtin_tokenizer));
        let (mut ttft, mut rates) = (Vec::new(), Vec::new());
        for round in 0..MOCK_ROUNDS {
            let started = std::time::Instant::now();
            let records = run_tokens(&mock, MOCK_TOKENS).await;
            let seconds = started.elapsed().as_secs_f64();
            if round == 0 {
                continue;
            }
            ttft.extend(ttfts(&records));
            let tokens: u64 = records.iter().map(|r| r.output_tokens).sum();
            rates.push(tokens as f64 / seconds / 1e3);
        }
        // The same load without the target: a bare client's first bytes (transport + mock + the
        // 2-core host's scheduling), so target TTFT minus this is the target's own cost.
        let mut client = reqwest::Client::builder().no_proxy().tcp_nodelay(true).pool_max_idle_per_host(STREAMS);
        if http2 {
            client = client.http2_prior_knowledge();
        }
        let client = client.build().unwrap();
        let url = format!("{mock_base}/chat/completions");
        let (mut ttfb, mut raw_rates) = (Vec::new(), Vec::new());
        for round in 0..MOCK_ROUNDS {
            let (first, seconds) = raw_round(&client, &url, MOCK_TOKENS).await;
            if round > 0 {
                ttfb.extend(first);
                raw_rates.push(f64::from(MOCK_TOKENS) * STREAMS as f64 / seconds / 1e3);
            }
        }
        let version = if http2 { "h2c" } else { "HTTP/1.1" };
        println!(
            "  {version}: target TTFT p50 {:.2} ms, p99 {:.2} ms; {} ktokens/s per round",
            ms(&ttft, 50.0),
            ms(&ttft, 99.0),
            rounds(&rates)
        );
        // Per token, from the rates (robust where TTFT is not: with every reply ready at once, a
        // stream's first chunk waits for however many others the runtime reads first).
        let per_token_us = |rates: &[f64]| 1e3 / median(rates);
        println!(
            "  {version}: bare client first bytes p50 {:.2} ms, p99 {:.2} ms; {} ktokens/s per round \
             (transport + mock + scheduling); per token: target {:.2} us, bare {:.2} us, the target's own {:.2} us",
            ms(&ttfb, 50.0),
            ms(&ttfb, 99.0),
            rounds(&raw_rates),
            per_token_us(&rates),
            per_token_us(&raw_rates),
            per_token_us(&rates) - per_token_us(&raw_rates)
        );
    }
}
