//! Planning a GPU budget (`trtllm plan --gpus N`): aggregated workers against disaggregated
//! prefill and decode pools, rate-matched, with the KV transfer between them counted in TTFT.
//!
//! - Every configuration each role can use is resolved once ([`WorkerModel`]) and estimated from
//!   the GPU timing model: an aggregated worker's steady state with closed-loop users, prompts
//!   sharing the decode iterations ([`AggregatedWorker`]); a prefill worker's prompts and the
//!   queue a router's arrivals form ([`PrefillWorker`]); a decode worker's largest batch within
//!   the TPOT objective, each request holding its slot for the transfer and its decode steps
//!   ([`DecodeWorker`]).
//! - A deployment of `N / tp` aggregated workers, or of `P` prefill and `D` decode workers of one
//!   TP serving the smaller of the two pools' rates with TTFT the prefill's, the transfer's and a
//!   first decode step's ([`Deployment`]), is ranked by that estimate.
//! - [`plan_budget`] confirms the best of each architecture on the virtual clock, all its workers
//!   on one timeline behind a router ([`confirm`], [`run_cosim`]), stores each run so that a re-run
//!   resumes, and recommends by the runs' goodput.

mod aggregated;
mod confirm;
mod cosim;
mod deploy;
mod estimate;
mod plot;
mod report;
mod run;
#[cfg(test)]
mod test_support;

pub use aggregated::AggregatedWorker;
pub use confirm::{ConfirmStore, Confirmation, confirm};
pub use cosim::{CoSimError, CoSimPlan, CoSimRun, PoolSpec, run_cosim};
pub use deploy::{AggregatedPool, Architecture, DecodePool, Deployment, PrefillPool, best_deployments};
pub use estimate::{DecodeWorker, KvLinkChoice, PrefillWorker, ROUTER_LATENCY, WorkerModel};
pub use plot::{BudgetPoint, plot_budget};
pub use report::{BudgetReport, write_budget_report};
pub use run::{Budget, BudgetError, BudgetOutcome, plan_budget, prefill_space};
