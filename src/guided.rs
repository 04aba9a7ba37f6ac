//! Guided decoding (structured output): a request's guide ([`GuidedDecodingParams`]: a JSON
//! schema, regex, grammar or structural tag) and the executor's vocabulary config
//! ([`GuidedDecodingConfig`], usually built from a tokenizer). The executor compiles every guide
//! before enqueueing it, so a guide the grammar engine cannot compile is that request's error.
//!
//! ```
//! use trtllm::GenerationRequest;
//! use trtllm::guided::GuidedDecodingParams;
//! let guide = GuidedDecodingParams::json_schema(r#"{"type": "object"}"#);
//! let request = GenerationRequest::new(vec![1, 2, 3], 64).with_guided_decoding(guide);
//! assert!(request.guided_decoding().is_some());
//! ```

pub use crate::types::guided::{
    GuideType, GuidedDecodingBackend, GuidedDecodingConfig, GuidedDecodingParams, GuidedVocabulary,
};
