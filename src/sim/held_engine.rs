//! Simulated executors started on an engine held in memory ([`SimulatedEngine::start`]): no directory is
//! written or read; the engine's description and simulation settings wait under a key while the
//! simulator loads them through its sim-only bridges.
// The real build has no simulator to hand an engine to.
#![cfg_attr(trtllm_real, allow(dead_code))]

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use super::error::SimError;
use super::executor_files::{EngineFiles, check_simulation};
use super::simulated_engine::SimulatedEngine;
use crate::engine::EngineConfig;
use crate::engine::simulation_json::ClockMode;
use crate::error::{Error, Result};
use crate::executor::{AsyncExecutor, Executor};
use crate::types::config::ExecutorConfig;

/// What every held engine's key starts with: a NUL, which no directory path holds, so a key never names a
/// directory and a directory is never taken for a held engine.
const KEY_PREFIX: &str = "\0held simulated engine ";

/// The engines held while an executor starts on them, by key.
fn held() -> &'static Mutex<HashMap<String, EngineFiles>> {
    static HELD: OnceLock<Mutex<HashMap<String, EngineFiles>>> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// An engine held for the simulator under a key of its own, until dropped.
struct HeldEngine {
    key: String,
}

impl HeldEngine {
    fn hold(files: EngineFiles) -> HeldEngine {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let key = format!("{KEY_PREFIX}{}", NEXT.fetch_add(1, Ordering::Relaxed));
        if let Ok(mut map) = held().lock() {
            map.insert(key.clone(), files);
        }
        HeldEngine { key }
    }
}

impl Drop for HeldEngine {
    fn drop(&mut self) {
        if let Ok(mut map) = held().lock() {
            map.remove(&self.key);
        }
    }
}

/// The engine the simulator is handed under `engine_dir`: one held in memory, else the directory's documents
/// ([`EngineFiles::read`]).
pub(crate) fn open(engine_dir: &str) -> Result<EngineFiles, SimError> {
    match find(engine_dir) {
        Some(files) => Ok(files),
        None => EngineFiles::read(Path::new(engine_dir)),
    }
}

/// The engine held under `engine_dir`, when it is a held engine's key rather than a directory.
fn find(engine_dir: &str) -> Option<EngineFiles> {
    if !engine_dir.starts_with(KEY_PREFIX) {
        return None;
    }
    held().lock().ok()?.get(engine_dir).cloned()
}

impl SimulatedEngine {
    /// Starts a simulated executor on this engine as it is, without writing its directory: the same
    /// executor [`Executor::load`] starts on the directory [`SimulatedEngine::write_to`] writes, with the
    /// same checks (the description's rules, simulation.json's, `config` against the build limits).
    /// Its [`EngineConfig::dir`] is empty and it names no tokenizer.
    ///
    /// Fails with [`Error::SimulatorOnly`] when the crate is built against TensorRT-LLM.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use trtllm::sim::{ClockMode, SimulatedEngine};
    /// use trtllm::{ExecutorConfig, GenerationRequest, StreamEvent};
    ///
    /// let engine = SimulatedEngine::builder().max_batch_size(8).clock(ClockMode::Virtual).build();
    /// let executor = engine.start(ExecutorConfig::default())?;
    /// assert_eq!(executor.max_batch_size(), 8);
    /// assert!(executor.sim_control().is_some(), "on the virtual clock");
    /// let mut tokens = 0;
    /// for event in executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 5))?.blocking_iter() {
    ///     if let StreamEvent::Chunk(chunk) = event? {
    ///         tokens += chunk.token_ids.len();
    ///     }
    /// }
    /// assert_eq!(tokens, 5);
    /// # Ok(()) }
    /// ```
    pub fn start(&self, config: ExecutorConfig) -> Result<Executor> {
        if cfg!(trtllm_real) {
            return Err(Error::SimulatorOnly("starting an executor on a held simulated engine"));
        }
        config.validate()?;
        let description = self.description().map_err(super::SimError::from)?;
        let simulation = self.simulation_json();
        check_simulation(&simulation)?;
        let engine = EngineConfig::held(description.clone())?;
        let virtual_clock = simulation.clock == ClockMode::Virtual;
        let held = HeldEngine::hold(EngineFiles { description, simulation });
        // The simulator reads the held engine while the executor is constructed; then it is released.
        Executor::start(&held.key, engine, virtual_clock, config)
    }

    /// [`SimulatedEngine::start`] on a blocking thread, for async callers.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use trtllm::sim::SimulatedEngine;
    /// use trtllm::{ExecutorConfig, GenerationRequest, ShutdownMode};
    ///
    /// let executor = SimulatedEngine::builder().time_scale(0.0).build().start_async(ExecutorConfig::default()).await?;
    /// let done = executor.enqueue(GenerationRequest::new(vec![1, 2, 3], 4))?.collect_final().await?;
    /// assert_eq!(done.completion_tokens, 4);
    /// executor.shutdown(ShutdownMode::Cancel).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_async(&self, config: ExecutorConfig) -> Result<AsyncExecutor> {
        let engine = self.clone();
        let executor = tokio::task::spawn_blocking(move || engine.start(config))
            .await
            .map_err(|e| Error::Internal(format!("starting task failed: {e}")))??;
        Ok(AsyncExecutor::new(executor))
    }
}

#[cfg(all(test, not(trtllm_real)))]
mod tests {
    use super::*;
    use crate::GenerationRequest;
    use crate::sim::ModelPreset;

    /// A request's tokens, its simulated time from first scheduling to last token, and its iterations.
    fn run_one(executor: &Executor) -> (Vec<u32>, std::time::Duration, Option<u64>) {
        let request = GenerationRequest::new((1..=40).collect(), 12).with_perf_metrics(true);
        let stream = executor.enqueue(request).unwrap();
        let mut done = None;
        for event in stream.blocking_iter() {
            if let crate::StreamEvent::Final(f) = event.unwrap() {
                done = Some(f);
            }
        }
        let done = done.expect("a final");
        let perf = done.perf.expect("perf metrics were asked for");
        let simulated = perf.last_token.unwrap() - perf.first_scheduled.unwrap();
        (done.token_ids().to_vec(), simulated, perf.last_iter.zip(perf.first_iter).map(|(l, f)| l - f))
    }

    /// The executor a held engine starts is the one its directory loads: the same description, limits,
    /// tokens and simulated times (the timing model's, on the virtual clock).
    #[test]
    fn a_held_engine_runs_as_its_directory_does() {
        let engine = SimulatedEngine::builder()
            .model(ModelPreset::by_id("llama-3.1-8b").unwrap())
            .gpu("h100-sxm")
            .max_batch_size(4)
            .clock(ClockMode::Virtual)
            .build();
        let dir = tempfile::tempdir().unwrap();
        engine.write_to(dir.path()).unwrap();
        let loaded = Executor::load(dir.path(), ExecutorConfig::default()).unwrap();
        let held = engine.start(ExecutorConfig::default()).unwrap();
        assert_eq!(held.engine().description(), loaded.engine().description());
        assert_eq!(held.engine().dir(), std::path::Path::new(""));
        assert_eq!(held.max_batch_size(), 4);
        assert!(held.sim_control().is_some(), "the held engine's virtual clock");
        let (from_dir, from_held) = (run_one(&loaded), run_one(&held));
        assert_eq!(from_held.0.len(), 12);
        assert_eq!(from_held, from_dir);
    }

    /// A held engine is refused for what its directory would be: a bad simulation setting, a configuration
    /// over its build limits.
    #[test]
    fn a_held_engine_is_checked_as_its_directory_is() {
        let bad = SimulatedEngine { time_scale: -1.0, ..SimulatedEngine::builder().build() };
        let err = bad.start(ExecutorConfig::default()).unwrap_err();
        assert!(err.to_string().contains("time_scale must be at least 0"), "{err}");
        let small = SimulatedEngine::builder().max_batch_size(2).build();
        let config = ExecutorConfig { max_batch_size: Some(8), ..ExecutorConfig::default() };
        let err = small.start(config).unwrap_err();
        assert!(err.to_string().contains("exceeds the engine's build limit of 2"), "{err}");
    }

    /// The simulator finds a held engine by its key only while it is held, and never takes a path for one.
    #[test]
    fn a_held_engine_is_found_only_while_held() {
        let engine = SimulatedEngine::builder().build();
        let files = EngineFiles { description: engine.description().unwrap(), simulation: engine.simulation_json() };
        let hold = HeldEngine::hold(files);
        let key = hold.key.clone();
        assert!(find(&key).is_some());
        assert!(find(key.trim_start_matches('\0')).is_none(), "a path without the NUL is a directory");
        drop(hold);
        assert!(find(&key).is_none());
    }
}
