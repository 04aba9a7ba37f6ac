//! The gRPC server: `trtllm.TrtllmService` (the Shepherd Model Gateway's TensorRT-LLM protocol),
//! `grpc.health.v1.Health` and server reflection, over one executor.

mod convert;
mod metrics;
mod service;
mod tokenizer_zip;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tonic::service::Interceptor;
use tonic::{Request, Status};

pub use convert::{WallClock, parse_grpc_timeout};
pub use metrics::ServerMetrics;
pub use service::{Service, ServiceState};
pub use tokenizer_zip::zip_files;

use crate::proto::trtllm::trtllm_service_server::TrtllmServiceServer;
use crate::text::Tokenizer;
use crate::{AsyncExecutor, ShutdownMode};

/// How the server runs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub addr: SocketAddr,
    /// When set, every call must carry `authorization: Bearer <token>`.
    pub auth_token: Option<String>,
    /// Requests in flight at once; more are refused with RESOURCE_EXHAUSTED.
    pub max_concurrent_requests: Option<usize>,
    /// Largest message accepted or sent, bytes.
    pub max_message_size: usize,
    /// How long in-flight requests may finish after a shutdown signal before they are cancelled.
    pub grace_period: Duration,
    /// Where to serve Prometheus metrics (`GET /metrics`); `None` for no metrics endpoint.
    pub metrics_addr: Option<SocketAddr>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 50051)),
            auth_token: None,
            max_concurrent_requests: None,
            max_message_size: 64 * 1024 * 1024,
            grace_period: Duration::from_secs(30),
            metrics_addr: None,
        }
    }
}

/// Checks the bearer token on every call.
#[derive(Debug, Clone)]
struct BearerAuth {
    expected: Option<Arc<str>>,
}

impl Interceptor for BearerAuth {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(expected) = &self.expected else { return Ok(request) };
        let given = request.metadata().get("authorization").and_then(|v| v.to_str().ok());
        match given.and_then(|v| v.strip_prefix("Bearer ")) {
            Some(token) if token.as_bytes() == expected.as_bytes() => Ok(request),
            Some(_) => Err(Status::unauthenticated("invalid bearer token")),
            None => Err(Status::unauthenticated("missing authorization: Bearer <token>")),
        }
    }
}

/// Serves until `shutdown` resolves, then stops accepting work (health goes NOT_SERVING and new
/// requests get UNAVAILABLE), lets in-flight requests finish for the grace period, cancels the
/// rest, and returns once every stream has ended.
pub async fn serve(
    executor: AsyncExecutor,
    tokenizer: Option<Tokenizer>,
    options: ServeOptions,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let metrics = match options.metrics_addr {
        Some(addr) => Some(start_metrics(&executor, addr).await?),
        None => None,
    };
    let service = Service::new(executor.clone(), tokenizer, options.max_concurrent_requests, metrics);
    let state = service.state().clone();
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter.set_serving::<TrtllmServiceServer<Service>>().await;
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    let auth = BearerAuth { expected: options.auth_token.as_deref().map(Arc::from) };
    let trtllm = TrtllmServiceServer::new(service)
        .max_decoding_message_size(options.max_message_size)
        .max_encoding_message_size(options.max_message_size);

    let (drained_tx, drained_rx) = tokio::sync::oneshot::channel::<()>();
    let grace = options.grace_period;
    let drain_state = state.clone();
    let drain_executor = executor.clone();
    let drain = async move {
        shutdown.await;
        tracing::info!(grace_secs = grace.as_secs_f64(), "shutdown signal: draining");
        drain_state.begin_shutdown();
        health_reporter.set_not_serving::<TrtllmServiceServer<Service>>().await;
        if !drain_executor.wait_idle(grace).await {
            tracing::warn!("grace period over: cancelling what is still in flight");
        }
        if let Err(e) = drain_executor.shutdown(ShutdownMode::Cancel).await {
            tracing::warn!(error = %e, "executor shutdown");
        }
        let _ = drained_tx.send(());
    };
    tokio::spawn(drain);
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    tonic::transport::Server::builder()
        .add_service(tonic::service::interceptor::InterceptedService::new(trtllm, auth.clone()))
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .serve_with_incoming_shutdown(incoming, async move {
            let _ = drained_rx.await;
        })
        .await?;
    Ok(())
}

/// Serves `GET /metrics` on `addr` and keeps the executor gauges current.
async fn start_metrics(
    executor: &AsyncExecutor,
    addr: SocketAddr,
) -> Result<Arc<ServerMetrics>, Box<dyn std::error::Error + Send + Sync>> {
    let engine = executor.executor().engine();
    let metrics = ServerMetrics::new(&engine.model_name, &engine.version);
    let mut iterations = executor.executor().subscribe_iteration_stats();
    let gauges = Arc::downgrade(&metrics);
    tokio::spawn(async move {
        loop {
            match iterations.recv().await {
                Ok(stats) => match gauges.upgrade() {
                    Some(metrics) => metrics.record_iteration(&stats),
                    None => return,
                },
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(addr = %listener.local_addr()?, "serving Prometheus metrics at /metrics");
    let served = metrics.clone();
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let metrics = served.clone();
            async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
                    metrics.encode(),
                )
            }
        }),
    );
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "metrics endpoint stopped");
        }
    });
    Ok(metrics)
}
