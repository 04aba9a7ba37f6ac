//! xgrammar's GBNF dialect (`root ::= ...`) converted to llguidance's Lark syntax.
//!
//! Supported: rules over several lines, `#` comments, string literals with `\n \t \r \\ \" \xHH
//! \uHHHH \UHHHHHHHH` escapes, character classes (`[a-z]`, `[^"\\]`), `.`, groups, `|`, and the
//! postfix operators `* + ?` and `{m}`, `{m,}`, `{m,n}`. The start rule is `root`. Lookahead
//! assertions (`(= ...)`) are refused rather than silently dropped.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::error::invalid_request::InvalidGuide;

/// A grammar is GBNF when some line defines a rule with `::=`.
pub(super) fn looks_like_gbnf(grammar: &str) -> bool {
    grammar.lines().any(|line| {
        let line = line.split('#').next().unwrap_or_default();
        line.contains("::=")
    })
}

/// Converts a GBNF grammar to Lark text whose `start` rule is the GBNF `root`.
pub(super) fn to_lark(grammar: &str) -> Result<String, InvalidGuide> {
    let rules = Parser { chars: grammar.chars().collect(), pos: 0 }.grammar()?;
    if !rules.iter().any(|(name, _)| name == "root") {
        return Err(InvalidGuide::Grammar("the grammar has no `root` rule".into()));
    }
    let mut names = HashMap::new();
    for (name, _) in &rules {
        let lark = if name == "root" { "start".to_string() } else { format!("r_{}", sanitize(name)) };
        let unique = if names.values().any(|v| v == &lark) { format!("{lark}_{}", names.len()) } else { lark };
        if names.insert(name.clone(), unique).is_some() {
            return Err(InvalidGuide::Grammar(format!("rule `{name}` is defined twice")));
        }
    }
    let mut out = String::new();
    for (name, body) in &rules {
        let _ = write!(out, "{}: ", names[name]);
        emit(body, &names, &mut out)?;
        out.push('\n');
    }
    Ok(out)
}

fn sanitize(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect()
}

/// A GBNF expression.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Literal(String),
    Class { negated: bool, ranges: Vec<(char, char)> },
    AnyChar,
    Rule(String),
    Sequence(Vec<Expr>),
    Choice(Vec<Expr>),
    Repeat { inner: Box<Expr>, min: u32, max: Option<u32> },
}

fn emit(expr: &Expr, names: &HashMap<String, String>, out: &mut String) -> Result<(), InvalidGuide> {
    match expr {
        Expr::Literal(text) => {
            out.push_str(&serde_json::to_string(text).map_err(|e| InvalidGuide::Grammar(e.to_string()))?)
        }
        Expr::Class { negated, ranges } => {
            out.push_str("/[");
            if *negated {
                out.push('^');
            }
            for &(lo, hi) in ranges {
                push_regex_char(out, lo);
                if hi != lo {
                    out.push('-');
                    push_regex_char(out, hi);
                }
            }
            out.push_str("]/");
        }
        Expr::AnyChar => out.push_str("/(?s:.)/"),
        Expr::Rule(name) => match names.get(name) {
            Some(lark) => out.push_str(lark),
            None => return Err(InvalidGuide::Grammar(format!("rule `{name}` is used but not defined"))),
        },
        Expr::Sequence(items) if items.is_empty() => out.push_str("\"\""),
        Expr::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                emit(item, names, out)?;
            }
        }
        Expr::Choice(options) => {
            out.push('(');
            for (i, option) in options.iter().enumerate() {
                if i > 0 {
                    out.push_str(" | ");
                }
                emit(option, names, out)?;
            }
            out.push(')');
        }
        Expr::Repeat { inner, min, max } => {
            out.push('(');
            emit(inner, names, out)?;
            out.push(')');
            match (min, max) {
                (0, None) => out.push('*'),
                (1, None) => out.push('+'),
                (0, Some(1)) => out.push('?'),
                (min, None) => {
                    let _ = write!(out, "{{{min},}}");
                }
                (min, Some(max)) => {
                    let _ = write!(out, "{{{min},{max}}}");
                }
            }
        }
    }
    Ok(())
}

/// Every character of a class as an escape, so nothing in it can end the `/.../` literal.
fn push_regex_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() {
        out.push(c);
    } else {
        let _ = write!(out, "\\x{{{:x}}}", c as u32);
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

impl Parser {
    fn error<T>(&self, what: &str) -> Result<T, InvalidGuide> {
        let line = self.chars[..self.pos.min(self.chars.len())].iter().filter(|&&c| c == '\n').count() + 1;
        Err(InvalidGuide::Grammar(format!("line {line}: {what}")))
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    /// Skips spaces and comments; with `newlines` false, stops at a line end.
    fn skip(&mut self, newlines: bool) {
        while let Some(c) = self.peek() {
            if c == '#' {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.pos += 1;
                }
            } else if c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn name(&mut self) -> Option<String> {
        let start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            self.pos += 1;
        }
        (self.pos > start).then(|| self.chars[start..self.pos].iter().collect())
    }

    fn at_rule_start(&self) -> bool {
        let mut probe = Parser { chars: Vec::new(), pos: 0 };
        let rest: String = self.chars[self.pos..].iter().take(200).collect();
        probe.chars = rest.chars().collect();
        if probe.name().is_none() {
            return false;
        }
        probe.skip(true);
        probe.chars[probe.pos..].starts_with(&[':', ':', '='])
    }

    fn grammar(mut self) -> Result<Vec<(String, Expr)>, InvalidGuide> {
        let mut rules = Vec::new();
        loop {
            self.skip(true);
            if self.peek().is_none() {
                break;
            }
            let Some(name) = self.name() else {
                return self.error("expected a rule name");
            };
            self.skip(true);
            if !self.chars[self.pos..].starts_with(&[':', ':', '=']) {
                return self.error(&format!("expected `::=` after `{name}`"));
            }
            self.pos += 3;
            let body = self.choice()?;
            rules.push((name, body));
        }
        if rules.is_empty() {
            return Err(InvalidGuide::Grammar("the grammar defines no rule".into()));
        }
        Ok(rules)
    }

    fn choice(&mut self) -> Result<Expr, InvalidGuide> {
        let mut options = vec![self.sequence()?];
        loop {
            self.skip(true);
            if self.peek() == Some('|') {
                self.pos += 1;
                options.push(self.sequence()?);
            } else {
                break;
            }
        }
        Ok(if options.len() == 1 { options.remove(0) } else { Expr::Choice(options) })
    }

    fn sequence(&mut self) -> Result<Expr, InvalidGuide> {
        let mut items = Vec::new();
        loop {
            self.skip(true);
            match self.peek() {
                None | Some('|') | Some(')') => break,
                Some(_) if self.at_rule_start() => break,
                _ => {}
            }
            let atom = self.atom()?;
            items.push(self.postfix(atom)?);
        }
        Ok(if items.len() == 1 { items.remove(0) } else { Expr::Sequence(items) })
    }

    fn atom(&mut self) -> Result<Expr, InvalidGuide> {
        match self.peek() {
            Some('"') => {
                self.pos += 1;
                let mut text = String::new();
                loop {
                    match self.peek() {
                        None | Some('\n') => return self.error("unterminated string literal"),
                        Some('"') => {
                            self.pos += 1;
                            break;
                        }
                        Some(_) => text.push(self.char_in_literal()?),
                    }
                }
                Ok(Expr::Literal(text))
            }
            Some('[') => self.class(),
            Some('.') => {
                self.pos += 1;
                Ok(Expr::AnyChar)
            }
            Some('(') => {
                self.pos += 1;
                self.skip(true);
                if self.peek() == Some('=') {
                    return self.error("lookahead assertions `(= ...)` are not supported");
                }
                let inner = self.choice()?;
                self.skip(true);
                if self.peek() != Some(')') {
                    return self.error("expected `)`");
                }
                self.pos += 1;
                Ok(inner)
            }
            Some(c) if c.is_ascii_alphanumeric() || c == '_' => match self.name() {
                Some(name) => Ok(Expr::Rule(name)),
                None => self.error("expected a rule name"),
            },
            Some(c) => self.error(&format!("unexpected `{c}`")),
            None => self.error("unexpected end of grammar"),
        }
    }

    fn class(&mut self) -> Result<Expr, InvalidGuide> {
        self.pos += 1;
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        let mut ranges = Vec::new();
        loop {
            match self.peek() {
                None | Some('\n') => return self.error("unterminated character class"),
                Some(']') => {
                    self.pos += 1;
                    break;
                }
                Some(_) => {
                    let lo = self.char_in_literal()?;
                    let hi = if self.peek() == Some('-') && self.chars.get(self.pos + 1).is_some_and(|&c| c != ']') {
                        self.pos += 1;
                        self.char_in_literal()?
                    } else {
                        lo
                    };
                    if hi < lo {
                        return self.error(&format!("character range `{lo}-{hi}` is reversed"));
                    }
                    ranges.push((lo, hi));
                }
            }
        }
        if ranges.is_empty() && !negated {
            return self.error("empty character class");
        }
        Ok(Expr::Class { negated, ranges })
    }

    /// One (possibly escaped) character of a string literal or class.
    fn char_in_literal(&mut self) -> Result<char, InvalidGuide> {
        let Some(c) = self.peek() else {
            return self.error("unexpected end of grammar");
        };
        self.pos += 1;
        if c != '\\' {
            return Ok(c);
        }
        let Some(escaped) = self.peek() else {
            return self.error("dangling `\\`");
        };
        self.pos += 1;
        let digits = match escaped {
            'n' => return Ok('\n'),
            't' => return Ok('\t'),
            'r' => return Ok('\r'),
            '0' => return Ok('\0'),
            'x' => 2,
            'u' => 4,
            'U' => 8,
            other => return Ok(other),
        };
        let hex: String = self.chars.iter().skip(self.pos).take(digits).collect();
        self.pos += hex.len();
        match u32::from_str_radix(&hex, 16).ok().filter(|_| hex.len() == digits).and_then(char::from_u32) {
            Some(c) => Ok(c),
            None => self.error(&format!("bad escape `\\{escaped}{hex}`")),
        }
    }

    fn postfix(&mut self, mut atom: Expr) -> Result<Expr, InvalidGuide> {
        loop {
            let (min, max) = match self.peek() {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') => {
                    self.pos += 1;
                    let body: String = self.chars[self.pos..].iter().take_while(|&&c| c != '}').collect();
                    self.pos += body.len();
                    if self.peek() != Some('}') {
                        return self.error("unterminated `{m,n}` repetition");
                    }
                    let parse = |s: &str| s.trim().parse::<u32>().ok();
                    let bounds = match body.split_once(',') {
                        None => parse(&body).map(|n| (n, Some(n))),
                        Some((lo, hi)) if hi.trim().is_empty() => parse(lo).map(|lo| (lo, None)),
                        Some((lo, hi)) => parse(lo).zip(parse(hi)).map(|(lo, hi)| (lo, Some(hi))),
                    };
                    match bounds {
                        Some((lo, Some(hi))) if hi < lo => return self.error("repetition `{m,n}` has n < m"),
                        Some(bounds) => bounds,
                        None => return self.error(&format!("bad repetition `{{{body}}}`")),
                    }
                }
                _ => return Ok(atom),
            };
            self.pos += 1;
            atom = Expr::Repeat { inner: Box::new(atom), min, max };
        }
    }
}
