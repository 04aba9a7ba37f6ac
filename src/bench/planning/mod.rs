//! Capacity planning with the simulator: points run on its virtual clock, and the timing model's
//! prediction set next to a measurement. The top of the benchmark: uses the runner and the report.

pub mod budget;
pub(crate) mod disagg_prediction;
pub(crate) mod prediction;
pub(crate) mod scheduled_load;
pub mod search;
pub(crate) mod twin;
pub(crate) mod virtual_clock;
pub(crate) mod virtual_engine;
pub(crate) mod virtual_sessions;
