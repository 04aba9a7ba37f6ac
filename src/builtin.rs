//! The built-in engine: a simulated engine with a small shipped tokenizer, used by the command line
//! when no `--engine-dir` is given.
//!
//! Its model is TinyLlama-1.1B's shape in BF16 on a simulated RTX A6000 (the calibrated preset), timed
//! by the simulator's GPU model in real time: about 3.6 ms per decoding step for one user. Two things
//! differ from the checkpoint: the vocabulary is the shipped tokenizer's (a byte-level BPE of about
//! 3,700 tokens trained on this repository's prose, rebuilt by
//! `cargo run --example build_sim_tokenizer`), so that every generated id decodes to text, which
//! also shrinks the output head; and the context is 8,192 tokens instead of 2,048. The simulator's
//! tokens are pseudo-random ids: the text is word salad, the timing is the point.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::sim::{ModelPreset, SimulatedEngine};

/// The shipped tokenizer files, compiled in so an installed binary needs nothing beside it.
// config.json: the model's shape in Hugging Face form. The smg gateway looks for it beside the
// tokenizer on every request and, when it is missing, asks the Hugging Face Hub, which stalls
// requests by DNS timeouts (5 s) on a machine without Internet access.
const TOKENIZER_FILES: [(&str, &[u8]); 4] = [
    ("tokenizer.json", include_bytes!("../assets/sim-tokenizer/tokenizer.json")),
    ("config.json", include_bytes!("../assets/sim-tokenizer/config.json")),
    ("tokenizer_config.json", include_bytes!("../assets/sim-tokenizer/tokenizer_config.json")),
    ("generation_config.json", include_bytes!("../assets/sim-tokenizer/generation_config.json")),
];

/// Vocabulary size of the shipped tokenizer (checked by a test against tokenizer.json).
pub const BUILTIN_VOCAB_SIZE: usize = 3677;

/// A description of the built-in engine, for printing.
pub const BUILTIN_DESCRIPTION: &str = "built-in simulated engine (TinyLlama-1.1B-shaped with the shipped 3.7k-token \
     tokenizer, BF16, on a simulated RTX A6000, real time)";

/// The model preset whose shape the built-in engine has.
pub const BUILTIN_MODEL: &str = "tinyllama-1.1b";
/// The GPU preset the built-in engine simulates.
pub const BUILTIN_GPU: &str = "rtx-a6000";

/// The built-in engine's simulation settings; callers may adjust them before writing.
pub fn builtin_engine() -> SimulatedEngine {
    let tiny = ModelPreset::by_id(BUILTIN_MODEL).expect("the built-in model is a preset");
    let engine = SimulatedEngine::builder()
        .model(tiny)
        .model_name("trtllm-builtin-sim")
        .vocab_size(BUILTIN_VOCAB_SIZE)
        .gpu(BUILTIN_GPU)
        .max_input_len(4096)
        .max_seq_len(8192)
        // Built with LoRA, so that adapter benchmarks (`trtllm bench --lora-adapters N`) run on it.
        .lora(crate::sim::SimLora::attention_and_mlp(64))
        .build();
    // The context is extended beyond TinyLlama's 2,048 positions so that long-prompt sweeps run.
    SimulatedEngine { max_position_embeddings: None, ..engine }
}

/// Writes `engine` plus the shipped tokenizer (in `tokenizer/`) into `dir`; returns `dir`.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path())?;
/// let engine = trtllm::EngineConfig::from_dir(dir.path())?;
/// assert_eq!(engine.tokenizer_dir(), Some(dir.path().join("tokenizer").as_path()));
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
