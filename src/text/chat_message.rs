//! One message of a chat conversation, as chat templates see it.

use serde::{Deserialize, Deserializer, Serialize};

/// A chat message: who speaks (`role`) and what they say (`content`).
///
/// Deserializes from the OpenAI shape: `content` is a string, `null` (read as empty), or a list
/// of parts of which only `{"type": "text", "text": ...}` is accepted; text parts are joined
/// with `"\n"`. Other part types (images, audio) are rejected rather than silently dropped.
///
/// ```rust
/// use trtllm::text::ChatMessage;
///
/// let parts: ChatMessage = serde_json::from_str(
///     r#"{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]}"#,
/// )?;
/// assert_eq!(parts, ChatMessage::user("Hi\nthere"));
/// let plain: ChatMessage = serde_json::from_str(r#"{"role": "system", "content": "Be brief."}"#)?;
/// assert_eq!(plain, ChatMessage::new("system", "Be brief."));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who speaks: usually `system`, `user` or `assistant`.
    pub role: String,
    /// The message text.
    #[serde(default, deserialize_with = "content_from_string_or_parts")]
    pub content: String,
}

impl ChatMessage {
    /// A message with any role.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self { role: role.into(), content: content.into() }
    }

    /// A `system` message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new("system", content)
    }

    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new("user", content)
    }

    /// An `assistant` message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new("assistant", content)
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentPart {
    Text { text: String },
}

fn content_from_string_or_parts<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    let content = Option::<Content>::deserialize(deserializer).map_err(|_| {
        serde::de::Error::custom(
            "content must be a string, null, or a list of {\"type\": \"text\", \"text\": ...} parts",
        )
    })?;
    Ok(match content {
        None => String::new(),
        Some(Content::Text(text)) => text,
        Some(Content::Parts(parts)) => {
            parts.into_iter().map(|ContentPart::Text { text }| text).collect::<Vec<_>>().join("\n")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_content_reads_as_empty() {
        let msg: Result<ChatMessage, _> = serde_json::from_str(r#"{"role": "assistant", "content": null}"#);
        assert_eq!(msg.ok(), Some(ChatMessage::assistant("")));
    }

    #[test]
    fn non_text_parts_are_rejected() {
        let msg: Result<ChatMessage, _> =
            serde_json::from_str(r#"{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}"#);
        let err = msg.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("content must be"), "{err}");
    }

    #[test]
    fn serializes_content_as_a_string() {
        let json = serde_json::to_string(&ChatMessage::user("hi")).ok();
        assert_eq!(json.as_deref(), Some(r#"{"role":"user","content":"hi"}"#));
    }
}
