//! Integration tests of the simulator: its C++ tests, engine checks and timing model.

#[path = "../common/mod.rs"]
mod common;

mod cpp;
mod engine_checks;
mod families;
mod kernel_table;
mod timing;
