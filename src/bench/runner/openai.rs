//! The OpenAI-compatible HTTP target: the same workloads sent as chat or text completions to any
//! `/v1` endpoint (the smg gateway, vLLM, ...), streamed over SSE and recorded like the others.

mod api;
mod reply;
mod sse;

pub use api::OpenAiApi;

use std::ops::ControlFlow;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::bench::metrics::record::{Phase, RequestRecord, RunClock};
use crate::bench::traffic::workload::RequestSpec;
use crate::text::Tokenizer;
use reply::{Reply, StreamChunk};

/// Why the HTTP target could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum OpenAiError {
    /// The HTTP request failed (connection refused, bad URL, an untrusted certificate, ...).
    #[error("HTTP request to {url} failed: {}", error_chain(.source))]
    Http {
        /// The URL called.
        url: String,
        /// The client's error.
        source: reqwest::Error,
    },
    /// The server answered with an error status.
    #[error("{url} answered {status}: {body}")]
    Status {
        /// The URL called.
        url: String,
        /// The HTTP status.
        status: reqwest::StatusCode,
        /// The start of the body.
        body: String,
    },
    /// `/models` listed no model.
    #[error("{0} lists no model; pass --model")]
    NoModel(String),
}

/// How the HTTP target's client connects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HttpOptions {
    /// The most streams the run keeps in flight: idle connections kept per host (0: no limit).
    pub streams: usize,
    /// Speak HTTP/2 over plain `http://` without negotiating it first (h2c prior knowledge; the
    /// server must accept it). `https://` targets negotiate h2 through ALPN without this.
    pub http2_prior_knowledge: bool,
}

/// An OpenAI-compatible endpoint: base URL (ending in `/v1`), model, API and the tokenizer that
/// turns token-id prompts into text and counts output tokens on the client side.
#[derive(Debug, Clone)]
pub struct OpenAiTarget {
    client: reqwest::Client,
    base: String,
    model: String,
    api: OpenAiApi,
    bearer: Option<String>,
    tokenizer: Option<Arc<Tokenizer>>,
}

impl OpenAiTarget {
    /// A target at `base` (e.g. `http://127.0.0.1:30000/v1`); asks `/models` for the model id
    /// unless `model` names one. Default connection settings: see [`HttpOptions`].
    pub async fn connect(
        base: &str,
        model: Option<String>,
        api: OpenAiApi,
        bearer: Option<String>,
    ) -> Result<Self, OpenAiError> {
        Self::connect_with(base, model, api, bearer, HttpOptions::default()).await
    }

    /// [`OpenAiTarget::connect`] with explicit connection settings.
    pub async fn connect_with(
        base: &str,
        model: Option<String>,
        api: OpenAiApi,
        bearer: Option<String>,
        options: HttpOptions,
    ) -> Result<Self, OpenAiError> {
        // `https://` targets: reqwest is built without a crypto provider of its own; use ring, the
        // one the server's TLS already links. Already installed (by an earlier target) is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
        // No proxy lookups, no Nagle delay. Server certificates are checked against the system's
        // roots (`SSL_CERT_FILE` overrides). Over TLS, ALPN offers h2 and HTTP/1.1 and the server
        // picks; plain `http://` is HTTP/1.1 unless `http2_prior_knowledge` (h2c).
        let mut builder = reqwest::Client::builder().no_proxy().tcp_nodelay(true);
        if options.streams > 0 {
            // HTTP/1.1 carries one stream per connection: keep one idle connection per stream, so
            // a closed loop of N users reuses N connections instead of opening new ones.
            builder = builder.pool_max_idle_per_host(options.streams);
        }
        if options.http2_prior_knowledge {
            builder = builder.http2_prior_knowledge();
        }
        let client = builder.build().map_err(|source| OpenAiError::Http { url: base.to_owned(), source })?;
        let base = base.trim_end_matches('/').to_owned();
        let mut target = OpenAiTarget { client, base, model: model.unwrap_or_default(), api, bearer, tokenizer: None };
        if target.model.is_empty() {
            target.model = target.first_model().await?;
        }
        Ok(target)
    }

    /// The tokenizer that renders token-id prompts as text and counts output tokens.
    pub fn with_tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = Some(Arc::new(tokenizer));
        self
    }

    /// The model id requests name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    async fn first_model(&self) -> Result<String, OpenAiError> {
        let url = format!("{}/models", self.base);
        let response = self
            .authorized(self.client.get(&url))
            .send()
            .await
            .map_err(|source| OpenAiError::Http { url: url.clone(), source })?;
        let status = response.status();
        let text = response.text().await.map_err(|source| OpenAiError::Http { url: url.clone(), source })?;
        if !status.is_success() {
            return Err(OpenAiError::Status { url, status, body: text.chars().take(300).collect() });
        }
        let doc: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        doc["data"][0]["id"].as_str().map(str::to_owned).ok_or(OpenAiError::NoModel(url))
    }

    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.bearer {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    fn body(&self, spec: &RequestSpec, text: &str) -> Value {
        let mut body = json!({
            "model": self.model,
            "max_tokens": spec.max_tokens,
            "stream": spec.streaming,
        });
        match (self.api, &spec.messages) {
            // A session's turn: its history as the conversation so far.
            (OpenAiApi::Chat, Some(messages)) => body["messages"] = json!(messages.as_ref()),
            (OpenAiApi::Chat, None) => body["messages"] = json!([{ "role": "user", "content": text }]),
            (OpenAiApi::Completions, _) => body["prompt"] = json!(text),
        }
        if spec.streaming {
            body["stream_options"] = json!({ "include_usage": true });
        }
        if spec.ignore_eos {
            // vLLM's extension, also honoured by smg: a fixed output length.
            body["ignore_eos"] = json!(true);
        }
        body
    }

    /// Sends one request and records it to the end; never fails (errors are recorded). Dropping
    /// the future closes the stream, which is how a cancelled request is aborted.
    pub async fn send(&self, spec: RequestSpec, clock: &RunClock, index: u64, phase: Phase) -> RequestRecord {
        let text = match &self.tokenizer {
            Some(tokenizer) => tokenizer.decode(&spec.prompt, false).map_err(|e| e.to_string()),
            None => Err("the HTTP target needs a tokenizer to turn token ids into text: pass --tokenizer DIR".into()),
        };
        let body = text.map(|text| self.body(&spec, &text));
        let url = format!("{}/{}", self.base, self.api.path());
        let mut record = RequestRecord::new(index, phase, clock.now_s());
        record.streaming = spec.streaming;
        record.prompt_tokens = spec.prompt.len() as u64;
        record.expected_output_tokens = spec.expected_output_tokens;
        record.session = spec.session.map(|s| s.session);
        record.turn = spec.session.map(|s| s.turn);
        let body = match body {
            Ok(body) => body,
            Err(e) => {
                record.fail(clock.now_s(), e);
                return record;
            }
        };
        record.send_s = clock.now_s();
        let response = match self.authorized(self.client.post(&url)).json(&body).send().await {
            Ok(response) => response,
            Err(e) => {
                record.fail(clock.now_s(), format!("HTTP request failed: {}", error_chain(&e)));
                return record;
            }
        };
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            record.fail(clock.now_s(), format!("HTTP {status}: {}", text.chars().take(300).collect::<String>()));
            return record;
        }
        let mut reply = Reply::default();
        if spec.streaming {
            let mut response = response;
            let mut framing = sse::SseParser::default();
            loop {
                let read = response.chunk().await;
                let now = clock.now_s();
                let mut on_event = |data: &[u8]| stream_event(data, &mut reply, &mut record, now, self.api);
                let flow = match &read {
                    Ok(Some(bytes)) => framing.feed(bytes, &mut on_event),
                    Ok(None) => {
                        let _ = framing.finish(&mut on_event);
                        break;
                    }
                    Err(e) => {
                        reply.error = Some(format!("SSE stream broke: {}", error_chain(e)));
                        break;
                    }
                };
                if flow.is_break() {
                    break;
                }
            }
        } else {
            match response.json::<Value>().await {
                Ok(doc) => reply.absorb(&doc, self.api, false),
                Err(e) => reply.error = Some(format!("bad JSON reply: {e}")),
            }
        }
        let now = clock.now_s();
        self.finish(&mut record, reply, now);
        record
    }

    fn finish(&self, record: &mut RequestRecord, reply: Reply, now: f64) {
        if let Some(error) = reply.error {
            record.fail(now, error);
            return;
        }
        let Some(reason) = reply.finish_reason else {
            record.fail(now, "the stream ended without a finish_reason");
            return;
        };
        let counted = self.tokenizer.as_ref().and_then(|t| t.encode(&reply.text, false).ok()).map(|ids| ids.len());
        if record.session.is_some() {
            record.answer_text = Some(reply.text.clone());
        }
        record.client_output_tokens = counted.map(|n| n as u64);
        if let Some(prompt) = reply.prompt_tokens {
            record.prompt_tokens = prompt;
        }
        record.cached_tokens = reply.cached_tokens.unwrap_or(0);
        let output = reply.completion_tokens.or(record.client_output_tokens).unwrap_or(record.chunks.len() as u64);
        if !record.streaming {
            // Without streaming the whole reply is the one response.
            record.record_chunk(now, output.max(1) as u32);
        }
        record.finish(now, output, Some(reason));
    }
}

/// One SSE event of a streamed reply, read into `reply` (a content chunk is recorded at `now`,
/// the time its read arrived); `Break` at `[DONE]` or an error.
fn stream_event(
    data: &[u8],
    reply: &mut Reply,
    record: &mut RequestRecord,
    now: f64,
    api: OpenAiApi,
) -> ControlFlow<()> {
    let Ok(data) = std::str::from_utf8(data) else {
        reply.error = Some(format!("SSE data is not UTF-8: {:?}", String::from_utf8_lossy(data)));
        return ControlFlow::Break(());
    };
    match data.trim() {
        "[DONE]" => return ControlFlow::Break(()),
        // An empty event (a bare `data:`) carries nothing.
        "" => return ControlFlow::Continue(()),
        _ => {}
    }
    match StreamChunk::parse(data) {
        Ok(chunk) => {
            let before = reply.text.len();
            reply.absorb_chunk(chunk, data, api);
            if reply.text.len() > before {
                // One SSE chunk is one streamed response (vLLM's ITL unit).
                record.record_chunk(now, 1);
            }
        }
        Err(e) => reply.error = Some(format!("bad SSE data {data:?}: {e}")),
    }
    if reply.error.is_some() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
}

/// An error and its causes on one line: reqwest's own message alone ("error sending request")
/// hides why (connection refused, certificate not trusted, ...).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod http_version_tests {
    use std::sync::Mutex;

    use axum::extract::Request;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto;
    use hyper_util::service::TowerToHyperService;

    use super::*;

    /// A local `/v1/models` that speaks HTTP/1.1 and h2 (prior knowledge), recording each
    /// request's version.
    async fn serve() -> (String, Arc<Mutex<Vec<reqwest::Version>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        let app = axum::Router::new()
            .route(
                "/v1/models",
                axum::routing::get(move |request: Request| {
                    let record = record.clone();
                    async move {
                        record.lock().unwrap().push(request.version());
                        axum::Json(json!({ "data": [{ "id": "m" }] }))
                    }
                }),
            )
            .route("/v1/chat/completions", axum::routing::post(chat));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { return };
                let service = TowerToHyperService::new(app.clone());
                tokio::spawn(async move {
                    let _ =
                        auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        (format!("http://{address}/v1"), seen)
    }

    /// Three content chunks, the finish and usage chunks and `[DONE]`, CRLF-framed with a comment,
    /// sent in reads that cut events (and a CRLF) anywhere.
    async fn chat() -> axum::response::Response {
        let stream = concat!(
            ": hello\r\n\r\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\" wor\"}}]}\r\n\r\n",
            "data:{\"choices\":[{\"delta\":{\"content\":\"ld\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\r\n\r\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3}}\r\n\r\n",
            "data: [DONE]\r\n\r\n",
        );
        let reads: Vec<Result<Vec<u8>, std::convert::Infallible>> =
            stream.as_bytes().chunks(7).map(|read| Ok(read.to_vec())).collect();
        axum::response::Response::builder()
            .header("content-type", "text/event-stream")
            .body(axum::body::Body::from_stream(futures::stream::iter(reads)))
            .unwrap()
    }

    #[tokio::test]
    async fn a_stream_is_read_over_http1_and_h2() {
        let (base, _) = serve().await;
        let scratch = tempfile::tempdir().unwrap();
        let engine = crate::builtin::write_engine(&crate::builtin::builtin_engine(), scratch.path()).unwrap();
        let tokenizer = Tokenizer::from_dir(engine.join("tokenizer")).unwrap();
        for http2_prior_knowledge in [false, true] {
            let options = HttpOptions { streams: 2, http2_prior_knowledge };
            let target = OpenAiTarget::connect_with(&base, None, OpenAiApi::Chat, None, options)
                .await
                .unwrap()
                .with_tokenizer(tokenizer.clone());
            let spec = RequestSpec {
                prompt: vec![100, 200, 300, 400],
                max_tokens: 3,
                min_tokens: Some(3),
                ignore_eos: true,
                end_id: None,
                streaming: true,
                expected_output_tokens: Some(3),
                guide: None,
                session: None,
                messages: None,
            };
            let record = target.send(spec, &RunClock::start(), 0, Phase::Measure).await;
            assert!(record.is_success(), "h2 {http2_prior_knowledge}: {:?}", record.error);
            assert_eq!(record.chunks.len(), 3, "one chunk per content event");
            assert_eq!((record.prompt_tokens, record.output_tokens), (4, 3));
        }
    }

    #[tokio::test]
    async fn h2_prior_knowledge_when_asked_and_http1_otherwise() {
        let (base, seen) = serve().await;
        let http1 = OpenAiTarget::connect(&base, None, OpenAiApi::Chat, None).await.unwrap();
        assert_eq!(http1.model(), "m");
        let options = HttpOptions { streams: 4, http2_prior_knowledge: true };
        let h2 = OpenAiTarget::connect_with(&base, None, OpenAiApi::Chat, None, options).await.unwrap();
        assert_eq!(h2.model(), "m");
        assert_eq!(*seen.lock().unwrap(), [reqwest::Version::HTTP_11, reqwest::Version::HTTP_2]);
    }
}
