//! Which OpenAI API the HTTP target calls, and where it lives under the base URL.

/// Which OpenAI API the target calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenAiApi {
    /// `POST /v1/chat/completions`, the prompt as one user message (the server applies its template).
    Chat,
    /// `POST /v1/completions`, the prompt as raw text.
    Completions,
}

impl OpenAiApi {
    /// The path under the base URL.
    pub fn path(self) -> &'static str {
        match self {
            OpenAiApi::Chat => "chat/completions",
            OpenAiApi::Completions => "completions",
        }
    }
}
