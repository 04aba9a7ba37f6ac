//! [`DescriptionError`]: why a config.json cannot describe an engine, shared by the description's
//! parts (shape, precision, parallelism, limits).

/// Why a config.json cannot describe an engine; the message names the member at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("config.json: {0}")]
pub struct DescriptionError(pub String);

pub(super) fn fail<T>(message: String) -> Result<T, DescriptionError> {
    Err(DescriptionError(message))
}
