//! Integration tests of the text layer: tokenizers, chat templates and text streams over an executor.

#[path = "../common/mod.rs"]
mod common;

mod layer;
mod stream;
