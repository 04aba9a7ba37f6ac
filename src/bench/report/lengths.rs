//! The summary's `length_distribution`: the lengths a run asked to draw beside those it drew.

use serde::{Deserialize, Serialize};

use crate::bench::metrics::load_shape::LatencyFigures;
use crate::bench::metrics::record::RequestRecord;
use crate::bench::metrics::stats::Distribution;
use crate::bench::traffic::lengths::{LengthDistribution, LengthSpread};

/// `workload.length_distribution`: per spread length (`input`, `output`), the distribution asked
/// for beside the lengths drawn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LengthSection {
    /// Prompt lengths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<AskedDrawn>,
    /// Output lengths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<AskedDrawn>,
}

impl LengthSection {
    /// The spread of `input` or `output` lengths, when that one was drawn.
    pub fn get(&self, name: &str) -> Option<&AskedDrawn> {
        match name {
            "input" => self.input.as_ref(),
            "output" => self.output.as_ref(),
            _ => None,
        }
    }
}

/// One length's distribution asked for and the lengths drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskedDrawn {
    /// The distribution asked for.
    pub asked: LengthDistribution,
    /// It, as a person says it (`uniform 50..=78`).
    pub describe: String,
    /// The lengths the measured requests were sent with.
    pub drawn: DrawnLengths,
}

/// Count, mean, population std, min, max and percentiles (`p50`, ...) of the lengths drawn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct DrawnLengths {
    pub count: usize,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// `p50`, `p90`, ... as configured.
    #[serde(flatten)]
    pub percentiles: LatencyFigures,
}

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
/// let input = section.input.unwrap();
/// assert_eq!(input.asked.shape, LengthShape::Uniform);
/// assert_eq!(input.drawn.mean, Some(100.0));
/// assert_eq!(input.drawn.min, Some(60.0));
/// assert_eq!(input.drawn.percentiles.get("p50"), Some(100.0));
/// ```
pub fn length_section(spread: &LengthSpread, records: &[RequestRecord], percentiles: &[f64]) -> Option<LengthSection> {
    if spread.is_fixed() {
        return None;
    }
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| r.is_measured()).collect();
    let spread_of = |asked: &Option<LengthDistribution>, lengths: Vec<f64>| {
        asked.as_ref().map(|asked| AskedDrawn {
            asked: asked.clone(),
            describe: asked.describe(),
            drawn: drawn(lengths, percentiles),
        })
    };
    Some(LengthSection {
        input: spread_of(&spread.input, measured.iter().map(|r| r.prompt_tokens as f64).collect()),
        output: spread_of(
            &spread.output,
            measured.iter().filter_map(|r| r.expected_output_tokens).map(|n| n as f64).collect(),
        ),
    })
}

/// Count, mean, population std, min, max and percentiles of the lengths drawn.
fn drawn(lengths: Vec<f64>, percentiles: &[f64]) -> DrawnLengths {
    let d = Distribution::from_samples(lengths, percentiles);
    DrawnLengths {
        count: d.count(),
        mean: d.mean(),
        std: d.std(),
        min: d.min(),
        max: d.max(),
        percentiles: d
            .reported_percentiles()
            .into_iter()
            .map(|(p, v)| (format!("p{}", crate::bench::metrics::stats::percentile_label(p)), v))
            .collect(),
    }
}
