//! One self-contained HTML report per run and per comparison: settings, summary, every plot
//! (inline SVG), predictions beside measurements, telemetry and the runner's own error, with
//! inline CSS and nothing fetched from the network.

use serde_json::Value;

/// What a run's report shows.
#[derive(Debug, Clone, Default)]
pub struct HtmlReport {
    /// The page title.
    pub title: String,
    /// Settings shown first (the command line, target, backend...), as key/value pairs.
    pub settings: Vec<(String, String)>,
    /// Each point's summary (`<stem>.json`), with its stem.
    pub points: Vec<(String, Value)>,
    /// Every plot: its caption and SVG document.
    pub plots: Vec<(String, String)>,
    /// Console notes of the run (predictions, steady state, lengths...).
    pub notes: Vec<String>,
}

/// The headline figures of the summary table: key and column title.
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

/// The point sections shown as tables (when present): key and heading.
const SECTIONS: [(&str, &str); 8] = [
    ("workload", "Workload"),
    ("prediction", "Prediction beside measurement"),
    ("gpu_telemetry", "GPU telemetry"),
    ("server_metrics", "Server metrics"),
    ("calibration", "The runner's own error"),
    ("clock", "Clock"),
    ("kv", "KV cache"),
    ("executor_settings", "Executor settings"),
];

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222;background:#fff}\
h1{font-size:22px}h2{font-size:18px;border-bottom:2px solid #2a6;padding-bottom:4px;margin-top:32px}\
h3{font-size:15px;margin-top:20px}table{border-collapse:collapse;margin:8px 0;font-size:13px}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}\
th{background:#e8f4ec}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.plot{display:inline-block;margin:8px;border:1px solid #ddd}.plot svg{max-width:100%;height:auto}\
pre{background:#f6f6f6;padding:8px;font-size:12px;white-space:pre-wrap}details{margin:6px 0}";

impl HtmlReport {
    /// The page.
    ///
    /// ```rust
    /// use trtllm::bench::HtmlReport;
    ///
    /// let summary = serde_json::json!({"completed": 8, "median_ttft_ms": 4.5});
    /// let html = HtmlReport { title: "run <1>".into(), points: vec![("c4".into(), summary)], ..Default::default() }
    ///     .render();
    /// assert!(html.contains("<title>run &lt;1&gt;</title>") && html.contains("4.50"));
    /// assert!(!html.contains("http://") && !html.contains("<script"));
    /// ```
    pub fn render(&self) -> String {
        let mut h = String::new();
        h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
        h += &format!("<title>{}</title><style>{STYLE}</style></head><body>\n", escape(&self.title));
        h += &format!("<h1>{}</h1>\n", escape(&self.title));
        if !self.settings.is_empty() {
            h += "<h2>Settings</h2>\n<table>";
            for (k, v) in &self.settings {
                h += &format!("<tr><th>{}</th><td>{}</td></tr>", escape(k), escape(v));
            }
            h += "</table>\n";
        }
        h += "<h2>Summary</h2>\n<table><tr><th>point</th>";
        for (_, title) in HEADLINE {
            h += &format!("<th>{title}</th>");
        }
        h += "</tr>";
        for (stem, summary) in &self.points {
            h += &format!("<tr><th>{}</th>", escape(stem));
            for (key, _) in HEADLINE {
                h += &format!("<td class=\"n\">{}</td>", number(&summary[key]));
            }
            h += "</tr>";
        }
        h += "</table>\n";
        if !self.notes.is_empty() {
            h += &format!("<pre>{}</pre>\n", escape(&self.notes.join("\n")));
        }
        if !self.plots.is_empty() {
            h += "<h2>Plots</h2>\n";
            for (caption, svg) in &self.plots {
                h += &format!(
                    "<figure class=\"plot\"><figcaption>{}</figcaption>{}</figure>\n",
                    escape(caption),
                    strip_prolog(svg)
                );
            }
        }
        for (stem, summary) in &self.points {
            h += &format!("<h2>Point {}</h2>\n", escape(stem));
            for (key, heading) in SECTIONS {
                if let Some(section) = summary.get(key).filter(|v| !v.is_null()) {
                    h += &format!("<details open><summary><b>{heading}</b></summary>{}</details>\n", table(section, 0));
                }
            }
            h += &format!("<details><summary><b>Every summary key</b></summary>{}</details>\n", table(summary, 0));
        }
        h += "</body></html>\n";
        h
    }
}

/// A JSON value as nested tables (objects), lists (short arrays) or text.
fn table(value: &Value, depth: usize) -> String {
    match value {
        Value::Object(map) if depth < 4 => {
            let mut t = String::from("<table>");
            for (k, v) in map {
                t += &format!("<tr><th>{}</th><td>{}</td></tr>", escape(k), table(v, depth + 1));
            }
            t + "</table>"
        }
        Value::Array(items) if items.len() <= 12 && items.iter().all(|v| !v.is_object()) => {
            items.iter().map(number).collect::<Vec<_>>().join(", ")
        }
        Value::Array(items) => format!("{} items", items.len()),
        Value::Object(_) => escape(&value.to_string()),
        other => number(other),
    }
}

/// A number with a few decimals, other values as text (HTML-escaped).
fn number(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => n.as_f64().map_or_else(String::new, |x| format!("{x:.2}")),
        Value::Number(n) => n.to_string(),
        Value::String(s) => escape(s),
        Value::Null => "-".into(),
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
