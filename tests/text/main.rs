//! Integration tests of the text layer: tokenizers, chat templates and text streams over an executor.
//! Built into the `integration` test binary (tests/integration/main.rs), which provides `crate::common`.

mod engine;
mod layer;
mod stream;
