//! Reading one of the engine directory's JSON files through its serde schema, naming the offending
//! member's path.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why one of the engine directory's JSON files could not be read; the callers add the file's path.
#[derive(Debug, thiserror::Error)]
pub enum JsonFileError {
    /// The file could not be read (it may not exist: see [`JsonFileError::is_not_found`]).
    #[error("cannot read: {0}")]
    Read(#[from] std::io::Error),
    /// The file is not JSON.
    #[error("not valid JSON: {0}")]
    Syntax(serde_json::Error),
    /// A member has the wrong type, or is unknown where unknown members are refused.
    #[error("{field}: {message}")]
    Schema {
        /// The member's dotted path, e.g. `build_config.max_batch_size` (`.` for the document).
        field: String,
        /// What is wrong with it.
        message: String,
    },
}

impl JsonFileError {
    /// True when the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, JsonFileError::Read(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Reads and deserializes one JSON file, naming the offending member's path in schema errors.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> std::result::Result<T, JsonFileError> {
    let text = std::fs::read_to_string(path)?;
    let value: Value = serde_json::from_str(&text).map_err(JsonFileError::Syntax)?;
    serde_path_to_error::deserialize(value)
        .map_err(|e| JsonFileError::Schema { field: e.path().to_string(), message: e.into_inner().to_string() })
}

/// [`read_json`], or `T::default()` when the file does not exist.
pub(crate) fn read_json_or_default<T: DeserializeOwned + Default>(
    path: &Path,
) -> std::result::Result<T, JsonFileError> {
    match read_json(path) {
        Err(e) if e.is_not_found() => Ok(T::default()),
        other => other,
    }
}
