//! [`VirtualEngine`]: the engine a virtual-clock point runs on, a directory or a simulated engine held in
//! memory (the planner's candidates: started without writing a directory to read it back).

use std::path::{Path, PathBuf};

use crate::engine::speculative::SpeculativeDecodingMode;
use crate::engine::{EngineDescription, SimulationJson};
use crate::sim::SimulatedEngine;
use crate::{AsyncExecutor, ExecutorConfig};

/// The engine a virtual-clock point ([`run_virtual_point_with`](crate::bench::run_virtual_point_with))
/// starts its executor on. A path converts into [`VirtualEngine::Dir`], a simulated engine into
/// [`VirtualEngine::Held`].
///
/// ```
/// use std::path::Path;
/// use trtllm::bench::VirtualEngine;
/// use trtllm::sim::SimulatedEngine;
///
/// let engine = SimulatedEngine::builder().build();
/// assert!(matches!(VirtualEngine::from(&engine), VirtualEngine::Held(_)));
/// assert!(matches!(VirtualEngine::from(Path::new("engine")), VirtualEngine::Dir(_)));
/// ```
#[derive(Debug, Clone, Copy)]
pub enum VirtualEngine<'a> {
    /// An engine directory (config.json and simulation.json).
    Dir(&'a Path),
    /// A simulated engine held in memory ([`SimulatedEngine::start`]).
    Held(&'a SimulatedEngine),
}

impl<'a> From<&'a Path> for VirtualEngine<'a> {
    fn from(dir: &'a Path) -> Self {
        VirtualEngine::Dir(dir)
    }
}

impl<'a> From<&'a PathBuf> for VirtualEngine<'a> {
    fn from(dir: &'a PathBuf) -> Self {
        VirtualEngine::Dir(dir)
    }
}

impl<'a> From<&'a SimulatedEngine> for VirtualEngine<'a> {
    fn from(engine: &'a SimulatedEngine) -> Self {
        VirtualEngine::Held(engine)
    }
}

impl VirtualEngine<'_> {
    /// Starts an executor on the engine.
    pub(crate) async fn start(self, config: ExecutorConfig) -> crate::Result<AsyncExecutor> {
        match self {
            VirtualEngine::Dir(dir) => AsyncExecutor::load(dir, config).await,
            VirtualEngine::Held(engine) => engine.start_async(config).await,
        }
    }

    /// Whether the engine speculates (config.json names a speculative decoding mode, or simulation.json
    /// models a drafter): its decoding steps carry several tokens each, which only a response per step
    /// shows. An engine that cannot be read counts as speculating (the slower, safe choice).
    pub(crate) fn speculates(self) -> bool {
        let (description, simulation) = match self {
            VirtualEngine::Dir(dir) => (
                EngineDescription::from_dir(dir).ok(),
                crate::engine::read_json_or_default::<SimulationJson>(&dir.join("simulation.json")).ok(),
            ),
            VirtualEngine::Held(engine) => (engine.description().ok(), Some(engine.simulation_json())),
        };
        let Some(description) = description else { return true };
        let drafter = simulation.is_none_or(|sim| sim.speculative.is_some());
        description.speculative().mode != SpeculativeDecodingMode::None || drafter
    }
}
