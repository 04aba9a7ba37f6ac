//! Integration tests of the executor layer: engine directories, request lifecycle, streams and the KV cache.
//! Built into the `integration` test binary (tests/integration/main.rs), which provides `crate::common`.

mod disagg;
mod engine_dir;
mod errors;
mod guided;
mod kv_cache;
mod lifecycle;
mod lora;
mod scheduled;
mod speculative;
mod speculative_loop;
mod speculative_stats;
mod stream;
