//! Errors of the LoRA layer: bad adapters, bad rows, and adapters an engine cannot take.

use std::path::PathBuf;

use crate::error::kind::ErrorKind;

use super::dtype::LoraDtype;
use super::module::LoraModule;

/// Why a LoRA adapter, config row or engine LoRA setting was rejected. Every message names the
/// module and layer at fault where there is one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoraError {
    /// A config row's module id is not one TensorRT-LLM defines.
    #[error("unknown LoRA module id {0}")]
    UnknownModuleId(i64),
    /// A module name (in an engine config or on a command line) is not one TensorRT-LLM defines.
    #[error("unknown LoRA module name {0:?}")]
    UnknownModuleName(String),
    /// A module whose widths depend on expert counts this crate does not model.
    #[error("LoRA module {0} is not supported (mixture-of-experts modules are not modelled)")]
    UnsupportedModule(LoraModule),
    /// A dtype other than float16, bfloat16 or float32.
    #[error("unsupported LoRA dtype {0:?}: expected float16, bfloat16 or float32")]
    UnsupportedDtype(String),
    /// The engine settings themselves are inconsistent (no modules, zero rank, zero layers).
    #[error("invalid engine LoRA settings: {0}")]
    InvalidSettings(String),
    /// The engine was built without the LoRA plugin.
    #[error("this engine was built without LoRA support (plugin_config.lora_plugin is not set)")]
    NotEnabled,
    /// A row adapts a module the engine was not built to adapt.
    #[error(
        "LoRA module {module} (layer {layer}) is not enabled for this engine; its lora_target_modules are [{enabled}]"
    )]
    ModuleNotEnabled {
        /// The module the row names.
        module: LoraModule,
        /// The row's layer.
        layer: u32,
        /// The engine's target modules, comma separated.
        enabled: String,
    },
    /// A row's layer is not below the engine's layer count.
    #[error("LoRA module {module} layer {layer} is out of range: the engine has {num_layers} layers")]
    LayerOutOfRange {
        /// The module the row names.
        module: LoraModule,
        /// The layer it names.
        layer: u32,
        /// The engine's number of layers.
        num_layers: u32,
    },
    /// A row's rank is zero or above the engine's `max_lora_rank`.
    #[error(
        "LoRA module {module} layer {layer} has rank {rank}; it must be between 1 and the engine's max_lora_rank {max_rank}"
    )]
    InvalidRank {
        /// The module the row names.
        module: LoraModule,
        /// The row's layer.
        layer: u32,
        /// The rank it gives.
        rank: u32,
        /// The engine's `max_lora_rank`.
        max_rank: u32,
    },
    /// Two rows name the same module and layer.
    #[error("LoRA module {module} layer {layer} appears in more than one row")]
    DuplicateRow {
        /// The repeated module.
        module: LoraModule,
        /// The repeated layer.
        layer: u32,
    },
    /// A weights row is too short for its module's `rank × (in + out)` values.
    #[error(
        "LoRA module {module} layer {layer} at rank {rank} needs {needed} values per row but the weights rows hold {row_len}"
    )]
    RowTooShort {
        /// The module of the row.
        module: LoraModule,
        /// The layer of the row.
        layer: u32,
        /// The row's rank.
        rank: u32,
        /// `rank × (in_dim + out_dim)`.
        needed: usize,
        /// The weights tensor's row length.
        row_len: usize,
    },
    /// The weights bytes do not hold exactly `rows × row_len` elements.
    #[error("LoRA weights hold {actual} bytes; {rows} rows of {row_len} {dtype} values need {expected}")]
    WeightsSize {
        /// Number of config rows.
        rows: usize,
        /// Values per weights row.
        row_len: usize,
        /// The element type.
        dtype: LoraDtype,
        /// Bytes expected.
        expected: usize,
        /// Bytes given.
        actual: usize,
    },
    /// The weights are in another element type than the engine's.
    #[error("LoRA weights are {found} but the engine takes {expected}")]
    DtypeMismatch {
        /// The engine's LoRA dtype.
        expected: LoraDtype,
        /// The weights' dtype.
        found: LoraDtype,
    },
    /// An adapter with no rows at all.
    #[error("LoRA adapter has no config rows")]
    Empty,
    /// A config row that is not 3 (or 4, DoRA flag 0) non-negative 32-bit integers.
    #[error("LoRA config row {index} is malformed: {reason}")]
    MalformedRow {
        /// The row's position.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// The gRPC `lora_config` fields do not fit together (see the `wire` layout).
    #[error("invalid lora_config: {0}")]
    InvalidWire(String),
    /// A file of the adapter directory could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// `adapter_config.json` is not valid or asks for something not supported.
    #[error("{path}: {reason}")]
    AdapterConfig {
        /// The adapter_config.json.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// `adapter_model.safetensors` is not a valid safetensors file.
    #[error("{path} is not a valid safetensors file: {reason}")]
    Safetensors {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        reason: String,
    },
    /// A tensor of the adapter that cannot become a LoRA row (no layer index, a module TensorRT-LLM
    /// has no LoRA module for, DoRA magnitudes, embeddings, `modules_to_save` copies).
    #[error("adapter tensor {name} is not supported: {reason}")]
    UnsupportedTensor {
        /// The tensor's name in the safetensors file.
        name: String,
        /// Why it is not supported.
        reason: String,
    },
    /// A module-layer of the adapter has `lora_A` but not `lora_B`, or the reverse.
    #[error("adapter module {hf_module} layer {layer} has no {missing} tensor")]
    MissingTensor {
        /// The PEFT module name (e.g. `q_proj`).
        hf_module: String,
        /// The layer.
        layer: u32,
        /// `lora_A` or `lora_B`.
        missing: &'static str,
    },
    /// An adapter tensor's shape does not match the module's widths for this engine.
    #[error("adapter module {hf_module} ({module}) layer {layer}: {tensor} has shape {found:?}, expected {expected:?}")]
    ShapeMismatch {
        /// The PEFT module name.
        hf_module: String,
        /// The TensorRT-LLM module it maps to.
        module: LoraModule,
        /// The layer.
        layer: u32,
        /// `lora_A` or `lora_B`.
        tensor: &'static str,
        /// The shape this engine needs (`rank` taken from `lora_A`).
        expected: Vec<usize>,
        /// The shape in the file.
        found: Vec<usize>,
    },
    /// An adapter tensor in an element type other than F16, BF16 or F32.
    #[error("adapter tensor {name} has dtype {dtype}; only F16, BF16 and F32 are supported")]
    TensorDtype {
        /// The tensor's name.
        name: String,
        /// Its safetensors dtype.
        dtype: String,
    },
}

impl LoraError {
    /// What kind of failure this is: an adapter or row the request brought that does not fit is the
    /// request's fault; the engine's LoRA settings, and a local PEFT adapter directory that does not
    /// fit the engine, are the setup's; a file that cannot be read is a local failure.
    pub fn kind(&self) -> ErrorKind {
        match self {
            LoraError::Io { .. } => ErrorKind::Internal,
            LoraError::InvalidSettings(_)
            | LoraError::AdapterConfig { .. }
            | LoraError::Safetensors { .. }
            | LoraError::UnsupportedTensor { .. }
            | LoraError::MissingTensor { .. }
            | LoraError::ShapeMismatch { .. }
            | LoraError::TensorDtype { .. } => ErrorKind::Configuration,
            LoraError::UnknownModuleId(_)
            | LoraError::UnknownModuleName(_)
            | LoraError::UnsupportedModule(_)
            | LoraError::UnsupportedDtype(_)
            | LoraError::NotEnabled
            | LoraError::ModuleNotEnabled { .. }
            | LoraError::LayerOutOfRange { .. }
            | LoraError::InvalidRank { .. }
            | LoraError::DuplicateRow { .. }
            | LoraError::RowTooShort { .. }
            | LoraError::WeightsSize { .. }
            | LoraError::DtypeMismatch { .. }
            | LoraError::Empty
            | LoraError::MalformedRow { .. }
            | LoraError::InvalidWire(_) => ErrorKind::InvalidRequest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adapters_settings_and_files_have_their_kinds() {
        let io =
            LoraError::Io { path: "adapter/adapter_model.safetensors".into(), source: std::io::Error::other("eio") };
        assert_eq!(io.kind(), ErrorKind::Internal);
        assert_eq!(LoraError::InvalidSettings("max_lora_rank is 0".into()).kind(), ErrorKind::Configuration);
        let peft = LoraError::AdapterConfig { path: "adapter/adapter_config.json".into(), reason: "no r".into() };
        assert_eq!(peft.kind(), ErrorKind::Configuration);
        assert_eq!(LoraError::NotEnabled.kind(), ErrorKind::InvalidRequest);
        assert_eq!(LoraError::Empty.kind(), ErrorKind::InvalidRequest);
        assert_eq!(LoraError::InvalidWire("odd length".into()).kind(), ErrorKind::InvalidRequest);
        let rank = LoraError::InvalidRank { module: LoraModule::AttnQ, layer: 0, rank: 99, max_rank: 8 };
        assert_eq!(rank.kind(), ErrorKind::InvalidRequest);
    }
}
