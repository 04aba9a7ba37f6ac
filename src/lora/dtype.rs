//! The element types LoRA weights travel in, and conversion to and from `f32`.

use std::fmt;

use half::{bf16, f16};

/// The element type of a LoRA weights tensor. TensorRT-LLM requires it to equal the engine's
/// data type (`pretrained_config.dtype`), which is also what `plugin_config.lora_plugin` is set to
/// (or `auto` for the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoraDtype {
    /// IEEE half precision (`float16`), `executor::DataType::kFP16`.
    F16,
    /// bfloat16 (`bfloat16`), `executor::DataType::kBF16`.
    Bf16,
    /// IEEE single precision (`float32`), `executor::DataType::kFP32`.
    F32,
}

impl LoraDtype {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::F16 | Self::Bf16 => 2,
            Self::F32 => 4,
        }
    }

    /// The name TensorRT-LLM's configs use: `float16`, `bfloat16` or `float32`.
    pub fn name(self) -> &'static str {
        match self {
            Self::F16 => "float16",
            Self::Bf16 => "bfloat16",
            Self::F32 => "float32",
        }
    }

    /// Appends `values` converted to this type as little-endian bytes (round to nearest even).
    pub fn encode(self, values: &[f32], out: &mut Vec<u8>) {
        out.reserve(values.len() * self.size());
        for &v in values {
            match self {
                Self::F16 => out.extend_from_slice(&f16::from_f32(v).to_le_bytes()),
                Self::Bf16 => out.extend_from_slice(&bf16::from_f32(v).to_le_bytes()),
                Self::F32 => out.extend_from_slice(&v.to_le_bytes()),
            }
        }
    }

    /// Reads little-endian elements of this type as `f32` (a trailing partial element is ignored;
    /// callers check lengths first).
    pub fn decode(self, bytes: &[u8]) -> Vec<f32> {
        match self {
            Self::F16 => bytes.chunks_exact(2).map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32()).collect(),
            Self::Bf16 => bytes.chunks_exact(2).map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32()).collect(),
            Self::F32 => bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
        }
    }
}

impl fmt::Display for LoraDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_then_decode_keeps_values_representable_in_each_type() {
        let values = [0.0f32, 1.0, -2.5, 0.125, 65504.0];
        for dtype in [LoraDtype::F16, LoraDtype::Bf16, LoraDtype::F32] {
            let mut bytes = Vec::new();
            dtype.encode(&values, &mut bytes);
            assert_eq!(bytes.len(), values.len() * dtype.size());
            let back = dtype.decode(&bytes);
            // 65504 is exact in f16 and f32; bf16 rounds it to 65536.
            let expected: Vec<f32> =
                values.iter().map(|&v| if dtype == LoraDtype::Bf16 && v == 65504.0 { 65536.0 } else { v }).collect();
            assert_eq!(back, expected, "{dtype}");
        }
    }

    #[test]
    fn f16_bytes_are_little_endian_ieee_half() {
        let mut bytes = Vec::new();
        LoraDtype::F16.encode(&[1.0], &mut bytes);
        assert_eq!(bytes, [0x00, 0x3c]);
        bytes.clear();
        LoraDtype::Bf16.encode(&[1.0], &mut bytes);
        assert_eq!(bytes, [0x80, 0x3f]);
    }
}
