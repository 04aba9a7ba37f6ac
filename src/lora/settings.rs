//! What an engine accepts as LoRA adapters: its target modules, maximum rank, dtype and sizes.

use super::dtype::LoraDtype;
use super::error::LoraError;
use super::module::{LoraModule, ModelDims, ModuleDims};

/// The LoRA build settings of one engine, against which adapters are checked and laid out.
///
/// An engine built with `trtllm-build --lora_plugin <dtype> --lora_target_modules ...
/// --max_lora_rank R` records them in config.json as `build_config.lora_config`
/// (`lora_target_modules`, `max_lora_rank`) and `build_config.plugin_config.lora_plugin`; the
/// widths come from `pretrained_config`. [`EngineDescription::lora_settings`](crate::engine::EngineDescription::lora_settings)
/// reads them.
///
/// ```
/// use trtllm::lora::{EngineLoraSettings, LoraDtype, LoraModule, ModelDims};
/// let dims = ModelDims { hidden_size: 64, intermediate_size: 128, num_heads: 4, num_kv_heads: 2, head_size: 16 };
/// let settings = EngineLoraSettings::new(vec![LoraModule::AttnQ, LoraModule::AttnV], 8, LoraDtype::F16, 2, dims)?;
/// assert_eq!(settings.module_dims(LoraModule::AttnV).unwrap().out_dim, 32);
/// assert!(settings.module_dims(LoraModule::AttnK).is_none());
/// # Ok::<(), trtllm::lora::LoraError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EngineLoraSettings {
    modules: Vec<(LoraModule, ModuleDims)>,
    max_rank: u32,
    dtype: LoraDtype,
    num_layers: u32,
    dims: ModelDims,
}

impl EngineLoraSettings {
    /// Settings for an engine adapting `modules` up to rank `max_rank`, with `num_layers` layers
    /// and weights in `dtype`. Rejects an empty or repeated module list, a zero rank or layer
    /// count, and modules whose widths this crate cannot compute.
    pub fn new(
        modules: Vec<LoraModule>,
        max_rank: u32,
        dtype: LoraDtype,
        num_layers: u32,
        dims: ModelDims,
    ) -> Result<Self, LoraError> {
        if modules.is_empty() {
            return Err(LoraError::InvalidSettings("lora_target_modules is empty".into()));
        }
        if max_rank == 0 {
            return Err(LoraError::InvalidSettings("max_lora_rank is 0".into()));
        }
        if num_layers == 0 {
            return Err(LoraError::InvalidSettings("the engine has no layers".into()));
        }
        if dims.hidden_size == 0 || dims.head_size == 0 || dims.num_heads == 0 {
            return Err(LoraError::InvalidSettings(
                "hidden_size, num_attention_heads and head_size must be > 0".into(),
            ));
        }
        let mut with_dims: Vec<(LoraModule, ModuleDims)> = Vec::with_capacity(modules.len());
        for module in modules {
            if with_dims.iter().any(|(m, _)| *m == module) {
                return Err(LoraError::InvalidSettings(format!("lora_target_modules lists {module} twice")));
            }
            let module_dims = module.dims(&dims).ok_or(LoraError::UnsupportedModule(module))?;
            with_dims.push((module, module_dims));
        }
        Ok(Self { modules: with_dims, max_rank, dtype, num_layers, dims })
    }

    /// The modules the engine adapts, in the order its config lists them.
    pub fn modules(&self) -> impl Iterator<Item = LoraModule> + '_ {
        self.modules.iter().map(|(m, _)| *m)
    }

    /// Whether the engine adapts `module`.
    pub fn targets(&self, module: LoraModule) -> bool {
        self.modules.iter().any(|(m, _)| *m == module)
    }

    /// The widths of `module`'s adapter, or `None` when the engine does not adapt it.
    pub fn module_dims(&self, module: LoraModule) -> Option<ModuleDims> {
        self.modules.iter().find(|(m, _)| *m == module).map(|(_, d)| *d)
    }

    /// `build_config.lora_config.max_lora_rank`.
    pub fn max_rank(&self) -> u32 {
        self.max_rank
    }

    /// The element type adapter weights must have.
    pub fn dtype(&self) -> LoraDtype {
        self.dtype
    }

    /// The engine's number of layers (valid layer indices are `0..num_layers`).
    pub fn num_layers(&self) -> u32 {
        self.num_layers
    }

    /// The model sizes the module widths come from.
    pub fn model_dims(&self) -> &ModelDims {
        &self.dims
    }

    /// The modules the engine adapts with their widths, in the order its config lists them.
    pub fn module_widths(&self) -> &[(LoraModule, ModuleDims)] {
        &self.modules
    }

    /// `in_dim + out_dim` of the model's widest attention or MLP module (the fused QKV projection or
    /// the MLP's first projection), adapted or not: one module-layer slot of the simulated adapter
    /// cache holds that module at the optimal adapter size.
    pub fn widest_module_width(&self) -> u32 {
        [LoraModule::AttnQkv, LoraModule::MlpHTo4h]
            .iter()
            .filter_map(|m| m.dims(&self.dims))
            .map(|d| d.in_dim + d.out_dim)
            .max()
            .unwrap_or(0)
    }

    /// The enabled modules' names, comma separated (for error messages).
    pub(crate) fn module_list(&self) -> String {
        self.modules().map(LoraModule::name).collect::<Vec<_>>().join(", ")
    }

    /// Bytes of the largest adapter the engine can take: every module in every layer at
    /// `max_rank`. Cache capacities are naturally given in multiples of it.
    pub fn max_adapter_bytes(&self) -> u64 {
        let per_layer: u64 = self.modules.iter().map(|(_, d)| d.row_values(self.max_rank) as u64).sum();
        per_layer * u64::from(self.num_layers) * self.dtype.size() as u64
    }
}
