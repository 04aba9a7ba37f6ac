//! Guide types and their translation into llguidance grammars, plus the checks a request layer
//! runs before enqueueing a guided request.

use llguidance::api::{GrammarWithLexer, TopLevelGrammar};
use serde_json::json;

use super::error::GuidedError;
use super::grammar_parts::{check_regex, grammar_to_lark, parse_schema, with_compact_json};
use super::structural_tag;

/// What a guided request constrains its output to (the executor's `GuideType`, same numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuideType {
    /// Any JSON object; takes no guide.
    Json = 0,
    /// A JSON Schema document.
    JsonSchema = 1,
    /// A regular expression the whole output must match.
    Regex = 2,
    /// An EBNF grammar in xgrammar's GBNF dialect (`root ::= ...`), or llguidance Lark text.
    EbnfGrammar = 3,
    /// A structural tag document (tagged segments with their own schemas within free text).
    StructuralTag = 4,
}

impl GuideType {
    /// The guide type with the executor's number (`kJSON = 0` … `kSTRUCTURAL_TAG = 4`).
    ///
    /// ```
    /// use trtllm::sim::guided::GuideType;
    /// assert_eq!(GuideType::from_executor(2).unwrap(), GuideType::Regex);
    /// assert!(GuideType::from_executor(7).is_err());
    /// ```
    pub fn from_executor(value: i32) -> Result<Self, GuidedError> {
        Ok(match value {
            0 => Self::Json,
            1 => Self::JsonSchema,
            2 => Self::Regex,
            3 => Self::EbnfGrammar,
            4 => Self::StructuralTag,
            other => return Err(GuidedError::UnknownGuideType(other)),
        })
    }

    /// The executor's name of the guide type (`JSON_SCHEMA`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::JsonSchema => "JSON_SCHEMA",
            Self::Regex => "REGEX",
            Self::EbnfGrammar => "EBNF_GRAMMAR",
            Self::StructuralTag => "STRUCTURAL_TAG",
        }
    }
}

/// Checks a guide without a tokenizer: the schema is JSON, the regex parses, the grammar converts,
/// the structural tag is well formed. It catches what a client got wrong; compiling against the
/// vocabulary ([`GrammarMatcherFactory::matcher`](super::GrammarMatcherFactory::matcher)) may still
/// refuse a guide the engine cannot handle.
///
/// ```
/// use trtllm::sim::guided::{GuideType, validate_guide};
/// assert!(validate_guide(GuideType::JsonSchema, Some(r#"{"type": "object"}"#)).is_ok());
/// let err = validate_guide(GuideType::JsonSchema, Some("{type: object}")).unwrap_err();
/// assert!(err.to_string().starts_with("guide: the JSON schema is not valid"));
/// assert!(validate_guide(GuideType::Regex, Some("")).is_err());
/// ```
pub fn validate_guide(guide_type: GuideType, guide: Option<&str>) -> Result<(), GuidedError> {
    grammar_for(guide_type, guide).map(|_| ())
}

/// The llguidance grammar of a guide.
pub(super) fn grammar_for(guide_type: GuideType, guide: Option<&str>) -> Result<TopLevelGrammar, GuidedError> {
    let text = guide.filter(|g| !g.trim().is_empty());
    let needed = || text.ok_or(GuidedError::MissingGuide(guide_type.name()));
    match guide_type {
        GuideType::Json => Ok(TopLevelGrammar::from_json_schema(with_compact_json(json!({"type": "object"})))),
        GuideType::JsonSchema => Ok(TopLevelGrammar::from_json_schema(with_compact_json(parse_schema(needed()?)?))),
        GuideType::Regex => {
            let regex = guide.filter(|g| !g.is_empty()).ok_or(GuidedError::MissingGuide(guide_type.name()))?;
            check_regex(regex)?;
            Ok(TopLevelGrammar::from_regex(regex))
        }
        GuideType::EbnfGrammar => Ok(TopLevelGrammar::from_lark(grammar_to_lark(needed()?)?)),
        GuideType::StructuralTag => {
            let lark = structural_tag::to_lark(needed()?)?;
            Ok(TopLevelGrammar::from_grammar(GrammarWithLexer::from_lark(lark)))
        }
    }
}
