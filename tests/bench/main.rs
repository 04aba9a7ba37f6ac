//! Integration tests of the benchmark: metrics, predictions and the runner.
//! Built into the `integration` test binary (tests/integration/main.rs), which provides `crate::common`.

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
