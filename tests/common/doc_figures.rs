//! Checks the figures a doc quotes against the commands it shows: the markers, their parsing, the
//! runs and the comparisons.
//!
//! A walkthrough marks a command block it wants checked with an HTML comment (invisible when the
//! markdown is rendered) just before the block:
//!
//! ```text
//! <!-- checked figures: the next sh block runs in an empty directory
//! figure "a median TTFT of **{3.1} s**" from json results/c64.json /ttft/p50 * 0.001 within 2%
//! figure "| c=64 | {853.4} |" from stdout /c=64 +\S+ +\S+ +\S+ +(\S+)/ within 1%
//! -->
//! ```
//!
//! The next fenced `sh` block is run as written by `sh -e` in an empty temporary directory, with
//! the built `trtllm` first on `PATH`, so relative output paths land in that directory. Each
//! `figure` line names the text the doc quotes, with the figure in braces; that text (braces
//! removed, any run of white space matching any other) must appear in the doc after the marker.
//! Its measured value is read from the commands' standard output (the first group of a regex) or
//! from a JSON file they wrote (a JSON pointer), times an optional factor, and must agree with
//! the quoted one within the stated relative tolerance beyond the quoted digits' rounding.

use std::path::Path;
use std::process::Command;

use regex::Regex;

/// Where a figure's measured value comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// The first capture group of a regex's first match in the commands' standard output.
    Stdout(String),
    /// A JSON pointer into a file the commands wrote, relative to their directory.
    Json { file: String, pointer: String },
}

/// One quoted figure and how to measure it.
#[derive(Debug, Clone)]
pub struct Figure {
    /// The marker's line (1-based).
    line: usize,
    /// The quoted text with the figure in braces, as the marker gives it.
    quote: String,
    source: Source,
    factor: f64,
    /// Relative tolerance, in percent.
    tolerance_pct: f64,
}

/// A marked command block and its figures.
#[derive(Debug, Clone)]
pub struct Check {
    marker_line: usize,
    script: String,
    figures: Vec<Figure>,
}

impl Check {
    /// The figures the marker names.
    pub fn figure_count(&self) -> usize {
        self.figures.len()
    }
}

const MARKER: &str = "<!-- checked figures";

/// Reads every marker of `text` (a doc named `doc` in messages) with the block it checks.
pub fn parse(doc: &str, text: &str) -> Result<Vec<Check>, String> {
    let figure_re = Regex::new(
        r#"^figure "(?P<quote>[^"]+)" from (?:json (?P<file>\S+) (?P<pointer>\S*)|stdout /(?P<re>.+)/)(?: \* (?P<factor>\S+))? within (?P<tol>[0-9.]+)%$"#,
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut checks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].trim_start().starts_with(MARKER) {
            i += 1;
            continue;
        }
        let marker_line = i + 1;
        let mut figures = Vec::new();
        i += 1;
        while i < lines.len() && lines[i].trim() != "-->" {
            let line = lines[i].trim();
            if line.starts_with("figure ") {
                let c = figure_re
                    .captures(line)
                    .ok_or_else(|| format!("{doc}:{}: a figure line this checker cannot read: {line}", i + 1))?;
                let quote = c["quote"].to_string();
                if quote.matches('{').count() != 1 || quote.matches('}').count() != 1 {
                    return Err(format!("{doc}:{}: the quote must mark one figure in braces: {quote}", i + 1));
                }
                let source = match c.name("re") {
                    Some(re) => {
                        let re = re.as_str().to_string();
                        let compiled = Regex::new(&re).map_err(|e| format!("{doc}:{}: {e}", i + 1))?;
                        if compiled.captures_len() < 2 {
                            return Err(format!("{doc}:{}: the regex needs a capture group: {re}", i + 1));
                        }
                        Source::Stdout(re)
                    }
                    None => Source::Json { file: c["file"].to_string(), pointer: c["pointer"].to_string() },
                };
                let factor = match c.name("factor") {
                    Some(f) => f.as_str().parse().map_err(|_| format!("{doc}:{}: bad factor {}", i + 1, f.as_str()))?,
                    None => 1.0,
                };
                let tolerance_pct = c["tol"].parse().map_err(|_| format!("{doc}:{}: bad tolerance", i + 1))?;
                figures.push(Figure { line: i + 1, quote, source, factor, tolerance_pct });
            }
            i += 1;
        }
        if i == lines.len() {
            return Err(format!("{doc}:{marker_line}: the marker is not closed by a `-->` line"));
        }
        if figures.is_empty() {
            return Err(format!("{doc}:{marker_line}: the marker names no figure"));
        }
        // The block it checks: the next fenced `sh` block.
        let open = (i..lines.len())
            .find(|&j| lines[j].trim() == "```sh")
            .ok_or_else(|| format!("{doc}:{marker_line}: no sh block follows the marker"))?;
        let close = (open + 1..lines.len())
            .find(|&j| lines[j].trim() == "```")
            .ok_or_else(|| format!("{doc}:{}: the sh block is not closed", open + 1))?;
        checks.push(Check { marker_line, script: lines[open + 1..close].join("\n"), figures });
        i = close + 1;
    }
    Ok(checks)
}

/// The doc's text with HTML comments blanked (newlines kept, so lines still count), as characters
/// with their 1-based line, white space runs folded into one space.
fn folded_prose(text: &str) -> Vec<(char, usize)> {
    let mut out: Vec<(char, usize)> = Vec::new();
    let (mut line, mut rest) = (1, text);
    while !rest.is_empty() {
        if rest.starts_with("<!--") {
            let end = rest.find("-->").map_or(rest.len(), |e| e + 3);
            line += rest[..end].matches('\n').count();
            rest = &rest[end..];
            out.push((' ', line));
            continue;
        }
        let c = rest.chars().next().unwrap();
        rest = &rest[c.len_utf8()..];
        if c.is_whitespace() {
            if out.last().is_none_or(|&(p, _)| p != ' ') {
                out.push((' ', line));
            }
        } else {
            out.push((c, line));
        }
        if c == '\n' {
            line += 1;
        }
    }
    out
}

/// The line at which `needle` (white space folded) first appears at or after line `from`.
fn find_quote(prose: &[(char, usize)], needle: &str, from: usize) -> Option<usize> {
    let needle: Vec<char> = needle.split_whitespace().collect::<Vec<_>>().join(" ").chars().collect();
    let start = prose.iter().position(|&(_, l)| l >= from)?;
    (start..prose.len().saturating_sub(needle.len() - 1))
        .find(|&s| prose[s..s + needle.len()].iter().map(|&(c, _)| c).eq(needle.iter().copied()))
        .map(|s| prose[s].1)
}

/// A number as a doc writes it (`5,567.9`, `-3.1`) and half a unit of its last digit.
fn quoted_number(text: &str) -> Option<(f64, f64)> {
    let plain: String = text.chars().filter(|&c| c != ',').collect();
    let value: f64 = plain.parse().ok()?;
    let decimals = plain.split('.').nth(1).map_or(0, str::len);
    Some((value, 0.5 * 10f64.powi(-(decimals as i32))))
}

/// Runs `check`'s block in an empty directory with `trtllm` (the binary at `trtllm`) first on
/// `PATH`; returns one message per figure that is missing, unreadable or drifted.
pub fn run_check(doc: &str, text: &str, check: &Check, trtllm: &Path) -> Vec<String> {
    let prose = folded_prose(text);
    let mut failures = Vec::new();
    // The quotes first: a figure the doc no longer quotes needs no run to be reported.
    let mut quoted = Vec::new();
    for figure in &check.figures {
        let plain = figure.quote.replace(['{', '}'], "");
        let number = &figure.quote[figure.quote.find('{').unwrap() + 1..figure.quote.find('}').unwrap()];
        match (find_quote(&prose, &plain, check.marker_line), quoted_number(number)) {
            (None, _) => failures.push(format!(
                "{doc}:{}: figure \"{plain}\" is marked but not found in the doc's text after the marker (line {})",
                figure.line, check.marker_line
            )),
            (_, None) => failures.push(format!("{doc}:{}: \"{number}\" in \"{plain}\" is not a number", figure.line)),
            (Some(line), Some(number)) => quoted.push((figure, line, plain, number)),
        }
    }
    if quoted.is_empty() {
        return failures;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin_dir = trtllm.parent().unwrap();
    let path = std::env::join_paths(
        std::iter::once(bin_dir.to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let out = Command::new("sh")
        .arg("-e")
        .arg("-c")
        .arg(&check.script)
        .current_dir(dir.path())
        .env("PATH", path)
        .output()
        .expect("run sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        failures.push(format!(
            "{doc}:{}: the checked commands failed ({}):\n{}\n{stdout}\n{}",
            check.marker_line,
            out.status,
            check.script,
            String::from_utf8_lossy(&out.stderr)
        ));
        return failures;
    }
    for (figure, line, plain, (value, half_unit)) in quoted {
        let measured = match &figure.source {
            Source::Stdout(re) => Regex::new(re)
                .unwrap()
                .captures(&stdout)
                .and_then(|c| c.get(1))
                .ok_or_else(|| format!("/{re}/ matches nothing in the output:\n{stdout}"))
                .and_then(|m| {
                    quoted_number(m.as_str())
                        .map(|(v, _)| v)
                        .ok_or_else(|| format!("\"{}\" is not a number", m.as_str()))
                }),
            Source::Json { file, pointer } => std::fs::read_to_string(dir.path().join(file))
                .map_err(|e| format!("{file}: {e}"))
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).map_err(|e| format!("{file}: {e}")))
                .and_then(|json| {
                    json.pointer(pointer)
                        .and_then(serde_json::Value::as_f64)
                        .ok_or_else(|| format!("{file} has no number at {pointer}"))
                }),
        };
        let measured = match measured {
            Ok(m) => m * figure.factor,
            Err(e) => {
                failures.push(format!("{doc}:{line}: figure \"{plain}\" cannot be measured: {e}"));
                continue;
            }
        };
        let allowed = half_unit + figure.tolerance_pct / 100.0 * value.abs();
        if (measured - value).abs() > allowed {
            failures.push(format!(
                "{doc}:{line}: figure \"{plain}\" quotes {value} but the commands now give {measured:.4} \
                 (more than {}% apart; marker line {})",
                figure.tolerance_pct, figure.line
            ));
        }
    }
    failures
}

/// Parses `doc` (a path under the crate's root) and runs each of its checks; returns the number
/// of figures checked, or every failure.
pub fn check_doc(doc: &str) -> Result<usize, Vec<String>> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(doc)).unwrap();
    let checks = parse(doc, &text).map_err(|e| vec![e])?;
    let trtllm = Path::new(env!("CARGO_BIN_EXE_trtllm"));
    let failures: Vec<String> = checks.iter().flat_map(|c| run_check(doc, &text, c, trtllm)).collect();
    if failures.is_empty() { Ok(checks.iter().map(Check::figure_count).sum()) } else { Err(failures) }
}
