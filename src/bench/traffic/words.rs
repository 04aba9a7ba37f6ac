//! Random text prompts that round-trip through the tokenizer: whole-word tokens only, so the
//! text a server re-tokenizes is exactly the token ids drawn, and a prompt has the length asked.

use std::sync::Arc;

use crate::text::{ChatMessage, Tokenizer};

/// The tokens a random text prompt may use: each is a whole lowercase word (two letters or
/// more) with its leading space (`Ġword`, `▁word`), which a word between others encodes to, so
/// `decode` then `encode` of any sequence of them gives the same ids.
///
/// ```rust
/// use trtllm::bench::WordVocabulary;
///
/// let dir = tempfile::tempdir()?;
/// let engine = trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path())?;
/// let tokenizer = trtllm::text::Tokenizer::from_dir(engine.join("tokenizer"))?;
/// let words = WordVocabulary::from_tokenizer(&tokenizer);
/// assert!(words.ids().len() > 100);
/// let ids: Vec<u32> = words.ids().iter().step_by(97).take(50).copied().collect();
/// let text = tokenizer.decode(&ids, false)?;
/// assert_eq!(tokenizer.encode(&text, false)?, ids, "the text round-trips");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordVocabulary {
    ids: Arc<[u32]>,
}

impl WordVocabulary {
    /// Scans `tokenizer`'s vocabulary for whole-word tokens.
    pub fn from_tokenizer(tokenizer: &Tokenizer) -> Self {
        let ids: Vec<u32> = (0..tokenizer.vocab_size() as u32)
            .filter(|&id| {
                let Ok(word) = tokenizer.decode(&[id], true) else { return false };
                let word = word.trim();
                word.len() >= 2
                    && word.bytes().all(|b| b.is_ascii_lowercase())
                    && tokenizer
                        .encode(&format!("{word} {word} {word}"), false)
                        .is_ok_and(|ids| ids.len() == 3 && ids[1] == id && ids[2] == id)
            })
            .collect();
        WordVocabulary { ids: ids.into() }
    }

    /// The word tokens, ascending.
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Tokens a server adds around a prompt of these words: its chat template (with the
    /// generation prompt) for a chat request, the special tokens of a plain encode otherwise.
    pub fn overhead(&self, tokenizer: &Tokenizer, chat: bool) -> usize {
        let sample: Vec<u32> = self.ids.iter().take(8).copied().collect();
        let Ok(text) = tokenizer.decode(&sample, false) else { return 0 };
        let bare = tokenizer.encode(&text, false).map_or(sample.len(), |ids| ids.len());
        let wrapped = match (chat, tokenizer.chat_template()) {
            (true, Some(template)) => template
                .render(&[ChatMessage::user(text.clone())], true)
                .ok()
                .and_then(|rendered| tokenizer.encode(&rendered, false).ok())
                .map(|ids| ids.len()),
            _ => tokenizer.encode(&text, true).ok().map(|ids| ids.len()),
        };
        wrapped.unwrap_or(bare).saturating_sub(bare)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_words_round_trip_and_a_chat_prompt_has_the_length_asked() {
        let dir = tempfile::tempdir().unwrap();
        let engine = crate::builtin::write_engine(&crate::builtin::builtin_engine(), dir.path()).unwrap();
        let tokenizer = Tokenizer::from_dir(engine.join("tokenizer")).unwrap();
        let words = WordVocabulary::from_tokenizer(&tokenizer);
        assert!(words.ids().len() > 100, "{} word tokens", words.ids().len());
        let ids: Vec<u32> = words.ids().iter().cycle().step_by(7).take(100).copied().collect();
        let text = tokenizer.decode(&ids, false).unwrap();
        assert_eq!(tokenizer.encode(&text, false).unwrap(), ids);
        let overhead = words.overhead(&tokenizer, true);
        let template = tokenizer.chat_template().unwrap();
        let rendered = template.render(&[ChatMessage::user(text)], true).unwrap();
        assert_eq!(tokenizer.encode(&rendered, false).unwrap().len(), 100 + overhead);
    }
}
