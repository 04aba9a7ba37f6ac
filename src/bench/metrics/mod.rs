//! What a run measured, and the pure computations over it: per-request records on the run clock,
//! statistics, SLOs, throughput, the runner's measurement error, time series and the executor's
//! iteration statistics. Depends on nothing else in the benchmark.

pub(crate) mod calibration;
pub(crate) mod disagg;
pub(crate) mod disagg_summary;
pub(crate) mod failures;
pub(crate) mod iteration_summary;
pub(crate) mod iterations;
pub(crate) mod live;
pub(crate) mod load_shape;
pub(crate) mod record;
pub(crate) mod repeats;
pub(crate) mod saturation;
pub(crate) mod slo;
pub(crate) mod slo_set;
pub(crate) mod speculative;
pub(crate) mod stats;
pub(crate) mod throughput;
pub(crate) mod timer_jitter;
pub(crate) mod timeseries;
