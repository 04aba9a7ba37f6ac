//! Guides translated into llguidance grammars, plus the check a request layer can run on a guide
//! without a vocabulary.

use llguidance::api::{GrammarWithLexer, TopLevelGrammar};
use serde_json::json;

use crate::error::invalid_request::InvalidGuide;
use crate::types::guided::GuideType;

use super::error::GuidedError;
use super::grammar_parts::{check_regex, grammar_to_lark, parse_schema, with_compact_json};
use super::structural_tag;

/// Checks a guide without a tokenizer: the schema is JSON, the regex parses, the grammar converts,
/// the structural tag is well formed. It catches what a client got wrong; compiling against the
/// vocabulary ([`GrammarMatcherFactory::matcher`](super::GrammarMatcherFactory::matcher)) may still
/// refuse a guide the engine cannot handle.
///
/// ```
/// use trtllm::guided::{GuideType, GuidedError, InvalidGuide, validate_guide};
/// assert!(validate_guide(GuideType::JsonSchema, Some(r#"{"type": "object"}"#)).is_ok());
/// let err = validate_guide(GuideType::JsonSchema, Some("{type: object}")).unwrap_err();
/// assert!(matches!(err, GuidedError::Guide { reason: InvalidGuide::Schema(_), .. }));
/// assert!(validate_guide(GuideType::Regex, Some("")).is_err());
/// ```
pub fn validate_guide(guide_type: GuideType, guide: Option<&str>) -> Result<(), GuidedError> {
    grammar_for(guide_type, guide).map(|_| ())
}

/// The llguidance grammar of a guide.
pub(super) fn grammar_for(guide_type: GuideType, guide: Option<&str>) -> Result<TopLevelGrammar, GuidedError> {
    grammar(guide_type, guide).map_err(|reason| GuidedError::Guide { guide_type, reason })
}

fn grammar(guide_type: GuideType, guide: Option<&str>) -> Result<TopLevelGrammar, InvalidGuide> {
    let text = guide.filter(|g| !g.trim().is_empty());
    let needed = || text.ok_or(InvalidGuide::Missing);
    match guide_type {
        GuideType::Json => Ok(TopLevelGrammar::from_json_schema(with_compact_json(json!({"type": "object"})))),
        GuideType::JsonSchema => Ok(TopLevelGrammar::from_json_schema(with_compact_json(parse_schema(needed()?)?))),
        GuideType::Regex => {
            let regex = guide.filter(|g| !g.is_empty()).ok_or(InvalidGuide::Missing)?;
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
