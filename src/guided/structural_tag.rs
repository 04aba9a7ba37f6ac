//! xgrammar structural tags converted to llguidance Lark grammars.
//!
//! Two document shapes are accepted. The original one, `{"structures": [{"begin", "schema", "end"}],
//! "triggers": [...]}`: free text until a trigger, then one structure whose `begin` starts with that
//! trigger, its JSON schema and its `end`, then free text again. And the composable one,
//! `{"type": "structural_tag", "format": {...}}` (or the bare format object), whose formats are
//! `const_string`, `json_schema`, `grammar`, `regex`, `sequence`, `or`, `tag`, `any_text`,
//! `triggered_tags` and `tags_with_separator` (the discriminator key may be `type` or `format`).

use std::fmt::Write as _;

use serde_json::Value;

use crate::error::invalid_request::InvalidGuide;

use super::grammar_parts::{check_regex, grammar_to_lark, with_compact_json};

/// One node of a structural tag.
#[derive(Debug, Clone, PartialEq)]
enum Format {
    ConstString(String),
    JsonSchema(Value),
    Grammar(String),
    Regex(String),
    Sequence(Vec<Format>),
    Or(Vec<Format>),
    Tag(Tag),
    AnyText { excluded: Vec<String> },
    TriggeredTags { triggers: Vec<String>, tags: Vec<Tag>, at_least_one: bool, stop_after_first: bool },
    TagsWithSeparator { tags: Vec<Tag>, separator: String, at_least_one: bool, stop_after_first: bool },
}

#[derive(Debug, Clone, PartialEq)]
struct Tag {
    begin: String,
    content: Box<Format>,
    end: String,
}

fn invalid<T>(what: impl Into<String>) -> Result<T, InvalidGuide> {
    Err(InvalidGuide::StructuralTag(what.into()))
}

/// Converts a structural tag document to Lark text.
pub(super) fn to_lark(text: &str) -> Result<String, InvalidGuide> {
    let doc: Value = serde_json::from_str(text).map_err(|e| InvalidGuide::StructuralTag(e.to_string()))?;
    if !doc.is_object() {
        return invalid("the document is not a JSON object");
    }
    let format = if doc.get("structures").is_some() {
        legacy(&doc)?
    } else if let Some(inner) = doc.get("format").filter(|f| f.is_object()) {
        parse_format(inner)?
    } else {
        parse_format(&doc)?
    };
    let mut builder = Builder::default();
    let start = builder.expr(&format)?;
    let mut out = format!("start: {start}\n");
    for rule in &builder.rules {
        out.push_str(rule);
        out.push('\n');
    }
    Ok(out)
}

fn legacy(doc: &Value) -> Result<Format, InvalidGuide> {
    let Some(structures) = doc["structures"].as_array() else {
        return invalid("`structures` is not an array");
    };
    let tags = structures
        .iter()
        .map(|s| {
            Ok(Tag {
                begin: string_field(s, "begin")?,
                content: Box::new(Format::JsonSchema(schema_field(s)?)),
                end: string_field(s, "end")?,
            })
        })
        .collect::<Result<Vec<_>, InvalidGuide>>()?;
    Ok(Format::TriggeredTags {
        triggers: strings(doc, "triggers")?,
        tags,
        at_least_one: false,
        stop_after_first: false,
    })
}

fn kind(v: &Value) -> Option<&str> {
    v.get("type").and_then(Value::as_str).or_else(|| v.get("format").and_then(Value::as_str))
}

fn parse_format(v: &Value) -> Result<Format, InvalidGuide> {
    let Some(kind) = kind(v) else {
        return invalid(format!("a format object needs a `type`: {v}"));
    };
    Ok(match kind {
        "const_string" => Format::ConstString(string_field(v, "value")?),
        "json_schema" => Format::JsonSchema(schema_field(v)?),
        "grammar" => Format::Grammar(string_field(v, "grammar")?),
        "regex" => {
            let pattern = string_field(v, "pattern")?;
            check_regex(&pattern)?;
            Format::Regex(pattern)
        }
        "sequence" => Format::Sequence(elements(v)?),
        "or" => Format::Or(elements(v)?),
        "tag" => Format::Tag(parse_tag(v)?),
        "any_text" => Format::AnyText { excluded: optional_strings(v, "excluded_str")? },
        "triggered_tags" => {
            let format = Format::TriggeredTags {
                triggers: strings(v, "triggers")?,
                tags: tags(v)?,
                at_least_one: flag(v, "at_least_one"),
                stop_after_first: flag(v, "stop_after_first"),
            };
            if let Format::TriggeredTags { triggers, .. } = &format
                && (triggers.is_empty() || triggers.iter().any(String::is_empty))
            {
                return invalid("`triggers` must hold non-empty strings");
            }
            format
        }
        "tags_with_separator" => Format::TagsWithSeparator {
            tags: tags(v)?,
            separator: v.get("separator").and_then(Value::as_str).unwrap_or_default().to_string(),
            at_least_one: flag(v, "at_least_one"),
            stop_after_first: flag(v, "stop_after_first"),
        },
        "structural_tag" => return invalid("a nested `structural_tag` needs its `format` object"),
        other => return invalid(format!("format type `{other}` is not supported")),
    })
}

fn parse_tag(v: &Value) -> Result<Tag, InvalidGuide> {
    let Some(content) = v.get("content") else {
        return invalid("a tag needs `content`");
    };
    Ok(Tag {
        begin: string_field(v, "begin")?,
        content: Box::new(parse_format(content)?),
        end: string_field(v, "end")?,
    })
}

fn tags(v: &Value) -> Result<Vec<Tag>, InvalidGuide> {
    let Some(list) = v.get("tags").and_then(Value::as_array) else {
        return invalid("`tags` is not an array");
    };
    if list.is_empty() {
        return invalid("`tags` is empty");
    }
    list.iter().map(parse_tag).collect()
}

fn elements(v: &Value) -> Result<Vec<Format>, InvalidGuide> {
    match v.get("elements").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list.iter().map(parse_format).collect(),
        _ => invalid("`elements` must be a non-empty array"),
    }
}

fn string_field(v: &Value, key: &str) -> Result<String, InvalidGuide> {
    match v.get(key).and_then(Value::as_str) {
        Some(s) => Ok(s.to_string()),
        None => invalid(format!("`{key}` must be a string")),
    }
}

fn strings(v: &Value, key: &str) -> Result<Vec<String>, InvalidGuide> {
    match v.get(key).and_then(Value::as_array) {
        Some(list) => list
            .iter()
            .map(|s| s.as_str().map(str::to_string).map_or_else(|| invalid(format!("`{key}` holds a non-string")), Ok))
            .collect(),
        None => invalid(format!("`{key}` must be an array of strings")),
    }
}

fn optional_strings(v: &Value, key: &str) -> Result<Vec<String>, InvalidGuide> {
    if v.get(key).is_none() { Ok(Vec::new()) } else { strings(v, key) }
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The schema of a json_schema format or legacy structure (`json_schema` or `schema`; an object or
/// a JSON text).
fn schema_field(v: &Value) -> Result<Value, InvalidGuide> {
    let schema = match v.get("json_schema").or_else(|| v.get("schema")) {
        Some(Value::String(text)) => serde_json::from_str(text)
            .map_err(|e| InvalidGuide::StructuralTag(format!("the schema is not JSON: {e}")))?,
        Some(schema) => schema.clone(),
        None => return invalid("a json_schema format needs `json_schema`"),
    };
    if !(schema.is_object() || schema.is_boolean()) {
        return invalid("a schema is a JSON object or boolean");
    }
    Ok(schema)
}

/// Accumulates helper rules while converting formats to Lark expressions.
#[derive(Debug, Default)]
struct Builder {
    rules: Vec<String>,
}

impl Builder {
    fn rule(&mut self, prefix: &str, attrs: &str, body: String) -> String {
        let name = format!("{prefix}_{}", self.rules.len());
        self.rules.push(format!("{name}{attrs}: {body}"));
        name
    }

    fn expr(&mut self, format: &Format) -> Result<String, InvalidGuide> {
        Ok(match format {
            Format::ConstString(s) => quote(s),
            Format::JsonSchema(schema) => {
                let body = format!("%json {}", with_compact_json(schema.clone()));
                self.rule("json", "", body)
            }
            Format::Grammar(grammar) => {
                let lark = grammar_to_lark(grammar)?;
                self.rule("grammar", "", format!("%lark {{\n{lark}\n}}"))
            }
            Format::Regex(pattern) => format!("/{}/", llguidance::regex_to_lark(pattern, "")),
            Format::Sequence(items) => {
                let parts = items.iter().map(|f| self.expr(f)).collect::<Result<Vec<_>, _>>()?;
                parts.join(" ")
            }
            Format::Or(items) => {
                let parts = items.iter().map(|f| self.expr(f)).collect::<Result<Vec<_>, _>>()?;
                format!("({})", parts.join(" | "))
            }
            Format::Tag(tag) => self.tag(tag)?,
            Format::AnyText { excluded } => self.free_text(excluded),
            Format::TriggeredTags { triggers, tags, at_least_one, stop_after_first } => {
                self.triggered(triggers, tags, *at_least_one, *stop_after_first)?
            }
            Format::TagsWithSeparator { tags, separator, at_least_one, stop_after_first } => {
                let parts = tags.iter().map(|t| self.tag(t)).collect::<Result<Vec<_>, _>>()?;
                let one = self.rule("tags", "", parts.join(" | "));
                match (at_least_one, stop_after_first, separator.is_empty()) {
                    (true, true, _) => one,
                    (false, true, _) => format!("{one}?"),
                    (true, false, true) => format!("{one}+"),
                    (false, false, true) => format!("{one}*"),
                    (true, false, false) => format!("{one} ({} {one})*", quote(separator)),
                    (false, false, false) => format!("({one} ({} {one})*)?", quote(separator)),
                }
            }
        })
    }

    /// `begin content end`; any text inside a tag runs lazily up to the first `end`.
    fn tag(&mut self, tag: &Tag) -> Result<String, InvalidGuide> {
        let begin = quote(&tag.begin);
        if let Format::AnyText { excluded } = tag.content.as_ref()
            && excluded.is_empty()
            && !tag.end.is_empty()
        {
            let body = format!("/(?s:.*){}/", regex_literal(&tag.end));
            let lazy = self.rule("text", "[lazy]", body);
            return Ok(format!("{begin} {lazy}"));
        }
        let content = self.expr(&tag.content)?;
        Ok(format!("{begin} {content} {}", quote(&tag.end)))
    }

    /// Any text that contains none of `excluded`.
    fn free_text(&mut self, excluded: &[String]) -> String {
        let excluded: Vec<&String> = excluded.iter().filter(|e| !e.is_empty()).collect();
        if excluded.is_empty() {
            return "/(?s:.*)/".to_string();
        }
        let alternatives: Vec<String> = excluded.iter().map(|e| regex_literal(e)).collect();
        let body = format!("/(?s:.*)/ & ~/(?s:.*)({})(?s:.*)/", alternatives.join("|"));
        let name = format!("TEXT_{}", self.rules.len());
        self.rules.push(format!("{name}: {body}"));
        name
    }

    fn triggered(
        &mut self,
        triggers: &[String],
        tags: &[Tag],
        at_least_one: bool,
        stop_after_first: bool,
    ) -> Result<String, InvalidGuide> {
        // Each tag belongs to the one trigger its `begin` starts with.
        let mut by_trigger: Vec<Vec<&Tag>> = vec![Vec::new(); triggers.len()];
        for tag in tags {
            let matching: Vec<usize> = (0..triggers.len()).filter(|&i| tag.begin.starts_with(&triggers[i])).collect();
            match matching.as_slice() {
                [one] => by_trigger[*one].push(tag),
                [] => return invalid(format!("tag begin {:?} starts with none of the triggers", tag.begin)),
                _ => return invalid(format!("tag begin {:?} starts with several triggers", tag.begin)),
            }
        }
        let direct = tags.iter().map(|t| self.tag(t)).collect::<Result<Vec<_>, _>>()?;
        let any_tag = self.rule("tag", "", direct.join(" | "));
        let mut calls = Vec::new();
        for (trigger, tags) in triggers.iter().zip(&by_trigger) {
            if tags.is_empty() {
                continue;
            }
            let head = self.rule("head", "[lazy]", format!("/(?s:.*){}/", regex_literal(trigger)));
            let mut rests = Vec::new();
            for tag in tags {
                let rest = Tag { begin: tag.begin[trigger.len()..].to_string(), ..(*tag).clone() };
                rests.push(self.tag(&rest)?);
            }
            calls.push(format!("{head} ({})", rests.join(" | ")));
        }
        let call = self.rule("call", "", calls.join(" | "));
        let text = self.free_text(triggers);
        Ok(match (at_least_one, stop_after_first) {
            (true, true) => any_tag,
            (false, true) => format!("({call} | {text})"),
            (true, false) => format!("{any_tag} {call}* {text}"),
            (false, false) => format!("{call}* {text}"),
        })
    }
}

/// A Lark string literal (JSON escapes).
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// `s` as a regex matching exactly it, with every non-alphanumeric character escaped.
fn regex_literal(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else {
            let _ = write!(out, "\\x{{{:x}}}", c as u32);
        }
    }
    out
}
