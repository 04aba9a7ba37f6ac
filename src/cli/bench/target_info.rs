//! What `trtllm bench` knows about its target once connected: the [`Setup`] every way of
//! connecting (in process, gRPC, OpenAI-compatible HTTP) returns.

use std::path::PathBuf;

use serde_json::Value;
use trtllm::bench::{BenchTarget, EngineSimulation, GrpcTarget};

/// The target and what is known about it.
pub struct Setup {
    pub target: BenchTarget,
    /// The `engine` object: the same keys whichever the target (from the engine config in
    /// process, from GetModelInfo/GetServerInfo over gRPC), plus the full configs in process.
    pub engine: Value,
    pub model_id: String,
    pub vocab_size: usize,
    /// The longest sequence (prompt and output) the target takes; 0 when it does not say.
    pub max_seq_len: usize,
    /// The longest prompt the target takes; 0 when it does not say.
    pub max_input_len: usize,
    /// `tensorrt-llm <version>`, `simulated <version>`, or the server's backend and version.
    pub backend: String,
    /// The GPU, or the simulated GPU preset (simulation.json's `gpu`), when known.
    pub gpu: Option<String>,
    pub engine_dir: Option<PathBuf>,
    /// The directory the in-process executor loaded (the built-in engine's scratch copy too).
    pub loaded_dir: Option<PathBuf>,
    /// The simulated executor's timing (GPU, clock, performance model), in process on the
    /// simulated backend.
    pub simulation: Option<EngineSimulation>,
    /// Where a tokenizer can be loaded from, and its identifier, when there is one.
    pub tokenizer_source: Option<(TokenizerSource, String)>,
    /// Keeps the built-in engine's or the fetched tokenizer's files alive.
    pub _scratch: tempfile::TempDir,
}

pub enum TokenizerSource {
    Dir(PathBuf),
    /// The server's tokenizer, fetched on first use through GetTokenizer.
    Server(GrpcTarget),
}
