//! The gRPC server: `trtllm.TrtllmService` (the Shepherd Model Gateway's TensorRT-LLM protocol),
//! `grpc.health.v1.Health` and server reflection, over one executor.
//!
//! Modules use only those before them: the parts (`options`, `convert`, `disagg`, `limits`, `live`,
//! `lifecycle`, `metrics`, `kv_feed`, `engine_load`, `tls`, `oversized`, ...) <- `state` (what every call
//! shares) and `events`/`replies` (executor events in, protocol messages out) <- `generation`,
//! `kv_events`, `health` (one call's stream) <- `service` (the gRPC methods) <- this module.

mod auth;
mod convert;
mod disagg;
mod engine_load;
mod events;
mod generation;
mod guided;
mod handshake;
mod health;
mod kv_events;
mod kv_feed;
mod lifecycle;
mod limits;
mod live;
mod lora;
mod metrics;
mod options;
mod oversized;
mod replies;
mod service;
mod state;
mod tls;
mod tokenizer_zip;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tonic_health::pb::health_server::HealthServer;

pub use convert::{WallClock, parse_grpc_timeout};
pub use disagg::DisaggRole;
pub use kv_events::KV_EVENTS_HEADER;
pub use metrics::ServerMetrics;
pub use options::{Http2Settings, ServeOptions};
pub use service::Service;
pub use state::ServiceState;
pub use tls::TlsConfig;
pub use tokenizer_zip::zip_files;

use crate::proto::trtllm::trtllm_service_server::TrtllmServiceServer;
use crate::text::Tokenizer;
use crate::{AsyncExecutor, ShutdownMode};

/// An error that stops the server.
pub type ServeError = Box<dyn std::error::Error + Send + Sync>;

/// Serves until `shutdown` resolves, then drains: health goes NOT_SERVING, new requests get
/// UNAVAILABLE, KV event subscriptions and health watches send a last message and end, and
/// in-flight generations finish for up to the grace period. Those still running then end with
/// UNAVAILABLE and are cancelled in the executor; the executor shuts down, and the server returns
/// once connections close, or after `shutdown_timeout` regardless.
pub async fn serve(
    executor: AsyncExecutor,
    tokenizer: Option<Tokenizer>,
    options: ServeOptions,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServeError> {
    let stopping = CancellationToken::new();
    let metrics = match options.metrics_addr {
        Some(addr) => Some(start_metrics(&executor, addr, stopping.clone()).await?),
        None => None,
    };
    let service = Service::new(executor.clone(), tokenizer, &options, metrics);
    let state = service.state().clone();
    // From the start, so that KV event batches are numbered and kept for resuming subscribers
    // before the first one arrives.
    state.kv.get(&state.executor);
    let health = HealthServer::new(health::HealthService::start(state.clone()));
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    let trtllm = TrtllmServiceServer::new(service)
        .max_decoding_message_size(options.max_message_size)
        .max_encoding_message_size(options.max_message_size);
    let mut routes = tonic::service::Routes::builder();
    routes.add_service(trtllm).add_service(health).add_service(reflection_v1).add_service(reflection_v1alpha);
    let mut router = routes.routes().into_axum_router().layer(axum::middleware::from_fn(oversized::resource_exhausted));
    if let Some(token) = &options.auth_token {
        let auth = auth::BearerAuth::new(token, options.health_without_auth);
        router = router.layer(axum::middleware::from_fn_with_state(auth, auth::require_token));
    }

    let http2 = options.http2;
    let mut builder = tonic::transport::Server::builder()
        .initial_stream_window_size(http2.initial_stream_window_size)
        .initial_connection_window_size(http2.initial_connection_window_size)
        .http2_adaptive_window(Some(http2.adaptive_window))
        .max_frame_size(http2.max_frame_size)
        .max_concurrent_streams(http2.max_concurrent_streams);
    if let Some(tls) = &options.tls {
        builder = builder.tls_config(tls.server_config())?;
    }

    let lifecycle = state.lifecycle.clone();
    let hard = options.shutdown_timeout;
    let stop_serving = stopping.clone();
    let drain = tokio::spawn(async move {
        shutdown.await;
        tracing::info!(grace_secs = lifecycle.grace_period.as_secs_f64(), "shutdown signal: draining");
        if !lifecycle.drain(hard).await {
            tracing::warn!(streams = lifecycle.tasks.len(), "streams still open after the shutdown timeout");
        }
        match tokio::time::timeout(hard, executor.shutdown(ShutdownMode::Cancel)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "executor shutdown"),
            Err(_) => tracing::warn!("executor shutdown did not finish in time"),
        }
        stop_serving.cancel();
    });

    // TCP_NODELAY: a streamed token is one small frame; Nagle's algorithm would hold it back
    // until the client's delayed ACK (tens of milliseconds on loopback).
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    let incoming = handshake::with_deadline(incoming, options.handshake_timeout);
    let server = builder
        .add_routes(tonic::service::Routes::from(router))
        .serve_with_incoming_shutdown(incoming, stopping.clone().cancelled_owned());
    tokio::pin!(server);
    let result = tokio::select! {
        result = &mut server => result.map_err(ServeError::from),
        _ = async {
            stopping.cancelled().await;
            tokio::time::sleep(hard).await;
        } => {
            tracing::warn!("connections still open after the shutdown timeout: stopping anyway");
            Ok(())
        }
    };
    // A server that failed before any shutdown signal leaves the drain task waiting for one.
    drain.abort();
    stopping.cancel();
    result
}

/// Serves `GET /metrics` on `addr` until `stopping`, and keeps the executor gauges current.
async fn start_metrics(
    executor: &AsyncExecutor,
    addr: SocketAddr,
    stopping: CancellationToken,
) -> Result<Arc<ServerMetrics>, ServeError> {
    let engine = executor.executor().engine();
    let metrics = ServerMetrics::new(engine.model_name());
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
        if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stopping.cancelled_owned()).await {
            tracing::error!(error = %e, "metrics endpoint stopped");
        }
    });
    Ok(metrics)
}
