//! Errors of the guided-decoding grammar module.

/// Why a guided-decoding configuration, guide or step was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GuidedError {
    /// The encoded vocabulary is empty or a token string cannot be decoded to bytes.
    #[error("encodedVocab: {0}")]
    Vocabulary(String),
    /// The tokenizer string is not a tokenizer.json document.
    #[error("tokenizerStr is not valid tokenizer JSON: {0}")]
    TokenizerJson(String),
    /// No stop token id was given, so a guided sequence could never end where the grammar accepts.
    #[error("stopTokenIds must hold at least one token id")]
    NoStopTokens,
    /// A stop token id lies outside the encoded vocabulary.
    #[error("stopTokenIds: token id {id} is outside the encoded vocabulary of {vocab_size} tokens")]
    StopTokenOutOfRange {
        /// The offending id.
        id: u32,
        /// Number of entries in the encoded vocabulary.
        vocab_size: usize,
    },
    /// The guide type number is not one of the executor's `GuideType` values.
    #[error("guide_type: {0} is not a guide type (0 = JSON … 4 = STRUCTURAL_TAG)")]
    UnknownGuideType(i32),
    /// A guide type that needs a guide text got none (or an empty one).
    #[error("guide: a {0} guide needs a non-empty guide")]
    MissingGuide(&'static str),
    /// The JSON schema is not JSON, or not a JSON object / boolean.
    #[error("guide: the JSON schema is not valid: {0}")]
    InvalidSchema(String),
    /// The regular expression does not parse.
    #[error("guide: the regular expression is not valid: {0}")]
    InvalidRegex(String),
    /// The grammar does not parse.
    #[error("guide: the grammar is not valid: {0}")]
    InvalidGrammar(String),
    /// The structural tag document is malformed or uses an unsupported format.
    #[error("guide: the structural tag is not valid: {0}")]
    InvalidStructuralTag(String),
    /// The grammar engine refused to compile the guide.
    #[error("guide: the grammar engine cannot compile it: {0}")]
    Compile(String),
    /// The grammar engine failed during generation.
    #[error("grammar matcher error: {0}")]
    Matcher(String),
    /// A token that the current mask does not allow was consumed.
    #[error("token {0} is not allowed by the grammar at this step")]
    TokenNotAllowed(u32),
}

impl GuidedError {
    /// Whether the guide (a request's input) is at fault, rather than the vocabulary or stop ids
    /// the executor was configured with.
    pub fn is_guide_error(&self) -> bool {
        !matches!(
            self,
            GuidedError::Vocabulary(_)
                | GuidedError::TokenizerJson(_)
                | GuidedError::NoStopTokens
                | GuidedError::StopTokenOutOfRange { .. }
                | GuidedError::Matcher(_)
        )
    }
}
