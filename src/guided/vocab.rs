//! Token bytes for llguidance's token trie, from the encoded vocabulary and the tokenizer.json text.
//!
//! `GuidedDecodingConfig::encodedVocab` holds each token exactly as tokenizer.json spells it, so the
//! bytes a token stands for depend on the tokenizer's decoder: byte-level BPE maps bytes to printable
//! characters (`Ġ` is a space), SentencePiece-style vocabularies write spaces as `▁` and single bytes
//! as `<0xNN>`, and other vocabularies (word level) are taken as written. Special (added) tokens are
//! marked so the grammar engine never treats them as text.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use llguidance::toktrie::{TokEnv, TokRxInfo, TokTrie, TokenId, TokenizerEnv};
use serde_json::Value;

use super::error::GuidedError;

/// How the decoder turns token strings into bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VocabKind {
    /// GPT-2 byte-to-unicode mapping.
    ByteLevel,
    /// `<0xNN>` byte tokens, `space` marks a space.
    ByteFallback { space: char },
    /// Token strings are the bytes.
    Raw,
}

/// What tokenizer.json tells about the vocabulary.
#[derive(Debug, Default)]
struct TokenizerFacts {
    kind: Option<VocabKind>,
    special_ids: HashSet<u32>,
}

/// Builds the shared tokenizer environment llguidance masks over.
pub(super) fn tok_env(
    encoded_vocab: &[String],
    tokenizer_json: Option<&str>,
    stop_token_ids: &[u32],
) -> Result<TokEnv, GuidedError> {
    if encoded_vocab.is_empty() {
        return Err(GuidedError::Vocabulary("the vocabulary is empty".into()));
    }
    let Some(&first_stop) = stop_token_ids.first() else {
        return Err(GuidedError::NoStopTokens);
    };
    if let Some(&id) = stop_token_ids.iter().find(|&&id| id as usize >= encoded_vocab.len()) {
        return Err(GuidedError::StopTokenOutOfRange { id, vocab_size: encoded_vocab.len() });
    }
    let facts = match tokenizer_json {
        Some(text) if !text.trim().is_empty() => tokenizer_facts(text)?,
        _ => TokenizerFacts::default(),
    };
    let kind = facts.kind.unwrap_or_else(|| guess_kind(encoded_vocab));
    let stops: HashSet<u32> = stop_token_ids.iter().copied().collect();
    let byte_map = byte_level_map();
    let mut words = Vec::with_capacity(encoded_vocab.len());
    for (id, token) in encoded_vocab.iter().enumerate() {
        let id = id as u32;
        let bytes = if facts.special_ids.contains(&id) || stops.contains(&id) {
            special_bytes(token, id)
        } else {
            token_bytes(token, kind, &byte_map)
                .ok_or_else(|| GuidedError::Vocabulary(format!("token {id} ({token:?}) has no byte form")))?
        };
        words.push(bytes);
    }
    let info = TokRxInfo::new(encoded_vocab.len() as u32, first_stop);
    let trie = TokTrie::from(&info, &words).with_eos_tokens(stop_token_ids);
    Ok(Arc::new(SimTokenizerEnv { trie }))
}

/// A special token's trie entry: the marker byte, then its name (`<…>` so grammars can name it).
fn special_bytes(token: &str, id: u32) -> Vec<u8> {
    let mut bytes = vec![TokTrie::SPECIAL_TOKEN_MARKER];
    if token.starts_with('<') && token.ends_with('>') {
        bytes.extend_from_slice(token.as_bytes());
    } else {
        bytes.extend_from_slice(format!("<[{id}]>").as_bytes());
    }
    bytes
}

fn token_bytes(token: &str, kind: VocabKind, byte_map: &HashMap<char, u8>) -> Option<Vec<u8>> {
    match kind {
        VocabKind::ByteLevel => token.chars().map(|c| byte_map.get(&c).copied()).collect(),
        VocabKind::ByteFallback { space } => Some(match byte_fallback_value(token) {
            Some(byte) => vec![byte],
            None => token.replace(space, " ").into_bytes(),
        }),
        VocabKind::Raw => Some(token.as_bytes().to_vec()),
    }
}

/// `<0xNN>` → the byte.
fn byte_fallback_value(token: &str) -> Option<u8> {
    let hex = token.strip_prefix("<0x")?.strip_suffix('>')?;
    if hex.len() != 2 {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// The byte-level BPE alphabet: printable Latin-1 bytes stand for themselves, the other bytes are
/// numbered from U+0100 upwards in byte order.
fn byte_level_map() -> HashMap<char, u8> {
    let mut map = HashMap::with_capacity(256);
    let mut next = 0x100u32;
    for byte in 0..=255u8 {
        let printable = matches!(byte, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        let c = if printable {
            char::from(byte)
        } else {
            let c = char::from_u32(next).unwrap_or('\u{FFFD}');
            next += 1;
            c
        };
        map.insert(c, byte);
    }
    map
}

/// Without a tokenizer.json: `<0xNN>` tokens mean byte fallback, `Ġ`/`Ċ` byte-level, else raw.
fn guess_kind(vocab: &[String]) -> VocabKind {
    if vocab.iter().any(|t| byte_fallback_value(t).is_some()) {
        VocabKind::ByteFallback { space: '▁' }
    } else if vocab.iter().any(|t| t.contains('Ġ') || t.contains('Ċ')) {
        VocabKind::ByteLevel
    } else {
        VocabKind::Raw
    }
}

fn tokenizer_facts(text: &str) -> Result<TokenizerFacts, GuidedError> {
    let json: Value = serde_json::from_str(text).map_err(|e| GuidedError::TokenizerJson(e.to_string()))?;
    if !json.is_object() {
        return Err(GuidedError::TokenizerJson("the document is not a JSON object".into()));
    }
    let mut special_ids = HashSet::new();
    if let Some(added) = json["added_tokens"].as_array() {
        for token in added {
            if token["special"].as_bool() == Some(true)
                && let Some(id) = token["id"].as_u64()
            {
                special_ids.insert(id as u32);
            }
        }
    }
    let mut decoder = DecoderFacts::default();
    decoder.visit(&json["decoder"]);
    let kind = if decoder.byte_level {
        Some(VocabKind::ByteLevel)
    } else if decoder.byte_fallback || decoder.space.is_some() {
        Some(VocabKind::ByteFallback { space: decoder.space.unwrap_or('▁') })
    } else if json["decoder"].is_null() {
        None
    } else {
        Some(VocabKind::Raw)
    };
    Ok(TokenizerFacts { kind, special_ids })
}

#[derive(Debug, Default)]
struct DecoderFacts {
    byte_level: bool,
    byte_fallback: bool,
    space: Option<char>,
}

impl DecoderFacts {
    fn visit(&mut self, decoder: &Value) {
        match decoder["type"].as_str() {
            Some("ByteLevel") => self.byte_level = true,
            Some("ByteFallback") => self.byte_fallback = true,
            Some("Metaspace") => {
                self.space = decoder["replacement"].as_str().and_then(|s| s.chars().next()).or(Some('▁'))
            }
            Some("Replace") if decoder["content"].as_str() == Some(" ") => {
                let pattern = decoder["pattern"]["String"].as_str().unwrap_or_default();
                let mut chars = pattern.chars();
                if let (Some(c), None) = (chars.next(), chars.next()) {
                    self.space = Some(c);
                }
            }
            Some("Sequence") => {
                for inner in decoder["decoders"].as_array().into_iter().flatten() {
                    self.visit(inner);
                }
            }
            _ => {}
        }
    }
}

/// The tokenizer environment: the trie alone (greedy tokenization is enough for forced text).
struct SimTokenizerEnv {
    trie: TokTrie,
}

impl TokenizerEnv for SimTokenizerEnv {
    fn tok_trie(&self) -> &TokTrie {
        &self.trie
    }

    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        self.trie.greedy_tokenize(s)
    }
}
