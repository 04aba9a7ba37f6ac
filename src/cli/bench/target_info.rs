//! What `trtllm bench` knows about its target once connected: the [`Setup`] every way of
//! connecting (in process, gRPC, OpenAI-compatible HTTP) returns.

use std::path::PathBuf;

use trtllm::bench::{BenchTarget, EngineSection, EngineSimulation, GrpcTarget};
use trtllm::proto::trtllm as pb;

/// The target and what is known about it.
pub struct Setup {
    pub target: BenchTarget,
    /// The `engine` section: the same keys whichever the target (from the engine config in
    /// process, from GetModelInfo/GetServerInfo over gRPC), plus the full configs in process.
    pub engine: EngineSection,
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

impl Setup {
    /// A `trtllm serve` target (one server, or the first worker of disaggregated pools): what
    /// its GetModelInfo and GetServerInfo say, with its tokenizer fetched from it on first use.
    pub fn from_server(
        target: BenchTarget,
        grpc: GrpcTarget,
        model: pb::GetModelInfoResponse,
        server: &pb::GetServerInfoResponse,
        engine: EngineSection,
        scratch: tempfile::TempDir,
    ) -> Setup {
        Setup {
            vocab_size: usize::try_from(model.vocab_size).unwrap_or(0),
            max_seq_len: usize::try_from(model.max_seq_len).unwrap_or(0),
            max_input_len: usize::try_from(model.max_input_len).unwrap_or(0),
            backend: format!("{} {}", server.backend, server.version),
            gpu: None,
            engine_dir: None,
            loaded_dir: None,
            simulation: None,
            tokenizer_source: Some((TokenizerSource::Server(grpc), format!("{} (server)", model.model_id))),
            model_id: model.model_id,
            engine,
            target,
            _scratch: scratch,
        }
    }
}

pub enum TokenizerSource {
    Dir(PathBuf),
    /// The server's tokenizer, fetched on first use through GetTokenizer.
    Server(GrpcTarget),
}
