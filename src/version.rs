//! Which executor was built in, and the check of an engine's TensorRT-LLM version against it.

use serde::Serialize;

use crate::engine::EngineConfig;
use crate::error::{Error, Result};
use crate::ffi::sys;

/// TensorRT-LLM release lines that ship the TensorRT-engine Executor and that this crate supports.
pub const SUPPORTED_LINES: &[&str] = &["1.1", "1.2"];

/// The executor this binary was built against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Backend {
    /// `tensorrt-llm` or `simulated`.
    pub kind: String,
    /// The library's version string (`tensorrt_llm::executor::version()`).
    pub version: String,
}

impl Backend {
    /// Asks the linked library.
    pub fn current() -> Self {
        Backend { kind: sys::backend_kind(), version: sys::library_version() }
    }

    /// True for the simulated executor.
    pub fn is_simulated(&self) -> bool {
        self.kind == "simulated"
    }

    /// The release part of the library's version (`1.2.0rc5` of `1.2.0rc5.post1`), the part an
    /// engine's version must match.
    pub fn release(&self) -> &str {
        release(&self.version)
    }

    /// Whether an engine built by TensorRT-LLM `engine_version` is of this library's release, the
    /// condition for loading it (unless `ExecutorConfig::allow_version_mismatch` is set).
    ///
    /// ```
    /// let backend = trtllm::Backend { kind: "tensorrt-llm".into(), version: "1.2.0rc5.post1".into() };
    /// assert_eq!(backend.release(), "1.2.0rc5");
    /// assert!(backend.same_release("1.2.0rc5"));
    /// assert!(!backend.same_release("1.2.0rc4"));
    /// ```
    pub fn same_release(&self, engine_version: &str) -> bool {
        release(engine_version) == self.release()
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_simulated() {
            write!(f, "simulated executor {}", self.version)
        } else {
            write!(f, "tensorrt-llm {}", self.version)
        }
    }
}

/// The release part of a version string: `1.2.0rc5` from `1.2.0rc5.post1`, `1.2.0` from `1.2.0-sim`.
pub(crate) fn release(version: &str) -> &str {
    let end = version
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == 'r' || c == 'c'))
        .map_or(version.len(), |(i, _)| i);
    version[..end].trim_end_matches('.')
}

/// Refuses a library outside the supported lines and an engine built by another version.
pub(crate) fn check(backend: &Backend, engine: &EngineConfig) -> Result<()> {
    let library = backend.release();
    if !SUPPORTED_LINES.iter().any(|line| library.strip_prefix(line).is_some_and(|rest| rest.starts_with('.'))) {
        return Err(Error::UnsupportedVersion(format!(
            "the linked TensorRT-LLM is {}, but only the {} lines ship the TensorRT-engine Executor",
            backend.version,
            SUPPORTED_LINES.join(" and ")
        )));
    }
    if !backend.same_release(engine.version()) {
        return Err(Error::UnsupportedVersion(format!(
            "engine {} was built by TensorRT-LLM {} but the library is {}; rebuild the engine with \
             trtllm-build {library}, or set allow_version_mismatch to try anyway",
            engine.dir().display(),
            engine.version(),
            backend.version
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::release;

    #[test]
    fn release_strips_local_suffixes() {
        assert_eq!(release("1.2.0-sim"), "1.2.0");
        assert_eq!(release("1.1.0"), "1.1.0");
        assert_eq!(release("1.2.0rc5"), "1.2.0rc5");
        assert_eq!(release("1.2.0rc5.post1"), "1.2.0rc5");
    }
}
