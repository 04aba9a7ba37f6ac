//! Simulated engine directories: a TensorRT-LLM-shaped config.json plus our simulation.json.
//!
//! The simulated executor (built when no TensorRT-LLM is present) loads these exactly as the real
//! executor loads a `trtllm-build` output, so tests, examples and `serve`/`bench` take the same
//! `--engine-dir` either way. The simulation.json schema is documented in docs/simulation-json.md;
//! the GPU timing model behind it in docs/simulator.md. [`GpuPreset`] and [`ModelPreset`] describe the
//! simulated hardware and models, and [`perf_model`] predicts their timing without running anything.

mod batch_work;
#[cfg(not(trtllm_real))]
mod bridge;
pub mod calibrate;
mod engine_timing;
pub(crate) mod error;
mod executor_files;
mod gpu;
#[cfg(feature = "guided")]
mod guided;
mod held_engine;
pub mod kernel_table;
mod kernels;
mod memory;
mod model;
mod op_list;
pub mod ops;
pub mod perf_model;
mod simulated_engine;
mod speculation;
pub mod telemetry;
mod timing_spec;
pub mod transfer;
#[cfg(not(trtllm_real))]
mod transfer_bridge;

pub use crate::engine::config_json::{
    BuildConfig, ConfigJson, LoraConfigJson, Mapping, MoeConfigJson, PluginConfig, PretrainedConfig, Quantization,
};
pub use crate::engine::description::{
    BuildLimits, DescriptionError, EngineDescription, KvQuant, LoraLimits, Parallelism, Precision, Speculative,
    WeightQuant,
};
pub use crate::engine::hf_config;
pub use crate::engine::simulation_json::{ClockMode, SimFaults, SimulationJson};
// The simulated executor's virtual-clock controls (`Executor::sim_control`).
pub use crate::executor::SimControl;
pub use crate::types::arrival::Arrival;
pub use crate::types::ids::HoldKey;
pub use error::SimError;
pub use gpu::{GpuPreset, OVERRIDABLE_FIGURES};
pub use kernels::{OpLoad, WeightFormat};
pub use memory::{BudgetLine, MemoryBudget};
pub use model::{Family, KvCacheDtype, ModelPreset, ModelShape, MoeShape, ParameterCount, WeightDtype};
pub use perf_model::{BatchWork, Drafter, IterationTime, PerfModel, TimingSpec};
pub use simulated_engine::{SimLora, SimulatedEngine, SimulatedEngineBuilder};
pub use speculation::SimulatedSpeculation;
