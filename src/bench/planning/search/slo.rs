//! Percentile service-level objectives (`ttft:p95:500,tpot:p95:50`) and their verdict on a point.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Errors parsing `--slo`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SloSpecError {
    /// Nothing to parse.
    #[error("no SLO given: expected METRIC:pPERCENTILE:MS, e.g. ttft:p95:500,tpot:p95:50")]
    Empty,
    /// An entry without exactly three `:`-separated parts.
    #[error("SLO {0:?} is not METRIC:pPERCENTILE:MS (e.g. ttft:p95:500)")]
    Shape(String),
    /// A metric other than ttft, tpot, itl, e2el.
    #[error("unknown SLO metric {0:?} (known: ttft, tpot, itl, e2el)")]
    UnknownMetric(String),
    /// A percentile that is not `pN` with N in (0, 100].
    #[error("SLO percentile {0:?} is not pN with N in (0, 100], e.g. p95 or p99.9")]
    Percentile(String),
    /// A limit that is not a positive number of milliseconds.
    #[error("SLO limit {0:?} is not a positive number of milliseconds")]
    Limit(String),
    /// The same metric and percentile twice.
    #[error("SLO {0} is given twice")]
    Duplicate(String),
}

/// The latency a percentile SLO bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SloMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token after the first (per request).
    Tpot,
    /// Inter-token latency (per gap between streamed responses).
    Itl,
    /// End-to-end latency.
    E2el,
}

impl SloMetric {
    /// The lower-case name used on the command line and in result keys.
    pub fn name(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Tpot => "tpot",
            SloMetric::Itl => "itl",
            SloMetric::E2el => "e2el",
        }
    }

    /// Every metric, in a fixed order.
    pub const ALL: [SloMetric; 4] = [SloMetric::Ttft, SloMetric::Tpot, SloMetric::Itl, SloMetric::E2el];
}

/// One objective: the `percentile`-th percentile of `metric` must not exceed `limit_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PercentileSlo {
    /// The latency bounded.
    pub metric: SloMetric,
    /// Percentile in (0, 100].
    pub percentile: f64,
    /// Upper limit, milliseconds.
    pub limit_ms: f64,
}

impl PercentileSlo {
    /// The key of the figure this objective reads from [`PercentileTable`]: `p95_ttft_ms`.
    pub fn key(&self) -> String {
        crate::bench::percentile_key(self.percentile, self.metric.name())
    }
}

impl fmt::Display for PercentileSlo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = crate::bench::percentile_label(self.percentile);
        write!(f, "{}:p{p}:{}", self.metric.name(), self.limit_ms)
    }
}

/// Latency percentiles of a point, keyed `p95_ttft_ms` as in vLLM summaries.
pub type PercentileTable = BTreeMap<String, f64>;

/// A set of objectives that must all hold.
///
/// ```rust
/// use trtllm::bench::search::{SloMetric, SloSet};
///
/// let slos = SloSet::parse("ttft:p95:500,tpot:p99:50")?;
/// assert_eq!(slos.objectives()[1].metric, SloMetric::Tpot);
/// let mut point = std::collections::BTreeMap::new();
/// point.insert("p95_ttft_ms".to_string(), 420.0);
/// point.insert("p99_tpot_ms".to_string(), 51.0);
/// assert_eq!(slos.violations(&point), vec!["tpot:p99:50 (51.0 ms)".to_string()]);
/// assert!(SloSet::parse("ttft:95:500").is_err());
/// # Ok::<(), trtllm::bench::search::SloSpecError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SloSet {
    objectives: Vec<PercentileSlo>,
}

impl SloSet {
    /// Parses `METRIC:pPERCENTILE:MS` entries separated by commas.
    pub fn parse(text: &str) -> Result<Self, SloSpecError> {
        let mut objectives: Vec<PercentileSlo> = Vec::new();
        for entry in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let parts: Vec<&str> = entry.split(':').map(str::trim).collect();
            let [metric, percentile, limit] = parts[..] else {
                return Err(SloSpecError::Shape(entry.to_string()));
            };
            let metric = match metric.to_ascii_lowercase().as_str() {
                "ttft" => SloMetric::Ttft,
                "tpot" => SloMetric::Tpot,
                "itl" => SloMetric::Itl,
                "e2el" => SloMetric::E2el,
                _ => return Err(SloSpecError::UnknownMetric(metric.to_string())),
            };
            let percentile = percentile
                .strip_prefix(['p', 'P'])
                .and_then(|p| p.parse::<f64>().ok())
                .filter(|p| *p > 0.0 && *p <= 100.0)
                .ok_or_else(|| SloSpecError::Percentile(percentile.to_string()))?;
            let limit_ms = limit
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
                .ok_or_else(|| SloSpecError::Limit(limit.to_string()))?;
            let slo = PercentileSlo { metric, percentile, limit_ms };
            if objectives.iter().any(|o| o.metric == metric && o.percentile == percentile) {
                return Err(SloSpecError::Duplicate(slo.key()));
            }
            objectives.push(slo);
        }
        if objectives.is_empty() {
            return Err(SloSpecError::Empty);
        }
        Ok(SloSet { objectives })
    }

    /// The objectives, in the order given.
    pub fn objectives(&self) -> &[PercentileSlo] {
        &self.objectives
    }

    /// The tightest limit on a decode step among the TPOT and ITL objectives, ms.
    pub fn step_limit_ms(&self) -> Option<f64> {
        self.objectives
            .iter()
            .filter(|o| matches!(o.metric, SloMetric::Tpot | SloMetric::Itl))
            .map(|o| o.limit_ms)
            .reduce(f64::min)
    }

    /// Percentiles a point must report for these objectives to be judged, per metric.
    pub fn percentiles_of(&self, metric: SloMetric) -> Vec<f64> {
        self.objectives.iter().filter(|o| o.metric == metric).map(|o| o.percentile).collect()
    }

    /// The objectives a point misses, each with its figure; a missing figure (no successful
    /// streaming request) misses too. Empty when every objective holds.
    pub fn violations(&self, table: &PercentileTable) -> Vec<String> {
        self.objectives
            .iter()
            .filter_map(|o| match table.get(&o.key()) {
                Some(v) if *v <= o.limit_ms => None,
                Some(v) => Some(format!("{o} ({v:.1} ms)")),
                None => Some(format!("{o} (no measurement)")),
            })
            .collect()
    }
}

impl fmt::Display for SloSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.objectives.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsing_errors_name_the_bad_part() {
        let cases = [
            ("", SloSpecError::Empty),
            ("ttft:500", SloSpecError::Shape("ttft:500".into())),
            ("ttft:p95:500:1", SloSpecError::Shape("ttft:p95:500:1".into())),
            ("latency:p95:500", SloSpecError::UnknownMetric("latency".into())),
            ("ttft:95:500", SloSpecError::Percentile("95".into())),
            ("ttft:p0:500", SloSpecError::Percentile("p0".into())),
            ("ttft:p101:500", SloSpecError::Percentile("p101".into())),
            ("ttft:p95:-1", SloSpecError::Limit("-1".into())),
            ("ttft:p95:fast", SloSpecError::Limit("fast".into())),
            ("ttft:p95:500,TTFT:p95:400", SloSpecError::Duplicate("p95_ttft_ms".into())),
        ];
        for (text, want) in cases {
            assert_eq!(SloSet::parse(text).unwrap_err(), want, "{text:?}");
        }
    }

    #[test]
    fn round_trips_through_its_display() {
        let slos = SloSet::parse(" ttft:p95:500 , e2el:P99.9:2000,itl:p50:20").unwrap();
        assert_eq!(slos.to_string(), "ttft:p95:500,e2el:p99.9:2000,itl:p50:20");
        assert_eq!(SloSet::parse(&slos.to_string()).unwrap(), slos);
        assert_eq!(slos.percentiles_of(SloMetric::E2el), vec![99.9]);
    }

    #[test]
    fn a_point_passes_only_when_every_objective_holds() {
        let slos = SloSet::parse("ttft:p95:500,tpot:p95:50").unwrap();
        let table = PercentileTable::from([("p95_ttft_ms".into(), 500.0), ("p95_tpot_ms".into(), 49.0)]);
        assert!(slos.violations(&table).is_empty(), "a limit is inclusive");
        let slow = PercentileTable::from([("p95_ttft_ms".into(), 500.1), ("p95_tpot_ms".into(), 49.0)]);
        assert_eq!(slos.violations(&slow).len(), 1);
        let unmeasured = PercentileTable::from([("p95_ttft_ms".into(), 1.0)]);
        assert_eq!(slos.violations(&unmeasured), vec!["tpot:p95:50 (no measurement)".to_string()]);
    }
}
