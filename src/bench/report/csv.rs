//! Minimal RFC 4180 CSV writing: quote fields that need it, double inner quotes, CRLF rows.

use std::borrow::Cow;

/// Quotes `field` when it contains a comma, a double quote, CR or LF, or starts or ends with a
/// space (some readers trim unquoted fields); inner quotes are doubled.
pub(crate) fn escape(field: &str) -> Cow<'_, str> {
    let needs_quotes = field.contains([',', '"', '\r', '\n']) || field.starts_with(' ') || field.ends_with(' ');
    if needs_quotes { Cow::Owned(format!("\"{}\"", field.replace('"', "\"\""))) } else { Cow::Borrowed(field) }
}

/// Appends one record terminated by CRLF.
pub(crate) fn push_row<I, S>(out: &mut String, fields: I)
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    for (i, f) in fields.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&escape(f.as_ref()));
    }
    out.push_str("\r\n");
}

/// An optional number as a CSV field: empty when absent or not finite.
pub(crate) fn opt_num(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite()).map(|x| x.to_string()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_only_when_needed() {
        assert_eq!(escape("plain"), "plain");
        assert_eq!(escape(""), "");
        assert_eq!(escape("a,b"), "\"a,b\"");
        assert_eq!(escape("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(escape("line1\nline2"), "\"line1\nline2\"");
        assert_eq!(escape("cr\r"), "\"cr\r\"");
        assert_eq!(escape(" padded"), "\" padded\"");
    }

    #[test]
    fn rows_end_with_crlf() {
        let mut out = String::new();
        push_row(&mut out, ["a", "b,c", ""]);
        push_row(&mut out, ["1"]);
        assert_eq!(out, "a,\"b,c\",\r\n1\r\n");
    }

    #[test]
    fn missing_numbers_are_empty() {
        assert_eq!(opt_num(None), "");
        assert_eq!(opt_num(Some(f64::NAN)), "");
        assert_eq!(opt_num(Some(0.25)), "0.25");
    }
}
