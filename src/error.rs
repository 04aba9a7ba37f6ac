//! Errors of the executor layer: loading an engine, validating and running requests.

use std::path::PathBuf;

pub use invalid_request::{InvalidGuide, InvalidRequest};
pub use kind::ErrorKind;

pub(crate) mod invalid_request;
pub(crate) mod kind;

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
    Guided(#[from] crate::guided::error::GuidedError),
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
    /// Disaggregated serving: a KV handoff was corrupt, from an engine that does not pair with this one,
    /// or could not be taken.
    #[error(transparent)]
    Handoff(#[from] crate::types::disagg::HandoffError),
    /// Reading or writing a file failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Error {
    /// What kind of failure this is. The executor's own failures are classified here; a module's
    /// error says its own kind (`TextError::kind`, `LoraError::kind`, ...), so this only delegates.
    pub fn kind(&self) -> ErrorKind {
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
            | Error::GuidedDecodingDisabled => ErrorKind::Configuration,
            Error::Thread { .. } | Error::Internal(_) | Error::Io(_) => ErrorKind::Internal,
            #[cfg(feature = "guided")]
            Error::Guided(e) => e.kind(),
            #[cfg(feature = "text")]
            Error::Text(e) => e.kind(),
            Error::Lora(e) => e.kind(),
            Error::Sim(e) => e.kind(),
            Error::Handoff(e) => e.kind(),
        }
    }

    /// Whether the request itself caused the failure (the executor is not to blame): invalid
    /// requests and requests the executor refused when admitting them.
    pub fn is_request_caused(&self) -> bool {
        self.kind() == ErrorKind::InvalidRequest
    }
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
        // A generation-only request whose handoff is corrupt, or whose KV blocks cannot be taken.
        if let Some(handoff) = crate::types::disagg::handoff_error_in(&first) {
            return Error::Handoff(handoff);
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_executors_own_failures_have_their_kinds() {
        let cases = [
            (Error::InvalidRequest(InvalidRequest::EmptyPrompt), ErrorKind::InvalidRequest),
            (Error::RequestRejected("bad adapter".into()), ErrorKind::InvalidRequest),
            (Error::QueueFull("full".into()), ErrorKind::Overloaded),
            (Error::ConsumerTooSlow { capacity: 4 }, ErrorKind::Overloaded),
            (Error::ShutDown, ErrorKind::Unavailable),
            (Error::Draining, ErrorKind::Unavailable),
            (Error::ExecutorFailed("threw".into()), ErrorKind::Unavailable),
            (Error::RequestFailed("forward failed".into()), ErrorKind::RequestFailed),
            (Error::InvalidConfig("max_batch_size".into()), ErrorKind::Configuration),
            (Error::GuidedDecodingDisabled, ErrorKind::Configuration),
            (Error::SimulatorOnly("sim_control"), ErrorKind::Configuration),
            (Error::Internal("poisoned".into()), ErrorKind::Internal),
            (Error::Io(std::io::Error::other("disk")), ErrorKind::Internal),
        ];
        for (error, kind) in cases {
            assert_eq!(error.kind(), kind, "{error}");
        }
    }

    #[test]
    fn a_module_error_keeps_the_kind_it_gives_itself() {
        let lora = crate::lora::LoraError::InvalidSettings("max_lora_rank is 0".into());
        assert_eq!(Error::from(lora).kind(), ErrorKind::Configuration);
        let sim = crate::sim::SimError::Invalid("zero layers".into());
        assert_eq!(Error::from(sim).kind(), ErrorKind::Configuration);
    }

    #[test]
    fn executor_messages_are_classified_by_their_wording() {
        assert!(matches!(Error::from_executor("Maximum queue size of 4 reached"), Error::QueueFull(_)));
        assert!(matches!(Error::from_executor("Shutdown called"), Error::ShutDown));
        let refused = Error::from_response("Encountered an error when fetching new request: bad guide\n  at frame 1");
        assert!(matches!(&refused, Error::RequestRejected(reason) if reason == "bad guide"));
        assert!(matches!(Error::from_response("CUDA error"), Error::RequestFailed(_)));
        let gone = Error::from_response(
            "Encountered an error when fetching new request: KV cache handoff refused: it expired (timeout)",
        );
        assert!(matches!(&gone, Error::Handoff(crate::HandoffError::Unavailable(r)) if r == "it expired (timeout)"));
        assert_eq!(gone.kind(), ErrorKind::Configuration);
        let corrupt =
            Error::from_response("Encountered an error when fetching new request: KV cache handoff is corrupt: x");
        assert!(matches!(&corrupt, Error::Handoff(crate::HandoffError::Corrupt(_))), "{corrupt:?}");
        assert_eq!(corrupt.kind(), ErrorKind::InvalidRequest);
    }
}
