//! Incremental detokenization: turns one stream of generated token ids into text deltas.

use std::fmt;
use std::sync::Arc;

use tokenizers::{DecodeStreamError, step_decode_stream};

use super::error::{Result, TextError};
use super::tokenizer::Tokenizer;

/// Decodes the tokens of one generation stream as they arrive, returning only the new text.
///
/// Decoding tokens one at a time is wrong for most tokenizers: a character may span several
/// byte-level or `<0xNN>` byte-fallback tokens, and SentencePiece-style tokenizers decide about a
/// leading space from the surrounding tokens. This decoder runs the same algorithm as
/// `tokenizers`' `DecodeStream::step` (re-decoding a short window of recent tokens and emitting
/// what lies beyond the text already returned), but owns its state and shares the tokenizer, so
/// it is `'static` and can live in a spawned task.
///
/// Text ending in an incomplete character is held back, so no delta ever ends in a U+FFFD
/// caused by a split character. [`finish`](Self::finish) flushes what is still held.
///
/// For every id sequence whose full decoding contains no U+FFFD, the concatenation of all
/// deltas and `finish()` equals [`Tokenizer::decode`] of all ids. Byte-level tokenizers keep
/// this even with invalid bytes. Under a `ByteFallback` decoder, an invalid run of `<0xNN>`
/// tokens makes `decode` replace *every* byte of the run, including characters that were
/// complete (and already streamed) before the run went bad; the stream cannot take text back,
/// so it keeps what it sent and continues with the replacement characters of the new tokens.
///
/// ```rust
/// # use tokenizers::models::bpe::{BPE, Vocab};
/// # use tokenizers::pre_tokenizers::byte_level::ByteLevel;
/// # let vocab: Vocab = ByteLevel::alphabet().into_iter().enumerate()
/// #     .map(|(id, c)| (c.to_string(), id as u32)).collect();
/// # let model = BPE::builder().vocab_and_merges(vocab, vec![]).build().unwrap();
/// # let mut hf = tokenizers::Tokenizer::new(model);
/// # hf.with_pre_tokenizer(Some(ByteLevel::default().add_prefix_space(false)));
/// # hf.with_decoder(Some(ByteLevel::default()));
/// use trtllm::text::Tokenizer;
///
/// // A byte-level tokenizer with one token per byte: the crab emoji takes four tokens.
/// let tokenizer = Tokenizer::from_tokenizer(hf);
/// let ids = tokenizer.encode("hi 🦀", false)?;
/// let mut decoder = tokenizer.incremental_decoder(true);
/// let deltas: Vec<String> = ids.iter().map(|&id| decoder.push(&[id])).collect::<Result<_, _>>()?;
/// assert_eq!(deltas, ["h", "i", " ", "", "", "", "🦀"]);
/// assert_eq!(decoder.finish(), "");
/// # Ok::<(), trtllm::text::TextError>(())
/// ```
pub struct IncrementalDecoder {
    tokenizer: Arc<tokenizers::Tokenizer>,
    skip_special_tokens: bool,
    /// Recent ids: a few already-returned ones for context, then the ones not yet returned.
    ids: Vec<u32>,
    /// Decoding of `ids[..prefix_index]`, text that was already returned.
    prefix: String,
    prefix_index: usize,
}

impl IncrementalDecoder {
    /// Starts a decoder for a new stream; `skip_special_tokens` drops special tokens from the text.
    pub fn new(tokenizer: &Tokenizer, skip_special_tokens: bool) -> Self {
        Self {
            tokenizer: tokenizer.shared_inner(),
            skip_special_tokens,
            ids: Vec::new(),
            prefix: String::new(),
            prefix_index: 0,
        }
    }

    /// Feeds newly generated ids and returns the text they complete (possibly empty).
    ///
    /// Errors only when the tokenizer's decoder itself fails.
    pub fn push(&mut self, ids: &[u32]) -> Result<String> {
        let mut delta = String::new();
        for &id in ids {
            match step_decode_stream(
                &self.tokenizer,
                vec![id],
                self.skip_special_tokens,
                &mut self.ids,
                &mut self.prefix,
                &mut self.prefix_index,
            ) {
                // The usual case, one id with text: its string is the delta, moved, not copied.
                Ok(Some(text)) if delta.is_empty() => delta = text,
                Ok(Some(text)) => delta.push_str(&text),
                Ok(None) => {}
                Err(err) if err.downcast_ref::<DecodeStreamError>().is_some() => {
                    delta.push_str(&self.resync()?);
                }
                Err(err) => return Err(TextError::Decode(err.to_string())),
            }
        }
        Ok(delta)
    }

    /// Ends the stream: returns the held-back tail (with U+FFFD for bytes that never formed a
    /// character) and resets the decoder to a fresh stream.
    pub fn finish(&mut self) -> String {
        // `push` already decoded this exact window successfully, so decoding cannot fail here;
        // should a decoder still fail, an empty tail is the best remaining answer.
        let tail = self.decode(&self.ids).and_then(|full| self.text_after_prefix(&full)).unwrap_or_default();
        self.ids.clear();
        self.prefix.clear();
        self.prefix_index = 0;
        tail
    }

    /// Recovers when the window's decoding no longer starts with the text already returned,
    /// which happens when a byte-fallback run turns invalid: returns the new tokens' text and
    /// marks the whole window as returned.
    fn resync(&mut self) -> Result<String> {
        let full = self.decode(&self.ids)?;
        let delta = self.text_after_prefix(&full)?;
        self.prefix = full;
        self.prefix_index = self.ids.len();
        Ok(delta)
    }

    /// The text of `ids[prefix_index..]` given `full`, the decoding of the whole window.
    fn text_after_prefix(&self, full: &str) -> Result<String> {
        if let Some(rest) = full.strip_prefix(self.prefix.as_str()) {
            return Ok(rest.to_owned());
        }
        // Decode the new ids with one returned token in front, so space handling that depends
        // on a token's position (Metaspace, Strip) sees them mid-text as `decode` would.
        let new_ids = &self.ids[self.prefix_index..];
        let Some(context_start) = self.prefix_index.checked_sub(1) else {
            return self.decode(new_ids);
        };
        let with_context = self.decode(&self.ids[context_start..])?;
        let context = self.decode(&self.ids[context_start..self.prefix_index])?;
        match with_context.strip_prefix(context.as_str()) {
            Some(rest) => Ok(rest.to_owned()),
            None => self.decode(new_ids),
        }
    }

    fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer.decode(ids, self.skip_special_tokens).map_err(|e| TextError::Decode(e.to_string()))
    }
}

impl fmt::Debug for IncrementalDecoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IncrementalDecoder")
            .field("skip_special_tokens", &self.skip_special_tokens)
            .field("window", &self.ids)
            .field("returned_prefix", &self.prefix)
            .finish()
    }
}

// The decoder is made from a tokenizer, so the constructor lives here, beside the type it makes:
// the tokenizer module then needs nothing from this one.
impl Tokenizer {
    /// Starts an incremental decoder for one stream of generated tokens.
    pub fn incremental_decoder(&self, skip_special_tokens: bool) -> IncrementalDecoder {
        IncrementalDecoder::new(self, skip_special_tokens)
    }
}
