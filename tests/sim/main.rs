//! Integration tests of the simulator: its C++ tests, engine checks and timing model.
//! Built into the `integration` test binary (tests/integration/main.rs), which provides `crate::common`.

mod cpp;
mod engine_checks;
mod families;
mod kernel_table;
mod sliding_window;
mod telemetry;
mod timing;
