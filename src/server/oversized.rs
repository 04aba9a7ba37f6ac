//! Oversized requests answer RESOURCE_EXHAUSTED, gRPC's code for a message over the limit.
//!
//! tonic refuses a request message over `max_decoding_message_size` before any handler runs, and
//! with OUT_OF_RANGE; clients and the gateway treat RESOURCE_EXHAUSTED as "too large" (so does
//! every other gRPC implementation), so the status is rewritten on its way out.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

/// gRPC's OUT_OF_RANGE, as the `grpc-status` header carries it.
const OUT_OF_RANGE: &[u8] = b"11";
/// gRPC's RESOURCE_EXHAUSTED.
const RESOURCE_EXHAUSTED: &str = "8";

/// The middleware: passes the call on and rewrites tonic's oversized-message status.
pub(crate) async fn resource_exhausted(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    rewrite(response.headers_mut());
    response
}

/// Turns a trailers-only OUT_OF_RANGE that tonic's codec raised for a message over the limit
/// into RESOURCE_EXHAUSTED; every other status (our own OUT_OF_RANGE for a KV event sequence
/// number, for one) is left alone.
fn rewrite(headers: &mut HeaderMap) {
    let oversized = headers.get("grpc-status").is_some_and(|s| s.as_bytes() == OUT_OF_RANGE)
        && headers.get("grpc-message").is_some_and(|m| is_length_too_large(m.as_bytes()));
    if oversized {
        headers.insert("grpc-status", HeaderValue::from_static(RESOURCE_EXHAUSTED));
    }
}

/// tonic's codec says "... message length too large: found N bytes, the limit is: M bytes";
/// `grpc-message` is percent-encoded, so the spaces may be `%20`.
fn is_length_too_large(message: &[u8]) -> bool {
    let text = String::from_utf8_lossy(message).replace("%20", " ");
    text.contains("message length too large")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(status: &'static str, message: &'static str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("grpc-status", HeaderValue::from_static(status));
        h.insert("grpc-message", HeaderValue::from_static(message));
        h
    }

    #[test]
    fn only_the_codecs_oversized_status_is_rewritten() {
        let mut codec = headers("11", "Error,%20decoded%20message%20length%20too%20large:%20found%205000%20bytes");
        rewrite(&mut codec);
        assert_eq!(codec["grpc-status"], "8");
        let mut ours = headers("11", "resume%20point%20ahead%20of%20the%20stream");
        rewrite(&mut ours);
        assert_eq!(ours["grpc-status"], "11");
        let mut other = headers("3", "message%20length%20too%20large");
        rewrite(&mut other);
        assert_eq!(other["grpc-status"], "3");
    }
}
