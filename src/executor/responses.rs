//! The response thread: the one caller of `awaitResponses`, handing each batch to the route table.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::shared::{EndCause, Shared};
use crate::error::{Error, Result};

/// Starts the response thread, which waits up to `poll_interval` (1 ms to 1 s) per
/// `awaitResponses` call, so that stopping it takes at most that long.
pub(crate) fn spawn(shared: Arc<Shared>, poll_interval: Duration) -> Result<JoinHandle<()>> {
    let timeout_ms = poll_interval.as_millis().clamp(1, 1000) as u32;
    std::thread::Builder::new()
        .name("trtllm-responses".to_string())
        .spawn(move || run(&shared, timeout_ms))
        .map_err(|source| Error::Thread { name: "trtllm-responses", source })
}

/// The body of the response thread. On an executor error it fails every in-flight request.
fn run(shared: &Shared, timeout_ms: u32) {
    while !shared.stopping() {
        let mut received_ns = 0;
        match shared.handle().await_responses(timeout_ms, &mut received_ns) {
            Ok(batch) if batch.is_empty() => {}
            // One clock read per batch, as the executor hands it over (before the shim converts
            // it): every response of the batch carries it, so neither converting nor routing the
            // batch (a wake-up per request) is part of any stamp.
            Ok(batch) => {
                let received_at = shared.clock().instant_at(received_ns).unwrap_or_else(Instant::now);
                shared.route(batch, received_at);
            }
            Err(e) => {
                let message = format!("awaitResponses failed: {}", e.what().lines().next().unwrap_or(""));
                tracing::error!(error = %message, "response thread stopping; failing every in-flight request");
                shared.fail_all(EndCause::Fatal(message));
                return;
            }
        }
    }
}
