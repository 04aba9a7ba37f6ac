//! The precision of each part of an engine: the activations' dtype, the linear layers' weights
//! (`quant_algo`) and the KV cache (`kv_cache_quant_algo`).

use serde::Serialize;

use super::description_error::{DescriptionError, fail};

/// How the linear layers' weights are stored (`quantization.quant_algo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WeightQuant {
    /// In the activations' 16-bit type.
    None,
    /// FP8 weights and activations (`FP8`, `FP8_PER_CHANNEL_PER_TOKEN`, ...).
    Fp8,
    /// INT8 weights, 16-bit math (`W8A16`, `W8A16_GPTQ`).
    W8A16,
    /// INT4 weights, 16-bit math (`W4A16`, `W4A16_AWQ`, `W4A16_GPTQ`).
    W4A16,
}

impl WeightQuant {
    /// The quantization a `quant_algo` names.
    pub fn from_quant_algo(algo: Option<&str>) -> Result<Self, DescriptionError> {
        Ok(match algo {
            None => WeightQuant::None,
            Some(a) if a.starts_with("FP8") => WeightQuant::Fp8,
            Some(a) if a.starts_with("W8A16") => WeightQuant::W8A16,
            Some(a) if a.starts_with("W4A16") => WeightQuant::W4A16,
            Some(a) => {
                return fail(format!(
                    "pretrained_config.quantization.quant_algo \"{a}\" is not modelled (modelled: none, FP8, W8A16, W4A16)"
                ));
            }
        })
    }

    /// The `quant_algo` written for this quantization.
    pub fn quant_algo(self) -> Option<&'static str> {
        match self {
            WeightQuant::None => None,
            WeightQuant::Fp8 => Some("FP8"),
            WeightQuant::W8A16 => Some("W8A16"),
            WeightQuant::W4A16 => Some("W4A16"),
        }
    }
}

/// How the KV cache is stored (`quantization.kv_cache_quant_algo`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum KvQuant {
    /// In the activations' type.
    None,
    /// FP8.
    Fp8,
    /// INT8.
    Int8,
}

impl KvQuant {
    /// The KV-cache quantization a `kv_cache_quant_algo` names.
    pub fn from_quant_algo(algo: Option<&str>) -> Result<Self, DescriptionError> {
        Ok(match algo {
            None => KvQuant::None,
            Some("FP8") => KvQuant::Fp8,
            Some("INT8") => KvQuant::Int8,
            Some(a) => {
                return fail(format!(
                    "pretrained_config.quantization.kv_cache_quant_algo \"{a}\" is not modelled (modelled: none, FP8, INT8)"
                ));
            }
        })
    }

    /// The `kv_cache_quant_algo` written for this quantization.
    pub fn quant_algo(self) -> Option<&'static str> {
        match self {
            KvQuant::None => None,
            KvQuant::Fp8 => Some("FP8"),
            KvQuant::Int8 => Some("INT8"),
        }
    }
}

/// Bytes per element of a dtype name (`float16`, `bfloat16`, `float32`, ...); 16-bit when absent.
pub fn dtype_bytes(dtype: Option<&str>) -> f64 {
    match dtype {
        Some("float32") => 4.0,
        Some("int8" | "fp8") => 1.0,
        _ => 2.0,
    }
}

/// The precision of each part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Precision {
    /// `pretrained_config.dtype` (the activations', the norms', the embedding's and the output head's type).
    pub dtype: String,
    /// Bytes per activation element.
    pub activation_bytes: f64,
    /// The linear layers' weights.
    pub weights: WeightQuant,
    /// The KV cache.
    pub kv_cache: KvQuant,
}

impl Precision {
    /// Bytes per linear-layer weight.
    pub fn weight_bytes(&self) -> f64 {
        match self.weights {
            WeightQuant::None => self.activation_bytes,
            WeightQuant::Fp8 | WeightQuant::W8A16 => 1.0,
            WeightQuant::W4A16 => 0.5,
        }
    }

    /// The KV cache's element type: `fp8` or `int8` with `quantization.kv_cache_quant_algo`, else `dtype`.
    pub fn kv_cache_dtype(&self) -> String {
        self.kv_cache.quant_algo().map_or_else(|| self.dtype.clone(), str::to_ascii_lowercase)
    }

    /// Bytes per KV-cache element.
    pub fn kv_bytes(&self) -> f64 {
        match self.kv_cache {
            KvQuant::None => self.activation_bytes,
            KvQuant::Fp8 | KvQuant::Int8 => 1.0,
        }
    }
}
