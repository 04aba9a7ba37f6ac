//! Guided decoding (structured output): a request's guide ([`GuidedDecodingParams`]: a JSON
//! schema, regex, grammar or structural tag), the executor's vocabulary config
//! ([`GuidedDecodingConfig`], usually built from a tokenizer), and, with the `guided` feature, the
//! grammar engine (llguidance) that compiles guides and constrains tokens. The executor compiles
//! every guide before enqueueing it, so a guide the engine cannot compile is that request's error
//! ([`InvalidGuide`]); the simulated executor runs the same engine to pick its tokens.
//!
//! ```
//! use trtllm::GenerationRequest;
//! use trtllm::guided::GuidedDecodingParams;
//! let guide = GuidedDecodingParams::json_schema(r#"{"type": "object"}"#);
//! let request = GenerationRequest::new(vec![1, 2, 3], 64).with_guided_decoding(guide);
//! assert!(request.guided_decoding().is_some());
//! ```
//!
//! # The grammar engine (feature `guided`)
//!
//! From a `GuidedDecodingConfig`'s parts (one encoded string per token id, the tokenizer.json
//! text and the stop ids) a [`GrammarMatcherFactory`] builds llguidance's token trie once; each
//! guided request then gets a [`GrammarMatcher`] compiled from its guide ([`GuideType`] plus guide
//! text; a bounded cache of recently compiled guides lets a repeated guide skip compilation), which
//! gives the allowed-token mask of every step, consumes the chosen token, tells whether the grammar
//! accepts (a stop id may end the sequence) and picks a deterministic, terminating token for a seed.
//!
//! Guide conversion follows TensorRT-LLM's grammar backends: JSON is any JSON object; JSON_SCHEMA a
//! JSON Schema (compact separators, no free whitespace); REGEX a full match; EBNF_GRAMMAR xgrammar's
//! GBNF dialect (`root ::= ...`, converted to llguidance's Lark syntax; Lark text is accepted too);
//! STRUCTURAL_TAG both xgrammar formats (`{"structures", "triggers"}` and
//! `{"type": "structural_tag", "format": {...}}`).
//!
//! Users: the executor's pre-check (`executor/guide_check.rs`) and the C++ simulator, through the
//! sim-only cxx bridge in `sim/guided/bridge.rs`.

pub use crate::error::invalid_request::InvalidGuide;
pub use crate::types::guided::{
    GuideType, GuidedDecodingBackend, GuidedDecodingConfig, GuidedDecodingParams, GuidedVocabulary,
};

#[cfg(feature = "guided")]
mod cache;
#[cfg(feature = "guided")]
pub(crate) mod error;
#[cfg(feature = "guided")]
mod gbnf;
#[cfg(feature = "guided")]
mod grammar_parts;
#[cfg(feature = "guided")]
mod guide;
#[cfg(feature = "guided")]
mod matcher;
#[cfg(feature = "guided")]
mod structural_tag;
#[cfg(feature = "guided")]
mod text_tokens;
#[cfg(feature = "guided")]
mod vocab;

#[cfg(all(test, feature = "guided", feature = "text"))]
mod tests;

#[cfg(feature = "guided")]
pub use error::GuidedError;
#[cfg(feature = "guided")]
pub use guide::validate_guide;
#[cfg(feature = "guided")]
pub use matcher::{GRAMMAR_CACHE_CAPACITY, GrammarMatcher, GrammarMatcherFactory};
