//! Prefill/decode disaggregation's plain data: a request's type, the executor's cache transceiver
//! settings, the transfer's statistics, and why a KV handoff is refused.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::kind::ErrorKind;
use crate::ffi::sys;

/// Which phases of a request an executor runs (`RequestType`).
///
/// ```
/// use trtllm::{GenerationRequest, RequestType};
/// let request = GenerationRequest::new(vec![1, 2, 3], 8);
/// assert_eq!(request.request_type(), RequestType::ContextAndGeneration);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestType {
    /// Prefill and decode on this executor (aggregated serving).
    #[default]
    ContextAndGeneration,
    /// Prefill only: the request ends after its first generated token with a [`KvHandoff`](crate::KvHandoff),
    /// and this executor keeps the prompt's KV blocks until a generation executor has taken them or the
    /// transfer timeout passes.
    ContextOnly,
    /// Decode only: the prompt's KV cache is pulled from the context executor the request's
    /// [`KvHandoff`](crate::KvHandoff) names, then decoding continues after the first token.
    GenerationOnly,
}

impl RequestType {
    pub(crate) fn to_ffi(self) -> sys::RequestTypeKind {
        match self {
            RequestType::ContextAndGeneration => sys::RequestTypeKind::ContextAndGeneration,
            RequestType::ContextOnly => sys::RequestTypeKind::ContextOnly,
            RequestType::GenerationOnly => sys::RequestTypeKind::GenerationOnly,
        }
    }
}

/// The transport the cache transceiver moves KV blocks with (`CacheTransceiverConfig::BackendType`).
/// Both sides of a pair must use the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum CacheTransceiverBackend {
    /// The release's default (NIXL in recent 1.x releases).
    Default,
    /// MPI.
    Mpi,
    /// UCX.
    Ucx,
    /// NIXL (UCX underneath).
    Nixl,
}

/// The executor's cache transceiver (`CacheTransceiverConfig`): needed on both the context and the
/// generation executor of a disaggregated pair. Unset fields keep the executor's defaults.
///
/// ```
/// use std::time::Duration;
/// use trtllm::{CacheTransceiverBackend, CacheTransceiverConfig, ExecutorConfig};
/// let transceiver = CacheTransceiverConfig::new()
///     .backend(CacheTransceiverBackend::Ucx)
///     .kv_transfer_timeout(Duration::from_secs(30));
/// let config = ExecutorConfig::builder().cache_transceiver(transceiver).build().unwrap();
/// assert_eq!(config.cache_transceiver.unwrap().kv_transfer_timeout, Some(Duration::from_secs(30)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheTransceiverConfig {
    /// The transport; `None` keeps the release's default.
    pub backend: Option<CacheTransceiverBackend>,
    /// Tokens the transceiver's pre-allocated buffer holds (`maxTokensInBuffer`); a request with more KV
    /// tokens transfers more slowly.
    pub max_tokens_in_buffer: Option<u64>,
    /// How long the context executor keeps a finished context's KV blocks for a generation request
    /// that has not taken them (`kvTransferTimeoutMs`); `None`: no limit.
    #[serde(with = "optional_millis")]
    pub kv_transfer_timeout: Option<Duration>,
}

impl CacheTransceiverConfig {
    /// Every field unset: the executor's defaults.
    pub fn new() -> Self {
        CacheTransceiverConfig::default()
    }

    /// The transport.
    #[must_use]
    pub fn backend(mut self, backend: CacheTransceiverBackend) -> Self {
        self.backend = Some(backend);
        self
    }

    /// Tokens the transfer buffer holds.
    #[must_use]
    pub fn max_tokens_in_buffer(mut self, tokens: u64) -> Self {
        self.max_tokens_in_buffer = Some(tokens);
        self
    }

    /// How long the context side keeps blocks nobody has taken.
    #[must_use]
    pub fn kv_transfer_timeout(mut self, timeout: Duration) -> Self {
        self.kv_transfer_timeout = Some(timeout);
        self
    }

    /// Checks ranges: a timeout of at least 1 ms that fits the executor's `int` milliseconds, a
    /// buffer of at least one token.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(t) = self.kv_transfer_timeout
            && (t < Duration::from_millis(1) || t.as_millis() > i32::MAX as u128)
        {
            return Err(format!("kv_transfer_timeout {t:?} must be between 1 ms and {} ms", i32::MAX));
        }
        if self.max_tokens_in_buffer == Some(0) {
            return Err("max_tokens_in_buffer must be at least 1 when set".into());
        }
        Ok(())
    }

    pub(crate) fn to_ffi(config: Option<&CacheTransceiverConfig>) -> sys::CacheTransceiverOptions {
        let Some(c) = config else { return sys::CacheTransceiverOptions::default() };
        sys::CacheTransceiverOptions {
            set: true,
            backend: match c.backend {
                None => sys::TransceiverBackendKind::Unset,
                Some(CacheTransceiverBackend::Default) => sys::TransceiverBackendKind::Default,
                Some(CacheTransceiverBackend::Mpi) => sys::TransceiverBackendKind::Mpi,
                Some(CacheTransceiverBackend::Ucx) => sys::TransceiverBackendKind::Ucx,
                Some(CacheTransceiverBackend::Nixl) => sys::TransceiverBackendKind::Nixl,
            },
            max_tokens_in_buffer: sys::OptU64 {
                set: c.max_tokens_in_buffer.is_some(),
                value: c.max_tokens_in_buffer.unwrap_or(0),
            },
            kv_transfer_timeout_ms: sys::OptI32 {
                set: c.kv_transfer_timeout.is_some(),
                value: c.kv_transfer_timeout.map_or(0, |t| i32::try_from(t.as_millis()).unwrap_or(i32::MAX)),
            },
        }
    }
}

mod optional_millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(value: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => serializer.serialize_some(&(d.as_millis() as u64)),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(deserializer)?.map(Duration::from_millis))
    }
}

/// A disaggregated request's KV-cache transfer as the generation executor reports it
/// (`DisServingRequestStats`, in [`RequestStats::dis_serving`](crate::RequestStats::dis_serving)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[non_exhaustive]
pub struct DisServingStats {
    /// Time spent transferring the KV cache from the context executor, milliseconds.
    pub kv_cache_transfer_ms: f64,
    /// Bytes of KV cache transferred.
    pub kv_cache_size: u64,
}

impl DisServingStats {
    pub(crate) fn from_ffi(has: bool, transfer_ms: f64, size: u64) -> Option<Self> {
        has.then_some(DisServingStats { kv_cache_transfer_ms: transfer_ms, kv_cache_size: size })
    }
}

/// Why a KV handoff was refused or could not be delivered. Each variant says its own
/// [`ErrorKind`]: bytes that do not decode are the caller's (`INVALID_ARGUMENT`); a pairing of
/// engines that do not match, an executor without a cache transceiver, and a handoff whose blocks are
/// gone (unknown, expired, released) are `FAILED_PRECONDITION`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HandoffError {
    /// The handoff's bytes do not decode (truncated, altered, or not a handoff).
    #[error("corrupt KV handoff: {0}")]
    Corrupt(String),
    /// The context and generation engines differ in something a transfer cannot bridge (the model,
    /// tensor or pipeline parallelism, the KV-cache dtype, tokens per block).
    #[error("KV handoff from an engine with {what} {context} refused by an engine with {what} {generation}")]
    EngineMismatch {
        /// What differs (`model`, `tp_size`, `kv_cache_dtype`, ...).
        what: &'static str,
        /// The context engine's value.
        context: String,
        /// The generation engine's value.
        generation: String,
    },
    /// The generation request's prompt is not the one the context executor prefilled.
    #[error("KV handoff covers a {handoff}-token prompt, the generation request has {request} tokens")]
    PromptMismatch {
        /// Prompt tokens the handoff's KV covers.
        handoff: u32,
        /// Prompt tokens of the generation request.
        request: usize,
    },
    /// The executor has no cache transceiver (`ExecutorConfig::cache_transceiver`), so it runs no
    /// context-only or generation-only request.
    #[error("this executor has no cache transceiver: set ExecutorConfig::cache_transceiver to run {0} requests")]
    NoTransceiver(&'static str),
    /// The generation executor could not take the KV blocks: the handoff is unknown to the context
    /// executor, has expired (the transfer timeout passed), or its blocks were released (the context
    /// request was cancelled).
    #[error("KV handoff refused: {0}")]
    Unavailable(String),
    /// A context-only request finished without the handoff the executor owes it.
    #[error("the context-only request {0} finished without a KV handoff")]
    Missing(u64),
}

impl HandoffError {
    /// What kind of failure this is (see the enum's description).
    pub fn kind(&self) -> ErrorKind {
        match self {
            HandoffError::Corrupt(_) | HandoffError::PromptMismatch { .. } => ErrorKind::InvalidRequest,
            HandoffError::EngineMismatch { .. } | HandoffError::NoTransceiver(_) | HandoffError::Unavailable(_) => {
                ErrorKind::Configuration
            }
            HandoffError::Missing(_) => ErrorKind::RequestFailed,
        }
    }
}

/// How the simulated executor (and this crate's classification of error responses) words a
/// generation request whose KV blocks cannot be taken; [`HandoffError::Unavailable`] carries what follows.
pub(crate) const HANDOFF_REFUSED: &str = "KV cache handoff refused";

/// How it words a generation request whose handoff state does not parse; [`HandoffError::Corrupt`].
pub(crate) const HANDOFF_CORRUPT: &str = "KV cache handoff is corrupt";

/// The handoff error an executor's error response names, if it names one.
pub(crate) fn handoff_error_in(message: &str) -> Option<HandoffError> {
    let after = |marker: &str| message.split_once(marker).map(|(_, r)| r.trim_start_matches([':', ' ']).to_string());
    after(HANDOFF_CORRUPT).map(HandoffError::Corrupt).or_else(|| after(HANDOFF_REFUSED).map(HandoffError::Unavailable))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_has_its_status() {
        assert_eq!(HandoffError::Corrupt("short".into()).kind().grpc_code().0, "INVALID_ARGUMENT");
        let mismatch = HandoffError::EngineMismatch { what: "tp_size", context: "2".into(), generation: "1".into() };
        assert_eq!(mismatch.kind().grpc_code().0, "FAILED_PRECONDITION");
        assert!(mismatch.to_string().contains("tp_size 2"), "{mismatch}");
        assert_eq!(HandoffError::Unavailable("expired".into()).kind().grpc_code().0, "FAILED_PRECONDITION");
    }

    #[test]
    fn transceiver_timeout_is_checked_and_crosses_in_milliseconds() {
        let config = CacheTransceiverConfig::new().kv_transfer_timeout(Duration::from_millis(250));
        assert!(config.validate().is_ok());
        let ffi = CacheTransceiverConfig::to_ffi(Some(&config));
        assert!(ffi.set && ffi.kv_transfer_timeout_ms.set && ffi.kv_transfer_timeout_ms.value == 250);
        assert!(!CacheTransceiverConfig::to_ffi(None).set);
        assert!(CacheTransceiverConfig::new().kv_transfer_timeout(Duration::ZERO).validate().is_err());
        let json = serde_json::to_string(&config).unwrap();
        assert_eq!(serde_json::from_str::<CacheTransceiverConfig>(&json).unwrap(), config);
    }
}
