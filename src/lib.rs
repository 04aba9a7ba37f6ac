//! TensorRT-LLM's C++ Executor in Rust.
//!
//! `trtllm` wraps NVIDIA TensorRT-LLM's `tensorrt_llm::executor::Executor` (the TensorRT-engine
//! executor of the 1.1 and 1.2 release lines) behind a safe API: load an engine directory, enqueue
//! token-id requests, stream tokens asynchronously, cancel, and read iteration, request and KV-cache
//! statistics. Without TensorRT-LLM on the build machine the same API runs on a simulated
//! executor, so everything can be developed and tested without a GPU.
//!
//! The front door is [`Engine`]: an engine directory (or the built-in simulated engine) with its
//! tokenizer, turning prompts and conversations into text streams:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> trtllm::Result<()> {
//! use trtllm::{Engine, GenerateOptions};
//! let engine = Engine::builtin().await?;
//! let done = engine.complete("Hello", GenerateOptions::new().max_tokens(8)).await?;
//! assert!(done.output.completion_tokens <= 8);
//! # Ok(()) }
//! ```
//!
//! Under it, the executor works on token ids (every error is a [`Error`], whose
//! [`kind`](Error::kind) a service maps to its status):
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use trtllm::{Executor, ExecutorConfig, GenerationRequest};
//! let dir = tempfile::tempdir()?;
//! trtllm::sim::SimulatedEngine::builder().iteration_ms(1.0).build().write_to(dir.path())?;
//! let executor = Executor::load(dir.path(), ExecutorConfig::default())?;
//! let stream = executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 5))?;
//! let done = stream.blocking_iter().last().expect("a terminal item")?;
//! if let trtllm::StreamEvent::Final(done) = done {
//!     assert_eq!(done.completion_tokens, 5);
//! }
//! # Ok(()) }
//! ```
//!
//! # Cargo features
//!
//! The default build is the whole tool. Turn the defaults off (`default-features = false`) to
//! embed only the core: the executor on token ids, its statistics and KV-cache events, and the
//! simulated engines, with none of the optional layers' dependencies; then add what you use.
//!
//! | feature | what it adds | pulls in |
//! |---|---|---|
//! | `text` | [`text`] (tokenizers, chat templates, stop strings, text streams) and the [`Engine`] front door | tokenizers, minijinja, aho-corasick, chrono |
//! | `guided` | guides compiled before enqueue; the simulator's guided decoding | llguidance |
//! | `lora` | [`lora::load_peft_adapter`] (Hugging Face PEFT adapters) | safetensors |
//! | `serde` | `Serialize` for outputs (text events, finals, health, totals) | (serde is always linked) |
//! | `grpc` | `trtllm::proto`: the `trtllm.TrtllmService` messages and client | tonic, prost |
//! | `server` | `trtllm::server`: the gRPC server, health, metrics, TLS, auth (implies `grpc`, `text`) | axum, prometheus-client, zip |
//! | `bench` | `trtllm::bench`: workloads, the runner, metrics, reports, planning (implies `grpc`, `text`) | plotters, rand |
//! | `cli` | the `trtllm` command (implies everything) | clap, indicatif |

#[cfg(feature = "bench")]
pub mod bench;
pub mod builtin;
mod clock;
pub mod engine;
mod error;
mod executor;
mod ffi;
#[cfg(feature = "text")]
mod front;
pub mod guided;
pub mod lora;
#[cfg(feature = "grpc")]
pub mod proto;
#[cfg(feature = "server")]
pub mod server;
pub mod sim;
pub mod speculative;
#[cfg(feature = "text")]
pub mod text;
mod types;
mod version;

pub use clock::executor_clock_now_ns;
pub use engine::EngineConfig;
pub use engine::kv_link::{KvLink, KvLinkPreset, SimKvTransfer};
pub use error::{Error, ErrorKind, InvalidRequest, Result};
pub use executor::{
    AsyncExecutor, BlockingIter, Executor, GenerationStream, HealthIssue, KvEventStream, Prefilled, RequestTotals,
    ShutdownMode,
};
#[cfg(feature = "text")]
pub use front::{Completion, DisaggregatedStream, Engine, EngineBuilder, GenerateOptions, Prompt};
pub use types::config::{
    ContextChunkingPolicy, ExecutorConfig, ExecutorConfigBuilder, ParallelConfig, SchedulerPolicy,
};
pub use types::disagg::{CacheTransceiverBackend, CacheTransceiverConfig, DisServingStats, HandoffError, RequestType};
pub use types::handoff::{EngineFingerprint, KvHandoff};
pub use types::ids::RequestId;
pub use types::kv_event::{KvCacheEvent, KvCacheEventData, KvEventsLagged, StoredBlock, ValueChange};
pub use types::output::{FinalOutput, PerfMetrics, SequenceOutput, StreamEvent, TokenChunk};
pub use types::request::{FinishReason, GenerationRequest, SamplingParams};
pub use types::stats::{
    InflightBatchingStats, IterationStats, KvCacheStats, RequestStage, RequestStats, RequestStatsPerIteration,
    StaticBatchingStats,
};
pub use version::{Backend, SUPPORTED_LINES};
