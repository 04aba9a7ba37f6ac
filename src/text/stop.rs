//! Stop strings: token sequences for the executor, and a text matcher over streamed deltas.
//!
//! The executor's stop words are *token sequences*: it stops when the generated ids end with one.
//! A stop string can reach the output through many tokenizations (`"\n\n"` as one token or two,
//! `"User:"` glued to a preceding space, ...), so a token stop word catches only the one
//! tokenization it was given. [`token_stop_sequences`] provides those sequences as an early
//! exit that saves compute; the reliable path is [`StopMatcher`], which matches the decoded text.
//! Give the matcher every stop string, token-aligned or not.

use std::sync::Arc;

use aho_corasick::Anchored;
use aho_corasick::automaton::StateID;

use super::error::{Result, TextError};
use super::stop_set::StopSet;
use super::tokenizer::Tokenizer;

/// Stop strings split by whether the executor can match them as token sequences.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokenStopSequences {
    /// Id sequences of the token-aligned stop strings, in input order, for the executor's stop words.
    pub token_sequences: Vec<Vec<u32>>,
    /// The stop strings that are not token-aligned, in input order: only text matching finds them.
    pub text_only: Vec<String>,
}

/// Splits `stop_strings` into executor stop words and text-only stop strings.
///
/// A stop string is *token-aligned* when encoding it without special tokens gives a non-empty
/// id sequence that decodes (special tokens kept) back to exactly the string. Special-token
/// strings such as `"<|im_end|>"` are token-aligned (they encode to their own id); strings that
/// encode lossily (through an unknown token, for example) are not.
///
/// Token alignment does not mean the model will produce that tokenization: see the module docs.
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
/// use trtllm::text::{token_stop_sequences, Tokenizer};
///
/// let tokenizer = Tokenizer::from_tokenizer(hf);
/// let split = token_stop_sequences(&tokenizer, &["\n\n", ""])?;
/// assert_eq!(split.token_sequences, vec![tokenizer.encode("\n\n", false)?]);
/// assert_eq!(split.text_only, vec![String::new()]); // nothing to match as tokens
/// # Ok::<(), trtllm::text::TextError>(())
/// ```
pub fn token_stop_sequences<S: AsRef<str>>(tokenizer: &Tokenizer, stop_strings: &[S]) -> Result<TokenStopSequences> {
    let mut split = TokenStopSequences::default();
    for stop in stop_strings {
        let stop = stop.as_ref();
        let ids = tokenizer.encode(stop, false)?;
        if !ids.is_empty() && tokenizer.decode(&ids, false)? == stop {
            split.token_sequences.push(ids);
        } else {
            split.text_only.push(stop.to_owned());
        }
    }
    Ok(split)
}

/// What [`StopMatcher::push`] found in a text delta.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopStep {
    /// No stop string completed: `text` can be sent on (it may be empty while text is held back).
    Continue(String),
    /// A stop string completed: send `text` and end the stream.
    Stop {
        /// Text up to the stop string (and including it if the matcher was built to include it).
        text: String,
        /// Position of the matched string in the matcher's list.
        index: usize,
        /// The stop string that matched.
        stop_string: String,
    },
}

impl StopStep {
    /// The text to send on, for either outcome.
    pub fn text(&self) -> &str {
        match self {
            StopStep::Continue(text) | StopStep::Stop { text, .. } => text,
        }
    }

    /// Whether the stream must stop.
    pub fn is_stop(&self) -> bool {
        matches!(self, StopStep::Stop { .. })
    }
}

/// Finds stop strings in a stream of text deltas, across delta boundaries.
///
/// Text that could be the start of a stop string is held back until it either completes the
/// string (the stream stops) or diverges (the text is released). Only that much is held: the
/// longest end of the text that is a proper prefix of some stop string, always on a character
/// boundary. When several stop strings occur, the one that *ends* first wins (the longest on a
/// tie), which is the one a token-by-token stream completes first; the outcome therefore does not
/// depend on how the text was cut into deltas.
///
/// ```rust
/// use trtllm::text::{StopMatcher, StopStep};
///
/// let mut matcher = StopMatcher::new(["</answer>"])?;
/// assert_eq!(matcher.push("42</ans"), StopStep::Continue("42".into()));
/// let step = matcher.push("wer> and more");
/// assert!(step.is_stop());
/// assert_eq!(step.text(), ""); // "42" was already released
/// # Ok::<(), trtllm::text::TextError>(())
/// ```
#[derive(Debug, Clone)]
pub struct StopMatcher {
    /// The stop strings and their automaton, shared by every clone (one per sequence).
    set: Arc<StopSet>,
    include_stop_string: bool,
    /// Text received but not yet released: the longest end of the text that is a proper prefix
    /// of some stop string (at most the longest stop string's length less one byte).
    held: String,
    /// The unanchored scan over all text so far: finds a stop string the moment it completes.
    scan: StateID,
    /// The anchored walk over `held`: on some stop string's prefix from `held`'s first byte.
    hold: StateID,
    stopped: bool,
}

impl StopMatcher {
    /// A matcher for `stop_strings` that cuts each match off the output.
    ///
    /// Errors with [`TextError::EmptyStopString`] if a stop string is empty.
    pub fn new<I, S>(stop_strings: I) -> Result<Self>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::builder().stop_strings(stop_strings).build()
    }

    /// Starts a builder (stop strings, whether to include the match in the output).
    pub fn builder() -> StopMatcherBuilder {
        StopMatcherBuilder::default()
    }

    /// The stop strings, in the order their indices refer to.
    pub fn stop_strings(&self) -> &[String] {
        self.set.strings()
    }

    /// Heap bytes of the compiled stop strings, which every clone of this matcher shares.
    pub fn automaton_bytes(&self) -> usize {
        self.set.automaton_bytes()
    }

    /// Whether a stop string completed; after that, pushes return nothing.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Feeds the next text delta.
    ///
    /// The work is proportional to the delta's length, plus a re-walk of at most the held-back
    /// text (shorter than the longest stop string) for each possible start that the delta
    /// rules out; the number of stop strings does not matter.
    pub fn push(&mut self, delta: &str) -> StopStep {
        if self.stopped {
            return StopStep::Continue(String::new());
        }
        let walked = self.held.len();
        self.held.push_str(delta);
        if let Some((offset, found)) = self.set.scan(&mut self.scan, delta.as_bytes()) {
            self.stopped = true;
            let end = walked + offset + 1;
            // A match starts inside `held`: text before it left every stop-string prefix.
            let cut = if self.include_stop_string { end } else { end.saturating_sub(found.len) };
            let mut text = std::mem::take(&mut self.held);
            text.truncate(cut);
            let stop_string = self.set.strings()[found.index].clone();
            return StopStep::Stop { text, index: found.index, stop_string };
        }
        let mut keep_from = self.advance_hold(walked);
        while !self.held.is_char_boundary(keep_from) {
            // Never taken (a stop string starts on a character's first byte); holding a little
            // more is safe where cutting inside a character would not be.
            keep_from -= 1;
        }
        let held = self.held.split_off(keep_from);
        StopStep::Continue(std::mem::replace(&mut self.held, held))
    }

    /// Ends the stream: releases held-back text (which never completed a stop string).
    pub fn finish(&mut self) -> String {
        self.scan = self.set.start(Anchored::No);
        self.hold = self.set.start(Anchored::Yes);
        std::mem::take(&mut self.held)
    }

    /// Extends the anchored walk from `held[walked..]` on; where it leaves every stop string,
    /// moves its start to the next position whose text up to there is still a prefix. Returns
    /// that start: the text before it can never be part of a stop string.
    fn advance_hold(&mut self, walked: usize) -> usize {
        if self.set.max_len() == 0 {
            return self.held.len();
        }
        let bytes = self.held.as_bytes();
        let anchored_start = self.set.start(Anchored::Yes);
        let mut start = 0;
        let mut state = self.hold;
        for end in walked..bytes.len() {
            if let Some(next) = self.set.walk(state, &bytes[end..=end]) {
                state = next;
                continue;
            }
            // Later starts, earliest first; a start inside a character dies at its first byte
            // (stop strings begin with a character's first byte).
            start += 1;
            state = anchored_start;
            while start <= end {
                if let Some(next) = self.set.walk(anchored_start, &bytes[start..=end]) {
                    state = next;
                    break;
                }
                start += 1;
            }
        }
        self.hold = state;
        start
    }
}

/// Builder for [`StopMatcher`].
#[derive(Debug, Clone, Default)]
pub struct StopMatcherBuilder {
    stop_strings: Vec<String>,
    include_stop_string: bool,
}

impl StopMatcherBuilder {
    /// Adds stop strings (their indices continue from those added before).
    pub fn stop_strings<I, S>(mut self, stop_strings: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.stop_strings.extend(stop_strings.into_iter().map(Into::into));
        self
    }

    /// Keeps the matched stop string at the end of the output (default: cut it off).
    pub fn include_stop_string(mut self, include: bool) -> Self {
        self.include_stop_string = include;
        self
    }

    /// Builds the matcher; errors with [`TextError::EmptyStopString`] if a stop string is empty.
    ///
    /// Compiling the automaton takes time and memory in proportion to the stop strings' total
    /// length (milliseconds for a few short strings, a second or so for megabytes): build large
    /// sets off the threads that serve other work.
    pub fn build(self) -> Result<StopMatcher> {
        if let Some(index) = self.stop_strings.iter().position(String::is_empty) {
            return Err(TextError::EmptyStopString { index });
        }
        let set = StopSet::build(self.stop_strings)?;
        Ok(StopMatcher {
            scan: set.start(Anchored::No),
            hold: set.start(Anchored::Yes),
            set,
            include_stop_string: self.include_stop_string,
            held: String::new(),
            stopped: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matcher(stops: &[&str], include: bool) -> StopMatcher {
        match StopMatcher::builder().stop_strings(stops.iter().copied()).include_stop_string(include).build() {
            Ok(m) => m,
            Err(err) => panic!("building matcher: {err}"),
        }
    }

    #[test]
    fn holds_back_only_the_longest_possible_start() {
        let mut m = matcher(&["aab"], false);
        // "xaa": both "a" and "aa" could start "aab"; "aa" must be held.
        assert_eq!(m.push("xaa"), StopStep::Continue("x".into()));
        assert_eq!(m.push("a"), StopStep::Continue("a".into()));
        assert_eq!(m.finish(), "aa");
    }

    #[test]
    fn empty_stop_string_is_rejected() {
        let err = StopMatcher::new(["ok", ""]).err();
        assert!(matches!(err, Some(TextError::EmptyStopString { index: 1 })), "{err:?}");
    }

    #[test]
    fn pushes_after_a_stop_return_nothing() {
        let mut m = matcher(&["."], false);
        assert!(m.push("a.b").is_stop());
        assert!(m.is_stopped());
        assert_eq!(m.push("more"), StopStep::Continue(String::new()));
        assert_eq!(m.finish(), "");
    }
}
