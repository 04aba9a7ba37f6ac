//! The timing view of an engine directory: the description config.json resolves to, and simulation.json's
//! GPU (preset, overrides or an inline spec) and MoE routing assumption, for the C++ simulator and the
//! planner alike.

use std::path::Path;

use super::error::SimError;
use super::executor_files::EngineFiles;
use super::gpu::GpuPreset;
use super::perf_model::PerfModel;
use super::timing_spec::{DEFAULT_MOE_IMBALANCE, TimingSpec};
use crate::engine::EngineDescription;
use crate::engine::simulation_json::SimulationJson;

impl TimingSpec {
    /// The timing view of an engine's description; refuses an architecture the model does not describe.
    pub fn from_description(d: &EngineDescription) -> Result<Self, SimError> {
        d.modelled_shape()?;
        Ok(TimingSpec::new(d.clone()))
    }
}

impl PerfModel {
    /// The model of the engine in `dir`: its config.json, and the GPU its simulation.json names (preset and
    /// `gpu_overrides`; the A6000 preset when there is no simulation.json).
    pub fn from_engine_dir(dir: &Path) -> Result<Self, SimError> {
        let files = EngineFiles::read(dir)?;
        Self::from_description(&files.description, &files.simulation)
    }

    /// The model of a resolved engine description on simulation.json's GPU: the one path from an engine
    /// to its timing, shared by the simulator, the planner and the benchmark.
    pub fn from_description(description: &EngineDescription, sim: &SimulationJson) -> Result<Self, SimError> {
        let gpu = GpuPreset::for_simulation(sim)?;
        let spec = TimingSpec::from_description(description)?
            .with_cuda_graphs(sim.cuda_graphs)
            .with_moe_imbalance(sim.moe_imbalance.unwrap_or(DEFAULT_MOE_IMBALANCE));
        Self::from_spec(spec, &gpu)
    }
}

impl From<crate::engine::DescriptionError> for SimError {
    fn from(e: crate::engine::DescriptionError) -> Self {
        SimError::Invalid(e.to_string())
    }
}
