//! The engine directory's files: one serde schema for config.json ([`config_json`]) and simulation.json
//! ([`simulation_json`], with the KV link a disaggregated transfer crosses), config.json opened and
//! resolved once ([`EngineDescription`]), and [`EngineConfig`], the engine directory as the executor
//! loads it.

mod config_file;
pub mod config_json;
pub mod description;
mod description_error;
pub mod hf_config;
mod json_file;
mod key_spelling;
pub(crate) mod kv_link;
pub mod model_shape;
mod null_default;
pub mod precision;
pub mod simulation_json;
pub mod speculative;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};

pub use config_file::{CONFIG_FILE, ConfigFileError};
pub use config_json::ConfigJson;
pub use description::{DescriptionError, EngineDescription};
pub use json_file::JsonFileError;
pub(crate) use json_file::read_json_or_default;
// The bench reads simulation.json through this path; the library alone does not.
#[cfg_attr(not(feature = "bench"), allow(unused_imports))]
pub use simulation_json::SimulationJson;

/// An engine directory as the executor loads it: its [`EngineDescription`] (config.json resolved once),
/// the tokenizer it names and its LoRA settings. It holds the description and answers from it.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// trtllm::sim::SimulatedEngine::builder().max_input_len(512).build().write_to(dir.path())?;
/// let config = trtllm::EngineConfig::from_dir(dir.path())?;
/// assert_eq!(config.max_input_len(), 512);
/// assert_eq!(config.description().limits().max_input_len, 512);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EngineConfig {
    dir: PathBuf,
    description: EngineDescription,
    tokenizer_dir: Option<PathBuf>,
    lora: Option<crate::lora::EngineLoraSettings>,
}

impl EngineConfig {
    /// Reads `<dir>/config.json` (through [`EngineDescription::from_dir`]); the engine must state the
    /// TensorRT-LLM version that built it.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let description = EngineDescription::from_dir(dir)?;
        let tokenizer_dir = tokenizer_dir(dir, description.tokenizer_dir());
        Self::of(dir.to_path_buf(), description, tokenizer_dir)
    }

    /// An engine held in memory rather than read from a directory (a simulated engine started without one):
    /// its description, an empty directory and no tokenizer.
    pub(crate) fn held(description: EngineDescription) -> Result<Self> {
        Self::of(PathBuf::new(), description, None)
    }

    fn of(dir: PathBuf, description: EngineDescription, tokenizer_dir: Option<PathBuf>) -> Result<Self> {
        let fail = |message: String| Error::EngineConfig { path: dir.join(CONFIG_FILE), message };
        if description.version().is_none() {
            return Err(fail("version is missing".to_string()));
        }
        let lora = description.lora_settings().map_err(|e| fail(e.to_string()))?;
        Ok(EngineConfig { dir, tokenizer_dir, description, lora })
    }

    /// The resolved config.json.
    pub fn description(&self) -> &EngineDescription {
        &self.description
    }

    /// The engine directory (empty for an engine the simulator holds in memory:
    /// `trtllm::sim::SimulatedEngine::start`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The TensorRT-LLM version that built the engine (`version`).
    pub fn version(&self) -> &str {
        self.description.version().unwrap_or_default()
    }

    /// A model name for display: `pretrained_config.model_name` / `_name_or_path`, else the directory name.
    pub fn model_name(&self) -> &str {
        self.description.model_name().unwrap_or("engine")
    }

    /// The tokenizer directory this engine names, if any: a `tokenizer/` subdirectory holding
    /// tokenizer.json, the engine directory itself when it holds tokenizer.json, or a top-level
    /// `tokenizer_dir` in config.json (relative to the engine directory). `trtllm-build` writes
    /// none of these; they let an engine directory carry its tokenizer.
    pub fn tokenizer_dir(&self) -> Option<&Path> {
        self.tokenizer_dir.as_deref()
    }

    /// The engine's LoRA settings (`build_config.lora_config` with `plugin_config.lora_plugin`); `None`
    /// when it was built without LoRA, and then requests with an adapter are refused.
    pub fn lora(&self) -> Option<&crate::lora::EngineLoraSettings> {
        self.lora.as_ref()
    }

    /// `pretrained_config.architecture`, e.g. `LlamaForCausalLM`.
    pub fn architecture(&self) -> &str {
        self.description.architecture()
    }

    /// `pretrained_config.dtype`, e.g. `bfloat16`.
    pub fn dtype(&self) -> &str {
        &self.description.precision().dtype
    }

    /// The KV cache's element type: `fp8` or `int8` with `quantization.kv_cache_quant_algo`, else `dtype`.
    pub fn kv_cache_dtype(&self) -> String {
        self.description.precision().kv_cache_dtype()
    }

    /// `pretrained_config.vocab_size`.
    pub fn vocab_size(&self) -> usize {
        self.description.shape().vocab_size
    }

    /// `pretrained_config.hidden_size`.
    pub fn hidden_size(&self) -> usize {
        self.description.shape().hidden_size
    }

    /// `pretrained_config.num_attention_heads`.
    pub fn num_heads(&self) -> usize {
        self.description.shape().num_heads
    }

    /// `pretrained_config.num_key_value_heads` (defaults to `num_heads`).
    pub fn num_kv_heads(&self) -> usize {
        self.description.shape().num_kv_heads
    }

    /// `pretrained_config.num_hidden_layers`.
    pub fn num_layers(&self) -> usize {
        self.description.shape().num_layers
    }

    /// Tensor-parallel size (`mapping.tp_size`).
    pub fn tp_size(&self) -> usize {
        self.description.parallelism().tp
    }

    /// Pipeline-parallel size (`mapping.pp_size`).
    pub fn pp_size(&self) -> usize {
        self.description.parallelism().pp
    }

    /// Context-parallel size (`mapping.cp_size`).
    pub fn cp_size(&self) -> usize {
        self.description.parallelism().cp
    }

    /// `mapping.world_size` (tp × pp × cp).
    pub fn world_size(&self) -> usize {
        self.description.parallelism().world
    }

    /// `build_config.max_input_len`.
    pub fn max_input_len(&self) -> usize {
        self.description.limits().max_input_len
    }

    /// `build_config.max_seq_len`.
    pub fn max_seq_len(&self) -> usize {
        self.description.limits().max_seq_len
    }

    /// `build_config.max_batch_size`.
    pub fn max_batch_size(&self) -> usize {
        self.description.limits().max_batch_size
    }

    /// `build_config.max_beam_width`.
    pub fn max_beam_width(&self) -> usize {
        self.description.limits().max_beam_width
    }

    /// `build_config.max_num_tokens`.
    pub fn max_num_tokens(&self) -> usize {
        self.description.limits().max_num_tokens
    }

    /// `build_config.plugin_config.tokens_per_block`.
    pub fn tokens_per_block(&self) -> usize {
        self.description.limits().tokens_per_block
    }

    /// `build_config.plugin_config.use_paged_context_fmha`.
    pub fn paged_context_fmha(&self) -> bool {
        self.description.limits().paged_context_fmha
    }
}

/// `trtllm inspect` prints this document: the engine's identity, shape, parallelism and limits.
impl Serialize for EngineConfig {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let (d, shape) = (&self.description, self.description.shape());
        let mut s = serializer.serialize_struct("EngineConfig", 21)?;
        s.serialize_field("dir", &self.dir)?;
        s.serialize_field("version", self.version())?;
        s.serialize_field("architecture", self.architecture())?;
        s.serialize_field("dtype", self.dtype())?;
        s.serialize_field("vocab_size", &shape.vocab_size)?;
        s.serialize_field("hidden_size", &shape.hidden_size)?;
        s.serialize_field("num_layers", &shape.num_layers)?;
        s.serialize_field("num_heads", &shape.num_heads)?;
        s.serialize_field("num_kv_heads", &shape.num_kv_heads)?;
        s.serialize_field("tp_size", &self.tp_size())?;
        s.serialize_field("pp_size", &self.pp_size())?;
        s.serialize_field("cp_size", &self.cp_size())?;
        s.serialize_field("world_size", &self.world_size())?;
        let limits = d.limits();
        s.serialize_field("max_input_len", &limits.max_input_len)?;
        s.serialize_field("max_seq_len", &limits.max_seq_len)?;
        s.serialize_field("max_batch_size", &limits.max_batch_size)?;
        s.serialize_field("max_beam_width", &limits.max_beam_width)?;
        s.serialize_field("max_num_tokens", &limits.max_num_tokens)?;
        s.serialize_field("tokens_per_block", &limits.tokens_per_block)?;
        s.serialize_field("paged_context_fmha", &limits.paged_context_fmha)?;
        s.serialize_field("model_name", self.model_name())?;
        s.serialize_field("tokenizer_dir", &self.tokenizer_dir)?;
        s.end()
    }
}

impl From<ConfigFileError> for Error {
    fn from(e: ConfigFileError) -> Self {
        match e {
            ConfigFileError::Dir { path, source } => Error::EngineDir { path, source },
            other => Error::EngineConfig { path: other.path().to_path_buf(), message: other.reason() },
        }
    }
}

fn tokenizer_dir(dir: &Path, named: Option<&str>) -> Option<PathBuf> {
    if let Some(named) = named {
        return Some(dir.join(named));
    }
    [dir.join("tokenizer"), dir.to_path_buf()].into_iter().find(|d| d.join("tokenizer.json").is_file())
}

#[cfg(test)]
mod tests {
    use super::json_file::read_json;
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
