//! The conformance suite: the behaviours a user relies on, written once and run against whatever
//! engine it is given (see harness.rs): a simulated engine in CI, a real one on a GPU through
//! `TRTLLM_TEST_ENGINE_DIR` and `TRTLLM_TEST_TOKENIZER` (scripts/gpu-check.sh runs it that way).
//!
//! Where the simulator cannot show what the real executor does, a test names the upstream
//! source or document its expectation follows.

#[path = "../common/mod.rs"]
mod common;

mod cancel;
mod doctor;
mod errors;
mod grpc;
mod guided;
mod harness;
mod kv_events;
mod optional_features;
mod stats;
mod stream;
mod switch;
mod text;
