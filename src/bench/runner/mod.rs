//! The load generator: offers [`super::traffic`] to a target (an executor in this process or a
//! gRPC server) and writes [`super::metrics`] records.

pub(crate) mod backlog;
// Prefill/decode disaggregation over a prefill and a decode pool.
pub(crate) mod disagg;
// Draft-target speculative decoding through SpeculativeExecutor.
pub(crate) mod draft_target;
pub(crate) mod grpc;
pub(crate) mod in_process;
pub(crate) mod openai;
pub(crate) mod point;
pub(crate) mod records;
pub(crate) mod sessions;
pub(crate) mod slots;
pub(crate) mod target;
