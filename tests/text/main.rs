//! Integration tests of the text layer: tokenizers, chat templates and text streams over an executor.

#[path = "../common/mod.rs"]
mod common;

mod engine;
mod layer;
mod stream;
