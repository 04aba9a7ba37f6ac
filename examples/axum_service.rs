//! A small HTTP text-generation service on the library, with axum:
//!
//! - `POST /generate` takes `{"prompt": "..."}` or `{"messages": [{"role": "user", "content": "..."}]}`
//!   (plus optional `max_tokens`, `temperature`, `seed`, `stop`, `ignore_eos`, `json_schema`) and
//!   answers a server-sent event stream: `delta` events with text, then one `done` event with the
//!   finish reason and token counts (or one `error` event). A request refused before it starts is
//!   an HTTP error whose status comes from [`trtllm::ErrorKind`].
//! - A client that disconnects cancels its request: the text stream is dropped with the response.
//! - `GET /stats` gives requests in flight, the running totals, health and the latest iteration stats.
//! - Ctrl-C stops accepting connections, lets open streams finish, then shuts the engine down.
//!
//! ```text
//! cargo run --example axum_service                      # the built-in simulated engine
//! cargo run --example axum_service -- /path/to/engine   # an engine directory with its tokenizer
//! curl -N localhost:3000/generate -H 'content-type: application/json' -d '{"prompt": "Hello", "max_tokens": 32}'
//! curl localhost:3000/stats
//! ```

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::{Stream, StreamExt};
use serde::Deserialize;
use serde_json::json;
use trtllm::guided::GuidedDecodingParams;
use trtllm::text::ChatMessage;
use trtllm::text::TextEvent;
use trtllm::{Engine, GenerateOptions, Prompt, ShutdownMode};

/// The body of `POST /generate`.
#[derive(Debug, Deserialize)]
struct GenerateBody {
    prompt: Option<String>,
    messages: Option<Vec<ChatMessage>>,
    #[serde(default = "default_max_tokens")]
    max_tokens: u32,
    temperature: Option<f32>,
    seed: Option<u64>,
    #[serde(default)]
    stop: Vec<String>,
    #[serde(default)]
    ignore_eos: bool,
    json_schema: Option<serde_json::Value>,
}

fn default_max_tokens() -> u32 {
    64
}

/// An error answered before the stream starts, with the status its kind calls for.
struct ApiError(StatusCode, String);

impl From<trtllm::Error> for ApiError {
    fn from(error: trtllm::Error) -> Self {
        let status = StatusCode::from_u16(error.kind().http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError(status, error.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

async fn generate(
    State(engine): State<Engine>,
    Json(body): Json<GenerateBody>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let prompt = match (body.prompt, body.messages) {
        (Some(text), None) => Prompt::Text(text),
        (None, Some(messages)) => Prompt::Messages(messages),
        _ => return Err(ApiError(StatusCode::BAD_REQUEST, "give exactly one of prompt and messages".into())),
    };
    let mut options = GenerateOptions::new().max_tokens(body.max_tokens).stop(body.stop).ignore_eos(body.ignore_eos);
    if let Some(t) = body.temperature {
        options = options.temperature(t);
    }
    if let Some(seed) = body.seed {
        options = options.seed(seed);
    }
    if let Some(schema) = body.json_schema {
        options = options.guide(GuidedDecodingParams::json_schema(schema.to_string()));
    }
    // Refused here (bad guide, prompt too long, full queue): an HTTP error, nothing streamed.
    let stream = engine.generate(prompt, options)?;
    // When the client goes away, axum drops this stream, which drops the text stream and so
    // cancels the request in the executor.
    let events = stream.map(|event| {
        Ok(match event {
            Ok(TextEvent::Chunk { text, .. }) => {
                Event::default().event("delta").data(json!({ "text": text }).to_string())
            }
            Ok(TextEvent::Final { output, deltas, matched_stops, .. }) => Event::default().event("done").data(
                json!({
                    "text": deltas.first().cloned().unwrap_or_default(),
                    "finish_reason": output.finish_reason.to_string(),
                    "prompt_tokens": output.prompt_tokens,
                    "completion_tokens": output.completion_tokens,
                    "matched_stop": matched_stops.first().cloned().flatten(),
                })
                .to_string(),
            ),
            Err(error) => Event::default()
                .event("error")
                .data(json!({ "kind": error.kind(), "message": error.to_string() }).to_string()),
        })
    });
    Ok(Sse::new(events).keep_alive(KeepAlive::default()))
}

async fn stats(State(engine): State<Engine>) -> Json<serde_json::Value> {
    let executor = engine.executor().executor();
    Json(json!({
        "in_flight": executor.in_flight(),
        "totals": executor.totals(),
        "health": executor.health().iter().map(ToString::to_string).collect::<Vec<_>>(),
        "iteration": executor.latest_iteration_stats(),
    }))
}

/// The service's routes.
fn app(engine: Engine) -> Router {
    Router::new().route("/generate", post(generate)).route("/stats", get(stats)).with_state(engine)
}

/// Serves until `shutdown` resolves, lets open streams finish, then drains and shuts the engine down.
async fn serve(
    engine: Engine,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    axum::serve(listener, app(engine.clone())).with_graceful_shutdown(shutdown).await?;
    engine.shutdown(ShutdownMode::Drain { timeout: Duration::from_secs(10) }).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let engine = match std::env::args().nth(1) {
        Some(dir) => Engine::load(dir).await?,
        None => Engine::builtin().await?,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    println!("listening on http://{}", listener.local_addr()?);
    serve(engine, listener, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await
}

#[cfg(test)]
mod tests {
    //! The service end to end over a plain TCP connection: a streamed generation, a bad guide as
    //! HTTP 400, a disconnect that cancels, the stats, and a graceful shutdown.

    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpStream;

    /// Sends one HTTP/1.1 request; returns the connection's reader after the request is written.
    async fn send(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> BufReader<TcpStream> {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body.as_bytes()).await.unwrap();
        BufReader::new(stream)
    }

    /// The whole response, as text (chunked framing included).
    async fn text(addr: std::net::SocketAddr, method: &str, path: &str, body: &str) -> String {
        let mut reader = send(addr, method, path, body).await;
        let mut out = String::new();
        while reader.read_line(&mut out).await.unwrap() > 0 {}
        out
    }

    async fn stats_json(addr: std::net::SocketAddr) -> serde_json::Value {
        let response = text(addr, "GET", "/stats", "").await;
        let body = response.split("\r\n\r\n").nth(1).unwrap();
        // The body is small: one chunk, framed by its size line and a terminator.
        let json = body.lines().find(|l| l.starts_with('{')).unwrap();
        serde_json::from_str(json).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streams_refuses_cancels_on_disconnect_reports_and_shuts_down() {
        let engine = Engine::builtin().await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(engine.clone(), listener, async {
            let _ = stopped.await;
        }));

        // A streamed generation: deltas, then one done event with the counts.
        let response =
            text(addr, "POST", "/generate", r#"{"prompt": "Hello", "max_tokens": 8, "ignore_eos": true}"#).await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.contains("text/event-stream"), "{response}");
        assert!(response.contains("event: delta"), "{response}");
        assert_eq!(response.matches("event: done").count(), 1, "{response}");
        assert!(response.contains(r#""completion_tokens":8"#), "{response}");

        // A chat request.
        let chat = r#"{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}"#;
        assert!(text(addr, "POST", "/generate", chat).await.contains("event: done"));

        // A guide the grammar engine cannot compile: 400 before anything streams.
        let bad = r##"{"prompt": "x", "json_schema": {"$ref": "#/nope"}}"##;
        let response = text(addr, "POST", "/generate", bad).await;
        assert!(response.starts_with("HTTP/1.1 400"), "{response}");
        assert!(!response.contains("Encountered"), "{response}");

        // A client that disconnects after the first event cancels its request.
        let long = r#"{"prompt": "Tell me everything", "max_tokens": 4000, "ignore_eos": true}"#;
        let mut reader = send(addr, "POST", "/generate", long).await;
        let mut line = String::new();
        while !line.starts_with("event: delta") {
            line.clear();
            assert!(reader.read_line(&mut line).await.unwrap() > 0, "the stream ended early");
        }
        assert_eq!(stats_json(addr).await["in_flight"], 1);
        drop(reader);
        let mut stats = stats_json(addr).await;
        for _ in 0..100 {
            if stats["in_flight"] == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            stats = stats_json(addr).await;
        }
        assert_eq!(stats["in_flight"], 0, "the disconnect cancelled the request: {stats}");
        assert_eq!(stats["totals"]["cancelled"], 1, "{stats}");
        assert_eq!(stats["totals"]["completed"], 2, "{stats}");
        assert_eq!(stats["health"], json!([]), "a bad guide does not touch health: {stats}");

        // Graceful shutdown: the server returns and the engine takes no more requests.
        stop.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(20), server).await.unwrap().unwrap().unwrap();
        let err = engine.generate("late", GenerateOptions::new()).expect_err("shut down");
        assert_eq!(err.kind(), trtllm::ErrorKind::Unavailable, "{err}");
    }
}
