//! The error type shared by the text layer (tokenizer, detokenizer, chat templates, stop strings).

use std::path::PathBuf;

use crate::error::kind::ErrorKind;

/// Result alias for the text layer.
pub(crate) type Result<T, E = TextError> = std::result::Result<T, E>;

/// Everything that can go wrong while turning text into token ids and back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TextError {
    /// A tokenizer file could not be read from disk.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file that could not be read.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A tokenizer directory has no `tokenizer.json`.
    #[error("no tokenizer.json in {dir}")]
    MissingTokenizerJson {
        /// The directory that was searched.
        dir: PathBuf,
    },
    /// `tokenizer.json` could not be parsed by the tokenizers crate.
    #[error("cannot load tokenizer from {path}: {message}")]
    TokenizerLoad {
        /// The file that failed to load.
        path: PathBuf,
        /// What the tokenizers crate reported.
        message: String,
    },
    /// A JSON configuration file next to the tokenizer is malformed.
    #[error("malformed {path}: {message}")]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// Encoding text into token ids failed.
    #[error("cannot encode text: {0}")]
    Encode(String),
    /// Decoding token ids into text failed.
    #[error("cannot decode token ids: {0}")]
    Decode(String),
    /// A token id from the executor was negative and therefore cannot name a vocabulary entry.
    #[error("negative token id {0}")]
    NegativeTokenId(i32),
    /// A tokenizer id does not fit the executor's `i32` token ids.
    #[error("token id {0} does not fit in an i32")]
    TokenIdTooLarge(u32),
    /// A chat template failed to compile.
    #[error("chat template does not compile: {0}")]
    TemplateSyntax(String),
    /// A chat template failed while rendering (undefined operation, bad filter argument, ...).
    #[error("chat template failed to render: {0}")]
    TemplateRender(String),
    /// A chat template called `raise_exception(message)`, typically to reject the conversation.
    #[error("chat template rejected the conversation: {0}")]
    TemplateRaised(String),
    /// A stop string was empty, which would stop every stream before its first character.
    #[error("stop string {index} is empty")]
    EmptyStopString {
        /// Position of the empty string in the list given.
        index: usize,
    },
    /// The stop strings could not be compiled into one automaton (too large for it).
    #[error("cannot compile the stop strings: {0}")]
    StopStrings(String),
}

impl TextError {
    /// What kind of failure this is: text the request brought that cannot be encoded, templated or
    /// used as a stop string is the request's fault; tokenizer files and templates that do not load
    /// are the setup's; a decode that fails is ours.
    pub fn kind(&self) -> ErrorKind {
        match self {
            TextError::Encode(_)
            | TextError::TemplateRender(_)
            | TextError::TemplateRaised(_)
            | TextError::EmptyStopString { .. }
            | TextError::StopStrings(_)
            | TextError::TokenIdTooLarge(_) => ErrorKind::InvalidRequest,
            TextError::Io { .. }
            | TextError::MissingTokenizerJson { .. }
            | TextError::TokenizerLoad { .. }
            | TextError::Config { .. }
            | TextError::TemplateSyntax(_) => ErrorKind::Configuration,
            TextError::Decode(_) | TextError::NegativeTokenId(_) => ErrorKind::Internal,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_text_setup_files_and_decoding_have_their_kinds() {
        let cases = [
            (TextError::Encode("bad".into()), ErrorKind::InvalidRequest),
            (TextError::TemplateRaised("no system role".into()), ErrorKind::InvalidRequest),
            (TextError::EmptyStopString { index: 0 }, ErrorKind::InvalidRequest),
            (TextError::TokenIdTooLarge(u32::MAX), ErrorKind::InvalidRequest),
            (TextError::MissingTokenizerJson { dir: "model".into() }, ErrorKind::Configuration),
            (TextError::TemplateSyntax("{% if".into()), ErrorKind::Configuration),
            (TextError::Decode("bad id".into()), ErrorKind::Internal),
            (TextError::NegativeTokenId(-1), ErrorKind::Internal),
        ];
        for (error, kind) in cases {
            assert_eq!(error.kind(), kind, "{error}");
        }
    }
}
