//! What a caller asks the engine to continue: text, a conversation, or token ids.

use crate::text::ChatMessage;

/// The input of [`Engine::generate`](crate::Engine::generate).
///
/// ```
/// use trtllm::Prompt;
/// use trtllm::text::ChatMessage;
/// assert!(matches!(Prompt::from("Once upon a time"), Prompt::Text(_)));
/// assert!(matches!(Prompt::from(vec![ChatMessage::user("Hi")]), Prompt::Messages(_)));
/// assert!(matches!(Prompt::from(vec![1u32, 2, 3]), Prompt::Tokens(_)));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Prompt {
    /// Text, encoded with the tokenizer's special tokens (a BOS where the tokenizer adds one).
    Text(String),
    /// A conversation, rendered by the tokenizer's chat template with the generation prompt added.
    Messages(Vec<ChatMessage>),
    /// Token ids, sent as they are.
    Tokens(Vec<u32>),
}

impl From<&str> for Prompt {
    fn from(text: &str) -> Self {
        Prompt::Text(text.to_owned())
    }
}

impl From<String> for Prompt {
    fn from(text: String) -> Self {
        Prompt::Text(text)
    }
}

impl From<Vec<ChatMessage>> for Prompt {
    fn from(messages: Vec<ChatMessage>) -> Self {
        Prompt::Messages(messages)
    }
}

impl From<&[ChatMessage]> for Prompt {
    fn from(messages: &[ChatMessage]) -> Self {
        Prompt::Messages(messages.to_vec())
    }
}

impl From<Vec<u32>> for Prompt {
    fn from(ids: Vec<u32>) -> Self {
        Prompt::Tokens(ids)
    }
}
