//! `trtllm version`: the crate version and the executor backend.

use std::process::ExitCode;

pub fn run() -> anyhow::Result<ExitCode> {
    let backend = trtllm::Backend::current();
    println!("trtllm {}", env!("CARGO_PKG_VERSION"));
    println!("backend: {} {}", backend.kind, backend.version);
    println!("supported TensorRT-LLM lines: {}", trtllm::SUPPORTED_LINES.join(", "));
    Ok(ExitCode::SUCCESS)
}
