//! The built-in engine: a simulated engine with a small shipped tokenizer, used by the command line
//! when no `--engine-dir` is given.
//!
//! Its model is TinyLlama-shaped, but its vocabulary is the shipped tokenizer's (a byte-level BPE
//! of about 3,700 tokens trained on this repository's prose, rebuilt by
//! `cargo run --example build_sim_tokenizer`), so that every generated id decodes to text. The
//! simulator's tokens are pseudo-random ids: the text is word salad, the timing is the point.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::sim::SimulatedEngine;

/// The shipped tokenizer files, compiled in so an installed binary needs nothing beside it.
const TOKENIZER_FILES: [(&str, &[u8]); 3] = [
    ("tokenizer.json", include_bytes!("../assets/sim-tokenizer/tokenizer.json")),
    ("tokenizer_config.json", include_bytes!("../assets/sim-tokenizer/tokenizer_config.json")),
    ("generation_config.json", include_bytes!("../assets/sim-tokenizer/generation_config.json")),
];

/// Vocabulary size of the shipped tokenizer (checked by a test against tokenizer.json).
pub const BUILTIN_VOCAB_SIZE: usize = 3677;

/// A description of the built-in engine, for printing.
pub const BUILTIN_DESCRIPTION: &str = "built-in simulated engine (TinyLlama-shaped, shipped 3.7k-token tokenizer)";

/// The built-in engine's simulation settings; callers may adjust them before writing.
pub fn builtin_engine() -> SimulatedEngine {
    SimulatedEngine::builder().model_name("trtllm-builtin-sim").vocab_size(BUILTIN_VOCAB_SIZE).build()
}

/// Writes `engine` plus the shipped tokenizer (in `tokenizer/`) into `dir`; returns `dir`.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path())?;
/// let engine = trtllm::EngineConfig::from_dir(dir.path())?;
/// assert_eq!(engine.tokenizer_dir, Some(dir.path().join("tokenizer")));
/// # Ok(()) }
/// ```
pub fn write_engine(engine: &SimulatedEngine, dir: &Path) -> Result<PathBuf> {
    engine.write_to(dir)?;
    let tokenizer = dir.join("tokenizer");
    std::fs::create_dir_all(&tokenizer).map_err(|source| Error::EngineDir { path: tokenizer.clone(), source })?;
    for (name, bytes) in TOKENIZER_FILES {
        std::fs::write(tokenizer.join(name), bytes)
            .map_err(|source| Error::EngineDir { path: tokenizer.clone(), source })?;
    }
    Ok(dir.to_path_buf())
}
