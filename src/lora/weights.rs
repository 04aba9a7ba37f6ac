//! An adapter in TensorRT-LLM's tensor layout (config rows plus a padded weights matrix) and the
//! per-request `LoraConfig`, with their checks against an engine.

use std::collections::HashSet;

use super::dtype::LoraDtype;
use super::error::LoraError;
use super::module::LoraModule;
use super::settings::EngineLoraSettings;

/// One row of the config tensor: which module of which layer the matching weights row adapts,
/// and at what rank (`adapter_size`). TensorRT-LLM's int32 row is `[module_id, layer_idx,
/// adapter_size]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LoraConfigRow {
    /// The adapted module.
    pub module: LoraModule,
    /// The layer index (`0..num_layers`).
    pub layer: u32,
    /// The rank `r` of this module-layer's `A` (`[r, in]`) and `B` (`[out, r]`).
    pub rank: u32,
}

impl LoraConfigRow {
    /// The row as TensorRT-LLM's int32 config row `[module_id, layer_idx, adapter_size]`.
    pub fn to_i32(self) -> [i32; 3] {
        // Layers and ranks are checked against engine limits far below i32::MAX before use.
        [self.module.id(), i32::try_from(self.layer).unwrap_or(i32::MAX), i32::try_from(self.rank).unwrap_or(i32::MAX)]
    }
}

/// An adapter's weights in the layout TensorRT-LLM's executor takes: a config tensor
/// `[num_rows, 3]` (int32) and a weights tensor `[num_rows, row_len]` in the engine's LoRA dtype,
/// row `i` holding row `i`'s `A` (`[rank, in_dim]`, row-major) then `B` (`[out_dim, rank]`,
/// row-major, already scaled by `alpha / rank`), zero padded to `row_len`.
///
/// Build one with [`load_peft_adapter`](super::load_peft_adapter), [`LoraWeights::from_rows`],
/// [`LoraWeights::synthetic`], or from the gRPC fields with [`decode_wire`](super::decode_wire).
#[derive(Debug, Clone, PartialEq)]
pub struct LoraWeights {
    rows: Vec<LoraConfigRow>,
    row_len: usize,
    dtype: LoraDtype,
    data: Vec<u8>,
}

impl LoraWeights {
    /// Wraps already laid out weights: `data` holds `rows.len() × row_len` little-endian
    /// `dtype` elements. Checks only that the sizes agree; [`LoraWeights::validate`] checks the
    /// rows against an engine.
    pub fn new(rows: Vec<LoraConfigRow>, row_len: usize, dtype: LoraDtype, data: Vec<u8>) -> Result<Self, LoraError> {
        if rows.is_empty() {
            return Err(LoraError::Empty);
        }
        let expected = rows.len().saturating_mul(row_len).saturating_mul(dtype.size());
        if data.len() != expected || row_len == 0 {
            return Err(LoraError::WeightsSize { rows: rows.len(), row_len, dtype, expected, actual: data.len() });
        }
        Ok(Self { rows, row_len, dtype, data })
    }

    /// Lays out rows given as `f32` values (each `A` flattened then `B` flattened), converting to
    /// `dtype` and padding every row to the longest.
    ///
    /// ```
    /// use trtllm::lora::{LoraConfigRow, LoraDtype, LoraModule, LoraWeights};
    /// let q = LoraConfigRow { module: LoraModule::AttnQ, layer: 0, rank: 1 };
    /// let k = LoraConfigRow { module: LoraModule::AttnK, layer: 0, rank: 1 };
    /// let weights = LoraWeights::from_rows(LoraDtype::F32, vec![(q, vec![1.0; 4]), (k, vec![2.0; 3])])?;
    /// assert_eq!(weights.shape(), [2, 4]);
    /// assert_eq!(weights.row_values(1), vec![2.0, 2.0, 2.0, 0.0]);
    /// # Ok::<(), trtllm::lora::LoraError>(())
    /// ```
    pub fn from_rows(dtype: LoraDtype, rows: Vec<(LoraConfigRow, Vec<f32>)>) -> Result<Self, LoraError> {
        let row_len = rows.iter().map(|(_, values)| values.len()).max().unwrap_or(0);
        let mut data = Vec::with_capacity(rows.len() * row_len * dtype.size());
        let mut config = Vec::with_capacity(rows.len());
        for (row, mut values) in rows {
            values.resize(row_len, 0.0);
            dtype.encode(&values, &mut data);
            config.push(row);
        }
        Self::new(config, row_len, dtype, data)
    }

    /// A deterministic adapter of rank `rank` on every module and layer the engine adapts, with
    /// small pseudo-random values derived from `seed` (for benchmarks and tests).
    pub fn synthetic(settings: &EngineLoraSettings, rank: u32, seed: u64) -> Result<Self, LoraError> {
        let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
        let mut rows = Vec::new();
        for layer in 0..settings.num_layers() {
            for module in settings.modules() {
                let dims = settings.module_dims(module).ok_or(LoraError::UnsupportedModule(module))?;
                let values = (0..dims.row_values(rank))
                    .map(|_| {
                        // xorshift64: cheap, reproducible, and spread over [-0.01, 0.01).
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.02
                    })
                    .collect();
                rows.push((LoraConfigRow { module, layer, rank }, values));
            }
        }
        let weights = Self::from_rows(settings.dtype(), rows)?;
        weights.validate(settings)?;
        Ok(weights)
    }

    /// The config rows, in weights-row order.
    pub fn rows(&self) -> &[LoraConfigRow] {
        &self.rows
    }

    /// The config tensor's values, row-major `[num_rows, 3]` int32.
    pub fn config_i32(&self) -> Vec<i32> {
        self.rows.iter().flat_map(|r| r.to_i32()).collect()
    }

    /// Values per weights row (the longest row's `rank × (in + out)`).
    pub fn row_len(&self) -> usize {
        self.row_len
    }

    /// The weights tensor's shape `[num_rows, row_len]`.
    pub fn shape(&self) -> [usize; 2] {
        [self.rows.len(), self.row_len]
    }

    /// The element type of the weights.
    pub fn dtype(&self) -> LoraDtype {
        self.dtype
    }

    /// The weights tensor's bytes: little-endian, row-major `[num_rows, row_len]`.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Consumes the weights, returning the raw bytes.
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// Row `index` decoded to `f32`, padding included.
    ///
    /// # Panics
    /// If `index` is not below the number of rows.
    pub fn row_values(&self, index: usize) -> Vec<f32> {
        let width = self.row_len * self.dtype.size();
        self.dtype.decode(&self.data[index * width..(index + 1) * width])
    }

    /// Checks every row against the engine, in TensorRT-LLM's order (dtype, layer range, rank,
    /// module enabled, row long enough) plus a check for repeated module-layers. The error names
    /// the module and layer at fault.
    pub fn validate(&self, settings: &EngineLoraSettings) -> Result<(), LoraError> {
        if self.dtype != settings.dtype() {
            return Err(LoraError::DtypeMismatch { expected: settings.dtype(), found: self.dtype });
        }
        let mut seen = HashSet::with_capacity(self.rows.len());
        for row in &self.rows {
            let LoraConfigRow { module, layer, rank } = *row;
            if layer >= settings.num_layers() {
                return Err(LoraError::LayerOutOfRange { module, layer, num_layers: settings.num_layers() });
            }
            if rank == 0 || rank > settings.max_rank() {
                return Err(LoraError::InvalidRank { module, layer, rank, max_rank: settings.max_rank() });
            }
            let dims = settings.module_dims(module).ok_or_else(|| LoraError::ModuleNotEnabled {
                module,
                layer,
                enabled: settings.module_list(),
            })?;
            let needed = dims.row_values(rank);
            if needed > self.row_len {
                return Err(LoraError::RowTooShort { module, layer, rank, needed, row_len: self.row_len });
            }
            if !seen.insert((module, layer)) {
                return Err(LoraError::DuplicateRow { module, layer });
            }
        }
        Ok(())
    }

    /// What running with this adapter costs per token: `2 × rank × (in + out)` FLOPs and
    /// `rank × (in + out)` weight elements read, summed over rows. Rows of modules the engine does
    /// not adapt count nothing (validate first).
    pub fn cost(&self, settings: &EngineLoraSettings) -> LoraCost {
        let mut cost = LoraCost::default();
        for row in &self.rows {
            if let Some(dims) = settings.module_dims(row.module) {
                let values = dims.row_values(row.rank) as u64;
                cost.flops_per_token += 2 * values;
                cost.weight_bytes += values * self.dtype.size() as u64;
            }
        }
        cost
    }
}

/// The work an adapter adds, for timing models and capacity planning.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoraCost {
    /// Extra floating-point operations per token through the model (`Σ 2·r·(in+out)`).
    pub flops_per_token: u64,
    /// Bytes of adapter weights (unpadded): read once per step by every step that runs the
    /// adapter, and copied host → device when the adapter enters the device cache.
    pub weight_bytes: u64,
}

/// A request's LoRA adapter, as TensorRT-LLM's `executor::LoraConfig`: the adapter's task id, and
/// its weights the first time (later requests may send the id alone while it stays cached).
#[derive(Debug, Clone, PartialEq)]
pub struct LoraConfig {
    /// The adapter's task id: the cache key (`executor::IdType`).
    pub task_id: u64,
    /// The adapter's config rows and weights; `None` to use the cached copy.
    pub weights: Option<LoraWeights>,
}

impl LoraConfig {
    /// Refers to an adapter already sent with weights (it must still be cached, or the request
    /// fails with `LoRA task <id> not found in cache. Please send LoRA weights with request`).
    pub fn cached(task_id: u64) -> Self {
        Self { task_id, weights: None }
    }

    /// Sends an adapter with its weights, caching it under `task_id`.
    pub fn with_weights(task_id: u64, weights: LoraWeights) -> Self {
        Self { task_id, weights: Some(weights) }
    }

    /// Checks the weights, if any, against the engine.
    pub fn validate(&self, settings: &EngineLoraSettings) -> Result<(), LoraError> {
        self.weights.as_ref().map_or(Ok(()), |w| w.validate(settings))
    }
}
