//! Hugging Face chat templates (Jinja) rendered with minijinja the way `apply_chat_template` does.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;
use std::sync::Arc;

use minijinja::value::{Kwargs, Serde, Value, ValueKind};
use minijinja::{AutoEscape, Environment, Error, ErrorKind, syntax::SyntaxConfig};
use serde::ser::{SerializeMap, SerializeSeq};

use super::chat_message::ChatMessage;
use super::error::{Result, TextError};
use super::py_json::{PyJsonOptions, to_py_json};

const TEMPLATE_NAME: &str = "chat_template";

/// A compiled chat template that turns a conversation into the prompt text a model expects.
///
/// The template sees what Hugging Face's `apply_chat_template` provides for tool-less chat:
/// `messages` (each with `role` and `content`), `add_generation_prompt`, `tools` and `documents`
/// (both `none`, so `{% if tools is not none %}` behaves as in Python), the special tokens the
/// tokenizer configuration names (`bos_token`, `eos_token`, `unk_token`, `sep_token`, `pad_token`,
/// `cls_token`, `mask_token`, `additional_special_tokens`; a token that is not configured is
/// undefined), `raise_exception(message)`, `strftime_now(format)`, a `tojson` filter that prints
/// like Python's `json.dumps`, Python string and dict methods (`.strip()`, `.startswith()`,
/// `.items()`, ...), `break`/`continue`, and Hugging Face's whitespace rules (`trim_blocks` and
/// `lstrip_blocks` on, a final newline dropped).
///
/// Cloning is cheap: the compiled template is shared.
///
/// ```rust
/// use trtllm::text::{ChatMessage, ChatTemplate};
///
/// let template = ChatTemplate::new(
///     "{{ bos_token }}{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</s>\n{% endfor %}\
///      {% if add_generation_prompt %}<assistant>{% endif %}\
///      {% if tools is not none %}(tools){% endif %}{{ pad_token }}",
///     Some("<s>"),
///     Some("</s>"),
/// )?
/// .with_special_token("pad_token", "<pad>");
/// let prompt = template.render(&[ChatMessage::user("  Hello!  ")], true)?;
/// assert_eq!(prompt, "<s><user>Hello!</s>\n<assistant><pad>");
/// # Ok::<(), trtllm::text::TextError>(())
/// ```
#[derive(Clone)]
pub struct ChatTemplate {
    env: Arc<Environment<'static>>,
    /// `(name, token)` pairs such as `("bos_token", "<s>")`, each name once.
    special_tokens: Vec<(String, String)>,
    additional_special_tokens: Vec<String>,
}

impl ChatTemplate {
    /// Compiles `source`; `bos_token` and `eos_token` are the strings the template may insert.
    ///
    /// Add the other special tokens of the tokenizer with
    /// [`with_special_token`](Self::with_special_token) and
    /// [`with_additional_special_tokens`](Self::with_additional_special_tokens);
    /// [`Tokenizer::from_dir`](super::Tokenizer::from_dir) does so for every token its
    /// configuration names.
    pub fn new(source: impl Into<String>, bos_token: Option<&str>, eos_token: Option<&str>) -> Result<Self> {
        let mut env = Environment::new();
        let syntax = SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| TextError::TemplateSyntax(e.to_string()))?;
        env.set_syntax(syntax);
        // Prompts are plain text: never HTML-escape, whatever the template is called.
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", tojson);
        env.add_template_owned(TEMPLATE_NAME, source.into()).map_err(|e| TextError::TemplateSyntax(describe(&e)))?;
        let mut template =
            Self { env: Arc::new(env), special_tokens: Vec::new(), additional_special_tokens: Vec::new() };
        for (name, token) in [("bos_token", bos_token), ("eos_token", eos_token)] {
            if let Some(token) = token {
                template = template.with_special_token(name, token);
            }
        }
        Ok(template)
    }

    /// Makes `token` available to the template as the variable `name` (for example
    /// `"pad_token"`), replacing any earlier value of that name.
    pub fn with_special_token(mut self, name: impl Into<String>, token: impl Into<String>) -> Self {
        let (name, token) = (name.into(), token.into());
        match self.special_tokens.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = token,
            None => self.special_tokens.push((name, token)),
        }
        self
    }

    /// Makes `tokens` available to the template as the list `additional_special_tokens`.
    pub fn with_additional_special_tokens<I, S>(mut self, tokens: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.additional_special_tokens = tokens.into_iter().map(Into::into).collect();
        self
    }

    /// Renders `messages`; with `add_generation_prompt` the text ends with the cue for the
    /// assistant's reply (if the template supports it).
    ///
    /// A `raise_exception` call in the template gives [`TextError::TemplateRaised`] carrying its
    /// message; other failures give [`TextError::TemplateRender`].
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        let template = self.env.get_template(TEMPLATE_NAME).map_err(|e| TextError::TemplateRender(describe(&e)))?;
        let mut ctx: BTreeMap<String, Value> =
            self.special_tokens.iter().map(|(name, token)| (name.clone(), Value::from(token.as_str()))).collect();
        if !self.additional_special_tokens.is_empty() {
            ctx.insert("additional_special_tokens".into(), Value::from(self.additional_special_tokens.clone()));
        }
        ctx.insert("messages".into(), Value::from(Serde(messages)));
        // Hugging Face passes these as Python `None` for tool-less chat; minijinja's undefined
        // would make `tools is not none` true.
        ctx.insert("tools".into(), Value::from(()));
        ctx.insert("documents".into(), Value::from(()));
        ctx.insert("add_generation_prompt".into(), Value::from(add_generation_prompt));
        template.render(Value::from(ctx)).map_err(|err| match raised_message(&err) {
            Some(message) => TextError::TemplateRaised(message),
            None => TextError::TemplateRender(describe(&err)),
        })
    }

    /// The `bos_token` given to the template.
    pub fn bos_token(&self) -> Option<&str> {
        self.special_token("bos_token")
    }

    /// The `eos_token` given to the template.
    pub fn eos_token(&self) -> Option<&str> {
        self.special_token("eos_token")
    }

    /// The special token the template sees as the variable `name`, if set.
    pub fn special_token(&self, name: &str) -> Option<&str> {
        self.special_tokens.iter().find(|(n, _)| n == name).map(|(_, token)| token.as_str())
    }

    /// The `additional_special_tokens` given to the template.
    pub fn additional_special_tokens(&self) -> &[String] {
        &self.additional_special_tokens
    }
}

impl fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = self.env.get_template(TEMPLATE_NAME).map(|t| t.source().len()).unwrap_or_default();
        f.debug_struct("ChatTemplate")
            .field("source_len", &source)
            .field("special_tokens", &self.special_tokens)
            .field("additional_special_tokens", &self.additional_special_tokens)
            .finish()
    }
}

/// The message of a `raise_exception` call, carried as the error's source so it can be told
/// apart from minijinja's own errors.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct RaisedException(String);

fn raise_exception(message: String) -> std::result::Result<Value, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message.clone()).with_source(RaisedException(message)))
}

fn raised_message(err: &Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(current) = source {
        if let Some(raised) = current.downcast_ref::<RaisedException>() {
            return Some(raised.0.clone());
        }
        source = current.source();
    }
    None
}

/// minijinja's message plus where in the template it happened.
fn describe(err: &Error) -> String {
    match err.line() {
        Some(line) => format!("{err} (line {line})"),
        None => err.to_string(),
    }
}

fn strftime_now(format: String) -> std::result::Result<String, Error> {
    let mut out = String::new();
    // An unknown `%` directive makes chrono's formatter fail; report it instead of panicking.
    write!(out, "{}", chrono::Local::now().format(&format))
        .map_err(|_| Error::new(ErrorKind::InvalidOperation, format!("strftime_now: invalid format {format:?}")))?;
    Ok(out)
}

/// `tojson` as Hugging Face defines it: Python's `json.dumps` with `ensure_ascii=False` by default.
fn tojson(value: Value, kwargs: Kwargs) -> std::result::Result<Value, Error> {
    let indent: Option<Value> = kwargs.get("indent")?;
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() || v.is_undefined() => None,
        Some(v) => match (v.as_str(), i64::try_from(v.clone())) {
            (Some(s), _) => Some(s.to_owned()),
            (None, Ok(n)) => Some(" ".repeat(usize::try_from(n).unwrap_or(0))),
            _ => {
                return Err(Error::new(ErrorKind::InvalidOperation, "tojson: indent must be an integer or a string"));
            }
        },
    };
    let mut options = PyJsonOptions::with_indent(indent);
    if let Some(separators) = kwargs.get::<Option<Value>>("separators")?
        && !separators.is_none()
    {
        let pair: Vec<String> =
            separators.try_iter()?.map(|v| v.as_str().map(str::to_owned)).collect::<Option<_>>().unwrap_or_default();
        let [item, key] = <[String; 2]>::try_from(pair)
            .map_err(|_| Error::new(ErrorKind::InvalidOperation, "tojson: separators must be two strings"))?;
        options.item_separator = item;
        options.key_separator = key;
    }
    options.ensure_ascii = kwargs.get::<Option<bool>>("ensure_ascii")?.unwrap_or(false);
    let sort_keys = kwargs.get::<Option<bool>>("sort_keys")?.unwrap_or(false);
    kwargs.assert_all_used()?;

    let json = if sort_keys { to_py_json(&SortedKeys(&value), &options) } else { to_py_json(&value, &options) }
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    Ok(Value::from_safe_string(json))
}

/// Serializes a template value with every map's keys in sorted order (`sort_keys=True`).
struct SortedKeys<'a>(&'a Value);

impl serde::Serialize for SortedKeys<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let to_ser = |e: Error| serde::ser::Error::custom(e.to_string());
        match self.0.kind() {
            ValueKind::Map => {
                let mut entries = Vec::new();
                for key in self.0.try_iter().map_err(to_ser)? {
                    let value = self.0.get_item(&key).map_err(to_ser)?;
                    entries.push((key.to_string(), value));
                }
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in &entries {
                    map.serialize_entry(key, &SortedKeys(value))?;
                }
                map.end()
            }
            ValueKind::Seq | ValueKind::Iterable => {
                let items: Vec<Value> = self.0.try_iter().map_err(to_ser)?.collect();
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in &items {
                    seq.serialize_element(&SortedKeys(item))?;
                }
                seq.end()
            }
            _ => self.0.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(source: &str, messages: &[ChatMessage]) -> Result<String> {
        ChatTemplate::new(source, Some("<s>"), None)?.render(messages, false)
    }

    #[test]
    fn tojson_prints_like_python_json_dumps() {
        let out = render(
            "{{ messages[0] | tojson }}|{{ {'b': 1, 'a': [1, 2]} | tojson(sort_keys=true) }}",
            &[ChatMessage::user("<b>&'x'</b>")],
        );
        assert_eq!(out.ok().as_deref(), Some(r#"{"role": "user", "content": "<b>&'x'</b>"}|{"a": [1, 2], "b": 1}"#));
    }

    #[test]
    fn tojson_accepts_indent_and_separators() {
        let out = render("{{ {'a': [1]} | tojson(indent=2) }}|{{ [1, 2] | tojson(separators=[',', ':']) }}", &[]);
        assert_eq!(out.ok().as_deref(), Some("{\n  \"a\": [\n    1\n  ]\n}|[1,2]"));
    }

    #[test]
    fn python_string_methods_and_loop_controls_work() {
        let out = render(
            "{% for m in messages %}{% if m.content.startswith('skip') %}{% continue %}{% endif %}\
             {{ m.content.strip().upper() }};{% if loop.index >= 3 %}{% break %}{% endif %}{% endfor %}",
            &[ChatMessage::user(" a "), ChatMessage::user("skip me"), ChatMessage::user("b"), ChatMessage::user("c")],
        );
        assert_eq!(out.ok().as_deref(), Some("A;B;"));
    }

    #[test]
    fn missing_eos_token_is_undefined_and_renders_empty() {
        let out = render("[{{ eos_token }}]{% if eos_token is defined %}!{% endif %}", &[]);
        assert_eq!(out.ok().as_deref(), Some("[]"));
    }

    #[test]
    fn tools_and_documents_are_none_not_undefined() {
        let out = render(
            "{% if tools is not none %}tools{% else %}no tools{% endif %};\
             {% if documents is none %}no documents{% endif %};{{ tools is defined }}",
            &[],
        );
        assert_eq!(out.ok().as_deref(), Some("no tools;no documents;True"));
    }

    #[test]
    fn strftime_now_formats_the_current_date() {
        let out = render("{{ strftime_now('%Y') }}", &[]).unwrap_or_default();
        let year = chrono::Local::now().format("%Y").to_string();
        // Around midnight on New Year's Eve the two calls may straddle a year boundary.
        let next_year = (year.parse::<i32>().unwrap_or_default() + 1).to_string();
        assert!(out == year || out == next_year, "{out}");
    }

    #[test]
    fn bad_strftime_format_is_a_render_error() {
        let err = render("{{ strftime_now('%Q%') }}", &[]).err();
        assert!(matches!(&err, Some(TextError::TemplateRender(m)) if m.contains("strftime_now")), "{err:?}");
    }

    #[test]
    fn syntax_errors_are_reported_at_construction() {
        let err = ChatTemplate::new("{% for m in messages %}", None, None).err();
        assert!(matches!(err, Some(TextError::TemplateSyntax(_))), "{err:?}");
    }
}
