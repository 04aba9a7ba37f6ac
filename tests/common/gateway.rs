//! The real Shepherd Model Gateway (`smg launch`, from the test venv) in front of test workers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::python::python_with_smg_stubs;
use super::server::free_port_addr;

/// The test venv's python and its `smg` console script, or `None` (with the reason printed) when
/// the venv cannot be had and `TRTLLM_SKIP_PY_TESTS=1` says to skip. The script is run through
/// the python: the venv is built elsewhere and moved into place, so its shebang lines are stale.
pub fn smg_executable() -> Option<(PathBuf, PathBuf)> {
    let python = python_with_smg_stubs()?;
    let smg = python.parent().expect("venv bin").join("smg");
    assert!(smg.exists(), "the test venv has no smg at {} (tests/python/requirements.txt pins it)", smg.display());
    Some((python, smg))
}

/// A running gateway; killed on drop.
pub struct Gateway {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its Prometheus endpoint, `http://127.0.0.1:PORT/metrics`.
    pub metrics_url: String,
    pub client: reqwest::Client,
    log: tempfile::NamedTempFile,
}

impl Gateway {
    /// Starts `smg launch` with `policy` in front of `workers` (gRPC addresses) and waits until
    /// every worker is registered and a one-token completion succeeds.
    pub async fn start(
        smg: &(PathBuf, PathBuf),
        workers: &[std::net::SocketAddr],
        policy: &str,
        tokenizer: &Path,
    ) -> Gateway {
        let port = free_port_addr().port();
        let metrics = free_port_addr().port();
        let log = tempfile::NamedTempFile::new().unwrap();
        let mut command = Command::new(&smg.0);
        command
            .arg(&smg.1)
            .args(["launch", "--host", "127.0.0.1", "--port", &port.to_string(), "--policy", policy])
            .arg("--tokenizer-path")
            .arg(tokenizer)
            .args(["--prometheus-host", "127.0.0.1", "--prometheus-port", &metrics.to_string()])
            .arg("--worker-urls")
            .args(workers.iter().map(|a| format!("grpc://{a}")))
            .stdin(Stdio::null())
            .stdout(log.reopen().unwrap())
            .stderr(log.reopen().unwrap());
        let child = command.spawn().expect("starting smg launch");
        // reqwest is built without a crypto provider of its own (the crate uses ring's).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let metrics_url = format!("http://127.0.0.1:{metrics}/metrics");
        let gateway = Gateway { child, base: format!("http://127.0.0.1:{port}"), metrics_url, client, log };
        gateway.wait_ready(workers.len()).await;
        gateway
    }

    async fn wait_ready(&self, workers: usize) {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if self.registered().await == Some(workers) && self.complete("ready?", 1, false).await.is_ok() {
                return;
            }
            assert!(Instant::now() < deadline, "the gateway did not become ready; its log:\n{}", self.log_text());
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// The gateway's log so far (for failure messages).
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    /// Workers listed by `GET /workers`.
    pub async fn registered(&self) -> Option<usize> {
        let doc: Value = self.client.get(format!("{}/workers", self.base)).send().await.ok()?.json().await.ok()?;
        doc["workers"].as_array().map(Vec::len).or_else(|| doc.as_array().map(Vec::len))
    }

    /// A text completion of `prompt`; the reply's JSON, or the error.
    pub async fn complete(&self, prompt: &str, max_tokens: u32, ignore_eos: bool) -> Result<Value, String> {
        let body = json!({
            "model": "trtllm-builtin-sim", "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": ignore_eos,
        });
        let doc = self.post("/v1/completions", &body).await?;
        match doc["choices"][0]["finish_reason"].as_str() {
            Some("length" | "stop") => Ok(doc),
            _ => Err(format!("no finish_reason: {doc}")),
        }
    }

    /// POSTs `body` to `path` (e.g. `/v1/chat/completions`); the reply's JSON, or the HTTP status
    /// and body.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, String> {
        let response =
            self.client.post(format!("{}{path}", self.base)).json(body).send().await.map_err(|e| e.to_string())?;
        let status = response.status();
        let text = response.text().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!("HTTP {status}: {text}"));
        }
        serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))
    }

    /// Opens a streamed text completion and returns the response once its headers arrived.
    pub async fn stream(&self, prompt: &str, max_tokens: u32) -> reqwest::Response {
        let body = json!({
            "model": "trtllm-builtin-sim", "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": true,
            "stream": true,
        });
        self.client.post(format!("{}/v1/completions", self.base)).json(&body).send().await.unwrap()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
