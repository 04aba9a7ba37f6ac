//! Simulated engine directories: a TensorRT-LLM-shaped config.json plus our simulation.json.
//!
//! The simulated executor (built when no TensorRT-LLM is present) loads these exactly as the real
//! executor loads a `trtllm-build` output, so tests, examples and `serve`/`bench` take the same
//! `--engine-dir` either way. The simulation.json schema is documented in docs/simulation-json.md;
//! the GPU timing model behind it in docs/simulator.md. [`GpuPreset`] and [`ModelPreset`] describe the
//! simulated hardware and models, and [`perf_model`] predicts their timing without running anything.

#[cfg(not(trtllm_real))]
mod bridge;
pub mod calibrate;
mod engine_timing;
pub(crate) mod error;
mod executor_files;
mod gpu;
#[cfg(feature = "guided")]
pub mod guided;
pub mod kernel_table;
mod kernels;
mod model;
pub mod perf_model;
mod simulated_engine;
mod speculation;
pub mod telemetry;

pub use crate::engine::config_json::{
    BuildConfig, ConfigJson, LoraConfigJson, Mapping, PluginConfig, PretrainedConfig, Quantization,
};
pub use crate::engine::simulation_json::{ClockMode, SimFaults, SimulationJson};
// The simulated executor's virtual-clock controls (`Executor::sim_control`).
pub use crate::executor::SimControl;
pub use crate::types::arrival::Arrival;
pub use crate::types::ids::HoldKey;
pub use error::SimError;
pub use gpu::{GpuPreset, OVERRIDABLE_FIGURES};
pub use kernels::WeightFormat;
pub use model::{KvCacheDtype, ModelPreset, ModelShape, WeightDtype};
pub use perf_model::{BatchWork, Drafter, EngineSpec, IterationTime, PerfModel};
pub use simulated_engine::{SimLora, SimulatedEngine, SimulatedEngineBuilder};
pub use speculation::SimulatedSpeculation;
