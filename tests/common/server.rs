//! An in-process gRPC server on a loopback port, for tests.
#![allow(dead_code)]

use std::time::Duration;

use tempfile::TempDir;
use tokio::sync::oneshot;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
use trtllm::server::{ServeOptions, serve};
use trtllm::text::Tokenizer;
use trtllm::{AsyncExecutor, ExecutorConfig};

pub struct TestServer {
    pub dir: TempDir,
    pub executor: AsyncExecutor,
    pub addr: std::net::SocketAddr,
    pub shutdown: Option<oneshot::Sender<()>>,
    pub handle: tokio::task::JoinHandle<()>,
}

impl TestServer {
    /// The built-in engine (with its tokenizer) at `iteration_ms`, served with `options`.
    pub async fn start(iteration_ms: f64, options: ServeOptions) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let engine = trtllm::sim::SimulatedEngine {
            iteration_ms: Some(iteration_ms),
            ..trtllm::builtin::builtin_engine()
        };
        trtllm::builtin::write_engine(&engine, dir.path()).unwrap();
        let config = ExecutorConfig::builder()
            .stats_poll_interval(Duration::from_millis(10))
            .build()
            .unwrap();
        let executor = AsyncExecutor::load(dir.path(), config).await.unwrap();
        let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = oneshot::channel::<()>();
        let served = executor.clone();
        let handle = tokio::spawn(async move {
            serve(
                served,
                Some(tokenizer),
                ServeOptions { addr, ..options },
                listener,
                async {
                    let _ = rx.await;
                },
            )
            .await
            .unwrap();
        });
        TestServer {
            dir,
            executor,
            addr,
            shutdown: Some(tx),
            handle,
        }
    }

    pub async fn client(&self) -> TrtllmServiceClient<tonic::transport::Channel> {
        let url = format!("http://{}", self.addr);
        for _ in 0..100 {
            if let Ok(client) = TrtllmServiceClient::connect(url.clone()).await {
                return client;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("server at {url} did not come up");
    }

    pub fn tokenizer(&self) -> Tokenizer {
        Tokenizer::from_dir(self.dir.path().join("tokenizer")).unwrap()
    }
}
