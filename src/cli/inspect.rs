//! `trtllm inspect`: an engine directory's configuration as JSON.

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
    println!("{}", serde_json::to_string_pretty(&engine)?);
    Ok(ExitCode::SUCCESS)
}
