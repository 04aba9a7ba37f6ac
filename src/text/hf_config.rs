//! Reads the Hugging Face JSON files that sit next to `tokenizer.json` (special tokens, eos ids, chat template).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::error::{Result, TextError};

/// Tokenizer-related files a Hugging Face model directory may hold, in the order `files()` lists them.
pub(crate) const KNOWN_FILES: &[&str] = &[
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "generation_config.json",
    "chat_template.jinja",
    "chat_template.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
];

/// Special token strings declared by the configuration files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SpecialTokens {
    pub(crate) bos: Option<String>,
    pub(crate) eos: Option<String>,
    pub(crate) pad: Option<String>,
    pub(crate) unk: Option<String>,
    pub(crate) sep: Option<String>,
    pub(crate) cls: Option<String>,
    pub(crate) mask: Option<String>,
    /// `additional_special_tokens` (empty when not configured).
    pub(crate) additional: Vec<String>,
}

impl SpecialTokens {
    /// The named special tokens that are set, as Hugging Face's `special_tokens_map` names them
    /// (`bos_token`, `eos_token`, `unk_token`, `sep_token`, `pad_token`, `cls_token`, `mask_token`).
    pub(crate) fn named(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("bos_token", &self.bos),
            ("eos_token", &self.eos),
            ("unk_token", &self.unk),
            ("sep_token", &self.sep),
            ("pad_token", &self.pad),
            ("cls_token", &self.cls),
            ("mask_token", &self.mask),
        ]
        .into_iter()
        .filter_map(|(name, token)| Some((name, token.as_deref()?)))
    }

    /// Fills every token `self` lacks from `fallback` (an older file of lower precedence).
    fn or(self, fallback: SpecialTokens) -> SpecialTokens {
        SpecialTokens {
            bos: self.bos.or(fallback.bos),
            eos: self.eos.or(fallback.eos),
            pad: self.pad.or(fallback.pad),
            unk: self.unk.or(fallback.unk),
            sep: self.sep.or(fallback.sep),
            cls: self.cls.or(fallback.cls),
            mask: self.mask.or(fallback.mask),
            additional: if self.additional.is_empty() { fallback.additional } else { self.additional },
        }
    }
}

/// Everything the loader takes from the configuration files, before ids are resolved.
#[derive(Debug, Default)]
pub(crate) struct DirConfig {
    pub(crate) special: SpecialTokens,
    pub(crate) add_bos_token: Option<bool>,
    /// `eos_token_id` of generation_config.json (an int or a list of ints there).
    pub(crate) generation_eos_ids: Vec<u32>,
    pub(crate) chat_template: Option<String>,
    pub(crate) files: Vec<PathBuf>,
}

/// Reads the optional configuration files of `dir`; missing files are fine, malformed ones are errors.
pub(crate) fn read_dir_config(dir: &Path) -> Result<DirConfig> {
    let mut config = DirConfig {
        files: KNOWN_FILES.iter().map(|name| dir.join(name)).filter(|path| path.is_file()).collect(),
        ..DirConfig::default()
    };

    // special_tokens_map.json is the older home of the special tokens; tokenizer_config.json wins.
    if let Some(map) = read_json_object(&dir.join("special_tokens_map.json"))? {
        config.special = special_tokens_from(&map);
    }
    let tokenizer_config_path = dir.join("tokenizer_config.json");
    if let Some(tc) = read_json_object(&tokenizer_config_path)? {
        config.special = special_tokens_from(&tc).or(std::mem::take(&mut config.special));
        config.add_bos_token = tc.get("add_bos_token").and_then(Value::as_bool);
        config.chat_template = match tc.get("chat_template") {
            None | Some(Value::Null) => None,
            Some(value) => chat_template_from(value)
                .map_err(|message| TextError::Config { path: tokenizer_config_path.clone(), message })?,
        };
    }

    // Newer checkpoints keep the template in its own file, which takes precedence.
    let json_template_path = dir.join("chat_template.json");
    if let Some(obj) = read_json_object(&json_template_path)?
        && let Some(value) = obj.get("chat_template")
    {
        config.chat_template = chat_template_from(value)
            .map_err(|message| TextError::Config { path: json_template_path.clone(), message })?;
    }
    let jinja_path = dir.join("chat_template.jinja");
    if jinja_path.is_file() {
        config.chat_template = Some(read_to_string(&jinja_path)?);
    }

    let generation_path = dir.join("generation_config.json");
    if let Some(gc) = read_json_object(&generation_path)? {
        config.generation_eos_ids = match gc.get("eos_token_id") {
            None | Some(Value::Null) => Vec::new(),
            Some(value) => {
                token_ids_from(value).map_err(|message| TextError::Config { path: generation_path.clone(), message })?
            }
        };
    }
    Ok(config)
}

fn read_to_string(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|source| TextError::Io { path: path.to_path_buf(), source })
}

/// Reads `path` as a JSON object; `Ok(None)` when the file does not exist.
fn read_json_object(path: &Path) -> Result<Option<serde_json::Map<String, Value>>> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = read_to_string(path)?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(_) => Err(TextError::Config { path: path.to_path_buf(), message: "expected a JSON object".to_owned() }),
        Err(err) => Err(TextError::Config { path: path.to_path_buf(), message: err.to_string() }),
    }
}

fn special_tokens_from(map: &serde_json::Map<String, Value>) -> SpecialTokens {
    let get = |key: &str| map.get(key).and_then(special_token_content);
    let additional = match map.get("additional_special_tokens") {
        Some(Value::Array(tokens)) => tokens.iter().filter_map(special_token_content).collect(),
        _ => Vec::new(),
    };
    SpecialTokens {
        bos: get("bos_token"),
        eos: get("eos_token"),
        pad: get("pad_token"),
        unk: get("unk_token"),
        sep: get("sep_token"),
        cls: get("cls_token"),
        mask: get("mask_token"),
        additional,
    }
}

/// A special token is either a plain string or an AddedToken object `{"content": ..., ...}`.
fn special_token_content(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Object(obj) => obj.get("content")?.as_str().map(str::to_owned),
        _ => None,
    }
}

/// `chat_template` is a string, or a list of `{name, template}` of which the one named "default" is used.
fn chat_template_from(value: &Value) -> std::result::Result<Option<String>, String> {
    match value {
        Value::String(s) => Ok(Some(s.clone())),
        Value::Array(entries) => {
            for entry in entries {
                let name = entry.get("name").and_then(Value::as_str);
                let template = entry.get("template").and_then(Value::as_str);
                match (name, template) {
                    (Some("default"), Some(template)) => return Ok(Some(template.to_owned())),
                    (Some(_), Some(_)) => {}
                    _ => {
                        return Err("chat_template list entries need string `name` and `template`".to_owned());
                    }
                }
            }
            // Like Hugging Face, a list without a "default" entry names no template to use by default.
            Ok(None)
        }
        _ => Err("chat_template must be a string or a list of {name, template}".to_owned()),
    }
}

fn token_ids_from(value: &Value) -> std::result::Result<Vec<u32>, String> {
    let one = |v: &Value| {
        v.as_u64().and_then(|id| u32::try_from(id).ok()).ok_or_else(|| format!("eos_token_id {v} is not a token id"))
    };
    match value {
        Value::Array(items) => items.iter().map(one).collect(),
        other => one(other).map(|id| vec![id]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn special_tokens_accept_strings_and_added_token_objects() {
        let map = json!({
            "bos_token": {"content": "<s>", "lstrip": false},
            "eos_token": "</s>",
            "pad_token": null,
        });
        let Value::Object(map) = map else { unreachable!("json! object literal") };
        let special = special_tokens_from(&map);
        assert_eq!(special.bos.as_deref(), Some("<s>"));
        assert_eq!(special.eos.as_deref(), Some("</s>"));
        assert_eq!(special.pad, None);
        assert_eq!(special.unk, None);
        assert!(special.additional.is_empty());
    }

    #[test]
    fn additional_special_tokens_and_precedence() {
        let Value::Object(old) =
            json!({"unk_token": "<unk>", "pad_token": "<old-pad>", "additional_special_tokens": ["<a>"]})
        else {
            unreachable!("json! object literal")
        };
        let Value::Object(new) = json!({
            "pad_token": "<pad>",
            "mask_token": "<mask>",
            "additional_special_tokens": ["<x>", {"content": "<y>", "special": true}],
        }) else {
            unreachable!("json! object literal")
        };
        let special = special_tokens_from(&new).or(special_tokens_from(&old));
        assert_eq!(special.additional, ["<x>", "<y>"]);
        let named: Vec<_> = special.named().collect();
        assert_eq!(named, [("unk_token", "<unk>"), ("pad_token", "<pad>"), ("mask_token", "<mask>")]);
    }

    #[test]
    fn chat_template_list_prefers_default_entry() {
        let value = json!([
            {"name": "tool_use", "template": "tools"},
            {"name": "default", "template": "plain"},
        ]);
        assert_eq!(chat_template_from(&value), Ok(Some("plain".to_owned())));
        let no_default = json!([{"name": "tool_use", "template": "tools"}]);
        assert_eq!(chat_template_from(&no_default), Ok(None));
        assert!(chat_template_from(&json!([{"name": 3}])).is_err());
        assert!(chat_template_from(&json!(7)).is_err());
    }

    #[test]
    fn eos_token_id_may_be_int_or_list() {
        assert_eq!(token_ids_from(&json!(2)), Ok(vec![2]));
        assert_eq!(token_ids_from(&json!([2, 7])), Ok(vec![2, 7]));
        assert!(token_ids_from(&json!(-1)).is_err());
        assert!(token_ids_from(&json!("2")).is_err());
    }
}
