//! Errors of the grammar engine: a vocabulary it cannot build on, a guide it refuses, a step that
//! fails; each says its own [`ErrorKind`].

use crate::error::invalid_request::InvalidGuide;
use crate::error::kind::ErrorKind;
use crate::types::guided::GuideType;

/// Why a guided-decoding configuration, guide or step was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    /// The guide type number the simulator passed is not one of the executor's `GuideType` values.
    #[error("guide_type: {0} is not a guide type (0 = JSON … 4 = STRUCTURAL_TAG)")]
    UnknownGuideType(i32),
    /// The guide is malformed, or the engine cannot compile it.
    #[error("{} guide: {reason}", guide_type.name())]
    Guide {
        /// The guide's type.
        guide_type: GuideType,
        /// What is wrong with it.
        #[source]
        reason: InvalidGuide,
    },
    /// The grammar engine failed during generation.
    #[error("grammar matcher error: {0}")]
    Matcher(String),
    /// A token that the current mask does not allow was consumed.
    #[error("token {0} is not allowed by the grammar at this step")]
    TokenNotAllowed(u32),
}

impl GuidedError {
    /// What kind of failure this is: a guide is the request's fault; the vocabulary and stop ids
    /// are the executor's configuration; a failing step or an unknown guide type number is ours.
    pub fn kind(&self) -> ErrorKind {
        match self {
            GuidedError::Guide { .. } => ErrorKind::InvalidRequest,
            GuidedError::Vocabulary(_)
            | GuidedError::TokenizerJson(_)
            | GuidedError::NoStopTokens
            | GuidedError::StopTokenOutOfRange { .. } => ErrorKind::Configuration,
            GuidedError::UnknownGuideType(_) | GuidedError::Matcher(_) | GuidedError::TokenNotAllowed(_) => {
                ErrorKind::Internal
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guides_configuration_and_steps_have_their_kinds() {
        let guide = GuidedError::Guide { guide_type: GuideType::Regex, reason: InvalidGuide::Regex("(".into()) };
        assert_eq!(guide.kind(), ErrorKind::InvalidRequest);
        assert_eq!(GuidedError::NoStopTokens.kind(), ErrorKind::Configuration);
        assert_eq!(GuidedError::Vocabulary("empty".into()).kind(), ErrorKind::Configuration);
        assert_eq!(GuidedError::Matcher("no token".into()).kind(), ErrorKind::Internal);
        assert_eq!(GuidedError::TokenNotAllowed(7).kind(), ErrorKind::Internal);
        assert_eq!(GuidedError::UnknownGuideType(9).kind(), ErrorKind::Internal);
    }
}
