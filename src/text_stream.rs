//! Text on top of a token stream: per-chunk text deltas and stop strings matched in the text.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

use crate::error::{Error, Result};
use crate::output::{FinalOutput, StreamEvent, TokenChunk};
use crate::request::FinishReason;
use crate::stream::GenerationStream;
use crate::text::{IncrementalDecoder, StopMatcher, StopStep, Tokenizer};

/// One item of a [`TextStream`].
#[derive(Debug, Clone, PartialEq)]
pub enum TextEvent {
    /// New tokens and the text they completed (possibly empty while a character or a possible
    /// stop string is held back).
    Chunk {
        /// The executor's chunk.
        chunk: TokenChunk,
        /// Text to show for it.
        text: String,
    },
    /// The request finished (the last item).
    Final {
        /// The executor's final output. When a stop string matched, its token ids are cut to the
        /// tokens delivered before the match and its finish reason is `StopWords`.
        output: Box<FinalOutput>,
        /// The complete text of each sequence (equal to a full decode of its tokens, cut at the
        /// stop string when one matched).
        texts: Vec<String>,
        /// The stop string that ended sequence 0, if any.
        matched_stop: Option<String>,
    },
}

/// Per-sequence decoding state.
#[derive(Debug)]
struct SequenceText {
    decoder: IncrementalDecoder,
    stop: StopMatcher,
    text: String,
    delivered_tokens: usize,
    matched: Option<String>,
}

/// A [`GenerationStream`] with text: each chunk carries its text delta, stop strings are matched
/// in the decoded text across chunk boundaries, and the final carries the full text.
///
/// When a stop string matches, the request is cancelled in the executor, tokens generated after
/// the match are discarded, and the final reports [`FinishReason::StopWords`] with the matched
/// string. Token counts stay the executor's: they count the token ids delivered.
#[derive(Debug)]
pub struct TextStream {
    inner: GenerationStream,
    tokenizer: Tokenizer,
    skip_special_tokens: bool,
    stop: StopMatcher,
    sequences: Vec<SequenceText>,
    done: bool,
}

impl TextStream {
    /// Wraps `inner`; `stop_strings` end the stream when they appear in the text (excluded from
    /// the text unless `include_stop`).
    pub fn new(
        inner: GenerationStream,
        tokenizer: Tokenizer,
        stop_strings: Vec<String>,
        include_stop: bool,
        skip_special_tokens: bool,
    ) -> Result<Self> {
        // Built once and cloned per sequence; the only way to fail is an empty stop string.
        let stop =
            StopMatcher::builder().stop_strings(&stop_strings).include_stop_string(include_stop).build().map_err(
                |_| {
                    Error::InvalidRequest(crate::InvalidRequest::Parameter {
                        field: "stop",
                        value: format!("{stop_strings:?}"),
                        rule: "stop strings must not be empty",
                    })
                },
            )?;
        let sequences = inner.num_sequences();
        let mut stream = TextStream { inner, tokenizer, skip_special_tokens, stop, sequences: Vec::new(), done: false };
        stream.sequence(sequences.saturating_sub(1));
        Ok(stream)
    }

    /// The executor's id for this request.
    pub fn request_id(&self) -> u64 {
        self.inner.request_id()
    }

    /// The stop string each sequence has matched so far, by sequence index (complete once the
    /// final has been yielded).
    pub fn matched_stops(&self) -> Vec<Option<String>> {
        self.sequences.iter().map(|s| s.matched.clone()).collect()
    }

    fn sequence(&mut self, index: usize) -> &mut SequenceText {
        while self.sequences.len() <= index {
            self.sequences.push(SequenceText {
                decoder: self.tokenizer.incremental_decoder(self.skip_special_tokens),
                stop: self.stop.clone(),
                text: String::new(),
                delivered_tokens: 0,
                matched: None,
            });
        }
        &mut self.sequences[index]
    }

    fn on_chunk(&mut self, chunk: TokenChunk) -> Result<Option<TextEvent>> {
        let index = chunk.sequence_index as usize;
        let sequence = self.sequence(index);
        if sequence.matched.is_some() {
            return Ok(None); // tokens after the stop string: discarded
        }
        let delta = sequence.decoder.push(&chunk.token_ids).map_err(|e| Error::Executor(format!("decoding: {e}")))?;
        sequence.delivered_tokens += chunk.token_ids.len();
        let step = sequence.stop.push(&delta);
        sequence.text.push_str(step.text());
        let text = step.text().to_string();
        if let StopStep::Stop { stop_string, .. } = step {
            sequence.matched = Some(stop_string);
            if self.sequences.iter().all(|s| s.matched.is_some()) {
                // Every sequence has what it needs: stop the work in the executor now. The
                // cancelled final still arrives and becomes this stream's final.
                self.inner.cancel();
            }
        }
        Ok(Some(TextEvent::Chunk { chunk, text }))
    }

    fn on_final(&mut self, mut output: FinalOutput) -> TextEvent {
        for (index, seq_out) in output.sequences.iter_mut().enumerate() {
            let sequence = self.sequence(index);
            if sequence.matched.is_some() {
                seq_out.token_ids.truncate(sequence.delivered_tokens);
                if let Some(lp) = seq_out.log_probs.as_mut() {
                    lp.truncate(sequence.delivered_tokens);
                }
                seq_out.finish_reason = FinishReason::StopWords;
            } else if sequence.delivered_tokens < seq_out.token_ids.len() {
                // A non-streaming request: its tokens arrive only with the final.
                let rest = seq_out.token_ids[sequence.delivered_tokens..].to_vec();
                if let Ok(delta) = sequence.decoder.push(&rest) {
                    let step = sequence.stop.push(&delta);
                    sequence.text.push_str(step.text());
                    if let StopStep::Stop { stop_string, .. } = step {
                        sequence.matched = Some(stop_string);
                        seq_out.finish_reason = FinishReason::StopWords;
                    }
                }
            }
            if sequence.matched.is_none() {
                let tail = sequence.decoder.finish();
                let step = sequence.stop.push(&tail);
                sequence.text.push_str(step.text());
                if let StopStep::Stop { stop_string, .. } = step {
                    sequence.matched = Some(stop_string);
                    seq_out.finish_reason = FinishReason::StopWords;
                } else {
                    let rest = sequence.stop.finish();
                    sequence.text.push_str(&rest);
                }
            }
        }
        output.completion_tokens = output.sequences.iter().map(|s| s.token_ids.len() as u32).sum();
        if let Some(first) = output.sequences.first() {
            output.finish_reason = first.finish_reason;
        }
        let texts = self.sequences.iter().map(|s| s.text.clone()).collect();
        let matched_stop = self.sequences.first().and_then(|s| s.matched.clone());
        TextEvent::Final { output: Box::new(output), texts, matched_stop }
    }
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
            match item {
                Err(e) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Ok(StreamEvent::Chunk(chunk)) => match this.on_chunk(chunk) {
                    Ok(Some(event)) => return Poll::Ready(Some(Ok(event))),
                    Ok(None) => continue,
                    Err(e) => {
                        this.done = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                },
                Ok(StreamEvent::Final(output)) => {
                    this.done = true;
                    return Poll::Ready(Some(Ok(this.on_final(output))));
                }
            }
        }
    }
}
