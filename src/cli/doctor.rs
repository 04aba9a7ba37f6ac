//! `trtllm doctor`: what a bug report needs, checked and printed (and written as JSON): the build,
//! the libraries it loaded, CUDA and the GPUs, MPI and `executorWorker`, the engine against the
//! library, the tokenizer against the engine, and one request's TTFT. Each failed check says what
//! to do; any failure makes the exit status nonzero.

mod engine_checks;
mod report;
mod system;

use std::path::PathBuf;
use std::process::ExitCode;

use report::{Check, Report};

/// Arguments of `trtllm doctor`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Engine directory to check (default on the simulated build: the built-in engine).
    #[arg(long)]
    engine_dir: Option<PathBuf>,
    /// Tokenizer directory (default: the one the engine directory names).
    #[arg(long)]
    tokenizer: Option<PathBuf>,
    /// Also write the report as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Path of `executorWorker` to check (default: the release image's and the wheel's places).
    #[arg(long)]
    worker_executable: Option<PathBuf>,
    /// Run the smoke request in orchestrator mode (spawning `executorWorker` processes).
    #[arg(long)]
    orchestrator: bool,
    /// GPU ids for the smoke request, comma-separated (e.g. `0,1` for a TP=2 engine).
    #[arg(long, value_delimiter = ',')]
    device_ids: Vec<i32>,
    /// Tokens the smoke request generates.
    #[arg(long, default_value_t = 8)]
    smoke_tokens: u32,
    /// Skip the smoke request (no engine load).
    #[arg(long)]
    no_smoke: bool,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut report = Report::new();
    system::check_build(&mut report);
    system::check_libraries(&mut report);
    system::check_cuda(&mut report);
    system::check_mpi_and_worker(&mut report, args.worker_executable.as_deref(), args.orchestrator);
    let scratch = tempfile::tempdir()?;
    let engine = engine_checks::check_engine(&mut report, args.engine_dir.as_deref(), scratch.path());
    let tokenizer =
        engine.as_ref().and_then(|e| engine_checks::check_tokenizer(&mut report, e, args.tokenizer.as_deref()));
    match (&engine, args.no_smoke) {
        (_, true) => report.push(Check::skipped("smoke test", "--no-smoke")),
        (None, false) => report.push(Check::skipped("smoke test", "no usable engine (see the engine check)")),
        (Some(engine), false) => {
            let parallel = engine_checks::Parallel {
                orchestrator: args.orchestrator,
                worker: args.worker_executable.clone(),
                device_ids: args.device_ids.clone(),
            };
            engine_checks::smoke_test(&mut report, engine, tokenizer.as_ref(), &parallel, args.smoke_tokens).await;
        }
    }
    print!("{}", report.render());
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report.to_json())?)?;
        println!("report written to {}", path.display());
    }
    Ok(if report.failed() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}
