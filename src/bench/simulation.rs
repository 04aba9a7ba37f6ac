//! What a simulated engine directory says about its timing: the GPU, the clock, and the performance model.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::sim::{ClockMode, GpuPreset, KvCacheDtype, ModelShape, PerfModel, SimError, WeightDtype};

/// Errors from reading a simulated engine directory's timing description.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimulationError {
    /// config.json or simulation.json could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// config.json or simulation.json is not valid JSON or has a field of the wrong type.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The GPU preset, an override or the engine's shape cannot be modelled.
    #[error(transparent)]
    Model(#[from] SimError),
}

/// How a simulated engine directory times its iterations, from its config.json and simulation.json.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use trtllm::bench::EngineSimulation;
/// use trtllm::sim::{ClockMode, ModelPreset, SimulatedEngine};
///
/// let dir = tempfile::tempdir()?;
/// SimulatedEngine::builder()
///     .model(ModelPreset::by_id("llama-3.1-8b")?)
///     .gpu("h100-sxm")
///     .clock(ClockMode::Virtual)
///     .build()
///     .write_to(dir.path())?;
/// let sim = EngineSimulation::from_engine_dir(dir.path())?.expect("a simulated engine");
/// assert_eq!(sim.gpu, "h100-sxm");
/// assert_eq!(sim.clock, ClockMode::Virtual);
/// // The timing model is in effect (no fixed iteration_ms), so predictions exist.
/// let model = sim.perf_model.as_ref().expect("timing model");
/// assert!(model.decode_step_ms(1000) > 1.0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct EngineSimulation {
    /// The GPU preset id (simulation.json `gpu`, default `rtx-a6000`).
    pub gpu: String,
    /// Whether executor time is real or virtual.
    pub clock: ClockMode,
    /// Real clock: wall-clock time per simulated time.
    pub time_scale: f64,
    /// A fixed simulated iteration time, when simulation.json sets one (the timing model is then unused).
    pub iteration_ms: Option<f64>,
    /// Weight precision of the engine.
    pub weights: Option<WeightDtype>,
    /// KV-cache precision of the engine.
    pub kv_cache: Option<KvCacheDtype>,
    /// Tensor-parallel GPUs.
    pub tp_size: usize,
    /// Tokens per iteration the engine was built for (how prompts are chunked).
    pub max_num_tokens: usize,
    /// KV-cache block size (chunk boundaries).
    pub tokens_per_block: usize,
    /// The timing model of this engine on its GPU; `None` when `iteration_ms` replaces it or the
    /// engine's precision is one the model does not describe (weight-only quantization).
    pub perf_model: Option<PerfModel>,
}

impl EngineSimulation {
    /// Reads `config.json` and `simulation.json` (optional, as for the simulator) of `dir`.
    ///
    /// Returns `Ok(None)` when the running backend is not the simulator: the directory then
    /// describes a real engine, whose timing no model here predicts.
    pub fn from_engine_dir(dir: &Path) -> Result<Option<Self>, SimulationError> {
        if !crate::Backend::current().is_simulated() {
            return Ok(None);
        }
        Self::read(dir).map(Some)
    }

    /// Reads the directory whatever the backend (the simulator's defaults for absent members).
    pub fn read(dir: &Path) -> Result<Self, SimulationError> {
        let config = read_json(&dir.join("config.json"))?.unwrap_or(Value::Null);
        let sim_path = dir.join("simulation.json");
        let sim = read_json(&sim_path)?.unwrap_or(Value::Null);
        let config_path = dir.join("config.json");
        let bad = |path: &Path, message: String| SimulationError::Format { path: path.to_path_buf(), message };

        let gpu = str_field(&sim, "gpu").unwrap_or("rtx-a6000").to_owned();
        let clock = match str_field(&sim, "clock") {
            None | Some("real") => ClockMode::Real,
            Some("virtual") => ClockMode::Virtual,
            Some(other) => return Err(bad(&sim_path, format!("clock must be \"real\" or \"virtual\", got {other:?}"))),
        };
        let time_scale = sim.get("time_scale").and_then(Value::as_f64).unwrap_or(1.0);
        let iteration_ms = sim.get("iteration_ms").and_then(Value::as_f64);

        let pretrained = &config["pretrained_config"];
        let build = &config["build_config"];
        let size = |v: &Value, name: &str| v.get(name).and_then(Value::as_u64).map(|n| n as usize);
        let need = |name: &str| {
            size(pretrained, name)
                .ok_or_else(|| bad(&config_path, format!("pretrained_config.{name} must be a positive integer")))
        };
        let hidden_size = need("hidden_size")?;
        let num_heads = need("num_attention_heads")?.max(1);
        let shape = ModelShape {
            vocab_size: need("vocab_size")?,
            hidden_size,
            num_layers: need("num_hidden_layers")?,
            num_heads,
            num_kv_heads: size(pretrained, "num_key_value_heads").unwrap_or(num_heads),
            head_size: size(pretrained, "head_size").unwrap_or(hidden_size / num_heads),
            intermediate_size: size(pretrained, "intermediate_size").unwrap_or(4 * hidden_size),
            tie_word_embeddings: pretrained.get("tie_word_embeddings").and_then(Value::as_bool).unwrap_or(false),
        };
        let quantization = &pretrained["quantization"];
        let weights = match (str_field(quantization, "quant_algo"), str_field(pretrained, "dtype")) {
            (Some(algo), _) if algo.starts_with("FP8") => Some(WeightDtype::Fp8),
            // Weight-only quantization: the simulator runs it, this model does not describe it.
            (Some(_), _) => None,
            (None, Some("float16")) => Some(WeightDtype::Fp16),
            (None, _) => Some(WeightDtype::Bf16),
        };
        let kv_cache = match str_field(quantization, "kv_cache_quant_algo") {
            None => Some(KvCacheDtype::Auto),
            Some("FP8") => Some(KvCacheDtype::Fp8),
            Some("INT8") => Some(KvCacheDtype::Int8),
            Some(_) => None,
        };
        let tp_size = size(&pretrained["mapping"], "tp_size").unwrap_or(1).max(1);
        let max_num_tokens = size(build, "max_num_tokens").unwrap_or(8192);
        let tokens_per_block = size(&build["plugin_config"], "tokens_per_block").unwrap_or(32);

        let mut gpu_figures = GpuPreset::by_id(&gpu)?.clone();
        if let Some(overrides) = sim.get("gpu_overrides").and_then(Value::as_object) {
            for (name, value) in overrides {
                let value =
                    value.as_f64().ok_or_else(|| bad(&sim_path, format!("gpu_overrides.{name} must be a number")))?;
                gpu_figures.set_figure(name, value)?;
            }
        }
        let perf_model = match (iteration_ms, weights, kv_cache) {
            (None, Some(w), Some(kv)) => Some(PerfModel::new(&shape, &gpu_figures, w, kv, tp_size)?),
            _ => None,
        };
        Ok(EngineSimulation {
            gpu,
            clock,
            time_scale,
            iteration_ms,
            weights,
            kv_cache,
            tp_size,
            max_num_tokens,
            tokens_per_block,
            perf_model,
        })
    }

    /// True when executor timestamps come from the simulated (virtual) clock.
    pub fn is_virtual(&self) -> bool {
        self.clock == ClockMode::Virtual
    }
}

fn str_field<'a>(v: &'a Value, name: &str) -> Option<&'a str> {
    v.get(name).and_then(Value::as_str)
}

/// The file's JSON, `None` when it does not exist.
fn read_json(path: &Path) -> Result<Option<Value>, SimulationError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(SimulationError::Io { path: path.to_path_buf(), source }),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| SimulationError::Format { path: path.to_path_buf(), message: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{ModelPreset, SimulatedEngine};

    #[test]
    fn reads_precision_tp_and_overrides() {
        let engine = SimulatedEngine::builder()
            .model(ModelPreset::by_id("llama-3.1-70b").unwrap())
            .gpu("h100-sxm")
            .tensor_parallel(4)
            .dtype(WeightDtype::Fp8)
            .kv_cache_dtype(KvCacheDtype::Fp8)
            .gpu_override("mfu", 0.5)
            .build();
        let dir = tempfile::tempdir().unwrap();
        engine.write_to(dir.path()).unwrap();
        let sim = EngineSimulation::read(dir.path()).unwrap();
        assert_eq!((sim.tp_size, sim.weights, sim.kv_cache), (4, Some(WeightDtype::Fp8), Some(KvCacheDtype::Fp8)));
        assert_eq!(sim.clock, ClockMode::Real);
        let model = sim.perf_model.unwrap();
        assert_eq!(model.gpu().mfu, 0.5);
        let expected = engine.perf_model().unwrap();
        assert_eq!(model.decode_step_ms(512), expected.decode_step_ms(512));
    }

    #[test]
    fn fixed_iteration_time_has_no_model() {
        let dir = tempfile::tempdir().unwrap();
        SimulatedEngine::builder().iteration_ms(2.0).build().write_to(dir.path()).unwrap();
        let sim = EngineSimulation::read(dir.path()).unwrap();
        assert_eq!(sim.iteration_ms, Some(2.0));
        assert!(sim.perf_model.is_none());
    }

    #[test]
    fn a_bad_clock_is_named() {
        let dir = tempfile::tempdir().unwrap();
        SimulatedEngine::builder().build().write_to(dir.path()).unwrap();
        std::fs::write(dir.path().join("simulation.json"), r#"{"clock": "sundial"}"#).unwrap();
        let err = EngineSimulation::read(dir.path()).unwrap_err();
        assert!(err.to_string().contains("sundial"), "{err}");
    }
}
