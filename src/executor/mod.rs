//! The running executor: the shared route table, the response, stats and KV-event threads, the
//! per-request streams, and the blocking and async fronts.
//!
//! Dependencies point one way: `accumulator` <- `shared` <- `responses`, `stats_poller`,
//! `kv_events`, `stream` <- `sync_executor` <- `async_executor`, `sim_control` (the simulator's
//! virtual-clock controls), `disagg` (the context-only and generation-only legs); `health`, `totals` and `guide_check` are leaves `sync_executor` uses.

mod accumulator;
mod async_executor;
mod disagg;
#[cfg(feature = "guided")]
mod guide_check;
mod health;
mod kv_events;
mod responses;
mod shared;
mod sim_control;
mod stats_poller;
mod stream;
mod sync_executor;
mod totals;

pub use async_executor::AsyncExecutor;
pub use disagg::Prefilled;
pub use health::HealthIssue;
pub use kv_events::KvEventStream;
pub use sim_control::SimControl;
pub use stream::{BlockingIter, GenerationStream};
pub use sync_executor::{Executor, ShutdownMode};
pub use totals::RequestTotals;
