//! The `trtllm` command line: inspect engines and backends (serve, bench and generate build on it).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// TensorRT-LLM's C++ Executor from Rust: engine inspection, simulated engines, and more.
#[derive(Debug, Parser)]
#[command(name = "trtllm", version = LONG_VERSION.as_str(), about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the crate version and which executor this binary was built against.
    Version,
    /// Print an engine directory's configuration as JSON.
    Inspect {
        /// The engine directory (config.json from trtllm-build, or a simulated engine).
        #[arg(long, env = "TRTLLM_ENGINE_DIR")]
        engine_dir: PathBuf,
    },
}

/// `--version` names the backend too: which executor a binary runs matters as much as its version.
static LONG_VERSION: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("{} ({})", env!("CARGO_PKG_VERSION"), trtllm::Backend::current()));

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Version => {
            let backend = trtllm::Backend::current();
            println!("trtllm {}", env!("CARGO_PKG_VERSION"));
            println!("backend: {} {}", backend.kind, backend.version);
            println!("supported TensorRT-LLM lines: {}", trtllm::SUPPORTED_LINES.join(", "));
        }
        Command::Inspect { engine_dir } => {
            let engine = trtllm::EngineConfig::from_dir(&engine_dir)?;
            println!("{}", serde_json::to_string_pretty(&engine)?);
        }
    }
    Ok(())
}
