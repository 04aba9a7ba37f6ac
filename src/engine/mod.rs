//! The engine directory's config.json, read in Rust so that limits are known before enqueue.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};

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
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::EngineConfig { path: path.clone(), message: format!("cannot read: {e}") })?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| Error::EngineConfig { path: path.clone(), message: format!("not valid JSON: {e}") })?;
        Self::from_json(dir, &path, &json)
    }

    fn from_json(dir: &Path, path: &Path, json: &Value) -> Result<Self> {
        let fields = Fields { path, json };
        let pretrained = "pretrained_config";
        let build = "build_config";
        let num_heads = fields.usize(&[pretrained, "num_attention_heads"])?;
        let tp_size = fields.usize_or(&[pretrained, "mapping", "tp_size"], 1)?;
        let pp_size = fields.usize_or(&[pretrained, "mapping", "pp_size"], 1)?;
        let cp_size = fields.usize_or(&[pretrained, "mapping", "cp_size"], 1)?;
        let max_input_len = fields.usize(&[build, "max_input_len"])?;
        let max_seq_len = fields.usize(&[build, "max_seq_len"])?;
        let config = EngineConfig {
            dir: dir.to_path_buf(),
            version: fields.string(&["version"])?,
            architecture: fields.string_or(&[pretrained, "architecture"], "unknown"),
            dtype: fields.string_or(&[pretrained, "dtype"], "unknown"),
            vocab_size: fields.usize(&[pretrained, "vocab_size"])?,
            hidden_size: fields.usize_or(&[pretrained, "hidden_size"], 0)?,
            num_layers: fields.usize_or(&[pretrained, "num_hidden_layers"], 0)?,
            num_heads,
            num_kv_heads: fields.usize_or(&[pretrained, "num_key_value_heads"], num_heads)?,
            tp_size,
            pp_size,
            cp_size,
            world_size: fields.usize_or(&[pretrained, "mapping", "world_size"], tp_size * pp_size * cp_size)?,
            max_input_len,
            max_seq_len,
            max_batch_size: fields.usize(&[build, "max_batch_size"])?,
            max_beam_width: fields.usize_or(&[build, "max_beam_width"], 1)?,
            max_num_tokens: fields.usize_or(&[build, "max_num_tokens"], 8192)?,
            tokens_per_block: fields.usize_or(&[build, "plugin_config", "tokens_per_block"], 32)?,
            paged_context_fmha: fields.bool_or(&[build, "plugin_config", "use_paged_context_fmha"], true),
            model_name: fields
                .opt_string(&[pretrained, "model_name"])
                .or_else(|| fields.opt_string(&[pretrained, "_name_or_path"]))
                .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
                .unwrap_or_else(|| "engine".to_string()),
            tokenizer_dir: tokenizer_dir(dir, fields.opt_string(&["tokenizer_dir"])),
        };
        if config.max_input_len > config.max_seq_len {
            return Err(Error::EngineConfig {
                path: path.to_path_buf(),
                message: format!(
                    "build_config.max_input_len ({}) exceeds max_seq_len ({})",
                    config.max_input_len, config.max_seq_len
                ),
            });
        }
        Ok(config)
    }
}

fn tokenizer_dir(dir: &Path, named: Option<String>) -> Option<PathBuf> {
    if let Some(named) = named {
        return Some(dir.join(named));
    }
    [dir.join("tokenizer"), dir.to_path_buf()].into_iter().find(|d| d.join("tokenizer.json").is_file())
}

/// Typed look-ups into a JSON document that name the missing or mistyped field in their errors.
struct Fields<'a> {
    path: &'a Path,
    json: &'a Value,
}

impl Fields<'_> {
    fn get(&self, keys: &[&str]) -> Option<&Value> {
        keys.iter().try_fold(self.json, |v, k| v.get(k)).filter(|v| !v.is_null())
    }

    fn error(&self, keys: &[&str], what: &str) -> Error {
        Error::EngineConfig { path: self.path.to_path_buf(), message: format!("{} {what}", keys.join(".")) }
    }

    fn usize(&self, keys: &[&str]) -> Result<usize> {
        let value = self.get(keys).ok_or_else(|| self.error(keys, "is missing"))?;
        value.as_u64().map(|v| v as usize).ok_or_else(|| self.error(keys, "is not a non-negative integer"))
    }

    fn usize_or(&self, keys: &[&str], default: usize) -> Result<usize> {
        match self.get(keys) {
            None => Ok(default),
            Some(_) => self.usize(keys),
        }
    }

    fn opt_string(&self, keys: &[&str]) -> Option<String> {
        self.get(keys).and_then(Value::as_str).map(str::to_string)
    }

    fn string(&self, keys: &[&str]) -> Result<String> {
        self.opt_string(keys).ok_or_else(|| self.error(keys, "is missing or not a string"))
    }

    fn string_or(&self, keys: &[&str], default: &str) -> String {
        self.opt_string(keys).unwrap_or_else(|| default.to_string())
    }

    fn bool_or(&self, keys: &[&str], default: bool) -> bool {
        self.get(keys).and_then(Value::as_bool).unwrap_or(default)
    }
}
