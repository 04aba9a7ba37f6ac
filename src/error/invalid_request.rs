//! Why a request is refused before it reaches the executor ([`InvalidRequest`]), and why its guide
//! is ([`InvalidGuide`]). A leaf: the data types' checks, the executor's guide pre-check and the
//! grammar engine all build these, and it names none of them.

use super::kind::ErrorKind;

/// Why a request was refused before it reached the executor.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidRequest {
    /// The prompt has no tokens.
    #[error("prompt is empty")]
    EmptyPrompt,
    /// The prompt is longer than the engine's max_input_len.
    #[error("prompt has {len} tokens, over the engine's max_input_len of {max}")]
    PromptTooLong {
        /// Prompt tokens.
        len: usize,
        /// The engine's max_input_len.
        max: usize,
    },
    /// Prompt plus max_tokens exceeds the engine's max_seq_len.
    #[error("prompt ({prompt}) + max_tokens ({max_tokens}) = {} exceeds the engine's max_seq_len of {max_seq_len}", prompt + max_tokens)]
    SequenceTooLong {
        /// Prompt tokens.
        prompt: usize,
        /// Requested new tokens.
        max_tokens: usize,
        /// The engine's max_seq_len.
        max_seq_len: usize,
    },
    /// max_tokens is zero.
    #[error("max_tokens must be at least 1")]
    ZeroMaxTokens,
    /// A prompt token id is not in the vocabulary.
    #[error("prompt token {token} at position {position} is outside the vocabulary (size {vocab_size})")]
    TokenOutOfVocab {
        /// The offending id.
        token: u32,
        /// Its position in the prompt.
        position: usize,
        /// The engine's vocab_size.
        vocab_size: usize,
    },
    /// A token id given in a parameter (end id, pad id, stop or bad words) is not in the vocabulary.
    #[error("{field} token {token} is outside the vocabulary (size {vocab_size})")]
    ParamTokenOutOfVocab {
        /// The parameter.
        field: &'static str,
        /// The offending id.
        token: i64,
        /// The engine's vocab_size.
        vocab_size: usize,
    },
    /// The beam width is zero or above the engine's max_beam_width.
    #[error("beam width {requested} is outside 1..={max} (the engine's max_beam_width)")]
    BeamWidth {
        /// Requested beam width.
        requested: u32,
        /// The engine's max_beam_width.
        max: u32,
    },
    /// A sampling or output parameter is outside its valid range.
    #[error("{field} = {value} is invalid: {rule}")]
    Parameter {
        /// The parameter name.
        field: &'static str,
        /// Its value, as text.
        value: String,
        /// The rule it breaks.
        rule: &'static str,
    },
    /// A request names a LoRA adapter but the engine was built without LoRA support.
    #[error("LoRA adapter (task {task_id}) sent to an engine built without LoRA support (no lora_plugin)")]
    LoraNotSupported {
        /// The adapter's task id.
        task_id: u64,
    },
    /// A LoRA adapter's weights do not fit the engine (wrong rank, module, layer, dtype); the reason names it.
    #[error("LoRA adapter (task {task_id}): {reason}")]
    Lora {
        /// The adapter's task id.
        task_id: u64,
        /// What is wrong, naming the module and layer.
        reason: String,
    },
    /// A stop or bad word is an empty token sequence.
    #[error("{field} contains an empty token sequence")]
    EmptyWord {
        /// `stop_words` or `bad_words`.
        field: &'static str,
    },
    // Guided decoding
    /// A guided-decoding guide is malformed (a schema that is not JSON, an empty regex, ...) or the
    /// grammar engine cannot compile it.
    #[error("guided_decoding.{field}: {reason}")]
    Guide {
        /// The guide type's field name (`json_schema`, `regex`, ...).
        field: &'static str,
        /// What is wrong with it.
        #[source]
        reason: InvalidGuide,
    },
}

/// Why a guided-decoding guide was refused: what is wrong with a request's schema, regex, grammar
/// or structural tag, found by the request's own checks or by the grammar engine compiling it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidGuide {
    /// The guide type needs a guide text and got none (or an empty one).
    #[error("needs a non-empty guide")]
    Missing,
    /// The JSON schema is not JSON, or not a JSON object or boolean.
    #[error("the JSON schema is not valid: {0}")]
    Schema(String),
    /// The regular expression does not parse.
    #[error("the regular expression is not valid: {0}")]
    Regex(String),
    /// The grammar does not parse or convert.
    #[error("the grammar is not valid: {0}")]
    Grammar(String),
    /// The structural tag document is malformed or uses an unsupported format.
    #[error("the structural tag is not valid: {0}")]
    StructuralTag(String),
    /// The grammar engine refused to compile the guide (well formed, but not satisfiable or supported).
    #[error("the grammar engine cannot compile it: {0}")]
    Compile(String),
    /// Guided decoding runs one beam; the request asked for more.
    #[error("guided decoding needs beam width 1, not {0}")]
    BeamWidth(u32),
}

impl InvalidRequest {
    /// What kind of failure this is: always [`ErrorKind::InvalidRequest`], the caller must change
    /// the request.
    pub fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidRequest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_is_an_invalid_request_and_keeps_its_guide_reason() {
        let guide = InvalidRequest::Guide { field: "regex", reason: InvalidGuide::Regex("unclosed group".into()) };
        assert_eq!(guide.kind(), ErrorKind::InvalidRequest);
        assert_eq!(InvalidRequest::EmptyPrompt.kind(), ErrorKind::InvalidRequest);
        let source = std::error::Error::source(&guide).expect("the guide's reason is the source");
        assert_eq!(source.downcast_ref::<InvalidGuide>(), Some(&InvalidGuide::Regex("unclosed group".into())));
    }
}
