//! Errors of the executor layer: loading an engine, validating and running requests.

use std::path::PathBuf;

/// A `Result` whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in this crate: loading an engine, validating and running requests,
/// the text layer, LoRA adapters, guides and simulated engines. Every module's own error converts
/// into it with `?`, and [`Error::kind`] says what a service should answer without reading the text.
///
/// ```
/// fn prompt_ids(tokenizer: &trtllm::text::Tokenizer, text: &str) -> trtllm::Result<Vec<u32>> {
///     Ok(tokenizer.encode(text, false)?) // a text-layer error converts into trtllm::Error
/// }
/// let err = trtllm::Error::from(trtllm::InvalidRequest::EmptyPrompt);
/// assert_eq!(err.kind(), trtllm::ErrorKind::InvalidRequest);
/// assert_eq!(err.kind().http_status(), 400);
/// ```
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
        #[source]
        reason: InvalidRequest,
    },
    /// The executor's queue is full (`max_queue_size`); retry later.
    #[error("queue full: {0}")]
    QueueFull(String),
    /// The executor refused this request when admitting it (its guide, adapter or parameters).
    /// Only this request is affected; it is never counted against the executor's health.
    #[error("request refused by the executor: {0}")]
    RequestRejected(String),
    /// The executor failed this request while running it (a forward pass that failed). Many in a
    /// row make the executor unhealthy ([`HealthIssue::RequestsFailing`](crate::HealthIssue)).
    #[error("request failed in the executor: {0}")]
    RequestFailed(String),
    /// An executor call threw (enqueue, a simulator control) or its response thread stopped: the
    /// executor itself is failing.
    #[error("executor error: {0}")]
    ExecutorFailed(String),
    /// A thread the executor runs on could not be started.
    #[error("cannot start the {name} thread: {source}")]
    Thread {
        /// The thread's name.
        name: &'static str,
        /// Why it could not be started.
        #[source]
        source: std::io::Error,
    },
    /// The executor has been shut down or is shutting down; no new requests are accepted.
    #[error("executor is shut down")]
    ShutDown,
    /// The executor is draining (letting requests in flight finish before it shuts down); no new
    /// requests are accepted.
    #[error("executor is draining before shutdown: no new requests are accepted")]
    Draining,
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
    /// A KV-cache event subscriber fell behind and missed events.
    #[error(transparent)]
    KvEventsLagged(#[from] crate::types::kv_event::KvEventsLagged),
    /// The operation exists only on the simulated executor.
    #[error("{0} is available on the simulated executor only")]
    SimulatorOnly(&'static str),
    /// An internal invariant broke (a poisoned lock, an executor answer that cannot be matched).
    #[error("internal error: {0}")]
    Internal(String),
    // Guided decoding
    /// A guided request reached an executor created without a guided decoding config.
    #[error(
        "guided_decoding: this executor has no guided decoding config (build it with ExecutorConfigBuilder::guided_decoding_from_tokenizer, or serve with a tokenizer)"
    )]
    GuidedDecodingDisabled,
    /// The grammar engine refused a guided-decoding configuration or guide.
    #[cfg(feature = "guided")]
    #[error(transparent)]
    Guided(#[from] crate::sim::guided::error::GuidedError),
    // Other modules
    /// The text layer failed (tokenizer files, encoding, decoding, chat templates, stop strings).
    #[cfg(feature = "text")]
    #[error(transparent)]
    Text(#[from] crate::text::error::TextError),
    /// A LoRA adapter or an engine's LoRA settings were refused.
    #[error(transparent)]
    Lora(#[from] crate::lora::error::LoraError),
    /// A simulated engine cannot be described or run as asked.
    #[error(transparent)]
    Sim(#[from] crate::sim::error::SimError),
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// An error of the bench module (workloads, metrics, reports, planning).
    #[cfg(feature = "bench")]
    #[error(transparent)]
    Bench(Box<dyn std::error::Error + Send + Sync>),
}

/// What kind of failure an [`Error`] is, for a service to map onto its protocol's status without
/// reading messages: [`ErrorKind::grpc_code`] and [`ErrorKind::http_status`] give the usual codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
#[non_exhaustive]
pub enum ErrorKind {
    /// The request is malformed or breaks a limit: the caller must change it.
    InvalidRequest,
    /// The executor is at capacity (full queue, consumer too slow): retry later.
    Overloaded,
    /// The executor is failing, draining or shut down: retry on another server.
    Unavailable,
    /// This one request failed in the executor while others run: retrying elsewhere is unlikely to help.
    RequestFailed,
    /// The setup is wrong (engine directory, config, versions, a feature not enabled).
    Configuration,
    /// A local failure (I/O, threads, broken invariants).
    Internal,
}

impl ErrorKind {
    /// The gRPC status code's name (`INVALID_ARGUMENT`, ...) and number a service answers with.
    pub fn grpc_code(self) -> (&'static str, i32) {
        match self {
            ErrorKind::InvalidRequest => ("INVALID_ARGUMENT", 3),
            ErrorKind::Overloaded => ("RESOURCE_EXHAUSTED", 8),
            ErrorKind::Configuration => ("FAILED_PRECONDITION", 9),
            ErrorKind::RequestFailed | ErrorKind::Internal => ("INTERNAL", 13),
            ErrorKind::Unavailable => ("UNAVAILABLE", 14),
        }
    }

    /// The HTTP status an HTTP service answers with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorKind::InvalidRequest => 400,
            ErrorKind::Overloaded => 429,
            ErrorKind::RequestFailed | ErrorKind::Internal | ErrorKind::Configuration => 500,
            ErrorKind::Unavailable => 503,
        }
    }
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        #[cfg(feature = "text")]
        use crate::text::error::TextError as T;
        match self {
            Error::InvalidRequest(_) | Error::InvalidBatchRequest { .. } | Error::RequestRejected(_) => {
                ErrorKind::InvalidRequest
            }
            Error::QueueFull(_) | Error::ConsumerTooSlow { .. } | Error::KvEventsLagged(_) => ErrorKind::Overloaded,
            Error::ExecutorFailed(_) | Error::ShutDown | Error::Draining | Error::StreamEnded => ErrorKind::Unavailable,
            Error::RequestFailed(_) => ErrorKind::RequestFailed,
            Error::EngineDir { .. }
            | Error::EngineConfig { .. }
            | Error::InvalidConfig(_)
            | Error::UnsupportedVersion(_)
            | Error::KvEventsDisabled
            | Error::SimulatorOnly(_)
            | Error::GuidedDecodingDisabled
            | Error::Sim(_) => ErrorKind::Configuration,
            #[cfg(feature = "guided")]
            Error::Guided(e) if e.is_guide_error() => ErrorKind::InvalidRequest,
            #[cfg(feature = "guided")]
            Error::Guided(_) => ErrorKind::Configuration,
            Error::Lora(_) => ErrorKind::InvalidRequest,
            #[cfg(feature = "text")]
            Error::Text(
                T::Encode(_)
                | T::TemplateRender(_)
                | T::TemplateRaised(_)
                | T::EmptyStopString { .. }
                | T::StopStrings(_)
                | T::TokenIdTooLarge(_),
            ) => ErrorKind::InvalidRequest,
            #[cfg(feature = "text")]
            Error::Text(T::Io { .. } | T::MissingTokenizerJson { .. } | T::TokenizerLoad { .. } | T::Config { .. })
            | Error::Text(T::TemplateSyntax(_)) => ErrorKind::Configuration,
            #[cfg(feature = "text")]
            Error::Text(_) => ErrorKind::Internal,
            Error::Thread { .. } | Error::Internal(_) | Error::Io(_) => ErrorKind::Internal,
            #[cfg(feature = "bench")]
            Error::Bench(_) => ErrorKind::Internal,
        }
    }

    /// Whether the request itself caused the failure (the executor is not to blame): invalid
    /// requests and requests the executor refused when admitting them.
    pub fn is_request_caused(&self) -> bool {
        self.kind() == ErrorKind::InvalidRequest
    }
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

/// How TensorRT-LLM's executor words the error response of a request it refused when admitting it
/// (a guide it cannot compile, an adapter that does not fit, a parameter it rejects).
const REFUSED_AT_ADMISSION: &str = "Encountered an error when fetching new request";

/// The first line of an executor message: some builds append a multi-line stack trace to what().
fn first_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_string()
}

impl Error {
    /// Classifies a message thrown by an executor call (through the shim) into the matching variant.
    pub(crate) fn from_executor(message: &str) -> Self {
        let first = first_line(message);
        if first.contains("Maximum queue size") {
            Error::QueueFull(first)
        } else if first.contains("Shutdown called") {
            Error::ShutDown
        } else {
            Error::ExecutorFailed(first)
        }
    }

    /// Classifies a request's error response: refused at admission (the request's fault, named
    /// without the executor's wording) or failed while running.
    pub(crate) fn from_response(message: &str) -> Self {
        let first = first_line(message);
        match first.split_once(REFUSED_AT_ADMISSION) {
            Some((_, reason)) => Error::RequestRejected(reason.trim_start_matches([':', ' ']).to_string()),
            None => Error::RequestFailed(first),
        }
    }

    /// Whether an error response refuses the request at admission (see [`Error::from_response`]).
    pub(crate) fn is_admission_refusal(message: &str) -> bool {
        message.contains(REFUSED_AT_ADMISSION)
    }
}

#[cfg(feature = "bench")]
mod bench;
