//! Loads a Hugging Face PEFT LoRA adapter directory into TensorRT-LLM's row layout for one engine.

use std::collections::BTreeMap;
use std::path::Path;

use safetensors::{Dtype, SafeTensors};
use serde_json::Value;

use super::error::LoraError;
use super::module::{LoraModule, ModuleDims};
use super::settings::EngineLoraSettings;
use super::weights::{LoraConfigRow, LoraWeights};

/// The file PEFT writes the adapter's hyper-parameters to.
pub const ADAPTER_CONFIG_FILE: &str = "adapter_config.json";
/// The file PEFT writes the adapter's tensors to.
pub const ADAPTER_WEIGHTS_FILE: &str = "adapter_model.safetensors";

/// Reads a PEFT LoRA adapter directory (`adapter_config.json` + `adapter_model.safetensors`) and
/// lays it out for `settings`' engine, as TensorRT-LLM's own converter does:
///
/// - `...layers.{i}.<group>.<module>.lora_A.weight` (`[r, in]`) and `lora_B.weight` (`[out, r]`)
///   become one row `(module, i, r)` holding `A` then `B`, row-major;
/// - PEFT module names map to TensorRT-LLM modules (`q_proj` → `attn_q`, `k_proj` → `attn_k`,
///   `v_proj` → `attn_v`, `o_proj` → `attn_dense`, `gate_proj` → `mlp_h_to_4h`, `up_proj` →
///   `mlp_gate`, `down_proj` → `mlp_4h_to_h`, `qkv_proj` → `attn_qkv`, `gate_up_proj` →
///   `mlp_gate_up` with its two output halves swapped);
/// - `B` is multiplied by `lora_alpha / r` (`lora_alpha / sqrt(r)` with `use_rslora`), so the
///   executor applies the adapter unscaled;
/// - values are converted from F16/BF16/F32 to the engine's LoRA dtype;
/// - when the engine adapts the fused `attn_qkv` but not `attn_q`/`attn_k`/`attn_v`, a layer's
///   separate q/k/v adapters are fused exactly: `A` stacked (rank `r_q + r_k + r_v`) and `B`
///   block-diagonal over the q, k and v output ranges.
///
/// Anything that cannot be sent per request is an error naming it rather than silently dropped:
/// modules the engine does not adapt, DoRA, `alpha_pattern`, embedding or `modules_to_save`
/// tensors, shapes that do not match the engine's widths, ranks above `max_lora_rank`.
pub fn load_peft_adapter(dir: impl AsRef<Path>, settings: &EngineLoraSettings) -> Result<LoraWeights, LoraError> {
    let dir = dir.as_ref();
    let scaling = read_adapter_config(&dir.join(ADAPTER_CONFIG_FILE))?;
    let weights_path = dir.join(ADAPTER_WEIGHTS_FILE);
    let bytes = std::fs::read(&weights_path).map_err(|source| LoraError::Io { path: weights_path.clone(), source })?;
    let tensors = SafeTensors::deserialize(&bytes)
        .map_err(|e| LoraError::Safetensors { path: weights_path.clone(), reason: e.to_string() })?;
    let pairs = collect_pairs(&tensors)?;

    let mut rows: Vec<(LoraConfigRow, Vec<f32>)> = Vec::with_capacity(pairs.len());
    let mut to_fuse: BTreeMap<u32, Vec<(LoraModule, Adapted)>> = BTreeMap::new();
    let fuse_qkv = settings.targets(LoraModule::AttnQkv)
        && ![LoraModule::AttnQ, LoraModule::AttnK, LoraModule::AttnV].iter().any(|m| settings.targets(*m));
    for ((layer, module), pair) in pairs {
        let adapted = pair.adapt(module, layer, settings, &scaling)?;
        if settings.targets(module) {
            let row = LoraConfigRow { module, layer, rank: adapted.rank };
            rows.push((row, adapted.into_row()));
        } else if fuse_qkv && matches!(module, LoraModule::AttnQ | LoraModule::AttnK | LoraModule::AttnV) {
            to_fuse.entry(layer).or_default().push((module, adapted));
        } else {
            return Err(LoraError::ModuleNotEnabled { module, layer, enabled: settings.module_list() });
        }
    }
    for (layer, parts) in to_fuse {
        rows.push(fuse_qkv_parts(layer, parts, settings)?);
    }
    rows.sort_by_key(|(row, _)| (row.layer, row.module.id()));
    let weights = LoraWeights::from_rows(settings.dtype(), rows)?;
    weights.validate(settings)?;
    Ok(weights)
}

/// How `B` is scaled: `alpha / r`, or `alpha / sqrt(r)` for rank-stabilised LoRA.
#[derive(Debug)]
struct Scaling {
    alpha: f64,
    rslora: bool,
}

impl Scaling {
    fn factor(&self, rank: u32) -> f32 {
        let rank = f64::from(rank.max(1));
        (if self.rslora { self.alpha / rank.sqrt() } else { self.alpha / rank }) as f32
    }
}

fn read_adapter_config(path: &Path) -> Result<Scaling, LoraError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoraError::Io { path: path.to_path_buf(), source })?;
    let bad = |reason: String| LoraError::AdapterConfig { path: path.to_path_buf(), reason };
    let config: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    if let Some(kind) = config["peft_type"].as_str()
        && !kind.eq_ignore_ascii_case("lora")
    {
        return Err(bad(format!("peft_type is {kind}; only LORA adapters are supported")));
    }
    if config["use_dora"].as_bool() == Some(true) {
        return Err(bad("DoRA adapters (use_dora) are not supported".into()));
    }
    if config["alpha_pattern"].as_object().is_some_and(|p| !p.is_empty()) {
        return Err(bad("per-module lora_alpha (alpha_pattern) is not supported".into()));
    }
    let alpha = match &config["lora_alpha"] {
        // PEFT's default when the field is absent.
        Value::Null => 8.0,
        value => value.as_f64().filter(|a| a.is_finite()).ok_or_else(|| bad(format!("lora_alpha is {value}")))?,
    };
    let rslora = config["use_rslora"].as_bool().unwrap_or(false);
    Ok(Scaling { alpha, rslora })
}

/// One tensor read to `f32`, with its shape.
#[derive(Debug)]
struct Tensor {
    shape: Vec<usize>,
    values: Vec<f32>,
}

/// The `lora_A` and `lora_B` tensors of one module in one layer.
#[derive(Debug, Default)]
struct Pair {
    hf_module: String,
    a: Option<Tensor>,
    b: Option<Tensor>,
}

/// A module-layer's adapter after shape checks and scaling.
#[derive(Debug)]
struct Adapted {
    rank: u32,
    dims: ModuleDims,
    a: Vec<f32>,
    b: Vec<f32>,
}

impl Adapted {
    fn into_row(mut self) -> Vec<f32> {
        self.a.append(&mut self.b);
        self.a
    }
}

impl Pair {
    fn adapt(
        self,
        module: LoraModule,
        layer: u32,
        settings: &EngineLoraSettings,
        scaling: &Scaling,
    ) -> Result<Adapted, LoraError> {
        let missing = |missing| LoraError::MissingTensor { hf_module: self.hf_module.clone(), layer, missing };
        let a = self.a.as_ref().ok_or_else(|| missing("lora_A"))?;
        let b = self.b.as_ref().ok_or_else(|| missing("lora_B"))?;
        let dims = module.dims(settings.model_dims()).ok_or(LoraError::UnsupportedModule(module))?;
        let mismatch = |tensor, expected: Vec<usize>, found: &[usize]| LoraError::ShapeMismatch {
            hf_module: self.hf_module.clone(),
            module,
            layer,
            tensor,
            expected,
            found: found.to_vec(),
        };
        let (in_dim, out_dim) = (dims.in_dim as usize, dims.out_dim as usize);
        let rank = match a.shape.as_slice() {
            [rank, width] if *width == in_dim => *rank,
            other => return Err(mismatch("lora_A", vec![other.first().copied().unwrap_or(0), in_dim], other)),
        };
        if b.shape != [out_dim, rank] {
            return Err(mismatch("lora_B", vec![out_dim, rank], &b.shape));
        }
        let rank = u32::try_from(rank).unwrap_or(u32::MAX);
        let factor = scaling.factor(rank);
        let mut b_values: Vec<f32> = b.values.iter().map(|v| v * factor).collect();
        if module == LoraModule::MlpGateUp {
            // PEFT's fused gate_up_proj output is [gate; up], while TensorRT-LLM's fused gated MLP
            // splits its fc output as [up; gate] before SwiGLU, so the halves trade places.
            let half = b_values.len() / 2;
            b_values.rotate_left(half);
        }
        Ok(Adapted { rank, dims, a: a.values.clone(), b: b_values })
    }
}

/// Groups the file's tensors by (layer, module), rejecting any that cannot become a row.
fn collect_pairs(tensors: &SafeTensors<'_>) -> Result<BTreeMap<(u32, LoraModule), Pair>, LoraError> {
    let mut pairs: BTreeMap<(u32, LoraModule), Pair> = BTreeMap::new();
    for (name, view) in tensors.tensors() {
        let unsupported = |reason: String| LoraError::UnsupportedTensor { name: name.clone(), reason };
        let (layer, hf_module, is_a) = parse_tensor_name(&name).map_err(unsupported)?;
        let module = LoraModule::from_hf_name(hf_module)
            .ok_or_else(|| unsupported(format!("module {hf_module} has no TensorRT-LLM LoRA module")))?;
        let values = match view.dtype() {
            Dtype::F16 => super::dtype::LoraDtype::F16.decode(view.data()),
            Dtype::BF16 => super::dtype::LoraDtype::Bf16.decode(view.data()),
            Dtype::F32 => super::dtype::LoraDtype::F32.decode(view.data()),
            other => return Err(LoraError::TensorDtype { name, dtype: format!("{other:?}") }),
        };
        let tensor = Tensor { shape: view.shape().to_vec(), values };
        let pair = pairs.entry((layer, module)).or_default();
        if pair.hf_module.is_empty() {
            pair.hf_module = hf_module.to_owned();
        } else if pair.hf_module != hf_module {
            let other = pair.hf_module.clone();
            return Err(unsupported(format!("{hf_module} and {other} both map to {module} in layer {layer}")));
        }
        let slot = if is_a { &mut pair.a } else { &mut pair.b };
        if slot.replace(tensor).is_some() {
            return Err(unsupported("the tensor appears twice".into()));
        }
    }
    Ok(pairs)
}

/// Splits `<prefix>.<layer>.<group>.<module>.lora_<A|B>.weight` into (layer, module, is_a). The
/// layer is the last all-digit segment before the module name.
fn parse_tensor_name(name: &str) -> Result<(u32, &str, bool), String> {
    let segments: Vec<&str> = name.split('.').collect();
    let n = segments.len();
    let is_a = match (n >= 3).then(|| (segments[n - 2], segments[n - 1])) {
        Some(("lora_A", "weight")) => true,
        Some(("lora_B", "weight")) => false,
        _ => {
            return Err("not a lora_A/lora_B weight (embeddings, DoRA magnitudes and modules_to_save copies \
                 cannot be sent per request)"
                .into());
        }
    };
    let hf_module = segments[n - 3];
    let layer = segments[..n - 3]
        .iter()
        .rev()
        .find(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse::<u32>().ok())
        .ok_or_else(|| "no layer index in the name".to_string())?;
    Ok((layer, hf_module, is_a))
}

/// Fuses one layer's q/k/v adapters into one `attn_qkv` row: `A` stacked over the parts' ranks,
/// `B` placing each part's block at its output range and rank columns (zeros elsewhere).
fn fuse_qkv_parts(
    layer: u32,
    mut parts: Vec<(LoraModule, Adapted)>,
    settings: &EngineLoraSettings,
) -> Result<(LoraConfigRow, Vec<f32>), LoraError> {
    let fused = settings.module_dims(LoraModule::AttnQkv).ok_or(LoraError::UnsupportedModule(LoraModule::AttnQkv))?;
    parts.sort_by_key(|(module, _)| module.id());
    let total_rank: usize = parts.iter().map(|(_, p)| p.rank as usize).sum();
    let q_out = settings.model_dims().num_heads as usize * settings.model_dims().head_size as usize;
    let kv_out = settings.model_dims().num_kv_heads as usize * settings.model_dims().head_size as usize;
    let out_dim = fused.out_dim as usize;
    let mut a = Vec::with_capacity(total_rank * fused.in_dim as usize);
    let mut b = vec![0.0f32; out_dim * total_rank];
    let mut column = 0usize;
    for (module, part) in &parts {
        let row_offset = match module {
            LoraModule::AttnQ => 0,
            LoraModule::AttnK => q_out,
            _ => q_out + kv_out,
        };
        let rank = part.rank as usize;
        a.extend_from_slice(&part.a);
        for out in 0..part.dims.out_dim as usize {
            let src = &part.b[out * rank..(out + 1) * rank];
            let dst = (row_offset + out) * total_rank + column;
            b[dst..dst + rank].copy_from_slice(src);
        }
        column += rank;
    }
    a.append(&mut b);
    let rank = u32::try_from(total_rank).unwrap_or(u32::MAX);
    Ok((LoraConfigRow { module: LoraModule::AttnQkv, layer, rank }, a))
}

#[cfg(test)]
mod tests {
    use super::parse_tensor_name;

    #[test]
    fn tensor_names_split_into_layer_module_and_side() {
        assert_eq!(
            parse_tensor_name("base_model.model.model.layers.12.self_attn.q_proj.lora_A.weight"),
            Ok((12, "q_proj", true))
        );
        assert_eq!(
            parse_tensor_name("base_model.model.model.layers.0.mlp.down_proj.lora_B.weight"),
            Ok((0, "down_proj", false))
        );
        assert!(parse_tensor_name("base_model.model.lm_head.weight").is_err());
        assert!(parse_tensor_name("base_model.model.model.layers.0.self_attn.q_proj.lora_magnitude_vector").is_err());
        assert!(parse_tensor_name("base_model.model.norm.q_proj.lora_A.weight").is_err());
    }
}
