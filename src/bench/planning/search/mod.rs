//! Configuration search under SLOs on the virtual clock (`trtllm plan`): which engine and
//! runtime knobs give the most goodput per GPU for a model, GPU, workload and latency targets.
//!
//! - [`SearchSpace`] lists the knob values and expands them into [`Candidate`]s, pruning those
//!   that cannot run ([`Pruned`]): weights and one request's KV cache must fit the GPUs, FP8
//!   only where the GPU has it, prompts longer than max_num_tokens need chunked context, block
//!   reuse is only searched when prompts share prefixes.
//! - [`run_search`] runs each candidate's load points on the virtual clock from the lowest load
//!   up ([`Loads`]: listed, or doubling users until goodput peaks), stopping at the first that
//!   misses an SLO ([`SloSet`], `ttft:p95:500,tpot:p95:50`), and stores each finished
//!   configuration in a [`ResultStore`] keyed by [`Candidate::key`], so a re-run skips what is
//!   done. Candidates run best [`Bound`] first, and one whose bound cannot reach the goodput of
//!   the `k`-th best already run is skipped (unless the search is exhaustive).
//! - [`build_report`] ranks configurations by goodput per GPU (the best throughput at a point
//!   that meets every SLO, divided by GPUs), finds the Pareto front of tokens/s/user against
//!   tokens/s/GPU, and recommends a configuration with its `trtllm sim build` and `trtllm serve`
//!   command lines; [`write_report`] writes `summary.json` and `pareto.svg`.

mod answer;
mod bound;
mod loads;
mod parallelism;
mod pareto;
mod plot;
mod report;
mod result;
mod run;
mod slo;
mod space;

pub use answer::{
    Alternative, ConfigCounts, PrecisionNote, ProgressLines, UnexploredConfig, edge_of_search, latencies_at,
    precision_note, unexplored,
};
pub use bound::{Bound, kth_best};
pub use loads::{LoadStep, Loads};
pub use parallelism::{default_expert_parallel, default_tensor_parallel, expert_parallel_refusal};
pub use pareto::{FrontPoint, all_points, pareto_front, rank, recommend};
pub(crate) use plot::axes;
pub use plot::{FrontPlotError, plot_front};
pub use report::{RankedConfig, Recommendation, ReportError, SearchReport, build_report, write_report};
pub(crate) use report::{bench_command, write_summary};
pub(crate) use result::save_json;
pub use result::{ConfigResult, PointResult, ResultStore, ResultStoreError};
pub use run::{SearchError, SearchOptions, SearchOutcome, Study, run_search};
pub use slo::{PercentileSlo, PercentileTable, SloMetric, SloSet};
pub(crate) use space::shell_word;
pub use space::{Candidate, EngineKnobs, Pruned, RuntimeKnobs, SchedulerChoice, SearchSpace, WorkloadShape};
