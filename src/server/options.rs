//! [`ServeOptions`]: how the server listens, admits, limits and drains.

use std::net::SocketAddr;
use std::time::Duration;

use super::tls::TlsConfig;

/// How the server runs.
///
/// ```
/// use std::time::Duration;
/// use trtllm::server::ServeOptions;
/// let options = ServeOptions {
///     auth_token: Some("s3cret".into()),
///     grace_period: Duration::from_secs(10),
///     default_deadline: Some(Duration::from_secs(120)),
///     ..Default::default()
/// };
/// assert!(options.addr.ip().is_loopback());
/// ```
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on (loopback by default).
    pub addr: SocketAddr,
    /// When set, every call must carry `authorization: Bearer <token>`.
    pub auth_token: Option<String>,
    /// Let `grpc.health.v1.Health` through without the token (for probes that cannot send
    /// headers, such as Kubernetes gRPC probes). Every other call still needs it.
    pub health_without_auth: bool,
    /// Serve TLS (optionally requiring client certificates) instead of plaintext.
    pub tls: Option<TlsConfig>,
    /// Requests in flight at once; more are refused with RESOURCE_EXHAUSTED.
    pub max_concurrent_requests: Option<usize>,
    /// Largest message accepted or sent, bytes.
    pub max_message_size: usize,
    /// How long in-flight requests may finish after a shutdown signal before they are cancelled.
    pub grace_period: Duration,
    /// After the grace period, how long cancelled streams and open connections get to close
    /// before the server stops regardless.
    pub shutdown_timeout: Duration,
    /// Deadline of requests whose client sets none (or a later one); `None` for no limit.
    pub default_deadline: Option<Duration>,
    /// Period of the `EngineLoad` heartbeats on `SubscribeKvEvents` streams.
    pub kv_heartbeat: Duration,
    /// Where to serve Prometheus metrics (`GET /metrics`); `None` for no metrics endpoint.
    pub metrics_addr: Option<SocketAddr>,
    /// How long a new connection may stay silent before its first bytes (the HTTP/2 preface or a
    /// TLS hello); it is closed after that.
    pub handshake_timeout: Duration,
    /// HTTP/2 flow control and framing of every connection.
    pub http2: Http2Settings,
    /// Which legs of disaggregated requests this worker runs (`--disagg-role`).
    pub disagg_role: super::disagg::DisaggRole,
}

/// HTTP/2 settings of the server's connections (see docs/serving.md for what each changed in
/// measurements). The receive windows govern what clients send (requests: small); how fast
/// replies flow is set by the client's windows.
///
/// ```
/// use trtllm::server::{Http2Settings, ServeOptions};
/// let options = ServeOptions {
///     http2: Http2Settings { max_concurrent_streams: Some(2048), ..Default::default() },
///     ..Default::default()
/// };
/// assert_eq!(options.http2.max_concurrent_streams, Some(2048));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Http2Settings {
    /// Receive window per stream, bytes (`None`: HTTP/2's 65,535).
    pub initial_stream_window_size: Option<u32>,
    /// Receive window per connection, bytes (`None`: HTTP/2's 65,535).
    pub initial_connection_window_size: Option<u32>,
    /// Let the receive windows grow with the measured bandwidth-delay product (BDP pings).
    pub adaptive_window: bool,
    /// Largest frame the server accepts, bytes (`None`: HTTP/2's 16,384).
    pub max_frame_size: Option<u32>,
    /// Streams (calls) one connection may have open at once (`None`: no limit beyond the
    /// server's `max_concurrent_requests`).
    pub max_concurrent_streams: Option<u32>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 50051)),
            auth_token: None,
            health_without_auth: false,
            tls: None,
            max_concurrent_requests: None,
            max_message_size: 64 * 1024 * 1024,
            grace_period: Duration::from_secs(30),
            shutdown_timeout: Duration::from_secs(5),
            default_deadline: None,
            kv_heartbeat: Duration::from_secs(1),
            metrics_addr: None,
            handshake_timeout: Duration::from_secs(10),
            http2: Http2Settings::default(),
            disagg_role: super::disagg::DisaggRole::default(),
        }
    }
}
