//! Looking LoRA modules and dtypes up by id or name, the fallible half of their API.
//!
//! These live apart from the plain enums in `module.rs` and `dtype.rs` because their error,
//! [`LoraError`], names those enums in its variants: keeping the lookups here lets the enums sit
//! below the error and the error below the lookups, with no import cycle.

use super::dtype::LoraDtype;
use super::error::LoraError;
use super::module::{ALL, LoraModule};

impl LoraModule {
    /// The module for a numeric id.
    pub fn from_id(id: i64) -> Result<Self, LoraError> {
        usize::try_from(id).ok().and_then(|i| ALL.get(i)).copied().ok_or(LoraError::UnknownModuleId(id))
    }

    /// The module for a TensorRT-LLM name.
    pub fn from_name(name: &str) -> Result<Self, LoraError> {
        ALL.iter().copied().find(|m| m.name() == name).ok_or_else(|| LoraError::UnknownModuleName(name.to_owned()))
    }
}

impl LoraDtype {
    /// Parses a dtype name as engine configs and command lines spell it.
    ///
    /// ```
    /// use trtllm::lora::LoraDtype;
    /// assert_eq!(LoraDtype::from_name("bfloat16").unwrap(), LoraDtype::Bf16);
    /// assert_eq!(LoraDtype::from_name("fp16").unwrap(), LoraDtype::F16);
    /// assert!(LoraDtype::from_name("int8").is_err());
    /// ```
    pub fn from_name(name: &str) -> Result<Self, LoraError> {
        match name.to_ascii_lowercase().as_str() {
            "float16" | "fp16" | "half" | "f16" => Ok(Self::F16),
            "bfloat16" | "bf16" => Ok(Self::Bf16),
            "float32" | "fp32" | "float" | "f32" => Ok(Self::F32),
            _ => Err(LoraError::UnsupportedDtype(name.to_owned())),
        }
    }
}
