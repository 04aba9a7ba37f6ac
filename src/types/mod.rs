//! The executor's plain data: requests, configuration, outputs, statistics and KV-cache events,
//! with their conversions to and from the FFI structs. No executor machinery lives here.

pub(crate) mod arrival;
pub(crate) mod config;
pub(crate) mod disagg;
pub(crate) mod guided;
pub(crate) mod handoff;
pub(crate) mod ids;
pub(crate) mod kv_event;
pub(crate) mod lora;
pub(crate) mod output;
pub(crate) mod request;
pub(crate) mod sampling;
pub(crate) mod speculative;
pub(crate) mod stats;
#[cfg(feature = "serde")]
pub(crate) mod wall_time;
