//! The front door: one [`Engine`] object that loads an engine directory (or the built-in one) with
//! its tokenizer and turns prompts or conversations into text streams.
//!
//! Dependencies point one way: `prompt`, `options` <- `engine` <- `disagg` (prefill on one engine,
//! decode on another).

mod disagg;
mod engine;
mod options;
mod prompt;

pub use disagg::DisaggregatedStream;
pub use engine::{Completion, Engine, EngineBuilder};
pub use options::GenerateOptions;
pub use prompt::Prompt;
