//! The byte layout of the gRPC `GenerateRequest.lora_config` message (`task_id`, `weights`,
//! `config_json`), and conversion to and from [`LoraConfig`].
//!
//! The protocol leaves the layout open (the gateway sends no adapters, and TensorRT-LLM's own
//! Python server reads only `task_id`), so this crate defines one that is TensorRT-LLM's tensor
//! pair written out plainly:
//!
//! - `task_id`: the adapter's cache key, `> 0`. `0` (the proto3 default) means "no adapter", as in
//!   TensorRT-LLM's server; it must then come without `weights` and `config_json`.
//! - `config_json`: the config rows as a JSON array of integer triples
//!   `[[module_id, layer_idx, rank], ...]`; module ids are TensorRT-LLM's
//!   ([`LoraModule::id`](super::LoraModule::id)). A fourth column, DoRA's flag, is accepted if 0.
//! - `weights`: the weights tensor's raw bytes, little-endian, row-major
//!   `[num_rows, row_len]` in the engine's LoRA dtype (its `pretrained_config.dtype`), where
//!   `num_rows` is the number of config rows and `row_len = len(weights) / (num_rows × dtype
//!   size)`; row `i` holds row `i`'s `A` (`[rank, in]`) then `B` (`[out, rank]`, already scaled by
//!   `alpha / rank`), zero padded.
//!
//! Send both `weights` and `config_json` the first time a task id is used (or after it was
//! evicted), and the `task_id` alone afterwards. [`encode_wire`] produces exactly this from a
//! loaded PEFT adapter.

use serde_json::Value;

use super::error::LoraError;
use super::module::LoraModule;
use super::settings::EngineLoraSettings;
use super::weights::{LoraConfig, LoraConfigRow, LoraWeights};

/// The fields of the protocol's `LoraConfig` message, owned.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WireLoraConfig {
    /// `task_id` (field 1).
    pub task_id: i64,
    /// `weights` (field 2): the raw weights tensor bytes.
    pub weights: Option<Vec<u8>>,
    /// `config_json` (field 3): the config rows as JSON.
    pub config_json: Option<String>,
}

/// Writes a request's adapter in the wire layout.
///
/// ```
/// use trtllm::lora::{encode_wire, LoraConfig, LoraConfigRow, LoraDtype, LoraModule, LoraWeights};
/// let row = LoraConfigRow { module: LoraModule::AttnQ, layer: 1, rank: 2 };
/// let weights = LoraWeights::from_rows(LoraDtype::F16, vec![(row, vec![0.5; 8])])?;
/// let wire = encode_wire(&LoraConfig::with_weights(7, weights));
/// assert_eq!(wire.task_id, 7);
/// assert_eq!(wire.config_json.as_deref(), Some("[[1,1,2]]"));
/// assert_eq!(wire.weights.map(|w| w.len()), Some(16));
/// # Ok::<(), trtllm::lora::LoraError>(())
/// ```
pub fn encode_wire(config: &LoraConfig) -> WireLoraConfig {
    WireLoraConfig {
        task_id: i64::try_from(config.task_id).unwrap_or(i64::MAX),
        weights: config.weights.as_ref().map(|w| w.data().to_vec()),
        config_json: config.weights.as_ref().map(|w| rows_to_json(w.rows())),
    }
}

/// Reads a request's `lora_config` for an engine: `Ok(None)` for task id 0 without weights (no
/// adapter); otherwise the adapter, checked against the engine. `settings` is `None` for an
/// engine built without LoRA, which refuses any adapter with [`LoraError::NotEnabled`].
pub fn decode_wire(
    wire: WireLoraConfig,
    settings: Option<&EngineLoraSettings>,
) -> Result<Option<LoraConfig>, LoraError> {
    let WireLoraConfig { task_id, weights, config_json } = wire;
    if task_id < 0 {
        return Err(LoraError::InvalidWire(format!("task_id {task_id} is negative")));
    }
    if task_id == 0 {
        if weights.is_some() || config_json.is_some() {
            return Err(LoraError::InvalidWire(
                "task_id 0 means no adapter; give an adapter sent with weights a non-zero task_id".into(),
            ));
        }
        return Ok(None);
    }
    let settings = settings.ok_or(LoraError::NotEnabled)?;
    let task_id = task_id as u64;
    let (bytes, json) = match (weights, config_json) {
        (None, None) => return Ok(Some(LoraConfig::cached(task_id))),
        (Some(bytes), Some(json)) => (bytes, json),
        (Some(_), None) => return Err(LoraError::InvalidWire("weights were sent without config_json".into())),
        (None, Some(_)) => return Err(LoraError::InvalidWire("config_json was sent without weights".into())),
    };
    let rows = rows_from_json(&json)?;
    let element = settings.dtype().size();
    let row_bytes = rows.len() * element;
    if bytes.len() % row_bytes != 0 {
        return Err(LoraError::InvalidWire(format!(
            "weights hold {} bytes, not a whole number of {} rows of {} values",
            bytes.len(),
            rows.len(),
            settings.dtype()
        )));
    }
    let row_len = bytes.len() / row_bytes;
    let weights = LoraWeights::new(rows, row_len, settings.dtype(), bytes)?;
    weights.validate(settings)?;
    Ok(Some(LoraConfig::with_weights(task_id, weights)))
}

/// The config rows as `config_json`: `[[module_id, layer_idx, rank], ...]`.
pub fn rows_to_json(rows: &[LoraConfigRow]) -> String {
    let rows: Vec<[i32; 3]> = rows.iter().map(|r| r.to_i32()).collect();
    serde_json::to_string(&rows).unwrap_or_else(|_| "[]".into())
}

/// Parses `config_json` into rows (module ids and integer ranges checked; engine limits are
/// checked by [`LoraWeights::validate`]).
pub fn rows_from_json(text: &str) -> Result<Vec<LoraConfigRow>, LoraError> {
    let value: Value = serde_json::from_str(text).map_err(|e| LoraError::InvalidWire(format!("config_json: {e}")))?;
    let Value::Array(rows) = value else {
        return Err(LoraError::InvalidWire("config_json is not an array of [module_id, layer, rank] rows".into()));
    };
    if rows.is_empty() {
        return Err(LoraError::Empty);
    }
    rows.iter().enumerate().map(|(index, row)| parse_row(index, row)).collect()
}

fn parse_row(index: usize, row: &Value) -> Result<LoraConfigRow, LoraError> {
    let malformed = |reason: String| LoraError::MalformedRow { index, reason };
    let items = row.as_array().ok_or_else(|| malformed(format!("{row} is not an array")))?;
    if !(3..=4).contains(&items.len()) {
        return Err(malformed(format!("{row} has {} values, expected [module_id, layer, rank]", items.len())));
    }
    let mut ints = [0i64; 4];
    for (slot, item) in ints.iter_mut().zip(items) {
        *slot = item
            .as_i64()
            .filter(|v| (0..=i64::from(i32::MAX)).contains(v))
            .ok_or_else(|| malformed(format!("{item} is not an integer in 0..=2147483647")))?;
    }
    if items.len() == 4 && ints[3] != 0 {
        return Err(malformed("DoRA rows (fourth column 1) are not supported".into()));
    }
    let module = LoraModule::from_id(ints[0])?;
    // Both fit: checked against 0..=i32::MAX above.
    Ok(LoraConfigRow { module, layer: ints[1] as u32, rank: ints[2] as u32 })
}
