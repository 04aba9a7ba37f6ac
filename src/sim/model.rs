//! Model presets (the published configs of public checkpoints, in src/sim/model_presets.json) and the
//! precisions a simulated engine can be built in.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::error::SimError;
use crate::engine::EngineDescription;
use crate::engine::description::{KvQuant, Precision, WeightQuant};
pub use crate::engine::model_shape::{Family, ModelShape, MoeShape, ParameterCount};

/// The presets document.
const PRESETS_SOURCE: &str = include_str!("model_presets.json");

#[derive(Deserialize)]
struct PresetsDocument {
    #[allow(dead_code)] // documentation inside the data file
    units: String,
    presets: Vec<PresetEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetEntry {
    id: String,
    name: String,
    published_params_b: f64,
    bos_token_id: u32,
    eos_token_ids: Vec<u32>,
    config: serde_json::Value,
}

static MODEL_PRESETS: LazyLock<Vec<ModelPreset>> = LazyLock::new(|| {
    let doc: PresetsDocument = serde_json::from_str(PRESETS_SOURCE).expect("model_presets.json is a presets document");
    doc.presets
        .into_iter()
        .map(|p| ModelPreset::from_entry(p).expect("model_presets.json describes its models"))
        .collect()
});

/// A public model's exact configuration, for simulated engines.
///
/// ```
/// let qwen = trtllm::sim::ModelPreset::by_id("qwen2.5-7b")?;
/// assert_eq!(qwen.shape.intermediate_size, 18944);
/// assert!((qwen.shape.parameter_count() / 1e9 - 7.6).abs() < 0.05);
/// let mixtral = trtllm::sim::ModelPreset::by_id("mixtral-8x7b")?;
/// assert_eq!(mixtral.shape.moe.unwrap().num_experts, 8);
/// # Ok::<(), trtllm::sim::SimError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPreset {
    /// Preset id used on the command line, e.g. `llama-3.1-70b`.
    pub id: String,
    /// The checkpoint's Hugging Face name, recorded as the engine's model name.
    pub name: String,
    /// TensorRT-LLM architecture name (`pretrained_config.architecture`).
    pub architecture: String,
    /// The shape.
    pub shape: ModelShape,
    /// Longest context the model was trained for.
    pub max_position_embeddings: usize,
    /// RoPE base frequency.
    pub rotary_base: f64,
    /// RMSNorm epsilon.
    pub norm_epsilon: f64,
    /// Beginning-of-sequence token id.
    pub bos_token_id: u32,
    /// Token ids that end generation (generation_config.json's `eos_token_id`).
    pub eos_token_ids: Vec<u32>,
    /// The parameter count the model's publisher states, billions.
    pub published_params_b: f64,
}

impl ModelPreset {
    /// Every preset.
    pub fn all() -> &'static [ModelPreset] {
        &MODEL_PRESETS
    }

    /// The preset with this id.
    pub fn by_id(id: &str) -> Result<&'static ModelPreset, SimError> {
        Self::all().iter().find(|m| m.id == id).ok_or_else(|| SimError::UnknownModel {
            id: id.to_string(),
            known: Self::all().iter().map(|m| m.id.as_str()).collect::<Vec<_>>().join(", "),
        })
    }

    /// True when this is one of the built-in presets, unchanged.
    pub fn is_preset(&self) -> bool {
        Self::all().iter().any(|p| p == self)
    }

    /// A model given as a preset id, a config.json (Hugging Face or TensorRT-LLM form) or a directory
    /// holding one: the one model argument of `trtllm plan`, `sim build` and `bench`. A config's model is
    /// named by the config (`_name_or_path`, `model_name`), else by its directory, never by the file; its
    /// id is the argument as given, so printed commands take it back.
    pub fn from_arg(model: &str) -> Result<ModelPreset, SimError> {
        if !std::path::Path::new(model).exists() {
            return Self::by_id(model).cloned();
        }
        let description = EngineDescription::from_model_config(model)?;
        let name = description.model_name().unwrap_or(model).to_string();
        Self::from_description(model, name, None, &description)
    }

    /// A model from a config.json document (Hugging Face or TensorRT-LLM form), named `id` unless the
    /// config names it.
    pub fn from_config(id: &str, json: &serde_json::Value) -> Result<ModelPreset, SimError> {
        let description = EngineDescription::from_document(json)?;
        let name = description.model_name().unwrap_or(id).to_string();
        Self::from_description(id, name, None, &description)
    }

    fn from_entry(entry: PresetEntry) -> Result<ModelPreset, SimError> {
        let description = EngineDescription::from_document(&entry.config)?;
        let published = Some((entry.published_params_b, entry.bos_token_id, entry.eos_token_ids));
        Self::from_description(&entry.id, entry.name, published, &description)
    }

    /// The preset of a resolved description; `published` is a preset entry's stated size and token ids,
    /// which a user's config has none of (its size is then the counted one, its tokens the config's).
    fn from_description(
        id: &str,
        name: String,
        published: Option<(f64, u32, Vec<u32>)>,
        description: &EngineDescription,
    ) -> Result<ModelPreset, SimError> {
        let shape = *description.modelled_shape()?;
        let (published_params_b, bos_token_id, eos_token_ids) = published.unwrap_or_else(|| {
            let bos = description.bos_token_id().unwrap_or(1);
            (shape.parameter_count() / 1e9, bos, description.eos_token_ids().to_vec())
        });
        Ok(ModelPreset {
            id: id.to_string(),
            name,
            architecture: description.architecture().to_string(),
            shape,
            max_position_embeddings: description.context_length(),
            rotary_base: description.rotary_base(),
            norm_epsilon: description.norm_epsilon(),
            bos_token_id,
            eos_token_ids,
            published_params_b,
        })
    }
}

/// How the weights of the linear layers are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum WeightDtype {
    /// bfloat16 (`dtype: bfloat16`, no quantization).
    #[default]
    Bf16,
    /// float16.
    Fp16,
    /// FP8 (E4M3) weights and activations (`quant_algo: FP8`, `dtype: bfloat16`); Ada and Hopper only.
    Fp8,
}

impl WeightDtype {
    /// `pretrained_config.dtype`.
    pub fn config_dtype(self) -> &'static str {
        match self {
            WeightDtype::Fp16 => "float16",
            WeightDtype::Bf16 | WeightDtype::Fp8 => "bfloat16",
        }
    }

    /// `pretrained_config.quantization.quant_algo`.
    pub fn quant_algo(self) -> Option<&'static str> {
        self.quant().quant_algo()
    }

    fn quant(self) -> WeightQuant {
        match self {
            WeightDtype::Fp8 => WeightQuant::Fp8,
            WeightDtype::Bf16 | WeightDtype::Fp16 => WeightQuant::None,
        }
    }

    /// The choice that an engine's precision is, `None` for weight-only quantization (not a choice here).
    pub fn of(precision: &Precision) -> Option<Self> {
        match (precision.weights, precision.dtype.as_str()) {
            (WeightQuant::Fp8, _) => Some(WeightDtype::Fp8),
            (WeightQuant::None, "float16") => Some(WeightDtype::Fp16),
            (WeightQuant::None, _) => Some(WeightDtype::Bf16),
            (WeightQuant::W8A16 | WeightQuant::W4A16, _) => None,
        }
    }
}

/// How the KV cache is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum KvCacheDtype {
    /// The activations' 16-bit type.
    #[default]
    Auto,
    /// FP8 (`kv_cache_quant_algo: FP8`); Ada and Hopper only.
    Fp8,
    /// INT8 (`kv_cache_quant_algo: INT8`).
    Int8,
}

impl KvCacheDtype {
    /// `pretrained_config.quantization.kv_cache_quant_algo`.
    pub fn quant_algo(self) -> Option<&'static str> {
        match self {
            KvCacheDtype::Auto => KvQuant::None,
            KvCacheDtype::Fp8 => KvQuant::Fp8,
            KvCacheDtype::Int8 => KvQuant::Int8,
        }
        .quant_algo()
    }

    /// The choice that an engine's KV-cache precision is.
    pub fn of(precision: &Precision) -> Self {
        match precision.kv_cache {
            KvQuant::None => KvCacheDtype::Auto,
            KvQuant::Fp8 => KvCacheDtype::Fp8,
            KvQuant::Int8 => KvCacheDtype::Int8,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_counts_match_the_published_sizes() {
        for preset in ModelPreset::all() {
            let billions = preset.shape.parameter_count() / 1e9;
            let error = (billions / preset.published_params_b - 1.0).abs();
            assert!(error < 0.02, "{}: {billions:.2}B against the published {}B", preset.id, preset.published_params_b);
        }
        let billions = |id: &str| ModelPreset::by_id(id).unwrap().shape.parameter_count() / 1e9;
        assert!((billions("llama-3.1-70b") - 70.6).abs() < 0.05);
        let active = |id: &str| ModelPreset::by_id(id).unwrap().shape.active_parameter_count() / 1e9;
        assert!((active("mixtral-8x7b") - 12.9).abs() < 0.1, "{}", active("mixtral-8x7b"));
        assert!((active("qwen3-30b-a3b") - 3.3).abs() < 0.1, "{}", active("qwen3-30b-a3b"));
        assert!((active("qwen3-235b-a22b") - 22.0).abs() < 0.3, "{}", active("qwen3-235b-a22b"));
    }

    #[test]
    fn unknown_model_names_the_known_ones() {
        let err = ModelPreset::by_id("llama-70b").unwrap_err();
        assert!(err.to_string().contains("llama-3.1-70b"), "{err}");
    }
}
