//! The pieces of a guide translated one at a time (a JSON schema, a regex, a grammar), shared by
//! whole guides and by the segments of a structural tag.

use serde_json::{Value, json};

use crate::error::invalid_request::InvalidGuide;

use super::gbnf;

/// A JSON Schema: a JSON object or boolean.
pub(super) fn parse_schema(text: &str) -> Result<Value, InvalidGuide> {
    let schema: Value = serde_json::from_str(text).map_err(|e| InvalidGuide::Schema(e.to_string()))?;
    if !(schema.is_object() || schema.is_boolean()) {
        return Err(InvalidGuide::Schema("a schema is a JSON object or boolean".into()));
    }
    Ok(schema)
}

/// Compact separators and no free whitespace unless the schema sets its own `x-guidance` options,
/// as TensorRT-LLM's llguidance backend does (`lenient` lets unknown keywords through).
pub(super) fn with_compact_json(mut schema: Value) -> Value {
    if let Value::Object(map) = &mut schema
        && !map.contains_key("x-guidance")
    {
        map.insert(
            "x-guidance".into(),
            json!({"item_separator": ", ", "key_separator": ": ", "whitespace_flexible": false, "lenient": true}),
        );
    }
    schema
}

/// The regex parses with Rust's regex syntax (what llguidance uses).
pub(super) fn check_regex(regex: &str) -> Result<(), InvalidGuide> {
    regex_syntax::Parser::new().parse(regex).map(|_| ()).map_err(|e| InvalidGuide::Regex(e.to_string()))
}

/// GBNF (`::=` rules) is converted; anything else is taken as llguidance Lark text.
pub(super) fn grammar_to_lark(grammar: &str) -> Result<String, InvalidGuide> {
    if gbnf::looks_like_gbnf(grammar) { gbnf::to_lark(grammar) } else { Ok(grammar.to_string()) }
}
