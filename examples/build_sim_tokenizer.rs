//! Rebuilds `assets/sim-tokenizer/`: the small tokenizer shipped with the built-in simulated engine.
//!
//! A byte-level BPE with 4,096 tokens and ChatML special tokens, trained on this repository's own
//! prose (Markdown files and Rust doc comments), so the simulated engine has real text to show
//! without downloading a model. The simulator's tokens are random ids, so its "text" is word salad.
//!
//! ```text
//! cargo run --example build_sim_tokenizer
//! ```

use std::path::{Path, PathBuf};

use tokenizers::models::TrainerWrapper;
use tokenizers::models::bpe::{BPE, BpeTrainerBuilder};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::{AddedToken, Tokenizer};

const VOCAB_SIZE: usize = 4096;
const SPECIAL_TOKENS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

/// A ChatML template, as Qwen-style models use.
const CHAT_TEMPLATE: &str = "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + \
    message['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- \
    '<|im_start|>assistant\\n' }}{%- endif %}";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut corpus = Vec::new();
    collect(&root, &mut corpus)?;
    corpus.sort();
    println!("training on {} lines", corpus.len());

    let mut tokenizer = Tokenizer::new(BPE::default());
    tokenizer.with_pre_tokenizer(Some(ByteLevel::default().add_prefix_space(false)));
    tokenizer.with_decoder(Some(ByteLevel::default()));
    let mut trainer: TrainerWrapper = BpeTrainerBuilder::new()
        .vocab_size(VOCAB_SIZE)
        .min_frequency(2)
        .show_progress(false)
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .special_tokens(SPECIAL_TOKENS.iter().map(|t| AddedToken::from(*t, true)).collect())
        .build()
        .into();
    tokenizer.train(&mut trainer, corpus.iter()).map_err(|e| format!("training: {e}"))?;

    let out = root.join("assets/sim-tokenizer");
    std::fs::create_dir_all(&out)?;
    tokenizer.save(out.join("tokenizer.json"), false).map_err(|e| format!("saving: {e}"))?;
    let config = serde_json::json!({
        "bos_token": null,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "add_bos_token": false,
        "model_max_length": 8192,
        "chat_template": CHAT_TEMPLATE,
    });
    std::fs::write(out.join("tokenizer_config.json"), serde_json::to_string_pretty(&config)? + "\n")?;
    let generation = serde_json::json!({ "eos_token_id": [2, 0] });
    std::fs::write(out.join("generation_config.json"), serde_json::to_string_pretty(&generation)? + "\n")?;
    println!("wrote {} ({} tokens)", out.display(), tokenizer.get_vocab_size(true));
    Ok(())
}

/// Markdown lines and Rust doc-comment lines of the repository, skipping build output.
fn collect(dir: &Path, corpus: &mut Vec<String>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if !name.starts_with('.') && !["target", "assets", "bench-results"].contains(&name) {
                collect(&path, corpus)?;
            }
            continue;
        }
        let text = match path.extension().and_then(|e| e.to_str()) {
            Some("md") => std::fs::read_to_string(&path)?,
            Some("rs") => std::fs::read_to_string(&path)?
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("///").or_else(|| l.trim_start().strip_prefix("//!")))
                .map(|l| l.trim().to_string() + "\n")
                .collect(),
            _ => continue,
        };
        corpus.extend(text.lines().filter(|l| !l.trim().is_empty()).map(|l| l.to_string()));
    }
    Ok(())
}
