//! Opening a config.json: the one place the file is read, for an engine directory
//! ([`EngineDescription::from_dir`]) and for a model's config ([`EngineDescription::from_model_config`]),
//! with the one error type [`ConfigFileError`].

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::config_json::ConfigJson;
use super::description::{DescriptionError, EngineDescription};
use super::hf_config;
use super::json_file::JsonFileError;
use super::key_spelling;

/// The file an engine directory describes its engine in.
pub const CONFIG_FILE: &str = "config.json";

const MISSING: &str = "not found: the engine directory must hold the config.json written by trtllm-build";

/// Why a config.json could not describe an engine or a model; each names the file or directory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// The directory (or the model path) is missing or not readable.
    #[error("engine directory {path}: {source}")]
    Dir {
        /// The path that was given.
        path: PathBuf,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// The engine directory holds no config.json.
    #[error("{path}: {MISSING}")]
    Missing {
        /// The config.json that was looked for.
        path: PathBuf,
    },
    /// The file cannot be read, is not JSON, or a member has the wrong type.
    #[error("{path}: {source}")]
    Read {
        /// The config.json.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: JsonFileError,
    },
    /// A Hugging Face checkpoint's config.json where an engine's is expected.
    #[error("{}: {}", dir.display(), checkpoint_reason(dir))]
    Checkpoint {
        /// The directory holding the checkpoint.
        dir: PathBuf,
    },
    /// The document does not describe an engine the rules allow.
    #[error("{path}: {}", source.0)]
    Invalid {
        /// The config.json.
        path: PathBuf,
        /// The rule broken, naming the member.
        #[source]
        source: DescriptionError,
    },
}

impl ConfigFileError {
    /// What is wrong, without the path (for errors that name the path themselves).
    pub fn reason(&self) -> String {
        match self {
            ConfigFileError::Dir { source, .. } => format!("cannot read the directory: {source}"),
            ConfigFileError::Missing { .. } => MISSING.to_string(),
            ConfigFileError::Read { source, .. } => source.to_string(),
            ConfigFileError::Invalid { source, .. } => source.0.clone(),
            ConfigFileError::Checkpoint { dir } => checkpoint_reason(dir),
        }
    }

    /// The file (or directory) at fault.
    pub fn path(&self) -> &Path {
        match self {
            ConfigFileError::Dir { path, .. }
            | ConfigFileError::Missing { path }
            | ConfigFileError::Read { path, .. }
            | ConfigFileError::Invalid { path, .. } => path,
            ConfigFileError::Checkpoint { dir } => dir,
        }
    }
}

fn checkpoint_reason(dir: &Path) -> String {
    format!(
        "a Hugging Face checkpoint (its config.json has no pretrained_config), not a TensorRT-LLM engine: build an \
         engine from it with TensorRT-LLM's trtllm-build, or a simulated one with \
         `trtllm sim build --model {} --output-dir ENGINE_DIR`",
        dir.display()
    )
}

/// What a config.json holds: a TensorRT-LLM engine's document or a Hugging Face checkpoint's.
enum Document {
    Engine(Value),
    Checkpoint(Value),
}

/// Reads `path` as JSON and tells the two forms apart.
fn open(path: &Path) -> Result<Document, ConfigFileError> {
    let read_error = |source| ConfigFileError::Read { path: path.to_path_buf(), source };
    let text = std::fs::read_to_string(path).map_err(|e| read_error(JsonFileError::Read(e)))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| read_error(JsonFileError::Syntax(e)))?;
    Ok(if hf_config::is_checkpoint_config(&value) { Document::Checkpoint(value) } else { Document::Engine(value) })
}

/// The engine config an engine-form document deserializes to, its members' spelling checked.
fn engine_config(path: &Path, value: Value) -> Result<ConfigJson, ConfigFileError> {
    key_spelling::check_engine(&value)
        .map_err(|source| ConfigFileError::Invalid { path: path.to_path_buf(), source })?;
    serde_path_to_error::deserialize(value).map_err(|e| ConfigFileError::Read {
        path: path.to_path_buf(),
        source: JsonFileError::Schema { field: e.path().to_string(), message: e.into_inner().to_string() },
    })
}

fn resolve(path: &Path, config: &ConfigJson) -> Result<EngineDescription, ConfigFileError> {
    EngineDescription::resolve(config).map_err(|source| ConfigFileError::Invalid { path: path.to_path_buf(), source })
}

impl EngineDescription {
    /// Reads and resolves `<dir>/config.json`, the engine directory's description.
    ///
    /// A Hugging Face checkpoint's directory is refused with how to build an engine from it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// trtllm::sim::SimulatedEngine::builder().max_input_len(512).build().write_to(dir.path())?;
    /// let d = trtllm::engine::EngineDescription::from_dir(dir.path())?;
    /// assert_eq!(d.limits().max_input_len, 512);
    /// assert_eq!(d.model_name(), Some("sim-tiny"));
    /// # Ok(()) }
    /// ```
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, ConfigFileError> {
        let dir = dir.as_ref();
        let meta = std::fs::metadata(dir).map_err(|source| ConfigFileError::Dir { path: dir.to_path_buf(), source })?;
        if !meta.is_dir() {
            return Err(ConfigFileError::Dir {
                path: dir.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        let path = dir.join(CONFIG_FILE);
        if !path.is_file() {
            return Err(ConfigFileError::Missing { path });
        }
        let mut description = match open(&path)? {
            Document::Engine(value) => resolve(&path, &engine_config(&path, value)?)?,
            Document::Checkpoint(_) => return Err(ConfigFileError::Checkpoint { dir: dir.to_path_buf() }),
        };
        name_after_dir(&mut description, dir);
        Ok(description)
    }

    /// Reads and resolves a model's config.json: a file, or a directory holding one, in Hugging Face or
    /// TensorRT-LLM form. Without a name in the config (`model_name`, `_name_or_path`) the model is
    /// named after its directory, never after the file.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let model = dir.path().join("my-model");
    /// std::fs::create_dir(&model)?;
    /// std::fs::write(model.join("config.json"), r#"{"architectures": ["LlamaForCausalLM"],
    ///     "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
    ///     "num_key_value_heads": 8, "intermediate_size": 8192}"#)?;
    /// let d = trtllm::engine::EngineDescription::from_model_config(model.join("config.json"))?;
    /// assert_eq!(d.model_name(), Some("my-model"));
    /// assert_eq!(d.shape().head_size, 64);
    /// # Ok(()) }
    /// ```
    pub fn from_model_config(path: impl AsRef<Path>) -> Result<Self, ConfigFileError> {
        let given = path.as_ref();
        let meta =
            std::fs::metadata(given).map_err(|source| ConfigFileError::Dir { path: given.to_path_buf(), source })?;
        let (dir, path) = if meta.is_dir() {
            (given.to_path_buf(), given.join(CONFIG_FILE))
        } else {
            (given.parent().map(Path::to_path_buf).unwrap_or_default(), given.to_path_buf())
        };
        let config = match open(&path)? {
            Document::Engine(value) => engine_config(&path, value)?,
            Document::Checkpoint(value) => {
                let invalid = |source| ConfigFileError::Invalid { path: path.clone(), source };
                // A model is described for an architecture the timing model knows: say so before any member it lacks.
                if let Some(architecture) = value["architectures"].get(0).and_then(Value::as_str) {
                    super::model_shape::Family::from_architecture(architecture)
                        .map_err(|e| invalid(super::description_error::DescriptionError(e)))?;
                }
                checkpoint_config(&value).map_err(invalid)?
            }
        };
        let mut description = resolve(&path, &config)?;
        name_after_dir(&mut description, &dir);
        Ok(description)
    }

    /// Resolves a config.json document already in memory, in Hugging Face or TensorRT-LLM form, its
    /// members' spelling checked.
    pub fn from_document(value: &Value) -> Result<Self, DescriptionError> {
        let config = if hf_config::is_checkpoint_config(value) {
            checkpoint_config(value)?
        } else {
            key_spelling::check_engine(value)?;
            serde_path_to_error::deserialize(value)
                .map_err(|e| DescriptionError(format!("{}: {}", e.path(), e.inner())))?
        };
        EngineDescription::resolve(&config)
    }
}

fn checkpoint_config(value: &Value) -> Result<ConfigJson, DescriptionError> {
    key_spelling::check_checkpoint(value)?;
    hf_config::engine_config(value)
}

/// A model the config does not name is named after its directory, never after the file.
fn name_after_dir(description: &mut EngineDescription, dir: &Path) {
    if description.model_name().is_none() {
        // `canonicalize` names `.`, `..` and an empty parent by their directories.
        let dir = std::fs::canonicalize(if dir.as_os_str().is_empty() { Path::new(".") } else { dir });
        description.name_model(dir.ok().and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HF_LLAMA: &str = r#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": 32000, "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 8192}"#;

    #[test]
    fn a_checkpoint_where_an_engine_is_expected_says_how_to_build_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.json"), HF_LLAMA).unwrap();
        let err = EngineDescription::from_dir(dir.path()).unwrap_err();
        assert!(matches!(err, ConfigFileError::Checkpoint { .. }), "{err:?}");
        let text = err.to_string();
        assert!(text.contains("Hugging Face checkpoint") && text.contains("trtllm sim build --model"), "{text}");
        assert!(text.contains("trtllm-build") && !text.contains("version is missing"), "{text}");
    }

    #[test]
    fn a_missing_config_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = EngineDescription::from_dir(dir.path()).unwrap_err();
        assert!(matches!(&err, ConfigFileError::Missing { path } if path.ends_with("config.json")), "{err}");
        let err = EngineDescription::from_dir(dir.path().join("absent")).unwrap_err();
        assert!(matches!(err, ConfigFileError::Dir { .. }), "{err}");
    }

    #[test]
    fn a_model_config_is_named_after_its_directory_or_its_own_name() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("tiny-llama");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("config.json"), HF_LLAMA).unwrap();
        for given in [dir.clone(), dir.join("config.json")] {
            let d = EngineDescription::from_model_config(&given).unwrap();
            assert_eq!(d.model_name(), Some("tiny-llama"), "{}", given.display());
        }
        let named = HF_LLAMA.replacen('{', r#"{"_name_or_path": "org/tiny", "#, 1);
        std::fs::write(dir.join("config.json"), named).unwrap();
        assert_eq!(
            EngineDescription::from_model_config(dir.join("config.json")).unwrap().model_name(),
            Some("org/tiny")
        );
    }

    #[test]
    fn heads_must_divide_the_hidden_size_unless_the_head_size_is_given() {
        let odd = HF_LLAMA
            .replace("\"hidden_size\": 2048", "\"hidden_size\": 3027")
            .replace("\"num_attention_heads\": 32", "\"num_attention_heads\": 24");
        let value: Value = serde_json::from_str(&odd).unwrap();
        let err = EngineDescription::from_document(&value).unwrap_err().0;
        assert!(err.contains("hidden_size (3027) is not a multiple of num_attention_heads (24)"), "{err}");
        assert!(err.contains("head_dim"), "{err}");
        let mut explicit = value;
        explicit["head_dim"] = 128.into();
        assert_eq!(EngineDescription::from_document(&explicit).unwrap().shape().head_size, 128);
    }

    #[test]
    fn a_misspelled_member_is_refused_with_the_known_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, HF_LLAMA.replace("num_key_value_heads", "num_key_vlaue_heads")).unwrap();
        let err = EngineDescription::from_model_config(&path).unwrap_err().to_string();
        assert!(
            err.contains("\"num_key_vlaue_heads\"") && err.contains("did you mean \"num_key_value_heads\""),
            "{err}"
        );
    }
}
