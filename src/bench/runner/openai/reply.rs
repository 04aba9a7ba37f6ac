//! What an OpenAI server's reply said: its streamed chunks (read into a small borrowed struct,
//! without a `serde_json::Value` tree) or its one document, accumulated into a [`Reply`].

use serde_json::Value;

use super::api::OpenAiApi;

/// What the server's chunks (or its one reply) said, accumulated.
#[derive(Debug, Default)]
pub(super) struct Reply {
    pub(super) text: String,
    pub(super) finish_reason: Option<String>,
    pub(super) prompt_tokens: Option<u64>,
    pub(super) completion_tokens: Option<u64>,
    pub(super) cached_tokens: Option<u64>,
    pub(super) error: Option<String>,
}

impl Reply {
    pub(super) fn absorb(&mut self, doc: &Value, api: OpenAiApi, streaming: bool) {
        if let Some(error) = doc.get("error").filter(|e| !e.is_null()) {
            let message = error["message"].as_str().map(str::to_owned).unwrap_or_else(|| error.to_string());
            self.error = Some(format!("server error: {message}"));
            return;
        }
        // The first choice only: the bench sends n = 1.
        if let Some(choice) = doc["choices"].as_array().and_then(|c| c.first()) {
            let piece = match (api, streaming) {
                (OpenAiApi::Chat, true) => &choice["delta"]["content"],
                (OpenAiApi::Chat, false) => &choice["message"]["content"],
                (OpenAiApi::Completions, _) => &choice["text"],
            };
            if let Some(piece) = piece.as_str() {
                self.text.push_str(piece);
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                self.finish_reason = Some(reason.to_owned());
            }
        }
        if let Some(usage) = doc.get("usage") {
            self.absorb_usage(usage);
        }
    }

    /// The token counts of a `usage` object (a streamed chunk's or a whole reply's); a count the
    /// object lacks keeps the one read before, and a null or missing `usage` changes nothing.
    fn absorb_usage(&mut self, usage: &Value) {
        if !usage.is_object() {
            return;
        }
        self.prompt_tokens = usage["prompt_tokens"].as_u64().or(self.prompt_tokens);
        self.completion_tokens = usage["completion_tokens"].as_u64().or(self.completion_tokens);
        self.cached_tokens = usage["prompt_tokens_details"]["cached_tokens"].as_u64().or(self.cached_tokens);
    }
}

/// One streamed chunk, borrowed from the event's data: only the fields the runner reads, so a
/// chunk costs no `serde_json::Value` tree and no per-field allocation (unescaped text borrows).
#[derive(serde::Deserialize)]
pub(super) struct StreamChunk<'a> {
    /// Present (non-null) only on an error chunk; read again as a document then.
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(default, borrow)]
    choices: Option<FirstChoice<'a>>,
    #[serde(default)]
    usage: Option<Value>,
}

/// A chunk's `choices`, first element only (the bench sends n = 1): read without a `Vec`.
struct FirstChoice<'a>(Option<StreamChoice<'a>>);

impl<'de: 'a, 'a> serde::Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct First<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for First<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of choices")
            }
            fn visit_seq<S: serde::de::SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                let first = seq.next_element::<StreamChoice<'a>>()?;
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
        }
        deserializer.deserialize_seq(First(std::marker::PhantomData))
    }
}

/// The parts of one streamed choice the runner reads.
#[derive(serde::Deserialize)]
struct StreamChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<StreamDelta<'a>>,
    #[serde(default, borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    finish_reason: Option<std::borrow::Cow<'a, str>>,
}

/// A chat chunk's delta: its text only.
#[derive(serde::Deserialize)]
struct StreamDelta<'a> {
    #[serde(default, borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
}

impl<'a> StreamChunk<'a> {
    pub(super) fn parse(data: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(data)
    }
}

impl Reply {
    /// [`Reply::absorb`] for a streamed chunk parsed without a document tree.
    pub(super) fn absorb_chunk(&mut self, chunk: StreamChunk<'_>, data: &str, api: OpenAiApi) {
        if chunk.error.is_some() {
            // Rare path: keep the document reading of error bodies in one place.
            if let Ok(doc) = serde_json::from_str::<Value>(data) {
                self.absorb(&doc, api, true);
            }
            return;
        }
        if let Some(choice) = chunk.choices.and_then(|c| c.0) {
            let piece = match api {
                OpenAiApi::Chat => choice.delta.and_then(|d| d.content),
                OpenAiApi::Completions => choice.text,
            };
            if let Some(piece) = piece {
                self.text.push_str(&piece);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason.into_owned());
            }
        }
        if let Some(usage) = &chunk.usage {
            self.absorb_usage(usage);
        }
    }
}

#[cfg(test)]
mod stream_chunk_tests {
    use super::*;

    #[test]
    fn chat_and_completion_chunks_read_text_finish_and_usage() {
        let mut reply = Reply::default();
        let data = r#"{"choices":[{"delta":{"content":"a\"b"},"finish_reason":null}]}"#;
        reply.absorb_chunk(StreamChunk::parse(data).unwrap(), data, OpenAiApi::Chat);
        let data =
            r#"{"choices":[{"text":"c","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#;
        reply.absorb_chunk(StreamChunk::parse(data).unwrap(), data, OpenAiApi::Completions);
        let data = r#"{"choices":null,"usage":null}"#;
        reply.absorb_chunk(StreamChunk::parse(data).unwrap(), data, OpenAiApi::Chat);
        // Only the first choice counts; the others are skipped, whatever they hold.
        let data = r#"{"choices":[{"delta":{"content":""}},{"delta":{"content":"x"},"extra":[1,{"a":2}]}]}"#;
        reply.absorb_chunk(StreamChunk::parse(data).unwrap(), data, OpenAiApi::Chat);
        assert_eq!(reply.text, "a\"bc");
        assert_eq!(reply.finish_reason.as_deref(), Some("length"));
        assert_eq!((reply.prompt_tokens, reply.completion_tokens), (Some(3), Some(2)));
    }

    #[test]
    fn an_error_chunk_is_reported() {
        let mut reply = Reply::default();
        let data = r#"{"error":{"message":"boom"}}"#;
        reply.absorb_chunk(StreamChunk::parse(data).unwrap(), data, OpenAiApi::Chat);
        assert_eq!(reply.error.as_deref(), Some("server error: boom"));
    }
}
