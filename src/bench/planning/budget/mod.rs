//! Planning a GPU budget (`trtllm plan --gpus N`): aggregated workers against disaggregated
//! prefill and decode pools, rate-matched, with the KV transfer between them counted in TTFT.
//!
//! - Aggregated: the configuration search ([`crate::bench::search`]) measures one worker of each
//!   TP on the virtual clock; `N / tp` such workers share the budget.
//! - Disaggregated: a prefill worker is measured on the virtual clock as what it runs, context-only
//!   requests (one output token each), by the same search under the TTFT objectives
//!   ([`PrefillWorker`]); a decode worker's steady state is priced by the GPU timing model: the
//!   largest batch whose decode step meets the TPOT objectives, each request holding its slot for
//!   the KV transfer and its decode steps ([`DecodeWorker`]). A deployment of `P` prefill and `D`
//!   decode workers of one TP serves the smaller of the two pools' request rates
//!   ([`Deployment`]), and its TTFT is the prefill's, the transfer's and a first decode step's.
//! - [`plan_budget`] runs both searches (resumable: each stores its configurations like
//!   `trtllm plan`), ranks the deployments that fit the budget and says which architecture wins.

mod confirm;
mod cosim;
mod deploy;
mod estimate;
mod plot;
mod report;
mod run;

pub use confirm::{Confirmation, ROUTER_LATENCY, confirm};
pub use cosim::{CoSimError, CoSimPlan, PoolSpec, run_cosim};
pub use deploy::{AggregatedPool, Architecture, DecodePool, Deployment, PrefillPool, best_deployments};
pub use estimate::{DecodeWorker, KvLinkChoice, PrefillWorker, decode_workers};
pub use plot::{BudgetPoint, plot_budget};
pub use report::{BudgetReport, write_budget_report};
pub use run::{Budget, BudgetError, BudgetOutcome, plan_budget, prefill_space, prefill_study};
