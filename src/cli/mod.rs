//! Command-line parsing and dispatch: one file per subcommand.

mod bench;
mod doctor;
mod error_report;
mod executor_args;
mod generate;
mod guided;
mod inspect;
mod kv_transfer_args;
mod peft_args;
mod plan;
mod serve;
mod sim;
mod sim_model;
mod version;

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

pub use self::error_report::error_report;

/// `--version` names the backend too: which executor a binary runs matters as much as its version.
static LONG_VERSION: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("{} ({})", env!("CARGO_PKG_VERSION"), trtllm::Backend::current()));

/// TensorRT-LLM's C++ Executor from Rust: serve, benchmark, generate and inspect engines.
#[derive(Debug, Parser)]
#[command(name = "trtllm", version = LONG_VERSION.as_str(), about)]
pub struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "TRTLLM_LOG_FORMAT")]
    pub log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

/// How logs are written.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the crate version and which executor this binary was built against.
    Version,
    /// Print an engine directory's configuration as JSON.
    Inspect(inspect::Args),
    /// Generate text for a prompt or chat messages, streaming it to stdout.
    Generate(generate::Args),
    /// Serve trtllm.TrtllmService over gRPC (SMG gateway compatible) until SIGINT/SIGTERM.
    Serve(Box<serve::Args>),
    /// Profile latency in process (TTFT, TPOT, ITL from executor events) over a sweep.
    Bench(bench::Args),
    /// Create simulated engine directories from model and GPU presets; list the presets.
    Sim(sim::Args),
    /// Search engine and runtime knobs on the virtual clock for the most goodput per GPU under SLOs.
    Plan(Box<plan::Args>),
    /// Check the build, libraries, GPUs and an engine, run one request, and print a bug-report summary.
    Doctor(doctor::Args),
}

/// Logs go to stderr, filtered by `RUST_LOG` (default `info` for long-running commands, `warn` for
/// one-shot ones whose stdout and stderr are their output).
pub fn init_logging(cli: &Cli) {
    let default = match cli.command {
        Command::Generate(_) | Command::Inspect(_) | Command::Version | Command::Sim(_) => "warn",
        Command::Bench(_) | Command::Plan(_) | Command::Doctor(_) => "warn",
        Command::Serve(_) => "info",
    };
    let format = cli.log_format;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| default.into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Runs the parsed command.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    if !matches!(cli.command, Command::Serve(_)) {
        quit_quietly_on_closed_stdout();
    }
    match cli.command {
        Command::Version => version::run(),
        Command::Inspect(args) => inspect::run(args),
        Command::Sim(args) => sim::run(args),
        Command::Generate(args) => runtime()?.block_on(generate::run(args)),
        Command::Bench(args) => runtime()?.block_on(bench::run(args)),
        Command::Serve(args) => runtime()?.block_on(serve::run(*args)),
        Command::Plan(args) => runtime()?.block_on(plan::run(*args)),
        Command::Doctor(args) => runtime()?.block_on(doctor::run(args)),
    }
}

/// Restores the default action of SIGPIPE, so `trtllm sim presets | head` ends quietly when the
/// reader goes away, like other Unix tools, instead of panicking in `println!`. The Rust runtime
/// ignores SIGPIPE; sockets are unaffected either way (std and tokio write them with
/// `MSG_NOSIGNAL`). `serve` keeps the runtime's choice: a long-lived server must never die of it.
fn quit_quietly_on_closed_stdout() {
    // SAFETY: called on the main thread before any other thread is started; setting a signal's
    // disposition to SIG_DFL installs no handler, so there is no handler code to be unsafe.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A multi-threaded runtime for the async commands.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}
