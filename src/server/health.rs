//! `grpc.health.v1.Health` for the whole server (`""`) and for `trtllm.TrtllmService`, tied to the
//! executor's health and to shutdown.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_server::Health;
use tonic_health::pb::{HealthCheckRequest, HealthCheckResponse};

use super::state::ServiceState;

/// The services this health endpoint answers for: the server as a whole and the one service.
const KNOWN_SERVICES: [&str; 2] = ["", "trtllm.TrtllmService"];

/// How often the executor's health is sampled for `Watch` streams (`Check` reads it live).
const SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// The health service.
#[derive(Debug, Clone)]
pub(crate) struct HealthService {
    state: Arc<ServiceState>,
    status: watch::Receiver<ServingStatus>,
}

impl HealthService {
    /// A health service over `state`, with a task that follows the executor's health until the
    /// server drains (after which it stays NOT_SERVING).
    pub(crate) fn start(state: Arc<ServiceState>) -> Self {
        let (tx, status) = watch::channel(serving_status(&state));
        let monitored = state.clone();
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(SAMPLE_PERIOD);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticker.tick() => {}
                    _ = monitored.lifecycle.draining.cancelled() => {}
                    _ = tx.closed() => return,
                }
                let now = serving_status(&monitored);
                if let Some(metrics) = &monitored.metrics {
                    let executor = monitored.executor.executor();
                    metrics.record_health(&executor.health(), executor.cancel_failures());
                }
                if tx.send_if_modified(|last| std::mem::replace(last, now) != now) {
                    match monitored.healthy() {
                        Ok(()) => tracing::info!("health: SERVING"),
                        Err(why) => tracing::warn!(reason = %why, "health: NOT_SERVING"),
                    }
                }
                if monitored.lifecycle.is_draining() {
                    return;
                }
            }
        });
        HealthService { state, status }
    }
}

fn serving_status(state: &ServiceState) -> ServingStatus {
    match state.healthy() {
        Ok(()) => ServingStatus::Serving,
        Err(_) => ServingStatus::NotServing,
    }
}

fn reply(status: ServingStatus) -> HealthCheckResponse {
    HealthCheckResponse { status: status.into() }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<HealthCheckResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Health for HealthService {
    async fn check(&self, request: Request<HealthCheckRequest>) -> Result<Response<HealthCheckResponse>, Status> {
        let service = request.into_inner().service;
        if !KNOWN_SERVICES.contains(&service.as_str()) {
            return Err(Status::not_found(format!("unknown service {service:?}")));
        }
        Ok(Response::new(reply(serving_status(&self.state))))
    }

    type WatchStream = WatchStream;

    /// Sends the current status, then every change; when the server drains it sends NOT_SERVING
    /// and ends the stream (status OK), so that shutdown is never held up by a watcher.
    async fn watch(&self, request: Request<HealthCheckRequest>) -> Result<Response<Self::WatchStream>, Status> {
        let service = request.into_inner().service;
        let known = KNOWN_SERVICES.contains(&service.as_str());
        let mut status = self.status.clone();
        let lifecycle = self.state.lifecycle.clone();
        let (tx, rx) = mpsc::channel(4);
        self.state.lifecycle.tasks.spawn(async move {
            let mut last = if known { *status.borrow_and_update() } else { ServingStatus::ServiceUnknown };
            if tx.send(Ok(reply(last))).await.is_err() {
                return;
            }
            loop {
                tokio::select! {
                    changed = status.changed(), if known => {
                        if changed.is_err() {
                            break;
                        }
                        let now = *status.borrow_and_update();
                        if now != last {
                            last = now;
                            if tx.send(Ok(reply(now))).await.is_err() {
                                return;
                            }
                        }
                    }
                    _ = lifecycle.draining.cancelled() => break,
                    _ = tx.closed() => return,
                }
            }
            if known && last != ServingStatus::NotServing {
                // A watcher that stopped reading must not hold up shutdown.
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), tx.send(Ok(reply(ServingStatus::NotServing)))).await;
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
