//! An in-process gRPC server on a loopback port, for tests.
#![allow(dead_code)]

use std::time::Duration;

use super::sim::{eventually_async, eventually_some};

use futures::StreamExt;
use tempfile::TempDir;
use tokio::sync::oneshot;
use tonic::transport::Channel;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
use trtllm::server::{ServeOptions, serve};
use trtllm::sim::SimulatedEngine;
use trtllm::text::Tokenizer;
use trtllm::{AsyncExecutor, ExecutorConfig, ExecutorConfigBuilder};

pub type Client = TrtllmServiceClient<Channel>;

pub struct TestServer {
    pub dir: TempDir,
    pub executor: AsyncExecutor,
    pub addr: std::net::SocketAddr,
    pub shutdown: Option<oneshot::Sender<()>>,
    pub handle: tokio::task::JoinHandle<()>,
}

/// What to serve: the built-in engine (with its tokenizer), adjusted.
pub struct TestServerBuilder {
    engine: SimulatedEngine,
    config: ExecutorConfigBuilder,
    options: ServeOptions,
}

impl TestServerBuilder {
    pub fn iteration_ms(mut self, ms: f64) -> Self {
        self.engine.iteration_ms = Some(ms);
        self
    }

    pub fn engine(mut self, tune: impl FnOnce(&mut SimulatedEngine)) -> Self {
        tune(&mut self.engine);
        self
    }

    pub fn config(mut self, tune: impl FnOnce(ExecutorConfigBuilder) -> ExecutorConfigBuilder) -> Self {
        self.config = tune(self.config);
        self
    }

    pub fn options(mut self, options: ServeOptions) -> Self {
        self.options = options;
        self
    }

    pub async fn start(self) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        trtllm::builtin::write_engine(&self.engine, dir.path()).unwrap();
        let executor = AsyncExecutor::load(dir.path(), self.config.build().unwrap()).await.unwrap();
        let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let served = executor.clone();
        let options = ServeOptions { addr, ..self.options };
        let handle = tokio::spawn(async move {
            serve(served, Some(tokenizer), options, listener, async {
                let _ = rx.await;
            })
            .await
            .unwrap();
        });
        TestServer { dir, executor, addr, shutdown: Some(tx), handle }
    }
}

impl TestServer {
    pub fn builder() -> TestServerBuilder {
        TestServerBuilder {
            engine: trtllm::builtin::builtin_engine(),
            config: ExecutorConfig::builder().stats_poll_interval(Duration::from_millis(10)),
            options: ServeOptions::default(),
        }
    }

    /// The built-in engine at `iteration_ms`, served with `options`.
    pub async fn start(iteration_ms: f64, options: ServeOptions) -> TestServer {
        Self::builder().iteration_ms(iteration_ms).options(options).start().await
    }

    /// A plaintext channel to the server.
    pub async fn channel(&self) -> Channel {
        let url = format!("http://{}", self.addr);
        let connect = || {
            let endpoint = Channel::from_shared(url.clone()).unwrap();
            async move { endpoint.connect().await.ok() }
        };
        let channel = eventually_some(Duration::from_secs(2), Duration::from_millis(10), connect).await;
        channel.unwrap_or_else(|| panic!("server at {url} did not come up"))
    }

    pub async fn client(&self) -> Client {
        TrtllmServiceClient::new(self.channel().await)
    }

    pub fn tokenizer(&self) -> Tokenizer {
        Tokenizer::from_dir(self.dir.path().join("tokenizer")).unwrap()
    }

    /// Sends the shutdown signal.
    pub fn signal_shutdown(&mut self) {
        self.shutdown.take().expect("shutdown signalled once").send(()).unwrap();
    }

    /// Waits until the executor has no request in flight (or panics after `limit`).
    pub async fn wait_executor_idle(&self, limit: Duration) {
        let idle = eventually_async(limit, || std::future::ready(self.executor.executor().in_flight() == 0)).await;
        assert!(idle, "{} requests still in the executor after {limit:?}", self.executor.executor().in_flight());
    }
}

/// A streaming request with `ignore_eos` and perf metrics.
pub fn request(id: &str, prompt: Vec<u32>, max_tokens: u32, streaming: bool) -> pb::GenerateRequest {
    pb::GenerateRequest {
        request_id: id.to_string(),
        tokenized: Some(pb::TokenizedInput { input_token_ids: prompt, ..Default::default() }),
        max_tokens,
        streaming,
        ignore_eos: true,
        output_config: Some(pb::OutputConfig { return_perf_metrics: true, ..Default::default() }),
        ..Default::default()
    }
}

/// Every message of a Generate call, or its status.
pub async fn collect(
    client: &mut Client,
    req: pb::GenerateRequest,
) -> Result<Vec<pb::GenerateResponse>, tonic::Status> {
    let mut stream = client.generate(req).await?.into_inner();
    let mut out = Vec::new();
    while let Some(item) = stream.next().await {
        out.push(item?);
    }
    Ok(out)
}

/// The messages of a stream up to its end, and how it ended (None: status OK).
pub async fn drain<T>(stream: &mut tonic::Streaming<T>) -> (Vec<T>, Option<tonic::Status>) {
    let mut items = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(item) => items.push(item),
            Err(status) => {
                assert!(stream.next().await.is_none(), "nothing follows a terminal status");
                return (items, Some(status));
            }
        }
    }
    (items, None)
}

/// The chunk tokens and the completes of a Generate stream.
pub fn chunks_and_completes(messages: &[pb::GenerateResponse]) -> (Vec<u32>, Vec<pb::GenerateComplete>) {
    use pb::generate_response::Response as Kind;
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

/// A minimal HTTP/1.1 GET over loopback; the response body. A refused connection is tried again
/// for up to 5 s: `serve` binds its metrics endpoint itself, and a gRPC channel to the server can
/// connect (the test's listener accepts) before that.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let connect = || async move { tokio::net::TcpStream::connect(addr).await.ok() };
    let stream = eventually_some(Duration::from_secs(5), Duration::from_millis(10), connect).await;
    let mut stream = stream.unwrap_or_else(|| panic!("nothing listens on {addr}"));
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
}

/// A free loopback port (for a metrics endpoint the server binds itself), below Linux's ephemeral
/// range (32768 and up): a port the kernel handed out for `bind(0)` and freed again can be handed
/// to another test's listener or outgoing connection before the server binds it, one below the
/// range only to another caller of this function, and each call in this process takes the next.
pub fn free_port_addr() -> std::net::SocketAddr {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    const FIRST: u32 = 20000;
    const PORTS: u32 = 12000;
    let start = std::process::id().wrapping_mul(7919);
    loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert!(n < PORTS, "no free port in {FIRST}..{}", FIRST + PORTS);
        let port = FIRST + start.wrapping_add(n) % PORTS;
        if let Ok(probe) = std::net::TcpListener::bind(("127.0.0.1", port as u16)) {
            return probe.local_addr().unwrap();
        }
    }
}

/// Starts `trtllm serve --port 0 <extra>` as a child process and returns it with the address it
/// printed on its first line.
pub fn spawn_serve(extra: &[&str]) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let mut child = Command::new(env!("CARGO_BIN_EXE_trtllm"))
        .args(["serve", "--port", "0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening on ").expect("listening line").to_string();
    (child, addr)
}
