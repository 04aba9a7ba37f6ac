//! What a simulated engine directory says about its timing: the GPU, the clock, and the performance model,
//! a view of the engine's resolved description.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::engine::{ConfigFileError, EngineDescription, JsonFileError, SimulationJson, read_json_or_default};
use crate::sim::{ClockMode, KvCacheDtype, PerfModel, SimError, WeightDtype};

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
    /// config.json or simulation.json is not valid JSON, has a field of the wrong type, or lacks one the model needs.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// config.json is missing or does not describe an engine.
    #[error(transparent)]
    Config(#[from] ConfigFileError),
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
/// assert_eq!(sim.gpu(), "h100-sxm");
/// assert_eq!(sim.clock(), ClockMode::Virtual);
/// // The timing model is in effect (no fixed iteration_ms), so predictions exist.
/// let model = sim.perf_model().expect("timing model");
/// assert!(model.decode_step_ms(1000) > 1.0);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct EngineSimulation {
    description: EngineDescription,
    simulation: SimulationJson,
    perf_model: Option<PerfModel>,
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

    /// Reads the directory whatever the backend: config.json must describe the engine; a missing
    /// simulation.json reads as the simulator's defaults.
    pub fn read(dir: &Path) -> Result<Self, SimulationError> {
        let description = EngineDescription::from_dir(dir)?;
        let simulation: SimulationJson = read_engine_file(&dir.join("simulation.json"))?;
        // The simulator's own model of this engine (the same description, the same code).
        let perf_model = match simulation.iteration_ms {
            None => Some(PerfModel::from_description(&description, &simulation)?),
            Some(_) => None,
        };
        Ok(EngineSimulation { description, simulation, perf_model })
    }

    /// The engine's description (config.json, resolved).
    pub fn description(&self) -> &EngineDescription {
        &self.description
    }

    /// The GPU preset id (simulation.json `gpu`, default `rtx-a6000`).
    pub fn gpu(&self) -> &str {
        &self.simulation.gpu
    }

    /// Whether executor time is real or virtual.
    pub fn clock(&self) -> ClockMode {
        self.simulation.clock
    }

    /// Real clock: wall-clock time per simulated time.
    pub fn time_scale(&self) -> f64 {
        self.simulation.time_scale
    }

    /// A fixed simulated iteration time, when simulation.json sets one (the timing model is then unused).
    pub fn iteration_ms(&self) -> Option<f64> {
        self.simulation.iteration_ms
    }

    /// Weight precision of the engine; `None` for weight-only quantization (not a choice here).
    pub fn weights(&self) -> Option<WeightDtype> {
        WeightDtype::of(self.description.precision())
    }

    /// KV-cache precision of the engine.
    pub fn kv_cache(&self) -> KvCacheDtype {
        KvCacheDtype::of(self.description.precision())
    }

    /// The timing model of this engine on its GPU; `None` when `iteration_ms` replaces it or the
    /// engine's precision is one the model does not describe (weight-only quantization).
    pub fn perf_model(&self) -> Option<&PerfModel> {
        self.perf_model.as_ref()
    }

    /// True when executor timestamps come from the simulated (virtual) clock.
    pub fn is_virtual(&self) -> bool {
        self.clock() == ClockMode::Virtual
    }
}

/// simulation.json through its schema; the schema's defaults when it does not exist.
fn read_engine_file<T: DeserializeOwned + Default>(path: &Path) -> Result<T, SimulationError> {
    read_json_or_default(path).map_err(|e| match e {
        JsonFileError::Read(source) => SimulationError::Io { path: path.to_path_buf(), source },
        other => SimulationError::Format { path: path.to_path_buf(), message: other.to_string() },
    })
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
        let tp = sim.description().parallelism().tp;
        assert_eq!((tp, sim.weights(), sim.kv_cache()), (4, Some(WeightDtype::Fp8), KvCacheDtype::Fp8));
        assert_eq!(sim.clock(), ClockMode::Real);
        let model = sim.perf_model().unwrap();
        assert_eq!(model.gpu().mfu, 0.5);
        let expected = engine.perf_model().unwrap();
        assert_eq!(model.decode_step_ms(512), expected.decode_step_ms(512));
    }

    #[test]
    fn fixed_iteration_time_has_no_model() {
        let dir = tempfile::tempdir().unwrap();
        SimulatedEngine::builder().iteration_ms(2.0).build().write_to(dir.path()).unwrap();
        let sim = EngineSimulation::read(dir.path()).unwrap();
        assert_eq!(sim.iteration_ms(), Some(2.0));
        assert!(sim.perf_model().is_none());
    }

    #[test]
    fn a_missing_config_is_an_error_not_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let err = EngineSimulation::read(dir.path()).unwrap_err();
        assert!(matches!(err, SimulationError::Config(ConfigFileError::Missing { .. })), "{err:?}");
        assert!(err.to_string().contains("config.json: not found"), "{err}");
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
