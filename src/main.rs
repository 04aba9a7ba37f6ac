//! The `trtllm` command line.

mod cli;

use std::process::ExitCode;

use clap::Parser;

// Every streamed token allocates and frees a little on different threads (the response thread,
// the runtime's workers); mimalloc's per-thread heaps make that far cheaper than glibc's malloc.
// Set here, for the command only: a program embedding the library chooses its own allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    cli::init_logging(&args);
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", cli::error_report(&e));
            ExitCode::FAILURE
        }
    }
}
