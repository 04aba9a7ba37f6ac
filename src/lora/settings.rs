//! What an engine accepts as LoRA adapters: its target modules, maximum rank, dtype and sizes.

use serde_json::Value;

use super::dtype::LoraDtype;
use super::error::LoraError;
use super::module::{LoraModule, ModelDims, ModuleDims};

/// The LoRA build settings of one engine, against which adapters are checked and laid out.
///
/// An engine built with `trtllm-build --lora_plugin <dtype> --lora_target_modules ...
/// --max_lora_rank R` records them in config.json as `build_config.lora_config`
/// (`lora_target_modules`, `max_lora_rank`) and `build_config.plugin_config.lora_plugin`; the
/// widths come from `pretrained_config`. [`EngineLoraSettings::from_engine_config`] reads them.
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

    /// Reads the LoRA settings from an engine's parsed config.json. `Ok(None)` when the engine has
    /// no LoRA support (`plugin_config.lora_plugin` absent, null or false, or no target modules).
    ///
    /// The LoRA dtype is `pretrained_config.dtype`: TensorRT-LLM checks adapter weights against the
    /// model's data type, and `lora_plugin` names the same type (or `auto`).
    pub fn from_engine_config(config: &Value) -> Result<Option<Self>, LoraError> {
        let build = &config["build_config"];
        let plugin = &build["plugin_config"]["lora_plugin"];
        if plugin.is_null() || plugin == &Value::Bool(false) {
            return Ok(None);
        }
        let lora = &build["lora_config"];
        let targets = match &lora["lora_target_modules"] {
            Value::Array(items) => items,
            Value::Null => return Ok(None),
            other => return Err(bad(format!("lora_target_modules is not a list: {other}"))),
        };
        if targets.is_empty() {
            return Ok(None);
        }
        let modules = targets
            .iter()
            .map(|t| t.as_str().ok_or_else(|| bad(format!("lora_target_modules entry {t} is not a string"))))
            .map(|name| name.and_then(LoraModule::from_name))
            .collect::<Result<Vec<_>, _>>()?;
        let max_rank = read_u32(lora, "max_lora_rank")?;
        let pretrained = &config["pretrained_config"];
        let dtype_name =
            pretrained["dtype"].as_str().ok_or_else(|| bad("pretrained_config.dtype is missing".into()))?;
        let dtype = LoraDtype::from_name(dtype_name)?;
        let hidden_size = read_u32(pretrained, "hidden_size")?;
        let num_heads = read_u32(pretrained, "num_attention_heads")?;
        let num_kv_heads = read_u32_or(pretrained, "num_key_value_heads", num_heads)?;
        let head_size = read_u32_or(pretrained, "head_size", hidden_size.checked_div(num_heads).unwrap_or(0))?;
        let intermediate_size = read_u32_or(pretrained, "intermediate_size", 4 * hidden_size)?;
        let num_layers = read_u32(pretrained, "num_hidden_layers")?;
        let dims = ModelDims { hidden_size, intermediate_size, num_heads, num_kv_heads, head_size };
        Self::new(modules, max_rank, dtype, num_layers, dims).map(Some)
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

fn bad(reason: String) -> LoraError {
    LoraError::InvalidSettings(reason)
}

fn read_u32(object: &Value, key: &str) -> Result<u32, LoraError> {
    match &object[key] {
        Value::Null => Err(bad(format!("{key} is missing"))),
        value => value.as_u64().and_then(|v| u32::try_from(v).ok()).ok_or_else(|| bad(format!("{key} is {value}"))),
    }
}

fn read_u32_or(object: &Value, key: &str, default: u32) -> Result<u32, LoraError> {
    if object[key].is_null() { Ok(default) } else { read_u32(object, key) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn engine_json(lora_plugin: Value, modules: Value) -> Value {
        json!({
            "pretrained_config": {
                "dtype": "bfloat16", "hidden_size": 64, "num_attention_heads": 4,
                "num_key_value_heads": 2, "intermediate_size": 96, "num_hidden_layers": 3
            },
            "build_config": {
                "lora_config": { "lora_target_modules": modules, "max_lora_rank": 16 },
                "plugin_config": { "lora_plugin": lora_plugin }
            }
        })
    }

    #[test]
    fn reads_an_engine_built_with_lora() {
        let config = engine_json(json!("auto"), json!(["attn_q", "attn_k", "attn_v", "mlp_4h_to_h"]));
        let settings = EngineLoraSettings::from_engine_config(&config).unwrap().unwrap();
        assert_eq!(settings.dtype(), LoraDtype::Bf16);
        assert_eq!(settings.max_rank(), 16);
        assert_eq!(settings.num_layers(), 3);
        assert_eq!(settings.model_dims().head_size, 16);
        assert_eq!(settings.module_dims(LoraModule::AttnK), Some(ModuleDims { in_dim: 64, out_dim: 32 }));
        assert_eq!(settings.module_dims(LoraModule::Mlp4hToH), Some(ModuleDims { in_dim: 96, out_dim: 64 }));
        // q 16·(64+64) + k 16·(64+32) + v 16·(64+32) + down 16·(96+64) = 7680 values per layer.
        assert_eq!(settings.max_adapter_bytes(), 7680 * 3 * 2);
    }

    #[test]
    fn an_engine_without_the_plugin_has_no_lora() {
        for plugin in [Value::Null, json!(false)] {
            let config = engine_json(plugin, json!(["attn_q"]));
            assert_eq!(EngineLoraSettings::from_engine_config(&config).unwrap(), None);
        }
        let config = engine_json(json!("float16"), json!([]));
        assert_eq!(EngineLoraSettings::from_engine_config(&config).unwrap(), None);
    }

    #[test]
    fn unknown_target_modules_and_bad_sizes_are_errors() {
        let config = engine_json(json!("auto"), json!(["attn_q", "attn_z"]));
        assert!(matches!(
            EngineLoraSettings::from_engine_config(&config),
            Err(LoraError::UnknownModuleName(name)) if name == "attn_z"
        ));
        let mut config = engine_json(json!("auto"), json!(["attn_q"]));
        config["build_config"]["lora_config"]["max_lora_rank"] = json!(0);
        assert!(matches!(EngineLoraSettings::from_engine_config(&config), Err(LoraError::InvalidSettings(_))));
        let config = engine_json(json!("auto"), json!(["moe_gate"]));
        assert!(matches!(
            EngineLoraSettings::from_engine_config(&config),
            Err(LoraError::UnsupportedModule(LoraModule::MoeGate))
        ));
    }
}
