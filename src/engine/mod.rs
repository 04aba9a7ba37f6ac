//! The engine directory's files: one serde schema for config.json ([`config_json`]) and simulation.json
//! ([`simulation_json`]), config.json resolved once ([`EngineDescription`]), and [`EngineConfig`], the
//! view of it the executor needs before enqueue.

pub mod config_json;
pub mod description;
pub mod hf_config;
pub mod model_shape;
mod null_default;
pub mod simulation_json;
pub mod speculative;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

pub use config_json::ConfigJson;
pub use description::{DescriptionError, EngineDescription};
// The bench reads simulation.json through this path; the library alone does not.
#[cfg_attr(not(feature = "bench"), allow(unused_imports))]
pub use simulation_json::SimulationJson;

/// What this crate needs from an engine's `config.json` (as written by `trtllm-build`, or by
/// [`SimulatedEngine`](crate::sim::SimulatedEngine) for the simulated executor).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineConfig {
    /// The engine directory.
    pub dir: PathBuf,
    /// The TensorRT-LLM version that built the engine (`version`).
    pub version: String,
    /// `pretrained_config.architecture`, e.g. `LlamaForCausalLM`.
    pub architecture: String,
    /// `pretrained_config.dtype`, e.g. `bfloat16`.
    pub dtype: String,
    /// The KV cache's element type: `fp8` or `int8` with `quantization.kv_cache_quant_algo`, else `dtype`.
    pub kv_cache_dtype: String,
    /// `pretrained_config.vocab_size`.
    pub vocab_size: usize,
    /// `pretrained_config.hidden_size`.
    pub hidden_size: usize,
    /// `pretrained_config.num_hidden_layers`.
    pub num_layers: usize,
    /// `pretrained_config.num_attention_heads`.
    pub num_heads: usize,
    /// `pretrained_config.num_key_value_heads` (defaults to `num_heads`).
    pub num_kv_heads: usize,
    /// Tensor-parallel size (`mapping.tp_size`).
    pub tp_size: usize,
    /// Pipeline-parallel size (`mapping.pp_size`).
    pub pp_size: usize,
    /// Context-parallel size (`mapping.cp_size`).
    pub cp_size: usize,
    /// `mapping.world_size` (defaults to tp × pp × cp).
    pub world_size: usize,
    /// `build_config.max_input_len`.
    pub max_input_len: usize,
    /// `build_config.max_seq_len`.
    pub max_seq_len: usize,
    /// `build_config.max_batch_size`.
    pub max_batch_size: usize,
    /// `build_config.max_beam_width` (defaults to 1).
    pub max_beam_width: usize,
    /// `build_config.max_num_tokens`.
    pub max_num_tokens: usize,
    /// `build_config.plugin_config.tokens_per_block` (defaults to 32).
    pub tokens_per_block: usize,
    /// `build_config.plugin_config.use_paged_context_fmha`.
    pub paged_context_fmha: bool,
    /// A model name for display: `pretrained_config.model_name` / `_name_or_path`, else the directory name.
    pub model_name: String,
    /// The tokenizer directory this engine names, if any: a `tokenizer/` subdirectory holding
    /// tokenizer.json, the engine directory itself when it holds tokenizer.json, or a top-level
    /// `tokenizer_dir` in config.json (relative to the engine directory). `trtllm-build` writes
    /// none of these; they let an engine directory carry its tokenizer.
    pub tokenizer_dir: Option<PathBuf>,
    /// The engine's LoRA settings (`build_config.lora_config` with `plugin_config.lora_plugin`); `None`
    /// when it was built without LoRA, and then requests with an adapter are refused.
    #[serde(skip)]
    pub lora: Option<crate::lora::EngineLoraSettings>,
}

impl EngineConfig {
    /// Reads `<dir>/config.json`.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// trtllm::sim::SimulatedEngine::builder().max_input_len(512).build().write_to(dir.path())?;
    /// let config = trtllm::EngineConfig::from_dir(dir.path())?;
    /// assert_eq!(config.max_input_len, 512);
    /// # Ok(()) }
    /// ```
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let meta = std::fs::metadata(dir).map_err(|source| Error::EngineDir { path: dir.to_path_buf(), source })?;
        if !meta.is_dir() {
            return Err(Error::EngineDir {
                path: dir.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        let path = dir.join("config.json");
        let json: ConfigJson =
            read_json(&path).map_err(|e| Error::EngineConfig { path: path.clone(), message: e.to_string() })?;
        Self::from_json(dir, &path, &json)
    }

    /// The view of `json`, the config.json at `path` in `dir`, resolved by [`EngineDescription`].
    fn from_json(dir: &Path, path: &Path, json: &ConfigJson) -> Result<Self> {
        let fail = |message: String| Error::EngineConfig { path: path.to_path_buf(), message };
        let version = json.version.clone().ok_or_else(|| fail("version is missing".to_string()))?;
        let d = EngineDescription::resolve(json).map_err(|e| fail(e.0))?;
        let lora = d.lora_settings().map_err(|e| fail(e.to_string()))?;
        let (shape, parallel, limits) = (&d.shape, &d.parallelism, &d.limits);
        Ok(EngineConfig {
            dir: dir.to_path_buf(),
            version,
            architecture: d.architecture.clone(),
            dtype: d.precision.dtype.clone(),
            kv_cache_dtype: d
                .precision
                .kv_cache
                .quant_algo()
                .map_or_else(|| d.precision.dtype.clone(), str::to_ascii_lowercase),
            vocab_size: shape.vocab_size,
            hidden_size: shape.hidden_size,
            num_layers: shape.num_layers,
            num_heads: shape.num_heads,
            num_kv_heads: shape.num_kv_heads,
            tp_size: parallel.tp,
            pp_size: parallel.pp,
            cp_size: parallel.cp,
            world_size: parallel.world,
            max_input_len: limits.max_input_len,
            max_seq_len: limits.max_seq_len,
            max_batch_size: limits.max_batch_size,
            max_beam_width: limits.max_beam_width,
            max_num_tokens: limits.max_num_tokens,
            tokens_per_block: limits.tokens_per_block,
            paged_context_fmha: limits.paged_context_fmha,
            model_name: d
                .model_name
                .clone()
                .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "engine".to_string()),
            tokenizer_dir: tokenizer_dir(dir, json.tokenizer_dir.as_deref()),
            lora,
        })
    }
}

fn tokenizer_dir(dir: &Path, named: Option<&str>) -> Option<PathBuf> {
    if let Some(named) = named {
        return Some(dir.join(named));
    }
    [dir.join("tokenizer"), dir.to_path_buf()].into_iter().find(|d| d.join("tokenizer.json").is_file())
}

/// Why one of the engine directory's JSON files could not be read; the callers add the file's path.
#[derive(Debug, thiserror::Error)]
pub(crate) enum JsonFileError {
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
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_member_is_named_by_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let json = r#"{"version": "1.2.0", "pretrained_config": {"num_attention_heads": 8, "vocab_size": 100},
                       "build_config": {"max_input_len": 8, "max_seq_len": 16, "max_batch_size": "many"}}"#;
        std::fs::write(dir.path().join("config.json"), json).unwrap();
        let err = EngineConfig::from_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("config.json: build_config.max_batch_size: invalid type: string \"many\""), "{err}");
    }

    #[test]
    fn a_missing_simulation_file_reads_as_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let sim: SimulationJson = read_json_or_default(&dir.path().join("simulation.json")).unwrap();
        assert_eq!(sim, SimulationJson::default());
        let err = read_json::<SimulationJson>(&dir.path().join("simulation.json")).unwrap_err();
        assert!(err.is_not_found() && err.to_string().starts_with("cannot read:"), "{err}");
    }
}
