//! A request's executor events as the Generate stream consumes them, whether or not stop strings
//! are matched in text.

use std::pin::Pin;

use futures::{Stream, StreamExt};

use crate::text::{TextEvent, TextStream};
use crate::{FinalOutput, GenerationStream, StreamEvent, TokenChunk};

/// One event of a request.
#[derive(Debug)]
pub(crate) enum Event {
    /// New tokens.
    Chunk(TokenChunk),
    /// The request finished (the last event).
    Final {
        /// The executor's final output (cut where each sequence's text ended, with stop strings).
        output: Box<FinalOutput>,
        /// The stop string each sequence matched, by sequence index; empty without stop strings.
        matched_stops: Vec<Option<String>>,
    },
}

/// A request's events.
pub(crate) type EventStream = Pin<Box<dyn Stream<Item = crate::Result<Event>> + Send>>;

/// A text stream's events, each final with the stop string every sequence matched.
pub(crate) fn text_events(text: TextStream) -> EventStream {
    Box::pin(futures::stream::unfold(text, |mut text| async move {
        let item = text.next().await?;
        let event = item.map(|event| match event {
            TextEvent::Chunk { chunk, .. } => Event::Chunk(chunk),
            TextEvent::Final { output, .. } => Event::Final { output, matched_stops: text.matched_stops() },
        });
        Some((event, text))
    }))
}

/// The executor stream's events as they are, with no stop strings matched.
pub(crate) fn stream_events(stream: GenerationStream) -> EventStream {
    Box::pin(stream.map(|item| {
        item.map(|event| match event {
            StreamEvent::Chunk(chunk) => Event::Chunk(chunk),
            StreamEvent::Final(output) => Event::Final { output: Box::new(output), matched_stops: Vec::new() },
        })
    }))
}
