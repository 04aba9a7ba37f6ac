//! `trtllm inspect`: an engine directory's configuration as JSON, with the simulated GPU's memory budget
//! line by line when the directory is a simulated engine.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `trtllm inspect`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The engine directory (config.json from trtllm-build, or a simulated engine).
    #[arg(long, env = "TRTLLM_ENGINE_DIR")]
    engine_dir: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let engine = trtllm::EngineConfig::from_dir(&args.engine_dir)?;
    let mut doc = serde_json::to_value(&engine)?;
    if args.engine_dir.join("simulation.json").is_file() {
        let model = trtllm::sim::PerfModel::from_engine_dir(&args.engine_dir)?;
        let budget =
            model.memory_budget(model.spec().limits(), trtllm::sim::perf_model::DEFAULT_FREE_GPU_MEMORY_FRACTION);
        doc["memory_budget"] = serde_json::to_value(&budget)?;
        eprintln!("{budget}");
    }
    println!("{}", serde_json::to_string_pretty(&doc)?);
    Ok(ExitCode::SUCCESS)
}
