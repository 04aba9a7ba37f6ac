//! Small tokenizers built inside the tests (no downloads), and tokenizer directories on disk.
//!
//! - [`byte_level_bpe`]: a GPT-2/Llama-3 style byte-level BPE trained on generated text, with
//!   ChatML special tokens.
//! - [`byte_fallback_bpe`]: a Llama-2 style SentencePiece-like BPE (Metaspace `▁` spaces,
//!   `<0xNN>` byte-fallback tokens, `<s>` added in front) trained on ASCII only, so CJK and emoji
//!   always go through byte-fallback tokens.
//! - [`write_tokenizer_dir`]: a Hugging Face model directory in a temporary folder.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::Path;
use std::sync::OnceLock;

use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::models::TrainerWrapper;
use tokenizers::models::bpe::{BPE, BpeTrainerBuilder};
use tokenizers::normalizers::replace::Replace;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::processors::template::TemplateProcessing;
use tokenizers::{AddedToken, DecoderWrapper, Tokenizer};

/// Special tokens of the byte-level tokenizer, in id order (ids 0, 1, 2).
pub const CHATML_SPECIAL_TOKENS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
/// Special tokens of the byte-fallback tokenizer, in id order (ids 0, 1, 2).
pub const SPM_SPECIAL_TOKENS: [&str; 3] = ["<unk>", "<s>", "</s>"];

/// Text mixing every script the tests care about: multi-byte CJK and emoji (including
/// ZWJ sequences, skin tones and flags) that byte-level tokens split mid-character.
pub const MIXED_TEXT: &str = "Hello, world! 你好，世界。 Crabs 🦀 wave 👋🏽 at the family 👨‍👩‍👧 in 東京 🇯🇵. \
                              Ünïcödé  spaces\tand\nnew lines; 数字 12345 😀🎉";

/// A deterministic pseudo-random generator (splitmix64) so tests and benches are reproducible.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator with the given seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// One element of `items` (non-empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

const SYLLABLES: &[&str] = &[
    "ka", "to", "ri", "an", "the", "ing", "er", "on", "qu", "st", "ex", "pro", "ly", "ment", "ta", "vi", "lo", "ne",
    "su", "mi", "ra", "de", "co", "un", "pre", "tion", "al", "is", "or", "gh",
];
const EMOJI: &[&str] = &["🦀", "👋", "🎉", "😀", "👍🏽", "🇯🇵", "👨‍👩‍👧", "❤️", "🚀", "✨"];
const PUNCTUATION: &[&str] = &[",", ".", "!", "?", ";", ":", " -", "\n", "  ", "\t"];

/// A pseudo-random word of 1 to 4 syllables, sometimes capitalised.
pub fn ascii_word(rng: &mut SplitMix) -> String {
    let syllables = 1 + rng.below(4);
    let mut word: String = (0..syllables).map(|_| rng.pick(SYLLABLES)).collect();
    if rng.below(8) == 0 {
        word[..1].make_ascii_uppercase();
    }
    word
}

/// One CJK ideograph out of the first few hundred of the block.
pub fn cjk_char(rng: &mut SplitMix) -> char {
    char::from_u32(0x4E00 + rng.below(300) as u32).unwrap_or('中')
}

/// `lines` lines of ASCII words only (for the byte-fallback tokenizer's alphabet).
pub fn ascii_corpus(lines: usize, seed: u64) -> Vec<String> {
    let mut rng = SplitMix::new(seed);
    (0..lines)
        .map(|_| {
            let words = 4 + rng.below(12);
            let mut line = String::new();
            for i in 0..words {
                if i > 0 {
                    line.push(' ');
                }
                line.push_str(&ascii_word(&mut rng));
                if rng.below(6) == 0 {
                    line.push_str(rng.pick(&[",", ".", "!", "?", ":"]));
                }
            }
            line
        })
        .collect()
}

/// `lines` lines mixing ASCII words, CJK runs, emoji, digits and punctuation.
pub fn mixed_corpus(lines: usize, seed: u64) -> Vec<String> {
    let mut rng = SplitMix::new(seed);
    (0..lines)
        .map(|_| {
            let items = 6 + rng.below(14);
            mixed_line(&mut rng, items)
        })
        .collect()
}

/// A line of `items` pieces drawn like [`mixed_corpus`]'s.
pub fn mixed_line(rng: &mut SplitMix, items: usize) -> String {
    let mut line = String::new();
    for _ in 0..items {
        match rng.below(10) {
            0..=5 => {
                line.push(' ');
                line.push_str(&ascii_word(rng));
            }
            6 | 7 => {
                let run = 1 + rng.below(4);
                line.extend((0..run).map(|_| cjk_char(rng)));
            }
            8 => line.push_str(rng.pick(EMOJI)),
            _ => {
                line.push_str(rng.pick(PUNCTUATION));
                if rng.below(3) == 0 {
                    line.push_str(&rng.below(10_000).to_string());
                }
            }
        }
    }
    line
}

/// Trains a byte-level BPE with `vocab_size` tokens on `corpus`; ids 0–2 are
/// [`CHATML_SPECIAL_TOKENS`].
pub fn train_byte_level_bpe(corpus: &[String], vocab_size: usize) -> Tokenizer {
    let mut tokenizer = Tokenizer::new(BPE::default());
    tokenizer.with_pre_tokenizer(Some(ByteLevel::default().add_prefix_space(false)));
    tokenizer.with_decoder(Some(ByteLevel::default()));
    let mut trainer: TrainerWrapper = BpeTrainerBuilder::new()
        .vocab_size(vocab_size)
        .min_frequency(2)
        .show_progress(false)
        .initial_alphabet(ByteLevel::alphabet().into_iter().collect())
        .special_tokens(CHATML_SPECIAL_TOKENS.iter().map(|t| AddedToken::from(*t, true)).collect())
        .build()
        .into();
    if let Err(err) = tokenizer.train(&mut trainer, corpus.iter()) {
        panic!("training byte-level BPE: {err}");
    }
    tokenizer
}

/// A small byte-level BPE (about 1,000 tokens) trained on a few hundred generated lines
/// (trained once per test binary, then cloned).
pub fn byte_level_bpe() -> Tokenizer {
    static TRAINED: OnceLock<Tokenizer> = OnceLock::new();
    TRAINED.get_or_init(|| train_byte_level_bpe(&mixed_corpus(400, 7), 1_000)).clone()
}

/// A Llama-2 style tokenizer: BPE over `▁`-marked words with `<0xNN>` byte fallback, decoders
/// Replace(`▁`→` `) + ByteFallback + Fuse + Strip(one leading space), and `<s>` prepended when
/// special tokens are added. Trained on ASCII only, so every non-ASCII character is spelled
/// with byte-fallback tokens. Ids 0–2 are [`SPM_SPECIAL_TOKENS`]. Built once per test binary.
pub fn byte_fallback_bpe() -> Tokenizer {
    static BUILT: OnceLock<Tokenizer> = OnceLock::new();
    BUILT.get_or_init(build_byte_fallback_bpe).clone()
}

fn build_byte_fallback_bpe() -> Tokenizer {
    let mut trained = Tokenizer::new(BPE::default());
    trained.with_pre_tokenizer(Some(Metaspace::new('▁', PrependScheme::First, true)));
    let mut trainer: TrainerWrapper = BpeTrainerBuilder::new()
        .vocab_size(600)
        .min_frequency(2)
        .show_progress(false)
        .special_tokens(SPM_SPECIAL_TOKENS.iter().map(|t| AddedToken::from(*t, true)).collect())
        .build()
        .into();
    if let Err(err) = trained.train(&mut trainer, ascii_corpus(300, 11).iter()) {
        panic!("training byte-fallback BPE: {err}");
    }

    // The trainer knows nothing of byte fallback: add the 256 `<0xNN>` tokens after the learnt
    // vocabulary and switch the model's fallback on by editing its serialized form.
    let json = trained.to_string(false).unwrap_or_else(|err| panic!("serializing tokenizer: {err}"));
    let mut value: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|err| panic!("parsing tokenizer: {err}"));
    let model = &mut value["model"];
    model["byte_fallback"] = true.into();
    model["unk_token"] = "<unk>".into();
    let vocab = model["vocab"].as_object_mut().unwrap_or_else(|| panic!("BPE vocab is not an object"));
    let next_id = vocab.values().filter_map(|v| v.as_u64()).max().unwrap_or(0) + 1;
    for byte in 0..=255u64 {
        vocab.insert(format!("<0x{byte:02X}>"), (next_id + byte).into());
    }
    let mut tokenizer: Tokenizer = value.to_string().parse().unwrap_or_else(|err| panic!("reloading tokenizer: {err}"));

    let replace = Replace::new("▁", " ").unwrap_or_else(|err| panic!("Replace decoder: {err}"));
    tokenizer.with_decoder(Some(Sequence::new(vec![
        DecoderWrapper::Replace(replace),
        DecoderWrapper::ByteFallback(ByteFallback::new()),
        DecoderWrapper::Fuse(Fuse::new()),
        DecoderWrapper::Strip(Strip::new(' ', 1, 0)),
    ])));
    let bos_id = tokenizer.token_to_id("<s>").unwrap_or_else(|| panic!("<s> missing"));
    let bos_first = TemplateProcessing::builder()
        .try_single("<s> $A")
        .and_then(|b| b.special_tokens(vec![("<s>", bos_id)]).build().map_err(|e| e.to_string()))
        .unwrap_or_else(|err| panic!("template processor: {err}"));
    tokenizer.with_post_processor(Some(bos_first));
    tokenizer
}

/// Writes `tokenizer` as `tokenizer.json` into `dir`, plus each `(file name, contents)` pair.
pub fn write_tokenizer_files(dir: &Path, tokenizer: &Tokenizer, extra_files: &[(&str, String)]) {
    if let Err(err) = tokenizer.save(dir.join("tokenizer.json"), false) {
        panic!("saving tokenizer.json: {err}");
    }
    for (name, contents) in extra_files {
        if let Err(err) = std::fs::write(dir.join(name), contents) {
            panic!("writing {name}: {err}");
        }
    }
}

/// A temporary Hugging Face-style tokenizer directory; removed when dropped.
pub fn write_tokenizer_dir(tokenizer: &Tokenizer, extra_files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("creating temp dir: {err}"));
    write_tokenizer_files(dir.path(), tokenizer, extra_files);
    dir
}

/// Special tokens of [`word_level_tokenizer`], in id order (ids 0–3); `[UNK]` is id 4.
pub const WORD_SPECIAL_TOKENS: [&str; 4] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|eot_id|>"];
/// The words of [`word_level_tokenizer`] (ids 5–12).
pub const WORDS: [&str; 8] = ["red", "green", "blue", "cat", "dog", "sat", "ran", "fast"];

/// A tiny word-level tokenizer: 13 tokens (4 special, `[UNK]`, 8 words), no decoder, so decoding
/// joins tokens with spaces. A simulated engine with this vocabulary generates each special
/// token about once in 13 tokens.
pub fn word_level_tokenizer() -> Tokenizer {
    let mut vocab = serde_json::Map::new();
    let mut added = Vec::new();
    for (id, token) in WORD_SPECIAL_TOKENS.iter().enumerate() {
        vocab.insert(token.to_string(), id.into());
        added.push(serde_json::json!({
            "id": id, "content": token, "single_word": false, "lstrip": false, "rstrip": false,
            "normalized": false, "special": true,
        }));
    }
    vocab.insert("[UNK]".into(), WORD_SPECIAL_TOKENS.len().into());
    for (i, word) in WORDS.iter().enumerate() {
        vocab.insert(word.to_string(), (WORD_SPECIAL_TOKENS.len() + 1 + i).into());
    }
    let json = serde_json::json!({
        "version": "1.0",
        "added_tokens": added,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
        "pre_tokenizer": {"type": "WhitespaceSplit"},
    });
    json.to_string().parse().unwrap_or_else(|err| panic!("word-level tokenizer: {err}"))
}

/// A simulated engine directory (1 ms iterations, real time) whose vocabulary is `tokenizer`'s,
/// with `tokenizer.json` and `extra_files` in its `tokenizer/` subdirectory.
pub fn engine_with_tokenizer(tokenizer: &Tokenizer, extra_files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|err| panic!("creating temp dir: {err}"));
    trtllm::sim::SimulatedEngine::builder()
        .model_name("text-test")
        .vocab_size(tokenizer.get_vocab_size(true))
        .iteration_ms(1.0)
        .time_scale(1.0)
        .build()
        .write_to(dir.path())
        .unwrap_or_else(|err| panic!("writing engine: {err}"));
    let tokenizer_dir = dir.path().join("tokenizer");
    std::fs::create_dir_all(&tokenizer_dir).unwrap_or_else(|err| panic!("{err}"));
    write_tokenizer_files(&tokenizer_dir, tokenizer, extra_files);
    dir
}
