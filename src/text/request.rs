//! Setting a request up for text: end ids and stop words for the executor, stop strings for the text.

use super::stop::{StopMatcher, token_stop_sequences};
use super::tokenizer::Tokenizer;
use crate::GenerationRequest;
use crate::error::{Error, InvalidRequest, Result};

/// How a request's text ends and what it shows: stop strings, eos handling, special tokens.
///
/// ```rust
/// use trtllm::text::TextOptions;
///
/// let options = TextOptions::new().stop_strings(["\n\n", "<|im_end|>"]).include_stop_string(false);
/// assert_eq!(options.stop_string_list(), ["\n\n", "<|im_end|>"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextOptions {
    stop_strings: Vec<String>,
    include_stop_string: bool,
    ignore_eos: bool,
    skip_special_tokens: bool,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions {
            stop_strings: Vec::new(),
            include_stop_string: false,
            ignore_eos: false,
            skip_special_tokens: true,
        }
    }
}

impl TextOptions {
    /// No stop strings, stop at the tokenizer's eos ids, special tokens left out of the text.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stop strings (added to any given before).
    pub fn stop_strings<I, S>(mut self, stop_strings: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.stop_strings.extend(stop_strings.into_iter().map(Into::into));
        self
    }

    /// Keep the matched stop string at the end of the text (default: cut it off).
    pub fn include_stop_string(mut self, include: bool) -> Self {
        self.include_stop_string = include;
        self
    }

    /// Generate past the eos ids, up to `max_tokens` (default: stop at them).
    pub fn ignore_eos(mut self, ignore: bool) -> Self {
        self.ignore_eos = ignore;
        self
    }

    /// Leave special tokens such as `<|im_start|>` out of the text (default: true).
    pub fn skip_special_tokens(mut self, skip: bool) -> Self {
        self.skip_special_tokens = skip;
        self
    }

    /// The stop strings given so far.
    pub fn stop_string_list(&self) -> &[String] {
        &self.stop_strings
    }
}

/// A [`GenerationRequest`] set up for text, and the [`TextPlan`] its [`TextStream`](crate::text::TextStream) follows.
///
/// Setting up does what a caller working in text would otherwise have to remember:
///
/// - **End ids.** The tokenizer's first eos id becomes the executor's end id (or `-1` with
///   [`ignore_eos`](TextOptions::ignore_eos)); every other eos id (generation_config.json often
///   lists several, e.g. Llama-3's end-of-text, end-of-message and end-of-turn) becomes a
///   single-token executor stop word. The text stream treats them like the end id: they end the
///   sequence with [`FinishReason::EndId`](crate::FinishReason::EndId) and are not part of the
///   output's tokens or text. Like the end id, they wait for the sampling's `min_tokens`: with
///   `min_tokens` set they are no executor stop words (the executor would stop on them at
///   once), the request streams in the executor, and the text stream ends the sequence (and
///   cancels the work) at the first one that follows at least `min_tokens` tokens.
/// - **Stop strings.** Every stop string is matched in the decoded text. Those that are short
///   (up to [`TextRequest::TOKEN_STOP_MAX_BYTES`]) and token-aligned (see
///   [`token_stop_sequences`]) are also executor stop words, so the executor
///   stops on them by itself when the model produces that tokenization. A stop string that is a
///   special token (`"<|im_end|>"`, `"<|eot_id|>"`) never shows in text decoded without special
///   tokens, so the stream matches it on the raw token id instead.
/// - **Non-streaming requests with stop strings** run streaming in the executor, so a stop string
///   can cancel the work as soon as it appears; the [`TextStream`](crate::text::TextStream) then sends
///   no chunks and delivers everything with the final, as a non-streaming request expects.
///
/// ```rust
/// use trtllm::text::Tokenizer;
/// use trtllm::GenerationRequest;
/// use trtllm::text::{TextOptions, TextRequest};
///
/// let dir = tempfile::tempdir()?;
/// trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path())?;
/// let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer"))?;
/// assert_eq!(tokenizer.eos_token_ids(), [2, 0]); // <|im_end|>, then <|endoftext|>
///
/// let request = GenerationRequest::new(tokenizer.encode("Hello", false)?, 64).with_streaming(false);
/// let options = TextOptions::new().stop_strings(["<|im_start|>", "\n\n"]);
/// let (request, plan) = TextRequest::new(request, &tokenizer, options)?.into_parts();
/// assert_eq!(request.end_id(), Some(Some(2)));
/// let im_start = tokenizer.encode("<|im_start|>", false)?;
/// let blank_line = tokenizer.encode("\n\n", false)?;
/// assert_eq!(request.stop_words(), [im_start, blank_line, vec![0]]);
/// assert!(request.streaming()); // so that a stop string can end it early
/// assert!(!plan.client_streaming());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct TextRequest {
    request: GenerationRequest,
    plan: TextPlan,
}

/// What a [`TextStream`](crate::text::TextStream) needs to turn a request's tokens into text and end it.
///
/// Made by [`TextRequest::new`] together with the executor request it belongs to.
#[derive(Debug, Clone)]
pub struct TextPlan {
    pub(crate) tokenizer: Tokenizer,
    /// A matcher over every stop string; cloned for each sequence.
    pub(crate) stop: StopMatcher,
    /// Stop strings that are one special token, by id: matched on the raw token.
    pub(crate) special_stops: Vec<(u32, String)>,
    /// Token-aligned stop strings with their id sequences, to name the string when the
    /// executor stopped on one that the text did not show.
    pub(crate) token_stops: Vec<(Vec<u32>, String)>,
    /// Eos ids other than the end id: they end the sequence like the end id.
    pub(crate) extra_end_ids: Vec<u32>,
    /// Tokens a sequence has before an eos id in `extra_end_ids` may end it (the sampling's
    /// `min_tokens`, which the executor applies to the end id alone).
    pub(crate) min_tokens: usize,
    pub(crate) include_stop_string: bool,
    pub(crate) skip_special_tokens: bool,
    pub(crate) client_streaming: bool,
}

impl TextRequest {
    /// Sets `request` up for text with `tokenizer`: end id, stop words and streaming as described
    /// on [`TextRequest`]. Stop words already on `request` are kept.
    ///
    /// Errors with [`Error::InvalidRequest`] naming `stop` when a stop string is empty or cannot
    /// be encoded.
    pub fn new(request: GenerationRequest, tokenizer: &Tokenizer, options: TextOptions) -> Result<Self> {
        let TextOptions { stop_strings, include_stop_string, ignore_eos, skip_special_tokens } = options;
        let invalid = |value: &str, rule| {
            Error::InvalidRequest(InvalidRequest::Parameter { field: "stop", value: format!("{value:?}"), rule })
        };
        if let Some(empty) = stop_strings.iter().find(|s| s.is_empty()) {
            return Err(invalid(empty, "stop strings must not be empty"));
        }
        let stop = StopMatcher::builder()
            .stop_strings(&stop_strings)
            .include_stop_string(include_stop_string)
            .build()
            .map_err(|_| invalid("", "stop strings must not be empty"))?;

        let mut token_stops = Vec::new();
        let mut special_stops = Vec::new();
        // Only short stop strings are worth the tokenizer: encoding is the costly part of setting
        // up (a long string without spaces is one word to BPE, quadratic in its length), a long
        // token sequence seldom comes out as the model's own tokenization, and the text matches
        // every stop string anyway, cancelling the work when a long one appears.
        for stop_string in stop_strings.iter().filter(|s| s.len() <= Self::TOKEN_STOP_MAX_BYTES) {
            let not_encodable = |_| invalid(stop_string, "must be encodable by the tokenizer");
            let split = token_stop_sequences(tokenizer, std::slice::from_ref(stop_string)).map_err(not_encodable)?;
            if let Some(ids) = split.token_sequences.into_iter().next() {
                // A special token vanishes from text decoded without special tokens.
                if let [id] = ids[..]
                    && tokenizer.decode(&ids, true).map_err(not_encodable)?.is_empty()
                {
                    special_stops.push((id, stop_string.clone()));
                }
                token_stops.push((ids, stop_string.clone()));
            }
        }

        let mut request = request;
        let mut stop_words = request.stop_words().to_vec();
        let mut extra_end_ids = Vec::new();
        let mut add_word = |word: Vec<u32>| {
            if !stop_words.contains(&word) {
                stop_words.push(word);
            }
        };
        for (ids, _) in &token_stops {
            add_word(ids.clone());
        }
        let min_tokens = request.sampling().min_tokens.unwrap_or(0) as usize;
        if ignore_eos {
            request = request.with_end_id(None);
        } else if let Some((&end_id, others)) = tokenizer.eos_token_ids().split_first() {
            request = request.with_end_id(end_id);
            for &id in others {
                if id != end_id && !extra_end_ids.contains(&id) {
                    extra_end_ids.push(id);
                    if min_tokens == 0 {
                        // Executor stop words ignore min_tokens: with it, only the text ends here.
                        add_word(vec![id]);
                    }
                }
            }
        }
        request = request.with_stop_words(stop_words);

        let client_streaming = request.streaming();
        if !stop_strings.is_empty() || (min_tokens > 0 && !extra_end_ids.is_empty()) {
            // Even a token-aligned stop string may reach the text through another tokenization,
            // which only the text sees (and an eos id after min_tokens only the text ends on):
            // stream, so the text can cancel the work when it ends.
            request = request.with_streaming(true);
        }
        let plan = TextPlan {
            tokenizer: tokenizer.clone(),
            stop,
            special_stops,
            token_stops,
            extra_end_ids,
            min_tokens,
            include_stop_string,
            skip_special_tokens,
            client_streaming,
        };
        Ok(TextRequest { request, plan })
    }

    /// [`TextRequest::new`], run on tokio's blocking pool when the stop strings are large.
    ///
    /// Encoding the stop strings and compiling their automaton takes time in proportion to their
    /// total length: about a second for the documented limit (1,024 strings of 4 KiB). An async
    /// server calls this instead of [`TextRequest::new`] so that such a request does not hold up
    /// the worker threads that answer health checks and stream other requests. Small sets (below
    /// [`TextRequest::BLOCKING_POOL_BYTES`]) are set up in place: a thread hop would cost more.
    pub async fn prepare(request: GenerationRequest, tokenizer: &Tokenizer, options: TextOptions) -> Result<Self> {
        let stop_bytes: usize = options.stop_strings.iter().map(String::len).sum();
        if stop_bytes < Self::BLOCKING_POOL_BYTES {
            return Self::new(request, tokenizer, options);
        }
        let tokenizer = tokenizer.clone();
        tokio::task::spawn_blocking(move || Self::new(request, &tokenizer, options))
            .await
            .map_err(|e| Error::Internal(format!("setting the request's stop strings up: {e}")))?
    }

    /// The longest stop string (in bytes) that is encoded to become an executor stop word as well;
    /// longer ones are matched in the text only.
    pub const TOKEN_STOP_MAX_BYTES: usize = 64;

    /// Total stop-string bytes from which [`TextRequest::prepare`] uses the blocking pool.
    pub const BLOCKING_POOL_BYTES: usize = 16 * 1024;

    /// The request to enqueue.
    pub fn request(&self) -> &GenerationRequest {
        &self.request
    }

    /// What the text stream of this request follows.
    pub fn plan(&self) -> &TextPlan {
        &self.plan
    }

    /// The request to enqueue, and the plan to give [`TextStream::new`](crate::text::TextStream::new)
    /// with its stream.
    pub fn into_parts(self) -> (GenerationRequest, TextPlan) {
        (self.request, self.plan)
    }
}

impl TextPlan {
    /// Whether the request has stop strings (and so needs its text matched).
    pub fn has_stop_strings(&self) -> bool {
        !self.stop.stop_strings().is_empty()
    }

    /// Whether the request's stream must go through a [`TextStream`](crate::text::TextStream): it has
    /// stop strings to match, or eos ids besides the end id to cut off. Otherwise the executor's
    /// own stream already ends where the text does.
    pub fn needs_text_stream(&self) -> bool {
        self.has_stop_strings() || !self.extra_end_ids.is_empty()
    }

    /// The eos ids besides the end id, which end the text like the end id (and are the
    /// executor's single-token stop words unless the request sets `min_tokens`).
    pub fn extra_end_ids(&self) -> &[u32] {
        &self.extra_end_ids
    }

    /// Whether the caller asked for a streaming request (the executor may stream regardless).
    pub fn client_streaming(&self) -> bool {
        self.client_streaming
    }

    /// The tokenizer the text is decoded with.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The stop string that is the special token `id`, if any.
    pub(crate) fn special_stop(&self, id: u32) -> Option<&str> {
        self.special_stops.iter().find(|(stop_id, _)| *stop_id == id).map(|(_, s)| s.as_str())
    }

    /// The token-aligned stop string whose ids end `ids`, if any.
    pub(crate) fn token_stop_ending(&self, ids: &[u32]) -> Option<&str> {
        self.token_stops.iter().find(|(stop_ids, _)| ids.ends_with(stop_ids)).map(|(_, s)| s.as_str())
    }
}
