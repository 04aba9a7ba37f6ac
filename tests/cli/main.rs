//! Integration tests of the `trtllm` command: bench, generate, serve, sim and version.

#[path = "../common/mod.rs"]
mod common;

mod bench;
mod bench_layers;
mod generate;
mod guided;
mod serve;
mod sim;
mod version;
