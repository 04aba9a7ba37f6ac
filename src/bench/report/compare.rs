//! Side-by-side comparison of two result JSON files (ours or vLLM's) with B/A ratios.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::bench::metrics::repeats::{HEADLINE_FIGURES, NoiseVerdict, RepeatStats};

/// Errors from reading result files to compare.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A file is not valid JSON.
    #[error("{path} is not valid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: serde_json::Error,
    },
    /// A file holds JSON that is not an object.
    #[error("{0} does not hold a JSON object")]
    NotAnObject(PathBuf),
}

const COUNTS: [&str; 9] = [
    "completed",
    "failed",
    "duration",
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
];

const LATENCIES: [&str; 4] = ["ttft", "tpot", "itl", "e2el"];

/// Headline metric keys present in either object, in display order: counts and rates, then
/// mean, median and every `pNN` percentile (ascending) of TTFT, TPOT, ITL and E2EL.
fn headline_keys(a: &Value, b: &Value) -> Vec<String> {
    let present = |k: &str| a.get(k).is_some_and(Value::is_number) || b.get(k).is_some_and(Value::is_number);
    let mut keys: Vec<String> = COUNTS.iter().filter(|k| present(k)).map(|k| k.to_string()).collect();
    for metric in LATENCIES {
        for stat in ["mean", "median"] {
            let key = format!("{stat}_{metric}_ms");
            if present(&key) {
                keys.push(key);
            }
        }
        let suffix = format!("_{metric}_ms");
        let mut pcts: Vec<(f64, String)> = [a, b]
            .iter()
            .filter_map(|v| v.as_object())
            .flat_map(|m| m.keys())
            .filter_map(|k| {
                let p: f64 = k.strip_prefix('p')?.strip_suffix(suffix.as_str())?.parse().ok()?;
                Some((p, k.clone()))
            })
            .filter(|(_, k)| present(k))
            .collect();
        pcts.sort_by(|x, y| x.0.total_cmp(&y.0));
        pcts.dedup_by(|x, y| x.1 == y.1);
        keys.extend(pcts.into_iter().map(|(_, k)| k));
    }
    keys
}

fn fmt_value(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) if n.is_f64() => n.as_f64().map_or_else(|| "-".into(), |x| format!("{x:.2}")),
        Some(Value::Number(n)) => n.to_string(),
        _ => "-".into(),
    }
}

fn ratio(a: Option<&Value>, b: Option<&Value>) -> String {
    match (a.and_then(Value::as_f64), b.and_then(Value::as_f64)) {
        (Some(a), Some(b)) if a != 0.0 => format!("{:.3}", b / a),
        _ => "-".into(),
    }
}

fn identity(v: &Value) -> String {
    let text = |k: &str| v.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let mut parts: Vec<String> = Vec::new();
    if let Some(label) = text("label").or_else(|| text("backend")) {
        parts.push(label.to_owned());
    }
    if let Some(model) = text("model_id") {
        parts.push(model.to_owned());
    }
    if let Some(date) = text("date") {
        parts.push(date.to_owned());
    }
    if parts.is_empty() { "-".into() } else { parts.join(" | ") }
}

/// Headline metrics of two result objects side by side with the ratio B/A (`-` when a value is
/// missing or A is zero). Works on any vLLM-compatible result JSON; non-objects compare as empty.
///
/// ```rust
/// use serde_json::json;
/// use trtllm::bench::compare;
///
/// let a = json!({"label": "base", "output_throughput": 1000.0, "p99_ttft_ms": 80.0});
/// let b = json!({"label": "new", "output_throughput": 1250.0, "p99_ttft_ms": 40.0});
/// let text = compare(&a, &b);
/// let line = text.lines().find(|l| l.starts_with("output_throughput")).unwrap();
/// assert!(line.ends_with("1.250"));
/// assert!(text.lines().any(|l| l.starts_with("p99_ttft_ms") && l.ends_with("0.500")));
/// ```
pub fn compare(a: &Value, b: &Value) -> String {
    let rows: Vec<[String; 4]> = headline_keys(a, b)
        .into_iter()
        .map(|k| {
            let (va, vb) = (a.get(&k), b.get(&k));
            [k, fmt_value(va), fmt_value(vb), ratio(va, vb)]
        })
        .chain(speculative_rows(a, b))
        .collect();
    let header = ["metric", "A", "B", "B/A"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = format!("A: {}\nB: {}\n", identity(a), identity(b));
    for row in std::iter::once(&header).chain(&rows) {
        let [m, x, y, r] = row;
        let [w0, w1, w2, w3] = widths;
        out.push_str(&format!("{m:<w0$}  {x:>w1$}  {y:>w2$}  {r:>w3$}\n"));
    }
    if let Some(line) = speedup_line(a, b) {
        out.push_str(&line);
    }
    out.push_str(&noise_table(a, b));
    out
}

/// Whether each headline figure differs beyond the runs' noise, from the `repeats` sections
/// (`--repeats N`): Welch's t-test at 5% on the per-run values.
fn noise_table(a: &Value, b: &Value) -> String {
    let figures = |v: &Value| v.get("repeats").and_then(|r| r.get("figures")).cloned();
    let (Some(fa), Some(fb)) = (figures(a), figures(b)) else {
        return "noise: unknown (a result without repeats); run each point with --repeats N (3 or more) to tell a difference from noise\n".into();
    };
    let mut out = String::from("noise (Welch's t-test at 5% over the repeated runs):\n");
    let mut rows: Vec<[String; 5]> = Vec::new();
    for key in HEADLINE_FIGURES {
        let (Some(sa), Some(sb)) = (RepeatStats::from_json(&fa[key]), RepeatStats::from_json(&fb[key])) else {
            continue;
        };
        let ci = |s: &RepeatStats| match s.ci95() {
            Some((low, high)) => format!("{:.2} [{low:.2}, {high:.2}] n={}", s.mean, s.n()),
            None => format!("{:.2} n={}", s.mean, s.n()),
        };
        let verdict = match NoiseVerdict::new(&sa, &sb) {
            Some(v) if v.t.is_infinite() && v.beyond_noise => "beyond noise (the runs had none)".into(),
            Some(v) if v.t.is_infinite() => "same (the runs had no noise)".into(),
            Some(v) if v.beyond_noise => format!("beyond noise (t={:.1})", v.t),
            Some(v) => format!("within noise (t={:.1})", v.t),
            None => "unknown (one run)".into(),
        };
        let ratio = if sa.mean != 0.0 { format!("{:.3}", sb.mean / sa.mean) } else { "-".into() };
        rows.push([key.to_owned(), ci(&sa), ci(&sb), ratio, verdict]);
    }
    let mut widths = [0_usize; 5];
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    for [m, x, y, r, v] in &rows {
        let [w0, w1, w2, w3, _] = widths;
        out.push_str(&format!("{m:<w0$}  {x:>w1$}  {y:>w2$}  {r:>w3$}  {v}\n"));
    }
    out
}

/// Rows of the `speculative` sections (acceptance, tokens per step), when either run has one.
fn speculative_rows(a: &Value, b: &Value) -> Vec<[String; 4]> {
    const KEYS: [&str; 4] = ["acceptance_rate", "mean_accepted_length", "tokens_per_step", "draft_tokens_wasted"];
    let (sa, sb) = (a.get("speculative"), b.get("speculative"));
    if sa.is_none() && sb.is_none() {
        return Vec::new();
    }
    KEYS.iter()
        .map(|k| {
            let (va, vb) = (sa.and_then(|s| s.get(*k)), sb.and_then(|s| s.get(*k)));
            [format!("speculative.{k}"), fmt_value(va), fmt_value(vb), ratio(va, vb)]
        })
        .collect()
}

/// The decode speedup of B over A: A's mean TPOT / B's (and ITL per token), e.g. a speculative
/// run (B) against the same engine without speculation (A).
fn speedup_line(a: &Value, b: &Value) -> Option<String> {
    let speedup = |key: &str| {
        let (x, y) = (a.get(key)?.as_f64()?, b.get(key)?.as_f64()?);
        (y > 0.0).then(|| x / y)
    };
    let tpot = speedup("mean_tpot_ms")?;
    let mut line = format!("speedup of B over A: {tpot:.2}x mean TPOT");
    if let Some(e2el) = speedup("mean_e2el_ms") {
        line.push_str(&format!(", {e2el:.2}x mean E2E latency"));
    }
    line.push('\n');
    Some(line)
}

fn read_object(path: &Path) -> Result<Value, CompareError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompareError::Io { path: path.to_owned(), source })?;
    let value: Value =
        serde_json::from_str(&text).map_err(|source| CompareError::Json { path: path.to_owned(), source })?;
    if value.is_object() { Ok(value) } else { Err(CompareError::NotAnObject(path.to_owned())) }
}

/// Reads two result files and [`compare`]s them.
pub fn compare_files(a: &Path, b: &Path) -> Result<String, CompareError> {
    Ok(compare(&read_object(a)?, &read_object(b)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn percentiles_sorted_numerically_and_missing_shown() {
        let a = json!({"p99.9_ttft_ms": 5.0, "p50_ttft_ms": 1.0, "p9_ttft_ms": 2.0, "completed": 10});
        let b = json!({"p50_ttft_ms": 0.0, "completed": 0});
        let text = compare(&a, &b);
        let order: Vec<&str> = text
            .lines()
            .skip(3)
            .take_while(|l| !l.starts_with("noise"))
            .map(|l| l.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(order, ["completed", "p9_ttft_ms", "p50_ttft_ms", "p99.9_ttft_ms"]);
        let p999 = text.lines().find(|l| l.starts_with("p99.9")).unwrap();
        assert!(p999.ends_with('-'), "{p999}");
        let completed = text.lines().find(|l| l.starts_with("completed")).unwrap();
        assert!(completed.ends_with("0.000"), "{completed}");
    }

    #[test]
    fn repeats_tell_a_real_difference_from_noise() {
        let runs = |values: &[f64]| json!({"repeats": {"figures": {"mean_ttft_ms": RepeatStats::new(values).unwrap().to_json()}}});
        let a = runs(&[10.0, 10.4, 9.8, 10.1]);
        let text = compare(&a, &runs(&[13.0, 13.2, 12.9, 13.1]));
        assert!(text.lines().any(|l| l.starts_with("mean_ttft_ms") && l.contains("beyond noise")), "{text}");
        let text = compare(&a, &runs(&[10.2, 9.9, 10.3, 10.0]));
        assert!(text.lines().any(|l| l.starts_with("mean_ttft_ms") && l.contains("within noise")), "{text}");
        assert!(compare(&json!({}), &json!({})).contains("noise: unknown"));
    }

    #[test]
    fn zero_baseline_has_no_ratio() {
        let text = compare(&json!({"failed": 0}), &json!({"failed": 3}));
        assert!(text.lines().any(|l| l.starts_with("failed") && l.ends_with('-')));
    }

    #[test]
    fn files_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("a.json");
        let list = dir.path().join("b.json");
        let broken = dir.path().join("c.json");
        std::fs::write(&good, r#"{"completed": 1}"#).unwrap();
        std::fs::write(&list, "[1]").unwrap();
        std::fs::write(&broken, "{").unwrap();
        assert!(compare_files(&good, &good).unwrap().contains("completed"));
        assert!(matches!(compare_files(&good, &list), Err(CompareError::NotAnObject(_))));
        assert!(matches!(compare_files(&broken, &good), Err(CompareError::Json { .. })));
        assert!(matches!(compare_files(&dir.path().join("missing.json"), &good), Err(CompareError::Io { .. })));
    }
}
