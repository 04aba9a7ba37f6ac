//! Side-by-side comparison of two result JSON files (ours or vLLM's) with B/A ratios, every
//! difference between the two runs' workloads and targets, and a speedup only across the same
//! workload unless asked.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::engine_section::EngineSection;
use super::sections::{SummarySections, WorkloadSection};
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

/// Which side of a run a [`Difference`] is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DifferenceKind {
    /// What was sent and how (lengths, load, dataset...): figures of different workloads are
    /// not a speedup.
    Workload,
    /// What served it (engine, GPU, backend, executor settings): usually what a comparison is for.
    Target,
    /// The same workload drawn again (the seed): a difference of draws, within the runs' noise.
    Draw,
}

/// One setting that differs between two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// Workload, target or draw.
    pub kind: DifferenceKind,
    /// The setting, e.g. `workload.concurrency`, `engine.gpu`.
    pub what: String,
    /// A's value (`-` when A does not say).
    pub a: String,
    /// B's value.
    pub b: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: A {}, B {}", self.what, self.a, self.b)
    }
}

/// Options of [`compare_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// Print a speedup even when the workloads differ (with the differences beside it).
    pub allow_different_workloads: bool,
}

/// What [`compare_with`] found: the text to print, and every difference between the runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The comparison table, the differences, the speedup (or why it is refused) and the noise.
    pub text: String,
    /// Every workload, target and draw difference, workload first.
    pub differences: Vec<Difference>,
    /// The workloads differ and no speedup was printed for it (see
    /// [`CompareOptions::allow_different_workloads`]).
    pub refused: bool,
}

impl Comparison {
    /// Whether the two runs' workloads differ.
    pub fn workloads_differ(&self) -> bool {
        self.differences.iter().any(|d| d.kind == DifferenceKind::Workload)
    }
}

/// Every difference between two result objects' workloads and targets: the load and actual
/// token counts every result file has (vLLM's keys), then our `workload` section's settings,
/// then the `engine` description, the target and the executor flags.
///
/// ```rust
/// use serde_json::json;
/// use trtllm::bench::{DifferenceKind, differences};
///
/// let a = json!({"max_concurrency": 4, "completed": 8, "total_input_tokens": 1024});
/// let b = json!({"max_concurrency": 16, "completed": 8, "total_input_tokens": 4096});
/// let found = differences(&a, &b);
/// assert!(found.iter().all(|d| d.kind == DifferenceKind::Workload));
/// assert_eq!(found[0].to_string(), "max_concurrency: A 4, B 16");
/// assert_eq!(found[1].to_string(), "prompt tokens per request: A 128.0, B 512.0");
/// ```
pub fn differences(a: &Value, b: &Value) -> Vec<Difference> {
    let (sa, sb) = (SummarySections::from_result(a), SummarySections::from_result(b));
    let mut found = Vec::new();
    let mut note = |kind: DifferenceKind, what: &str, x: String, y: String| {
        if x != y {
            found.push(Difference { kind, what: what.to_owned(), a: x, b: y });
        }
    };
    use DifferenceKind::{Draw, Target, Workload};
    for key in ["request_rate", "burstiness", "max_concurrency", "num_prompts"] {
        note(Workload, key, shown(a.get(key)), shown(b.get(key)));
    }
    // Actual lengths, from the totals every result file has; a drawn length varies a little.
    let per_request =
        |v: &Value, total: &str| Some(v.get(total)?.as_f64()? / v.get("completed")?.as_f64().filter(|&c| c > 0.0)?);
    for (total, what) in
        [("total_input_tokens", "prompt tokens per request"), ("total_output_tokens", "output tokens per request")]
    {
        if let (Some(x), Some(y)) = (per_request(a, total), per_request(b, total))
            && (x - y).abs() > LENGTH_TOLERANCE * x.max(y)
        {
            note(Workload, what, format!("{x:.1}"), format!("{y:.1}"));
        }
    }
    if let (Some(wa), Some(wb)) = (&sa.workload, &sb.workload) {
        let fields = |w: &WorkloadSection| -> Vec<(&'static str, String)> {
            let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
            let asked =
                |name: &str| w.length_distribution.as_ref().and_then(|l| l.get(name)).map(|l| l.describe.clone());
            vec![
                ("workload.dataset", w.dataset.clone()),
                ("workload.dataset_path", opt(w.dataset_path.clone())),
                ("workload.input_len", opt(w.input_len.map(|n| n.to_string()))),
                ("workload.output_len", w.output_len.to_string()),
                ("workload.input_dist", opt(asked("input"))),
                ("workload.output_dist", opt(asked("output"))),
                ("workload.shared_prefix", w.shared_prefix.to_string()),
                ("workload.chat_template", w.chat_template.to_string()),
                ("workload.stopping", w.stopping.clone()),
                ("workload.streaming", w.streaming.to_string()),
                ("workload.load", w.load.clone()),
                ("workload.warmup", w.warmup.to_string()),
                ("workload.ramp_up_s", opt(w.ramp_up_s.map(|s| s.to_string()))),
                ("workload.duration_s", opt(w.duration_s.map(|s| s.to_string()))),
                ("workload.turns", opt(w.turns.map(|n| n.to_string()))),
                ("workload.think_time_s", opt(w.think_time_s.map(|s| s.to_string()))),
                ("workload.turn_input_len", opt(w.turn_input_len.map(|n| n.to_string()))),
                ("workload.user_start", w.user_start.clone()),
            ]
        };
        for ((what, x), (_, y)) in fields(wa).into_iter().zip(fields(wb)) {
            note(Workload, what, x, y);
        }
        note(Draw, "workload.seed", wa.seed.to_string(), wb.seed.to_string());
    }
    // One side without an `engine` (another tool's file) says none of them.
    if sa.engine.is_some() || sb.engine.is_some() {
        let settings = |e: &Option<EngineSection>| e.clone().unwrap_or_default().settings();
        for ((key, x), (_, y)) in settings(&sa.engine).into_iter().zip(settings(&sb.engine)) {
            note(Target, &format!("engine.{key}"), x, y);
        }
    }
    if sa.engine.is_none() || sb.engine.is_none() {
        note(Target, "model_id", shown(a.get("model_id")), shown(b.get("model_id")));
        note(Target, "backend", shown(a.get("backend")), shown(b.get("backend")));
    }
    if let (Some(ma), Some(mb)) = (&sa.metadata, &sb.metadata) {
        note(Target, "metadata.target", ma.target.clone(), mb.target.clone());
    }
    if let (Some(xa), Some(xb)) = (&sa.executor_settings, &sb.executor_settings) {
        note(Target, "executor_settings.flags", xa.flags.join(" "), xb.flags.join(" "));
    }
    found
}

/// Actual mean lengths closer than this share count as the same workload.
const LENGTH_TOLERANCE: f64 = 0.02;

/// A JSON value as a short text: strings bare, `-` for null or missing.
fn shown(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Headline metrics of two result objects side by side with the ratio B/A (`-` when a value is
/// missing or A is zero), the differences between their workloads and targets, the decode
/// speedup of B over A (same workloads only) and whether the figures differ beyond noise.
/// Works on any vLLM-compatible result JSON; non-objects compare as empty.
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
/// assert!(text.contains("workloads and targets: the same"));
/// ```
pub fn compare(a: &Value, b: &Value) -> String {
    compare_with(a, b, CompareOptions::default()).text
}

/// [`compare`] with options: across different workloads the speedup is refused (and
/// [`Comparison::refused`] set) unless [`CompareOptions::allow_different_workloads`].
///
/// ```rust
/// use serde_json::json;
/// use trtllm::bench::{CompareOptions, compare_with};
///
/// let a = json!({"max_concurrency": 4, "mean_tpot_ms": 10.0});
/// let b = json!({"max_concurrency": 16, "mean_tpot_ms": 20.0});
/// let refused = compare_with(&a, &b, CompareOptions::default());
/// assert!(refused.refused && !refused.text.contains("speedup of B over A"));
/// assert!(refused.text.contains("max_concurrency: A 4, B 16"));
/// let allowed = compare_with(&a, &b, CompareOptions { allow_different_workloads: true });
/// assert!(!allowed.refused && allowed.text.contains("speedup of B over A: 0.50x"));
/// ```
pub fn compare_with(a: &Value, b: &Value, options: CompareOptions) -> Comparison {
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
    let mut differences = differences(a, b);
    differences.sort_by_key(|d| match d.kind {
        DifferenceKind::Workload => 0,
        DifferenceKind::Draw => 1,
        DifferenceKind::Target => 2,
    });
    if differences.is_empty() {
        out.push_str("workloads and targets: the same\n");
    } else {
        out.push_str("differences between the runs:\n");
        for d in &differences {
            let kind = match d.kind {
                DifferenceKind::Workload => "workload",
                DifferenceKind::Draw => "draw",
                DifferenceKind::Target => "target",
            };
            out.push_str(&format!("  {kind:<8}  {d}\n"));
        }
    }
    let workloads_differ = differences.iter().any(|d| d.kind == DifferenceKind::Workload);
    let mut refused = false;
    if let Some(line) = speedup_line(a, b) {
        if !workloads_differ {
            out.push_str(&line);
        } else if options.allow_different_workloads {
            out.push_str(&format!(
                "{} (across different workloads, as allowed: see the differences)\n",
                line.trim_end()
            ));
        } else {
            refused = true;
            out.push_str(
                "speedup: refused, the workloads differ (see above); pass --allow-different-workloads to print it anyway\n",
            );
        }
    }
    out.push_str(&noise_table(a, b));
    Comparison { text: out, differences, refused }
}

/// Whether each headline figure differs beyond the runs' noise, from the `repeats` sections
/// (`--repeats N`): Welch's t-test at 5% on the per-run values.
fn noise_table(a: &Value, b: &Value) -> String {
    let repeats = |v: &Value| SummarySections::from_result(v).repeats;
    let (Some(fa), Some(fb)) = (repeats(a), repeats(b)) else {
        return "noise: unknown (a result without repeats); run each point with --repeats N (3 or more) to tell a difference from noise\n".into();
    };
    let mut out = String::from("noise (Welch's t-test at 5% over the repeated runs):\n");
    let mut rows: Vec<[String; 5]> = Vec::new();
    for key in HEADLINE_FIGURES {
        let (Some(sa), Some(sb)) = (fa.figure(key), fb.figure(key)) else {
            continue;
        };
        let ci = |s: &RepeatStats| match s.ci95() {
            Some((low, high)) => format!("{:.2} [{low:.2}, {high:.2}] n={}", s.mean, s.n()),
            None => format!("{:.2} n={}", s.mean, s.n()),
        };
        let verdict = match NoiseVerdict::new(sa, sb) {
            Some(v) if v.t.is_infinite() && v.beyond_noise => "beyond noise (the runs had none)".into(),
            Some(v) if v.t.is_infinite() => "same (the runs had no noise)".into(),
            Some(v) if v.beyond_noise => format!("beyond noise (t={:.1})", v.t),
            Some(v) => format!("within noise (t={:.1})", v.t),
            None => "unknown (one run)".into(),
        };
        let ratio = if sa.mean != 0.0 { format!("{:.3}", sb.mean / sa.mean) } else { "-".into() };
        rows.push([key.to_owned(), ci(sa), ci(sb), ratio, verdict]);
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

/// Reads two result files and compares them ([`compare_with`]).
pub fn compare_files(a: &Path, b: &Path, options: CompareOptions) -> Result<Comparison, CompareError> {
    Ok(compare_with(&read_object(a)?, &read_object(b)?, options))
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
            .take_while(|l| !l.starts_with("workloads and targets"))
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
        let runs =
            |values: &[f64]| json!({"repeats": {"figures": {"mean_ttft_ms": RepeatStats::new(values).unwrap()}}});
        let a = runs(&[10.0, 10.4, 9.8, 10.1]);
        let text = compare(&a, &runs(&[13.0, 13.2, 12.9, 13.1]));
        assert!(text.lines().any(|l| l.starts_with("mean_ttft_ms") && l.contains("beyond noise")), "{text}");
        let text = compare(&a, &runs(&[10.2, 9.9, 10.3, 10.0]));
        assert!(text.lines().any(|l| l.starts_with("mean_ttft_ms") && l.contains("within noise")), "{text}");
        assert!(compare(&json!({}), &json!({})).contains("noise: unknown"));
    }

    /// A result file of ours with `workload`, `engine` and `executor_settings` sections.
    fn ours(concurrency: u64, input_len: usize, gpu: &str, seed: u64) -> Value {
        let workload = WorkloadSection {
            input_len: Some(input_len),
            output_len: super::super::sections::OutputLen::Tokens(64),
            concurrency: Some(concurrency as usize),
            seed,
            ..WorkloadSection::default()
        };
        json!({
            "max_concurrency": concurrency, "request_rate": "inf", "num_prompts": 16,
            "completed": 16, "total_input_tokens": 16 * input_len, "total_output_tokens": 16 * 64,
            "mean_tpot_ms": 10.0, "mean_e2el_ms": 700.0,
            "workload": workload,
            "engine": {"model_id": "tiny", "gpu": gpu, "tp_size": 1, "config": {"nested": true}},
            "executor_settings": {"applies_to": "x", "flags": [], "serve_equivalent": null, "config": null},
        })
    }

    #[test]
    fn every_workload_and_target_difference_is_named() {
        let found = differences(&ours(4, 128, "H100", 0), &ours(16, 512, "A100", 1));
        let named: Vec<(DifferenceKind, String)> = found.iter().map(|d| (d.kind, d.to_string())).collect();
        let want = [
            (DifferenceKind::Workload, "max_concurrency: A 4, B 16"),
            (DifferenceKind::Workload, "prompt tokens per request: A 128.0, B 512.0"),
            (DifferenceKind::Workload, "workload.input_len: A 128, B 512"),
            (DifferenceKind::Draw, "workload.seed: A 0, B 1"),
            (DifferenceKind::Target, "engine.gpu: A H100, B A100"),
        ];
        for (kind, text) in want {
            assert!(named.contains(&(kind, text.to_owned())), "{text} missing from {named:?}");
        }
        assert_eq!(found.len(), want.len(), "nothing else differs: {named:?}");
        assert!(differences(&ours(4, 128, "H100", 0), &ours(4, 128, "H100", 0)).is_empty());
    }

    #[test]
    fn a_speedup_needs_the_same_workload_unless_allowed() {
        let (a, b) = (ours(4, 128, "H100", 0), ours(4, 128, "A100", 0));
        let same = compare_with(&a, &b, CompareOptions::default());
        assert!(!same.refused && same.text.contains("speedup of B over A: 1.00x"), "{}", same.text);
        assert!(same.text.contains("target    engine.gpu: A H100, B A100"), "{}", same.text);
        let other = ours(8, 128, "H100", 0);
        let refused = compare_with(&a, &other, CompareOptions::default());
        assert!(refused.refused && refused.workloads_differ());
        assert!(!refused.text.contains("speedup of B over A"), "{}", refused.text);
        assert!(refused.text.contains("--allow-different-workloads"));
        let allowed = compare_with(&a, &other, CompareOptions { allow_different_workloads: true });
        assert!(!allowed.refused && allowed.text.contains("speedup of B over A"), "{}", allowed.text);
        assert!(allowed.text.contains("across different workloads"));
        // A seed alone is another draw of the same workload: the speedup stands.
        let redrawn = compare_with(&a, &ours(4, 128, "H100", 9), CompareOptions::default());
        assert!(!redrawn.refused && redrawn.text.contains("draw      workload.seed: A 0, B 9"), "{}", redrawn.text);
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
        let options = CompareOptions::default();
        assert!(compare_files(&good, &good, options).unwrap().text.contains("completed"));
        assert!(matches!(compare_files(&good, &list, options), Err(CompareError::NotAnObject(_))));
        assert!(matches!(compare_files(&broken, &good, options), Err(CompareError::Json { .. })));
        let missing = dir.path().join("missing.json");
        assert!(matches!(compare_files(&missing, &good, options), Err(CompareError::Io { .. })));
    }
}
