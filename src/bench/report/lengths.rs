//! The summary's `length_distribution`: the lengths a run asked to draw beside those it drew.

use serde_json::{Map, Value, json};

use crate::bench::metrics::record::RequestRecord;
use crate::bench::metrics::stats::Distribution;
use crate::bench::traffic::lengths::{LengthDistribution, LengthSpread};

/// The `length_distribution` section: per spread length (`input`, `output`), the distribution
/// asked for and the lengths the measured requests were sent with (`prompt_tokens`, and the
/// `max_tokens` asked), with `percentiles`. `None` when the run drew no lengths.
///
/// ```rust
/// use trtllm::bench::{LengthDistribution, LengthShape, LengthSpread, Phase, RequestRecord, length_section};
///
/// let input = LengthDistribution::new("input", LengthShape::Uniform, 100, 0.0, Some(50), Some(150)).unwrap();
/// let spread = LengthSpread { input: Some(input), ..Default::default() };
/// let records: Vec<RequestRecord> = [60, 140]
///     .into_iter()
///     .enumerate()
///     .map(|(i, n)| RequestRecord { prompt_tokens: n, ..RequestRecord::new(i as u64, Phase::Measure, 0.0) })
///     .collect();
/// let section = length_section(&spread, &records, &[50.0]).unwrap();
/// assert_eq!(section["input"]["asked"]["shape"], "uniform");
/// assert_eq!(section["input"]["drawn"]["mean"], 100.0);
/// assert_eq!(section["input"]["drawn"]["min"], 60.0);
/// ```
pub fn length_section(spread: &LengthSpread, records: &[RequestRecord], percentiles: &[f64]) -> Option<Value> {
    if spread.is_fixed() {
        return None;
    }
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| r.is_measured()).collect();
    let mut section = Map::new();
    let mut add = |name: &str, asked: &Option<LengthDistribution>, lengths: Vec<f64>| {
        if let Some(asked) = asked {
            section.insert(
                name.to_owned(),
                json!({ "asked": asked, "describe": asked.describe(), "drawn": drawn(lengths, percentiles) }),
            );
        }
    };
    add("input", &spread.input, measured.iter().map(|r| r.prompt_tokens as f64).collect());
    add("output", &spread.output, measured.iter().filter_map(|r| r.expected_output_tokens).map(|n| n as f64).collect());
    Some(Value::Object(section))
}

/// Count, mean, population std, min, max and percentiles of the lengths drawn.
fn drawn(lengths: Vec<f64>, percentiles: &[f64]) -> Value {
    let d = Distribution::from_samples(lengths, percentiles);
    let mut out = Map::new();
    out.insert("count".into(), json!(d.count()));
    out.insert("mean".into(), json!(d.mean()));
    out.insert("std".into(), json!(d.std()));
    out.insert("min".into(), json!(d.min()));
    out.insert("max".into(), json!(d.max()));
    for (p, v) in d.reported_percentiles() {
        out.insert(format!("p{}", crate::bench::metrics::stats::percentile_label(p)), json!(v));
    }
    Value::Object(out)
}
