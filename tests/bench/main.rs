//! Integration tests of the benchmark: metrics, predictions and the runner.

#[path = "../common/mod.rs"]
mod common;

mod agreement;
mod metrics;
mod planning;
mod prediction;
mod refusals;
mod runner;
mod saturation;
mod sessions;
mod speculative;
mod trace;
