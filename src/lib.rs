//! TensorRT-LLM's C++ Executor in Rust.
