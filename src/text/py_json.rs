//! JSON output formatted like Python's `json.dumps`, for the `tojson` filter of chat templates.
//!
//! Hugging Face renders templates with its own `tojson`, which is `json.dumps(x, ensure_ascii=False,
//! indent=..., separators=..., sort_keys=...)`: no HTML escaping, `", "` and `": "` separators
//! without indent, `","` and newlines with it. minijinja's built-in filter escapes `<>&'` and
//! prints compactly, which changes the rendered prompt, so templates get this one instead.

use std::io;

use serde::Serialize;
use serde_json::ser::{CharEscape, Formatter};

/// Options of Python's `json.dumps` that chat templates use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PyJsonOptions {
    /// Indentation per level; `None` keeps everything on one line.
    pub(crate) indent: Option<String>,
    /// Written between items of arrays and objects.
    pub(crate) item_separator: String,
    /// Written between an object key and its value.
    pub(crate) key_separator: String,
    /// Escape every non-ASCII character as `\uXXXX`.
    pub(crate) ensure_ascii: bool,
}

impl PyJsonOptions {
    /// Python's defaults for the given indent: `(", ", ": ")` without indent, `(",", ": ")` with.
    pub(crate) fn with_indent(indent: Option<String>) -> Self {
        let item_separator = if indent.is_some() { "," } else { ", " };
        Self { indent, item_separator: item_separator.to_owned(), key_separator: ": ".to_owned(), ensure_ascii: false }
    }
}

/// Serializes `value` the way Python's `json.dumps` would with `options`.
pub(crate) fn to_py_json<T: Serialize + ?Sized>(value: &T, options: &PyJsonOptions) -> serde_json::Result<String> {
    let mut out = Vec::new();
    let formatter = PyFormatter { options, depth: 0, has_value: false };
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    value.serialize(&mut serializer)?;
    // serde_json writes only valid UTF-8 (strings come from `str`, escapes are ASCII).
    String::from_utf8(out).map_err(|e| serde_json::Error::io(io::Error::other(e)))
}

struct PyFormatter<'a> {
    options: &'a PyJsonOptions,
    depth: usize,
    /// Whether the container being written has had an item yet (decides the closing newline).
    has_value: bool,
}

impl PyFormatter<'_> {
    fn newline_indent<W: ?Sized + io::Write>(&self, writer: &mut W) -> io::Result<()> {
        if let Some(indent) = &self.options.indent {
            writer.write_all(b"\n")?;
            for _ in 0..self.depth {
                writer.write_all(indent.as_bytes())?;
            }
        }
        Ok(())
    }

    fn begin_item<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        if !first {
            writer.write_all(self.options.item_separator.as_bytes())?;
        }
        self.newline_indent(writer)
    }

    fn end_container<W: ?Sized + io::Write>(&mut self, writer: &mut W, close: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.newline_indent(writer)?;
        }
        writer.write_all(close)
    }
}

impl Formatter for PyFormatter<'_> {
    fn begin_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(b"[")
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.end_container(writer, b"]")
    }

    fn begin_array_value<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.begin_item(writer, first)
    }

    fn end_array_value<W: ?Sized + io::Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        writer.write_all(b"{")
    }

    fn end_object<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.end_container(writer, b"}")
    }

    fn begin_object_key<W: ?Sized + io::Write>(&mut self, writer: &mut W, first: bool) -> io::Result<()> {
        self.begin_item(writer, first)
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(self.options.key_separator.as_bytes())
    }

    fn end_object_value<W: ?Sized + io::Write>(&mut self, _writer: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn write_string_fragment<W: ?Sized + io::Write>(&mut self, writer: &mut W, fragment: &str) -> io::Result<()> {
        if !self.options.ensure_ascii {
            return writer.write_all(fragment.as_bytes());
        }
        let mut units = [0u16; 2];
        for c in fragment.chars() {
            if c.is_ascii() {
                writer.write_all(&[c as u8])?;
            } else {
                // Python writes astral characters as a surrogate pair of escapes.
                for unit in c.encode_utf16(&mut units) {
                    write!(writer, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }

    fn write_char_escape<W: ?Sized + io::Write>(&mut self, writer: &mut W, char_escape: CharEscape) -> io::Result<()> {
        // Same short escapes as serde_json and Python; other control characters as \u00XX.
        let escaped: &[u8] = match char_escape {
            CharEscape::Quote => b"\\\"",
            CharEscape::ReverseSolidus => b"\\\\",
            CharEscape::Solidus => b"\\/",
            CharEscape::Backspace => b"\\b",
            CharEscape::FormFeed => b"\\f",
            CharEscape::LineFeed => b"\\n",
            CharEscape::CarriageReturn => b"\\r",
            CharEscape::Tab => b"\\t",
            CharEscape::AsciiControl(byte) => return write!(writer, "\\u{byte:04x}"),
        };
        writer.write_all(escaped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dumps<T: Serialize>(value: &T, indent: Option<&str>) -> String {
        let options = PyJsonOptions::with_indent(indent.map(str::to_owned));
        match to_py_json(value, &options) {
            Ok(text) => text,
            Err(err) => panic!("serializing: {err}"),
        }
    }

    #[test]
    fn one_line_output_uses_python_separators_and_no_html_escapes() {
        let value = json!({"a": [1, 2.5, null, true], "b": "<x> & 'y' \"z\"\n", "c": {}});
        // What Python's json.dumps(value, ensure_ascii=False) prints.
        assert_eq!(dumps(&value, None), r#"{"a": [1, 2.5, null, true], "b": "<x> & 'y' \"z\"\n", "c": {}}"#);
    }

    #[test]
    fn indented_output_matches_python_layout() {
        // A struct keeps field order (serde_json's own map would sort the keys).
        #[derive(Serialize)]
        struct Call {
            name: &'static str,
            args: serde_json::Value,
        }
        let value = Call { name: "f", args: json!([1, {"k": []}]) };
        assert_eq!(
            dumps(&value, Some("  ")),
            "{\n  \"name\": \"f\",\n  \"args\": [\n    1,\n    {\n      \"k\": []\n    }\n  ]\n}"
        );
    }

    #[test]
    fn ensure_ascii_escapes_like_python() {
        let mut options = PyJsonOptions::with_indent(None);
        options.ensure_ascii = true;
        let text = to_py_json("é🦀\u{1}", &options).ok();
        assert_eq!(text.as_deref(), Some(r#""\u00e9\ud83e\udd80\u0001""#));
        options.ensure_ascii = false;
        let text = to_py_json("é🦀", &options).ok();
        assert_eq!(text.as_deref(), Some("\"é🦀\""));
    }
}
