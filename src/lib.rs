//! TensorRT-LLM's C++ Executor in Rust.
pub mod text;
