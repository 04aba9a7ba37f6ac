//! One self-contained HTML report per run and per comparison, leading with the answer: the
//! headline table and the sweep's plots first, then the console notes and the settings, then
//! each point's details as flat tables (its own plots folded away), with inline CSS and nothing
//! fetched from the network.

use serde_json::Value;

use super::sections::{ClockSection, SummarySections};

/// What a run's report shows.
#[derive(Debug, Clone, Default)]
pub struct HtmlReport {
    /// The page title.
    pub title: String,
    /// Settings (the command line, target, backend...), as key/value pairs.
    pub settings: Vec<(String, String)>,
    /// Each point's summary (`<stem>.json`), with its stem.
    pub points: Vec<(String, Value)>,
    /// Every plot: its file name and SVG document. A plot named after a point's stem
    /// (`<stem>.gpu.svg`) goes with that point's details; the others are the sweep's.
    pub plots: Vec<(String, String)>,
    /// Console notes of the run (predictions, steady state, lengths...).
    pub notes: Vec<String>,
}

/// A plot: its file name and SVG document.
type Plot = (String, String);

/// The headline figures of the results table: key and column title.
const HEADLINE: [(&str, &str); 11] = [
    ("completed", "completed"),
    ("failed", "failed"),
    ("request_throughput", "req/s"),
    ("output_throughput", "out tok/s"),
    ("median_ttft_ms", "TTFT p50 ms"),
    ("p99_ttft_ms", "TTFT p99 ms"),
    ("median_tpot_ms", "TPOT p50 ms"),
    ("p99_tpot_ms", "TPOT p99 ms"),
    ("p99_itl_ms", "ITL p99 ms"),
    ("p99_e2el_ms", "E2E p99 ms"),
    ("request_goodput", "goodput req/s"),
];

/// The sweep's plots, in the order they answer: latency against throughput first.
const SWEEP_PLOTS: [&str; 2] = ["latency_vs_throughput.svg", "ttft_vs_inflight_tokens.svg"];

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}\
h1{font-size:22px;margin-bottom:4px}p.sub{color:#555;margin-top:0}\
h2{font-size:18px;border-bottom:2px solid #2a6;padding-bottom:4px;margin-top:32px}\
h3{font-size:15px;margin-top:20px}table{border-collapse:collapse;margin:8px 0;font-size:13px}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
th{background:#e8f4ec}table.results td{white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.plots{display:flex;flex-wrap:wrap;gap:8px}.plot{margin:0;border:1px solid #ddd;flex:1 1 560px;max-width:900px}\
.plot svg{width:100%;height:auto}\
pre{background:#f6f6f6;padding:8px;font-size:12px;white-space:pre-wrap}details{margin:6px 0}";

impl HtmlReport {
    /// The page.
    ///
    /// ```rust
    /// use trtllm::bench::HtmlReport;
    ///
    /// let summary = serde_json::json!({"completed": 8, "median_ttft_ms": 4.5, "max_concurrency": 4});
    /// let html = HtmlReport { title: "run <1>".into(), points: vec![("c4".into(), summary)], ..Default::default() }
    ///     .render();
    /// assert!(html.contains("<title>run &lt;1&gt;</title>") && html.contains("4.50"));
    /// assert!(html.contains("<td>4 users</td>"));
    /// assert!(!html.contains("http://") && !html.contains("<script"));
    /// ```
    pub fn render(&self) -> String {
        let mut h = String::new();
        h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
        h += &format!("<title>{}</title><style>{STYLE}</style></head><body>\n", escape(&self.title));
        h += &format!("<h1>{}</h1>\n", escape(&self.title));
        let subtitle: Vec<String> = ["model", "backend", "gpu", "target"]
            .iter()
            .filter_map(|k| self.settings.iter().find(|(name, v)| name == k && !v.is_empty()))
            .map(|(k, v)| format!("{k} {}", escape(v)))
            .collect();
        if !subtitle.is_empty() {
            h += &format!("<p class=\"sub\">{}</p>\n", subtitle.join(" · "));
        }
        h += &self.results_table();
        let (sweep, per_point) = self.split_plots();
        if !sweep.is_empty() {
            h += "<h2>Sweep</h2>\n<div class=\"plots\">";
            for (name, svg) in sweep {
                h += &figure(name, svg);
            }
            h += "</div>\n";
        }
        if !self.notes.is_empty() {
            h += &format!("<h2>Notes</h2>\n<pre>{}</pre>\n", escape(&self.notes.join("\n")));
        }
        if !self.settings.is_empty() {
            h += "<h2>Settings</h2>\n<table>";
            for (k, v) in &self.settings {
                h += &format!("<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
            }
            h += "</table>\n";
        }
        if !self.points.is_empty() {
            h += "<h2>Points</h2>\n";
        }
        for (stem, summary) in &self.points {
            h += &point_details(stem, summary, per_point.iter().copied().filter(|(name, _)| belongs_to(name, stem)));
        }
        h += "</body></html>\n";
        h
    }

    /// The results table: one row per point with its load, shape and headline figures.
    fn results_table(&self) -> String {
        let mut h = String::from(
            "<h2>Results</h2>\n<table class=\"results\"><tr><th>point</th><th>load</th><th>in / out tokens</th>",
        );
        for (_, title) in HEADLINE {
            h += &format!("<th>{title}</th>");
        }
        h += "</tr>";
        for (stem, summary) in &self.points {
            let sections = SummarySections::from_result(summary);
            h += &format!(
                "<tr><th>{}</th><td>{}</td><td>{}</td>",
                escape(stem),
                load_label(summary, &sections),
                shape(summary)
            );
            for (key, _) in HEADLINE {
                h += &format!("<td class=\"n\">{}</td>", number(&summary[key]));
            }
            h += "</tr>";
        }
        h + "</table>\n"
    }

    /// The sweep's plots (latency against throughput first) and the points' own.
    fn split_plots(&self) -> (Vec<&Plot>, Vec<&Plot>) {
        let of_a_point = |name: &str| self.points.iter().any(|(stem, _)| belongs_to(name, stem));
        let (mut sweep, per_point): (Vec<_>, Vec<_>) = self.plots.iter().partition(|(name, _)| !of_a_point(name));
        let rank = |name: &str| SWEEP_PLOTS.iter().position(|p| *p == name).unwrap_or(SWEEP_PLOTS.len());
        sweep.sort_by_key(|(name, _)| rank(name));
        (sweep, per_point)
    }
}

/// Whether plot file `name` is one of point `stem`'s (`<stem>.gpu.svg`, `<stem>.timeseries.svg`).
fn belongs_to(name: &str, stem: &str) -> bool {
    name.strip_prefix(stem).is_some_and(|rest| rest.starts_with('.') && rest[1..].split('.').count() == 2)
}

/// The load a point ran at, as a person says it: `4 users`, `2.5 req/s (at most 8 in flight)`.
fn load_label(summary: &Value, sections: &SummarySections) -> String {
    if let Some(w) = &sections.workload {
        return match (w.concurrency, w.request_rate.0.is_finite(), w.max_concurrency) {
            (Some(c), _, _) => users(c),
            (None, true, Some(cap)) => format!("{} req/s (at most {cap} in flight)", w.request_rate.0),
            (None, true, None) => format!("{} req/s", w.request_rate.0),
            (None, false, _) => "all at once".into(),
        };
    }
    // Another tool's result: vLLM's keys.
    match (summary["request_rate"].as_f64(), summary["max_concurrency"].as_u64()) {
        (Some(rate), Some(cap)) => format!("{rate} req/s (at most {cap} in flight)"),
        (Some(rate), None) => format!("{rate} req/s"),
        (None, Some(c)) => users(c as usize),
        (None, None) => "-".into(),
    }
}

fn users(n: usize) -> String {
    if n == 1 { "1 user".into() } else { format!("{n} users") }
}

/// Mean actual prompt and output tokens.
fn shape(summary: &Value) -> String {
    match (summary["mean_prompt_tokens"].as_f64(), summary["mean_output_tokens"].as_f64()) {
        (Some(i), Some(o)) => format!("{i:.0} / {o:.0}"),
        _ => "-".into(),
    }
}

/// A point's details: its sections as flat tables, its own plots, every key folded away.
fn point_details<'a>(stem: &str, summary: &Value, plots: impl Iterator<Item = &'a (String, String)>) -> String {
    let sections = SummarySections::from_result(summary);
    let mut h = format!("<details><summary><b>{}</b> ({})</summary>\n", escape(stem), load_label(summary, &sections));
    let clock: Option<ClockSection> = summary.get("clock").and_then(|c| serde_json::from_value(c.clone()).ok());
    let mut parts: Vec<(&str, Option<Value>)> = vec![
        ("Workload", to_value(&sections.workload)),
        ("Prediction beside measurement", to_value(&sections.prediction)),
        ("Steady state", to_value(&sections.steady_state)),
        ("Arrivals", to_value(&sections.arrivals)),
        ("Sessions by turn", to_value(&sections.sessions)),
        ("GPU telemetry", to_value(&sections.gpu_telemetry)),
        ("Server metrics", to_value(&sections.server_metrics)),
        ("The runner's own error", summary.get("calibration").cloned()),
        ("Clock", to_value(&clock)),
        ("KV cache", to_value(&sections.kv)),
        ("Iterations", to_value(&sections.iter)),
        ("LoRA", to_value(&sections.lora)),
        ("Executor settings", to_value(&sections.executor_settings)),
    ];
    parts.retain(|(_, v)| v.as_ref().is_some_and(|v| !v.is_null()));
    for (heading, value) in parts {
        h += &format!("<h3>{heading}</h3>{}\n", flat_table(value.as_ref().unwrap_or(&Value::Null)));
    }
    let plots: Vec<&(String, String)> = plots.collect();
    if !plots.is_empty() {
        h += "<h3>Plots</h3><div class=\"plots\">";
        for (name, svg) in plots {
            h += &figure(name, svg);
        }
        h += "</div>\n";
    }
    h += &format!("<details><summary>Every summary key</summary>{}</details>\n", flat_table(summary));
    h + "</details>\n"
}

fn to_value<T: serde::Serialize>(section: &Option<T>) -> Option<Value> {
    section.as_ref().and_then(|s| serde_json::to_value(s).ok())
}

/// A JSON object as one two-column table: nested objects' keys joined with dots
/// (`single_stream.ttft_ms`), short lists inline, lists of objects as their own column tables.
fn flat_table(value: &Value) -> String {
    let mut rows = Vec::new();
    flatten("", value, &mut rows);
    let mut t = String::from("<table>");
    for (key, cell) in rows {
        t += &format!("<tr><th>{}</th><td>{cell}</td></tr>", escape(&key));
    }
    t + "</table>"
}

fn flatten(prefix: &str, value: &Value, rows: &mut Vec<(String, String)>) {
    let join = |k: &str| if prefix.is_empty() { k.to_owned() } else { format!("{prefix}.{k}") };
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                flatten(&join(k), v, rows);
            }
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            rows.push((prefix.to_owned(), column_table(items)));
        }
        Value::Array(items) if items.len() <= 12 => {
            rows.push((prefix.to_owned(), items.iter().map(number).collect::<Vec<_>>().join(", ")))
        }
        Value::Array(items) => rows.push((prefix.to_owned(), format!("{} values (see the JSON file)", items.len()))),
        other => rows.push((prefix.to_owned(), number(other))),
    }
}

/// A list of objects (GPUs, turns, endpoints) as a table with one column per key.
fn column_table(items: &[Value]) -> String {
    let mut rows: Vec<Vec<(String, String)>> = Vec::new();
    let mut columns: Vec<String> = Vec::new();
    for item in items {
        let mut cells = Vec::new();
        flatten("", item, &mut cells);
        for (k, _) in &cells {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
        rows.push(cells);
    }
    let mut t = String::from("<table><tr>");
    for c in &columns {
        t += &format!("<th>{}</th>", escape(c));
    }
    t += "</tr>";
    for cells in rows {
        t += "<tr>";
        for c in &columns {
            let cell = cells.iter().find(|(k, _)| k == c).map_or("", |(_, v)| v.as_str());
            t += &format!("<td class=\"n\">{cell}</td>");
        }
        t += "</tr>";
    }
    t + "</table>"
}

fn figure(name: &str, svg: &str) -> String {
    format!("<figure class=\"plot\"><figcaption>{}</figcaption>{}</figure>\n", escape(name), strip_prolog(svg))
}

/// A number with a few decimals, other values as text (HTML-escaped).
fn number(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(String::new, |x| format!("{x:.2}")),
        Value::Number(n) => n.to_string(),
        Value::String(s) => escape(s),
        Value::Null => "-".into(),
        Value::Object(m) if m.is_empty() => "-".into(),
        other => escape(&other.to_string()),
    }
}

/// An SVG document without its XML declaration, for inlining.
fn strip_prolog(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

/// Text safe inside HTML elements and attribute values (minijinja's HTML escaping).
fn escape(text: &str) -> String {
    minijinja::HtmlEscape(text).to_string()
}

/// The report of `bench compare`: the comparison text and both summaries' headline figures.
pub fn compare_html(a_name: &str, a: &Value, b_name: &str, b: &Value, comparison: &str) -> String {
    HtmlReport {
        title: format!("trtllm bench compare: {a_name} vs {b_name}"),
        settings: vec![("A (baseline)".into(), a_name.into()), ("B (candidate)".into(), b_name.into())],
        points: vec![(format!("A {a_name}"), a.clone()), (format!("B {b_name}"), b.clone())],
        plots: Vec::new(),
        notes: vec![comparison.to_owned()],
    }
    .render()
}
