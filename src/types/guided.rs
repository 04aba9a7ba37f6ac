//! Guided decoding (structured output): the executor's `GuidedDecodingConfig` and a request's
//! `GuidedDecodingParams`, with the checks made before a guided request is enqueued.

use serde::{Deserialize, Serialize};

use crate::error::invalid_request::{InvalidGuide, InvalidRequest};
use crate::ffi::sys;

/// What a guided request constrains its output to (TensorRT-LLM's `GuidedDecodingParams::GuideType`):
/// what a request asks for, what crosses to the executor, and what the grammar engine compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuideType {
    /// Any JSON object; takes no guide.
    Json,
    /// Output that validates against a JSON Schema (the guide).
    JsonSchema,
    /// Output that fully matches a regular expression (the guide).
    Regex,
    /// Output derived from an EBNF grammar in xgrammar's GBNF dialect (`root ::= ...`).
    EbnfGrammar,
    /// Free text with tagged segments following their own schemas (an xgrammar structural tag document).
    StructuralTag,
}

impl GuideType {
    /// The field name used in errors and on the command line (`json_schema`, ...).
    pub fn name(self) -> &'static str {
        match self {
            GuideType::Json => "json",
            GuideType::JsonSchema => "json_schema",
            GuideType::Regex => "regex",
            GuideType::EbnfGrammar => "ebnf_grammar",
            GuideType::StructuralTag => "structural_tag",
        }
    }
}

/// A request's output constraint: a [`GuideType`] and, for every type but [`GuideType::Json`], its guide.
///
/// ```
/// use trtllm::GenerationRequest;
/// use trtllm::guided::GuidedDecodingParams;
/// let guide = GuidedDecodingParams::json_schema(r#"{"type": "object", "properties": {"n": {"type": "integer"}}}"#);
/// assert!(guide.validate().is_ok());
/// let request = GenerationRequest::new(vec![1, 2, 3], 64).with_guided_decoding(guide);
/// assert!(request.guided_decoding().is_some());
/// assert!(GuidedDecodingParams::regex("").validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuidedDecodingParams {
    /// The kind of constraint.
    pub guide_type: GuideType,
    /// The schema, regex, grammar or structural tag text (`None` for [`GuideType::Json`]).
    pub guide: Option<String>,
}

impl GuidedDecodingParams {
    /// Any JSON object.
    pub fn json() -> Self {
        GuidedDecodingParams { guide_type: GuideType::Json, guide: None }
    }

    /// Output validating against the JSON Schema `schema`.
    pub fn json_schema(schema: impl Into<String>) -> Self {
        Self::with(GuideType::JsonSchema, schema)
    }

    /// Output fully matching `regex`.
    pub fn regex(regex: impl Into<String>) -> Self {
        Self::with(GuideType::Regex, regex)
    }

    /// Output derived from the GBNF grammar `grammar` (`root ::= ...`).
    pub fn ebnf_grammar(grammar: impl Into<String>) -> Self {
        Self::with(GuideType::EbnfGrammar, grammar)
    }

    /// Output following the structural tag document `tag`.
    pub fn structural_tag(tag: impl Into<String>) -> Self {
        Self::with(GuideType::StructuralTag, tag)
    }

    /// A guide of any type.
    pub fn with(guide_type: GuideType, guide: impl Into<String>) -> Self {
        GuidedDecodingParams { guide_type, guide: Some(guide.into()) }
    }

    /// Checks what a client can get wrong without the vocabulary: a schema or structural tag that is not
    /// JSON, a regex that is empty or does not parse, an empty grammar. The error names the field.
    pub fn validate(&self) -> Result<(), InvalidRequest> {
        self.check().map_err(|reason| InvalidRequest::Guide { field: self.guide_type.name(), reason })
    }

    fn check(&self) -> Result<(), InvalidGuide> {
        let guide = self.guide.as_deref();
        let not_json = |e: String| match self.guide_type {
            GuideType::StructuralTag => InvalidGuide::StructuralTag(e),
            _ => InvalidGuide::Schema(e),
        };
        match self.guide_type {
            GuideType::Json => Ok(()),
            GuideType::JsonSchema | GuideType::StructuralTag => {
                let text = guide.filter(|g| !g.trim().is_empty()).ok_or(InvalidGuide::Missing)?;
                match serde_json::from_str::<serde_json::Value>(text) {
                    Ok(v) if v.is_object() || (v.is_boolean() && self.guide_type == GuideType::JsonSchema) => Ok(()),
                    Ok(_) => Err(not_json("must be a JSON object".into())),
                    Err(e) => Err(not_json(format!("not JSON: {e}"))),
                }
            }
            GuideType::Regex => {
                let regex = guide.filter(|g| !g.is_empty()).ok_or(InvalidGuide::Missing)?;
                regex_syntax::Parser::new().parse(regex).map(|_| ()).map_err(|e| InvalidGuide::Regex(e.to_string()))
            }
            GuideType::EbnfGrammar => guide.filter(|g| !g.trim().is_empty()).map(|_| ()).ok_or(InvalidGuide::Missing),
        }
    }

    pub(crate) fn to_ffi(&self) -> sys::GuidedDecodingSpec {
        sys::GuidedDecodingSpec {
            set: true,
            guide_type: match self.guide_type {
                GuideType::Json => sys::GuideKind::Json,
                GuideType::JsonSchema => sys::GuideKind::JsonSchema,
                GuideType::Regex => sys::GuideKind::Regex,
                GuideType::EbnfGrammar => sys::GuideKind::EbnfGrammar,
                GuideType::StructuralTag => sys::GuideKind::StructuralTag,
            },
            has_guide: self.guide.is_some(),
            guide: self.guide.clone().unwrap_or_default(),
        }
    }
}

/// The grammar engine TensorRT-LLM uses for guided requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum GuidedDecodingBackend {
    /// xgrammar (`kXGRAMMAR`).
    Xgrammar,
    /// llguidance (`kLLGUIDANCE`, what the simulator always uses).
    #[default]
    Llguidance,
}

/// What the executor needs to constrain tokens: the vocabulary as tokenizer.json spells each token,
/// the tokenizer.json text and the ids that end a guided sequence. Usually built from a tokenizer with
/// [`ExecutorConfigBuilder::guided_decoding_from_tokenizer`](crate::ExecutorConfigBuilder::guided_decoding_from_tokenizer).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct GuidedDecodingConfig {
    /// The grammar engine.
    pub backend: GuidedDecodingBackend,
    /// One entry per token id, exactly as in tokenizer.json's vocabulary.
    #[serde(skip)]
    pub encoded_vocab: Vec<String>,
    /// The tokenizer.json text.
    #[serde(skip)]
    pub tokenizer_str: Option<String>,
    /// Ids that end a guided sequence where the grammar accepts (the EOS ids).
    pub stop_token_ids: Vec<u32>,
}

impl GuidedDecodingConfig {
    /// Checks the parts the executor needs.
    pub fn validate(&self) -> Result<(), String> {
        if self.encoded_vocab.is_empty() {
            return Err("guided_decoding.encoded_vocab is empty".into());
        }
        if self.stop_token_ids.is_empty() {
            return Err("guided_decoding.stop_token_ids must hold at least one id (the tokenizer's EOS)".into());
        }
        if let Some(id) = self.stop_token_ids.iter().find(|&&id| id as usize >= self.encoded_vocab.len()) {
            return Err(format!(
                "guided_decoding.stop_token_ids: {id} is outside the vocabulary of {} tokens",
                self.encoded_vocab.len()
            ));
        }
        Ok(())
    }

    /// Builds the config from anything that knows its vocabulary (a [`crate::text::Tokenizer`]).
    pub fn from_vocabulary(source: &impl GuidedVocabulary) -> Self {
        GuidedDecodingConfig {
            backend: GuidedDecodingBackend::Llguidance,
            encoded_vocab: source.encoded_vocab(),
            tokenizer_str: source.tokenizer_json(),
            stop_token_ids: source.stop_token_ids(),
        }
    }

    pub(crate) fn to_ffi(config: Option<&Self>) -> sys::GuidedDecodingOptions {
        let Some(c) = config else {
            return sys::GuidedDecodingOptions::default();
        };
        sys::GuidedDecodingOptions {
            set: true,
            backend: match c.backend {
                GuidedDecodingBackend::Xgrammar => sys::GuidedBackendKind::Xgrammar,
                GuidedDecodingBackend::Llguidance => sys::GuidedBackendKind::Llguidance,
            },
            encoded_vocab: c.encoded_vocab.clone(),
            has_tokenizer_str: c.tokenizer_str.is_some(),
            tokenizer_str: c.tokenizer_str.clone().unwrap_or_default(),
            stop_token_ids: c.stop_token_ids.iter().map(|&id| i32::try_from(id).unwrap_or(i32::MAX)).collect(),
        }
    }
}

/// A source of the vocabulary facts a [`GuidedDecodingConfig`] holds (implemented by the text
/// layer's tokenizer, so this layer does not depend on it).
pub trait GuidedVocabulary {
    /// One string per token id, as tokenizer.json spells it.
    fn encoded_vocab(&self) -> Vec<String>;
    /// The tokenizer.json text, when known.
    fn tokenizer_json(&self) -> Option<String>;
    /// The ids that end a generation (EOS).
    fn stop_token_ids(&self) -> Vec<u32>;
}
