//! What the benchmark offers: the requests (random prompts or a dataset, output lengths, stopping
//! rules) and when they are sent (load shapes). Depends on nothing else in the benchmark.

pub(crate) mod dataset;
pub(crate) mod lengths;
pub(crate) mod load;
pub(crate) mod prompt;
pub(crate) mod session;
pub(crate) mod trace;
pub(crate) mod words;
pub(crate) mod workload;
