//! LoRA adapters for one engine: TensorRT-LLM's module ids, the engine's LoRA settings, the
//! config-rows-plus-weights layout the executor takes, a PEFT adapter loader and the gRPC layout.
//!
//! TensorRT-LLM serves many adapters on one engine built with the LoRA plugin. A request names
//! its adapter by a task id; the first request of a task id also carries the adapter as two host
//! tensors, which the executor caches (host, then device) so later requests send the id alone:
//!
//! - a config tensor `[num_rows, 3]` int32, rows `(module_id, layer_idx, rank)`;
//! - a weights tensor `[num_rows, row_len]` in the engine's dtype, row `i` the flattened `A`
//!   (`[rank, in]`) then `B` (`[out, rank]`) of row `i`'s module in row `i`'s layer, zero padded.
//!
//! This module is plain data with no executor dependency: [`EngineLoraSettings`] describes what an
//! engine accepts, [`LoraWeights`] holds an adapter in that layout and checks it against an
//! engine, [`load_peft_adapter`] builds one from a Hugging Face PEFT directory, and
//! [`encode_wire`] / [`decode_wire`] carry one through the gRPC `lora_config` field.
//!
//! ```
//! use trtllm::lora::{EngineLoraSettings, LoraConfig, LoraDtype, LoraModule, LoraWeights, ModelDims};
//! let dims = ModelDims { hidden_size: 32, intermediate_size: 64, num_heads: 4, num_kv_heads: 4, head_size: 8 };
//! let engine = EngineLoraSettings::new(vec![LoraModule::AttnQ, LoraModule::AttnV], 8, LoraDtype::F16, 2, dims)?;
//! let adapter = LoraWeights::synthetic(&engine, 4, 1)?;
//! assert_eq!(adapter.shape(), [4, 4 * (32 + 32)]); // 2 modules × 2 layers
//! let request = LoraConfig::with_weights(42, adapter);
//! request.validate(&engine)?;
//! # Ok::<(), trtllm::lora::LoraError>(())
//! ```

pub(crate) mod cache;
pub(crate) mod dtype;
pub(crate) mod error;
mod lookup;
mod module;
#[cfg(feature = "lora")]
mod peft;
mod settings;
pub(crate) mod weights;
mod wire;

#[cfg(all(test, feature = "lora"))]
mod tests;

pub use cache::{LoraCacheStats, PeftCacheConfig};
pub use dtype::LoraDtype;
pub use error::LoraError;
pub use module::{LoraModule, ModelDims, ModuleDims};
#[cfg(feature = "lora")]
pub use peft::{ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, load_peft_adapter};
pub use settings::EngineLoraSettings;
pub use weights::{LoraConfig, LoraConfigRow, LoraCost, LoraWeights};
pub use wire::{WireLoraConfig, decode_wire, encode_wire, rows_from_json, rows_to_json};

/// The error TensorRT-LLM's executor gives a request whose task id is not cached and that comes
/// without weights (`PeftCacheManager::addRequestPeft`); the simulated executor gives the same.
///
/// ```
/// assert_eq!(
///     trtllm::lora::task_not_cached_message(10),
///     "LoRA task 10 not found in cache. Please send LoRA weights with request"
/// );
/// ```
pub fn task_not_cached_message(task_id: u64) -> String {
    format!("LoRA task {task_id} not found in cache. Please send LoRA weights with request")
}
