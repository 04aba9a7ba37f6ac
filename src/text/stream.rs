//! Text on top of a token stream: per-chunk text deltas, stop strings and eos ids that end it.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::Stream;

use super::detokenizer::IncrementalDecoder;
use super::error::TextError;
use super::request::{TextOptions, TextPlan, TextRequest};
use super::stop::{StopMatcher, StopStep};
use super::tokenizer::Tokenizer;
use crate::error::{Error, Result};
use crate::{AsyncExecutor, GenerationStream};
use crate::{FinalOutput, StreamEvent, TokenChunk};
use crate::{FinishReason, GenerationRequest};

/// One item of a [`TextStream`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "type", rename_all = "snake_case"))]
pub enum TextEvent {
    /// New tokens and the text they completed (possibly empty while a character or a possible
    /// stop string is held back).
    ///
    /// When the sequence ends inside the chunk (a stop string or an eos id), `chunk.token_ids`
    /// is cut there and `chunk.completion_tokens` counts only the tokens kept.
    Chunk {
        /// The executor's chunk.
        chunk: TokenChunk,
        /// Text to show for it.
        text: String,
    },
    /// The request finished (the last item).
    Final {
        /// The executor's final output, with each sequence's tokens cut where its text ended:
        ///
        /// - after a stop string, the tokens run up to and including the one that completed it
        ///   (a stop string may start or end inside a token, so its tokens cannot be cut off
        ///   exactly), and the finish reason is [`FinishReason::StopWords`];
        /// - at an eos id other than the end id, the tokens stop before it (as the executor
        ///   leaves out the end id) and the finish reason is [`FinishReason::EndId`].
        ///
        /// `completion_tokens` is the number of tokens kept, and when every sequence ended that
        /// way `finished_at` is when the token that ended the last one arrived, so `tpot()`
        /// covers exactly the tokens counted. Otherwise both are the executor's.
        output: Box<FinalOutput>,
        /// The complete text of each sequence: a full decode of its tokens, cut at the stop
        /// string when one matched (kept when asked to include it).
        texts: Vec<String>,
        /// The text of each sequence that no chunk carried: what the decoder and the stop
        /// matcher held back at the end, or everything for a non-streaming request. Chunk texts
        /// followed by this delta make up `texts`.
        deltas: Vec<String>,
        /// The stop string that ended each sequence, by sequence index (`None` where none did).
        matched_stops: Vec<Option<String>>,
    },
}

/// Why a sequence's text ended before its executor output did.
#[derive(Debug, Clone, PartialEq, Eq)]
enum End {
    /// A stop string (matched in the text or on its special-token id).
    Stop(String),
    /// An eos id besides the end id.
    Eos,
}

/// Per-sequence decoding state.
#[derive(Debug)]
struct SequenceText {
    decoder: IncrementalDecoder,
    stop: StopMatcher,
    /// All text released so far.
    text: String,
    /// Bytes of `text` already carried by chunks.
    sent: usize,
    /// Tokens that belong to the output.
    delivered: usize,
    end: Option<End>,
    /// When the chunk that ended the sequence arrived.
    ended_at: Option<Instant>,
}

impl SequenceText {
    fn new(plan: &TextPlan) -> Self {
        SequenceText {
            decoder: plan.tokenizer.incremental_decoder(plan.skip_special_tokens),
            stop: plan.stop.clone(),
            text: String::new(),
            sent: 0,
            delivered: 0,
            end: None,
            ended_at: None,
        }
    }

    /// Feeds tokens one at a time, so that the token that ends the text is known exactly;
    /// returns how many of `ids` belong to the output.
    fn feed(&mut self, plan: &TextPlan, ids: &[u32]) -> std::result::Result<usize, TextError> {
        for (i, &id) in ids.iter().enumerate() {
            if plan.extra_end_ids.contains(&id) && self.delivered + i >= plan.min_tokens {
                // Like the end id: the sequence is over and the eos is not part of it.
                self.flush();
                self.end.get_or_insert(End::Eos);
                return Ok(i);
            }
            if let Some(stop) = plan.special_stop(id) {
                // Decoding would drop the token (or, keeping special tokens, show it only after
                // the text matcher had a say): match it here.
                self.flush();
                if self.end.is_none() {
                    if plan.include_stop_string {
                        self.text.push_str(stop);
                    }
                    self.end = Some(End::Stop(stop.to_owned()));
                }
                return Ok(i + 1);
            }
            let delta = self.decoder.push(&[id])?;
            self.push_text(&delta);
            if self.end.is_some() {
                return Ok(i + 1);
            }
        }
        Ok(ids.len())
    }

    fn push_text(&mut self, delta: &str) {
        let step = self.stop.push(delta);
        self.text.push_str(step.text());
        if let StopStep::Stop { stop_string, .. } = step {
            self.end = Some(End::Stop(stop_string));
        }
    }

    /// The text ends here: the decoder's held-back tail still goes through the stop matcher,
    /// then what the matcher held back (a start of a stop string that never completed) is released.
    fn flush(&mut self) {
        let tail = self.decoder.finish();
        self.push_text(&tail);
        if self.end.is_none() {
            let held = self.stop.finish();
            self.text.push_str(&held);
        }
    }

    /// Text not yet carried by a chunk; marks it carried.
    fn take_unsent(&mut self) -> String {
        let unsent = self.text[self.sent..].to_owned();
        self.sent = self.text.len();
        unsent
    }
}

/// A [`GenerationStream`] with text: each chunk carries its text delta, stop strings and eos ids
/// end the text, and the final carries the full text and any text no chunk carried.
///
/// Set the request up with [`TextRequest`] (or use [`TextStream::generate`], which does both):
/// it tells the executor about the eos ids and token-aligned stop strings, and gives this
/// stream the [`TextPlan`] it follows.
///
/// When a stop string matches, the request is cancelled in the executor, tokens after the match
/// are discarded, and the final reports [`FinishReason::StopWords`] with the matched string.
/// Token counts are the tokens delivered (see [`TextEvent::Final`]).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use futures::StreamExt;
/// use trtllm::text::Tokenizer;
/// use trtllm::text::{TextEvent, TextOptions, TextStream};
/// use trtllm::{AsyncExecutor, ExecutorConfig, GenerationRequest};
///
/// let dir = tempfile::tempdir()?;
/// let engine = trtllm::sim::SimulatedEngine { iteration_ms: Some(1.0), ..trtllm::builtin::builtin_engine() };
/// trtllm::builtin::write_engine(&engine, dir.path())?;
/// let executor = AsyncExecutor::load(dir.path(), ExecutorConfig::default()).await?;
/// let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer"))?;
///
/// let request = GenerationRequest::new(tokenizer.encode("Once upon a time", false)?, 32);
/// let options = TextOptions::new().stop_strings(["\n"]);
/// let mut stream = TextStream::generate(&executor, request, &tokenizer, options)?;
/// let mut shown = String::new();
/// while let Some(event) = stream.next().await {
///     match event? {
///         TextEvent::Chunk { text, .. } => shown.push_str(&text),
///         TextEvent::Final { texts, deltas, .. } => {
///             shown.push_str(&deltas[0]);
///             assert_eq!(shown, texts[0]);
///             assert!(!shown.contains('\n'));
///         }
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TextStream {
    inner: GenerationStream,
    plan: TextPlan,
    sequences: Vec<SequenceText>,
    done: bool,
}

impl TextStream {
    /// Wraps the stream of a request enqueued as [`TextRequest::into_parts`] prepared it.
    pub fn new(inner: GenerationStream, plan: TextPlan) -> Self {
        let sequences = (0..inner.num_sequences().max(1)).map(|_| SequenceText::new(&plan)).collect();
        TextStream { inner, plan, sequences, done: false }
    }

    /// Sets `request` up for text (see [`TextRequest`]), enqueues it and wraps its stream.
    pub fn generate(
        executor: &AsyncExecutor,
        request: GenerationRequest,
        tokenizer: &Tokenizer,
        options: TextOptions,
    ) -> Result<Self> {
        let (request, plan) = TextRequest::new(request, tokenizer, options)?.into_parts();
        Ok(Self::new(executor.enqueue(request)?, plan))
    }

    /// The executor's id for this request.
    pub fn request_id(&self) -> crate::RequestId {
        self.inner.request_id()
    }

    /// When the request was handed to the executor.
    pub fn enqueued_at(&self) -> Instant {
        self.inner.enqueued_at()
    }

    /// The stop string each sequence has matched so far, by sequence index (complete once the
    /// final has been yielded).
    pub fn matched_stops(&self) -> Vec<Option<String>> {
        self.sequences
            .iter()
            .map(|s| match &s.end {
                Some(End::Stop(stop)) => Some(stop.clone()),
                _ => None,
            })
            .collect()
    }

    fn sequence(&mut self, index: usize) -> &mut SequenceText {
        while self.sequences.len() <= index {
            self.sequences.push(SequenceText::new(&self.plan));
        }
        &mut self.sequences[index]
    }

    fn on_chunk(&mut self, mut chunk: TokenChunk) -> Result<Option<TextEvent>> {
        self.sequence(chunk.sequence_index as usize);
        let Self { plan, sequences, inner, .. } = self;
        let sequence = &mut sequences[chunk.sequence_index as usize];
        if sequence.end.is_some() {
            return Ok(None); // tokens after the end of the text: discarded
        }
        let kept = sequence.feed(plan, &chunk.token_ids).map_err(decoding_error)?;
        sequence.delivered += kept;
        chunk.token_ids.truncate(kept);
        if let Some(log_probs) = chunk.log_probs.as_mut() {
            log_probs.truncate(kept);
        }
        chunk.completion_tokens = sequence.delivered as u32;
        if sequence.end.is_some() {
            sequence.ended_at = Some(chunk.received_at);
            if sequences.iter().all(|s| s.end.is_some()) {
                // Every sequence has what it needs: stop the work in the executor now. The
                // cancelled final still arrives and becomes this stream's final.
                inner.cancel();
            }
        }
        let sequence = &mut sequences[chunk.sequence_index as usize];
        if !plan.client_streaming || chunk.token_ids.is_empty() {
            // Text not sent here goes out with a later chunk or the final.
            return Ok(None);
        }
        let text = sequence.take_unsent();
        Ok(Some(TextEvent::Chunk { chunk, text }))
    }

    fn on_final(&mut self, mut output: FinalOutput) -> Result<TextEvent> {
        if let Some(last) = output.sequences.len().checked_sub(1) {
            self.sequence(last);
        }
        let Self { plan, sequences, .. } = self;
        for (sequence, seq_out) in sequences.iter_mut().zip(output.sequences.iter_mut()) {
            if sequence.end.is_none() {
                // Tokens no chunk carried: all of them for a non-streaming request.
                let rest = seq_out.token_ids.get(sequence.delivered..).unwrap_or_default().to_vec();
                sequence.delivered += sequence.feed(plan, &rest).map_err(decoding_error)?;
                if sequence.end.is_none() {
                    sequence.flush();
                }
            }
            match &sequence.end {
                Some(end) => {
                    seq_out.token_ids.truncate(sequence.delivered);
                    if let Some(log_probs) = seq_out.log_probs.as_mut() {
                        log_probs.truncate(sequence.delivered);
                    }
                    seq_out.finish_reason =
                        if *end == End::Eos { FinishReason::EndId } else { FinishReason::StopWords };
                }
                None if seq_out.finish_reason == FinishReason::StopWords => {
                    // The executor stopped on a stop string's tokens that the text did not show
                    // (several special tokens, say): name the string all the same.
                    if let Some(stop) = plan.token_stop_ending(&seq_out.token_ids) {
                        sequence.end = Some(End::Stop(stop.to_owned()));
                    }
                }
                None => {}
            }
        }
        output.completion_tokens = output.sequences.iter().map(|s| s.token_ids.len() as u32).sum();
        if let Some(first) = output.sequences.first() {
            output.finish_reason = first.finish_reason;
        }
        let ended_at: Option<Vec<Instant>> = sequences.iter().map(|s| s.ended_at).collect();
        if let Some(last) = ended_at.and_then(|times| times.into_iter().max()) {
            output.finished_at = last;
        }
        let texts = sequences.iter().map(|s| s.text.clone()).collect();
        let deltas = sequences.iter_mut().map(SequenceText::take_unsent).collect();
        let matched_stops = sequences
            .iter()
            .map(|s| match &s.end {
                Some(End::Stop(stop)) => Some(stop.clone()),
                _ => None,
            })
            .collect();
        Ok(TextEvent::Final { output: Box::new(output), texts, deltas, matched_stops })
    }
}

fn decoding_error(err: TextError) -> Error {
    Error::Text(err)
}

impl Stream for TextStream {
    type Item = Result<TextEvent>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.done {
                return Poll::Ready(None);
            }
            let item = match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.done = true;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(item)) => item,
            };
            let event = match item {
                Ok(StreamEvent::Chunk(chunk)) => match this.on_chunk(chunk) {
                    Ok(None) => continue,
                    Ok(Some(event)) => Some(Ok(event)),
                    Err(e) => {
                        // This stream ends with the error: the request's work is no use now.
                        this.inner.cancel();
                        Some(Err(e))
                    }
                },
                Ok(StreamEvent::Final(output)) => Some(this.on_final(output)),
                Err(e) => Some(Err(e)),
            };
            if !matches!(event, Some(Ok(TextEvent::Chunk { .. }))) {
                // A final or an error is the terminal item.
                this.done = true;
            }
            return Poll::Ready(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use tokenizers::models::bpe::{BPE, Vocab};
    use tokenizers::pre_tokenizers::byte_level::ByteLevel;

    use super::*;

    /// A byte-level tokenizer with one token per byte (ids differ between calls: the alphabet is a set).
    fn byte_tokenizer() -> Tokenizer {
        let vocab: Vocab =
            ByteLevel::alphabet().into_iter().enumerate().map(|(id, c)| (c.to_string(), id as u32)).collect();
        let model = BPE::builder().vocab_and_merges(vocab, vec![]).build().unwrap_or_else(|e| panic!("{e}"));
        let mut hf = tokenizers::Tokenizer::new(model);
        hf.with_pre_tokenizer(Some(ByteLevel::default().add_prefix_space(false)));
        hf.with_decoder(Some(ByteLevel::default()));
        Tokenizer::from_tokenizer(hf)
    }

    fn ids(tokenizer: &Tokenizer, text: &str) -> Vec<u32> {
        tokenizer.encode(text, false).unwrap_or_else(|e| panic!("{e}"))
    }

    fn plan(tokenizer: &Tokenizer, options: TextOptions) -> TextPlan {
        let request = GenerationRequest::new(vec![1], 16);
        TextRequest::new(request, tokenizer, options).unwrap_or_else(|e| panic!("{e}")).into_parts().1
    }

    #[test]
    fn a_multi_token_chunk_keeps_only_the_tokens_up_to_the_stop() {
        let tokenizer = byte_tokenizer();
        let plan = plan(&tokenizer, TextOptions::new().stop_strings(["cd"]));
        let mut sequence = SequenceText::new(&plan);
        // "abcdef" arrives in one chunk (as under speculative decoding): "d" completes the stop.
        assert_eq!(sequence.feed(&plan, &ids(&tokenizer, "abcdef")).ok(), Some(4));
        assert_eq!(sequence.text, "ab");
        assert_eq!(sequence.end, Some(End::Stop("cd".into())));
    }

    #[test]
    fn an_eos_id_within_min_tokens_is_an_ordinary_token() {
        let tokenizer = byte_tokenizer();
        let eos = ids(&tokenizer, "!?");
        let tokenizer = tokenizer.with_eos_token_ids(eos.clone());
        let request = GenerationRequest::new(vec![1], 16)
            .with_streaming(false)
            .with_sampling(crate::SamplingParams { min_tokens: Some(3), ..Default::default() });
        let (request, plan) = TextRequest::new(request, &tokenizer, TextOptions::new()).unwrap().into_parts();
        assert!(request.stop_words().is_empty(), "the executor would stop on it before min_tokens");
        assert!(request.streaming(), "so the text can cancel the work when it ends");
        assert!(!plan.client_streaming());
        let mut sequence = SequenceText::new(&plan);
        // "a?b?c": the "?" at position 1 comes before 3 tokens, the one at position 3 after.
        assert_eq!(sequence.feed(&plan, &ids(&tokenizer, "a?")).ok(), Some(2));
        sequence.delivered += 2;
        assert_eq!(sequence.end, None);
        assert_eq!(sequence.feed(&plan, &ids(&tokenizer, "b?c")).ok(), Some(1));
        assert_eq!(sequence.end, Some(End::Eos));
        assert_eq!(sequence.text, "a?b");
    }

    #[test]
    fn an_eos_id_inside_a_chunk_ends_the_text_before_it() {
        let tokenizer = byte_tokenizer();
        let eos = ids(&tokenizer, "!?");
        let tokenizer = tokenizer.with_eos_token_ids(eos.clone());
        let plan = plan(&tokenizer, TextOptions::new().stop_strings(["z"]));
        assert_eq!(plan.extra_end_ids(), &eos[1..]);
        let mut sequence = SequenceText::new(&plan);
        // "é" is two byte tokens: the first is held back, then flushed when the text ends.
        let mut chunk = ids(&tokenizer, "ab");
        chunk.push(ids(&tokenizer, "é")[0]);
        chunk.extend(ids(&tokenizer, "?cd"));
        assert_eq!(sequence.feed(&plan, &chunk).ok(), Some(3));
        assert_eq!(sequence.text, "ab\u{FFFD}");
        assert_eq!(sequence.end, Some(End::Eos));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_large_stop_set_set_up_on_the_blocking_pool_still_stops_the_text() {
        let tokenizer = byte_tokenizer();
        // 64 stop strings of 1 KiB: over the blocking-pool threshold; the last one is short.
        let mut stops: Vec<String> = (0..64).map(|i| format!("{i:04}").repeat(256)).collect();
        stops.push("cd".into());
        assert!(stops.iter().map(String::len).sum::<usize>() >= TextRequest::BLOCKING_POOL_BYTES);
        let request = GenerationRequest::new(vec![1], 16);
        let prepared = TextRequest::prepare(request, &tokenizer, TextOptions::new().stop_strings(stops))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let plan = prepared.into_parts().1;
        let mut sequence = SequenceText::new(&plan);
        assert_eq!(sequence.feed(&plan, &ids(&tokenizer, "abcdef")).ok(), Some(4));
        assert_eq!(sequence.text, "ab");
        assert_eq!(sequence.end, Some(End::Stop("cd".into())));
    }
}
