//! Predictions under load: the simulated engine's own virtual-clock run of the same workload
//! (same load, same seed, same figures), set beside a real-time measurement so that predicted
//! and measured compare like with like.

use std::path::{Path, PathBuf};

use crate::bench::report::sections::{PredictedMeasured, UnderLoad};
use serde_json::{Value, json};

/// Why no twin could be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TwinError {
    /// An engine file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// simulation.json is not a JSON object.
    #[error("{0}: not a JSON object")]
    Simulation(PathBuf),
}

/// Writes into `into` the virtual-clock twin of the simulated engine in `engine_dir`: the same
/// config.json and simulation.json (timing, GPU, faults), with `"clock": "virtual"`. The twin
/// predicts what the engine does under a load without taking its time.
///
/// A real engine has no twin of its own; one comes from a calibration of the timing model
/// against it, when the engine directory holds one (not yet supported: `Ok(false)`).
///
/// ```rust
/// use trtllm::bench::write_virtual_twin;
///
/// let engine = tempfile::tempdir()?;
/// trtllm::sim::SimulatedEngine::builder().build().write_to(engine.path())?;
/// let twin = tempfile::tempdir()?;
/// assert!(write_virtual_twin(engine.path(), twin.path())?);
/// let sim: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(twin.path().join("simulation.json"))?)?;
/// assert_eq!(sim["clock"], "virtual");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_virtual_twin(engine_dir: &Path, into: &Path) -> Result<bool, TwinError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| TwinError::Io { path, source }
    };
    let simulation = engine_dir.join("simulation.json");
    let is_simulated = simulation.exists() || crate::Backend::current().is_simulated();
    if !is_simulated {
        return Ok(false);
    }
    let config = engine_dir.join("config.json");
    std::fs::copy(&config, into.join("config.json")).map_err(io(&config))?;
    let mut sim: Value = match std::fs::read_to_string(&simulation) {
        Ok(text) => serde_json::from_str(&text).map_err(|_| TwinError::Simulation(simulation.clone()))?,
        Err(_) => json!({}),
    };
    let Some(object) = sim.as_object_mut() else { return Err(TwinError::Simulation(simulation)) };
    object.insert("clock".into(), json!("virtual"));
    let out = into.join("simulation.json");
    std::fs::write(&out, serde_json::to_string_pretty(&sim).unwrap_or_default()).map_err(io(&out))?;
    Ok(true)
}

/// The figures a prediction under load compares, by result-file key.
pub const UNDER_LOAD_FIGURES: [&str; 8] = [
    "mean_ttft_ms",
    "p50_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "p50_itl_ms",
    "mean_e2el_ms",
    "request_throughput",
    "output_throughput",
];

/// The `prediction.under_load` object: each figure of the twin's run (`predicted`) beside the
/// measured one, with measured / predicted.
///
/// ```rust
/// use serde_json::json;
/// use trtllm::bench::under_load_section;
///
/// let section = under_load_section(&json!({"mean_ttft_ms": 10.0}), &json!({"mean_ttft_ms": 12.0}));
/// assert_eq!(section.figures["mean_ttft_ms"].ratio, Some(1.2));
/// ```
pub fn under_load_section(predicted: &Value, measured: &Value) -> UnderLoad {
    let mut figures = std::collections::BTreeMap::new();
    for key in UNDER_LOAD_FIGURES {
        let (p, m) = (predicted.get(key).and_then(Value::as_f64), measured.get(key).and_then(Value::as_f64));
        if let (Some(predicted), Some(measured)) = (p, m) {
            let ratio = if predicted != 0.0 { Some(measured / predicted) } else { None };
            figures.insert(key.to_owned(), PredictedMeasured { predicted, measured, ratio });
        }
    }
    UnderLoad {
        source: "the simulated engine's own virtual-clock run of the same workload (same load and seed)".into(),
        figures,
    }
}
