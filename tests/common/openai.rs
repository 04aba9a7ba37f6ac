//! A minimal OpenAI-compatible endpoint over TLS, for the bench's `https://` target: `/v1/models`
//! and streaming `/v1/chat/completions` that sends `max_tokens` one-word chunks and the usage.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The model id the mock lists (the built-in engine's, so the bench uses its shipped tokenizer).
pub const MODEL_ID: &str = "trtllm-builtin-sim";

/// A running mock; its threads end with the test process.
pub struct TlsOpenAi {
    pub addr: SocketAddr,
    /// PEM file of the CA that signed the server certificate (for `SSL_CERT_FILE`).
    pub ca_file: PathBuf,
    /// Chat completion requests answered.
    pub completions: Arc<AtomicUsize>,
}

/// A CA certificate (PEM) written to `path`, and the issuer to sign with.
pub fn write_ca(path: &Path) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    std::fs::write(path, ca.pem()).unwrap();
    ca
}

impl TlsOpenAi {
    /// Starts the mock on a free loopback port with a certificate for 127.0.0.1 signed by a new
    /// CA, whose PEM goes into `dir`.
    pub fn start(dir: &Path) -> TlsOpenAi {
        let ca_file = dir.join("mock-ca.pem");
        let ca = write_ca(&ca_file);
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap().signed_by(&key, &ca).unwrap();
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(cert.der().to_vec())], key)
            .unwrap();
        let config = Arc::new(config);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let completions = Arc::new(AtomicUsize::new(0));
        let counter = completions.clone();
        std::thread::spawn(move || {
            for tcp in listener.incoming().flatten() {
                let (config, counter) = (config.clone(), counter.clone());
                std::thread::spawn(move || serve(tcp, config, &counter));
            }
        });
        TlsOpenAi { addr, ca_file, completions }
    }

    /// The base URL (`https://127.0.0.1:PORT/v1`).
    pub fn url(&self) -> String {
        format!("https://{}/v1", self.addr)
    }
}

/// One request per connection (`Connection: close`); a failed handshake just ends it.
fn serve(tcp: TcpStream, config: Arc<rustls::ServerConfig>, completions: &AtomicUsize) {
    let Ok(connection) = rustls::ServerConnection::new(config) else { return };
    let mut tls = BufReader::new(rustls::StreamOwned::new(connection, tcp));
    let mut request_line = String::new();
    if tls.read_line(&mut request_line).is_err() {
        return;
    }
    let mut content_length = 0;
    loop {
        let mut line = String::new();
        if tls.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            content_length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; content_length];
    if tls.read_exact(&mut body).is_err() {
        return;
    }
    let mut out = tls.into_inner();
    let _ = if request_line.starts_with("GET /v1/models") {
        let models = format!(r#"{{"object":"list","data":[{{"id":"{MODEL_ID}","object":"model"}}]}}"#);
        write!(
            out,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{models}",
            models.len()
        )
    } else if request_line.starts_with("POST /v1/chat/completions") {
        completions.fetch_add(1, Ordering::SeqCst);
        stream_completion(&mut out, &body)
    } else {
        write!(out, "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
    };
    out.conn.send_close_notify();
    let _ = out.flush();
}

/// SSE: one chunk per requested token, a finish chunk, the usage chunk and `[DONE]`.
fn stream_completion(out: &mut impl Write, body: &[u8]) -> std::io::Result<()> {
    let request: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let tokens = request["max_tokens"].as_u64().unwrap_or(1);
    write!(out, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")?;
    for _ in 0..tokens {
        let chunk =
            serde_json::json!({"choices": [{"index": 0, "delta": {"content": " hello"}, "finish_reason": null}]});
        write!(out, "data: {chunk}\n\n")?;
        out.flush()?;
        std::thread::sleep(Duration::from_millis(1));
    }
    let finish = serde_json::json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]});
    let usage = serde_json::json!({"choices": [], "usage": {"prompt_tokens": 16, "completion_tokens": tokens,
        "total_tokens": 16 + tokens, "prompt_tokens_details": {"cached_tokens": 0}}});
    write!(out, "data: {finish}\n\ndata: {usage}\n\ndata: [DONE]\n\n")?;
    out.flush()
}
