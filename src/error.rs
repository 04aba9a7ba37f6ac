//! Errors of the executor layer: loading an engine, validating and running requests.

use std::path::PathBuf;

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while loading an engine or running a request.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The engine directory is missing or cannot be read.
    #[error("engine directory {path}: {source}")]
    EngineDir {
        /// The directory that was given.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// The engine's config.json is missing, malformed, or lacks a field this crate needs.
    #[error("engine config {path}: {message}")]
    EngineConfig {
        /// The config.json (or simulation.json) that was read.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// An executor configuration value is out of range or inconsistent with the engine.
    #[error("invalid executor config: {0}")]
    InvalidConfig(String),
    /// The engine was built by a TensorRT-LLM version other than the linked library, or the library
    /// is outside the supported range (override with `ExecutorConfig::allow_version_mismatch`).
    #[error("unsupported TensorRT-LLM version: {0}")]
    UnsupportedVersion(String),
    /// The request breaks a limit of the engine or a rule of the API; nothing was enqueued.
    #[error("invalid request: {0}")]
    InvalidRequest(#[from] InvalidRequest),
    /// One request of a batch given to `enqueue_many` breaks a limit; nothing was enqueued.
    #[error("invalid request at position {index} of the batch: {reason}")]
    InvalidBatchRequest {
        /// The request's position in the batch.
        index: usize,
        /// What it breaks.
        reason: InvalidRequest,
    },
    /// The executor's queue is full (`max_queue_size`); retry later.
    #[error("queue full: {0}")]
    QueueFull(String),
    /// The executor threw or returned an error for this request.
    #[error("executor error: {0}")]
    Executor(String),
    /// The executor has been shut down or is shutting down; no new requests are accepted.
    #[error("executor is shut down")]
    ShutDown,
    /// The consumer fell so far behind that its bounded buffer filled; the request was cancelled.
    #[error("consumer too slow: {capacity} responses were buffered unread, request cancelled")]
    ConsumerTooSlow {
        /// The per-request buffer capacity that was exceeded.
        capacity: usize,
    },
    /// The response stream ended without a final response (the response thread stopped).
    #[error("response stream ended before the final response")]
    StreamEnded,
    /// KV-cache events were asked for but the executor records none.
    #[error("KV-cache events are off: set ExecutorConfig::kv_cache_event_buffer_max_size above 0")]
    KvEventsDisabled,
    // Guided decoding
    /// A guided request reached an executor created without a guided decoding config.
    #[error(
        "guided_decoding: this executor has no guided decoding config (build it with ExecutorConfigBuilder::guided_decoding_from_tokenizer, or serve with a tokenizer)"
    )]
    GuidedDecodingDisabled,
}

/// Why a request was refused before it reached the executor.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidRequest {
    /// The prompt has no tokens.
    #[error("prompt is empty")]
    EmptyPrompt,
    /// The prompt is longer than the engine's max_input_len.
    #[error("prompt has {len} tokens, over the engine's max_input_len of {max}")]
    PromptTooLong {
        /// Prompt tokens.
        len: usize,
        /// The engine's max_input_len.
        max: usize,
    },
    /// Prompt plus max_tokens exceeds the engine's max_seq_len.
    #[error("prompt ({prompt}) + max_tokens ({max_tokens}) = {} exceeds the engine's max_seq_len of {max_seq_len}", prompt + max_tokens)]
    SequenceTooLong {
        /// Prompt tokens.
        prompt: usize,
        /// Requested new tokens.
        max_tokens: usize,
        /// The engine's max_seq_len.
        max_seq_len: usize,
    },
    /// max_tokens is zero.
    #[error("max_tokens must be at least 1")]
    ZeroMaxTokens,
    /// A prompt token id is not in the vocabulary.
    #[error("prompt token {token} at position {position} is outside the vocabulary (size {vocab_size})")]
    TokenOutOfVocab {
        /// The offending id.
        token: u32,
        /// Its position in the prompt.
        position: usize,
        /// The engine's vocab_size.
        vocab_size: usize,
    },
    /// A token id given in a parameter (end id, pad id, stop or bad words) is not in the vocabulary.
    #[error("{field} token {token} is outside the vocabulary (size {vocab_size})")]
    ParamTokenOutOfVocab {
        /// The parameter.
        field: &'static str,
        /// The offending id.
        token: i64,
        /// The engine's vocab_size.
        vocab_size: usize,
    },
    /// The beam width is zero or above the engine's max_beam_width.
    #[error("beam width {requested} is outside 1..={max} (the engine's max_beam_width)")]
    BeamWidth {
        /// Requested beam width.
        requested: u32,
        /// The engine's max_beam_width.
        max: u32,
    },
    /// A sampling or output parameter is outside its valid range.
    #[error("{field} = {value} is invalid: {rule}")]
    Parameter {
        /// The parameter name.
        field: &'static str,
        /// Its value, as text.
        value: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// A request names a LoRA adapter but the engine was built without LoRA support.
    #[error("LoRA adapter (task {task_id}) sent to an engine built without LoRA support (no lora_plugin)")]
    LoraNotSupported {
        /// The adapter's task id.
        task_id: u64,
    },
    /// A LoRA adapter's weights do not fit the engine (wrong rank, module, layer, dtype); the reason names it.
    #[error("LoRA adapter (task {task_id}): {reason}")]
    Lora {
        /// The adapter's task id.
        task_id: u64,
        /// What is wrong, naming the module and layer.
        reason: String,
    },
    /// A stop or bad word is an empty token sequence.
    #[error("{field} contains an empty token sequence")]
    EmptyWord {
        /// `stop_words` or `bad_words`.
        field: &'static str,
    },
    // Guided decoding
    /// A guided-decoding guide is malformed (a schema that is not JSON, an empty regex, ...).
    #[error("guided_decoding.{field}: {reason}")]
    Guide {
        /// The guide type's field name (`json_schema`, `regex`, ...).
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

impl Error {
    /// Classifies a message thrown by the executor (through the shim) into the matching variant.
    pub(crate) fn from_executor(message: &str) -> Self {
        // Show the first line only: some builds append a multi-line stack trace to what().
        let first = message.lines().next().unwrap_or("").trim().to_string();
        if first.contains("Maximum queue size") {
            Error::QueueFull(first)
        } else if first.contains("Shutdown called") {
            Error::ShutDown
        } else {
            Error::Executor(first)
        }
    }
}

impl From<cxx::Exception> for Error {
    fn from(e: cxx::Exception) -> Self {
        Error::from_executor(e.what())
    }
}
