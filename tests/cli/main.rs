//! Integration tests of the `trtllm` command: bench, generate, serve, sim and version.
//! Built into the `integration` test binary (tests/integration/main.rs), which provides `crate::common`.

mod bench;
mod bench_checks;
mod bench_compare;
mod bench_disagg;
mod bench_gateway;
mod bench_html;
mod bench_layers;
mod bench_lengths;
mod bench_load;
mod bench_plan;
mod bench_repeats;
mod bench_saturate;
mod bench_server_metrics;
mod bench_summary_golden;
mod bench_telemetry;
mod docs_figures;
mod errors;
mod generate;
mod guided;
mod lora;
mod model_arg;
mod moe;
mod plan;
mod plan_answer;
mod plan_budget;
mod plan_moe;
mod serve;
mod sim;
mod speculative;
mod version;
