//! The one SLO grammar of `trtllm bench` and `trtllm plan` (`ttft:p95:500`, or `ttft:500`, which
//! means the same), the latency percentiles a set of requests reaches, and each objective's verdict.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::record::RequestRecord;
use super::slo::Slos;
use super::stats::{Distribution, percentile_key, percentile_label};

/// The percentile of a short-form objective: `ttft:500` means `ttft:p95:500`.
pub const DEFAULT_SLO_PERCENTILE: f64 = 95.0;
/// The lowest percentile an objective may name: below the median an objective bounds the fast
/// half of the requests only, which is almost always a typo (`p9` for `p95`).
pub const MIN_SLO_PERCENTILE: f64 = 50.0;
/// The highest percentile an objective may name.
pub const MAX_SLO_PERCENTILE: f64 = 99.99;

/// Errors parsing `--slo`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SloError {
    /// Nothing to parse.
    #[error(
        "no SLO given: expected METRIC:pPERCENTILE:MS or METRIC:MS, e.g. ttft:p95:500,tpot:p95:50 (ttft:500 means ttft:p95:500)"
    )]
    Empty,
    /// An entry that is neither `METRIC:pN:MS` nor `METRIC:MS`.
    #[error("SLO {0:?} is not METRIC:pPERCENTILE:MS or METRIC:MS (e.g. ttft:p95:500, or ttft:500 for ttft:p95:500)")]
    Shape(String),
    /// A metric other than ttft, tpot, itl, e2el.
    #[error("unknown SLO metric {0:?}: the metrics are ttft, tpot, itl, e2el")]
    UnknownMetric(String),
    /// A percentile that is not `pN` with N from 50 to 99.99.
    #[error("SLO percentile {0:?} is not pN with N from 50 to 99.99 (e.g. p50, p95, p99, p99.9)")]
    Percentile(String),
    /// A limit that is not a non-negative number of milliseconds.
    #[error("SLO limit {0:?} is not a number of milliseconds (0 or more)")]
    Limit(String),
    /// The same metric and percentile twice.
    #[error("SLO {0} is given twice")]
    Duplicate(String),
}

/// The latency an objective bounds.
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
    /// Every metric, in a fixed order.
    pub const ALL: [SloMetric; 4] = [SloMetric::Ttft, SloMetric::Tpot, SloMetric::Itl, SloMetric::E2el];

    /// The lower-case name used on the command line and in result keys.
    pub fn name(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Tpot => "tpot",
            SloMetric::Itl => "itl",
            SloMetric::E2el => "e2el",
        }
    }

    /// The metric's samples over `records`, in seconds: one per request (ITL: one per gap),
    /// successful measured requests only.
    pub fn samples_s(self, records: &[RequestRecord]) -> Vec<f64> {
        let ok = records.iter().filter(|r| r.is_measured() && r.is_success());
        match self {
            SloMetric::Ttft => ok.filter_map(RequestRecord::ttft_s).collect(),
            SloMetric::Tpot => ok.filter_map(RequestRecord::tpot_s).collect(),
            SloMetric::Itl => ok.flat_map(RequestRecord::itl_s).collect(),
            SloMetric::E2el => ok.filter_map(RequestRecord::e2el_s).collect(),
        }
    }
}

impl FromStr for SloMetric {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.to_ascii_lowercase();
        SloMetric::ALL.into_iter().find(|m| m.name() == lower).ok_or_else(|| SloError::UnknownMetric(s.to_string()))
    }
}

/// One objective: the `percentile`-th percentile of `metric` must not exceed `limit_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PercentileSlo {
    /// The latency bounded.
    pub metric: SloMetric,
    /// Percentile, from 50 to 99.99.
    pub percentile: f64,
    /// Upper limit, milliseconds.
    pub limit_ms: f64,
}

impl PercentileSlo {
    /// The key of the figure this objective reads from a [`PercentileTable`]: `p95_ttft_ms`.
    pub fn key(&self) -> String {
        percentile_key(self.percentile, self.metric.name())
    }
}

impl fmt::Display for PercentileSlo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:p{}:{}", self.metric.name(), percentile_label(self.percentile), self.limit_ms)
    }
}

/// Latency percentiles of a point, keyed `p95_ttft_ms` as in vLLM summaries.
pub type PercentileTable = BTreeMap<String, f64>;

/// A set of objectives that must all hold: what `--slo` says, for `bench` and `plan` alike.
///
/// ```rust
/// use trtllm::bench::{SloMetric, SloSet};
///
/// let slos = SloSet::parse("ttft:p95:500,tpot:p99:50")?;
/// assert_eq!(slos.objectives()[1].metric, SloMetric::Tpot);
/// // The short form names the default percentile, p95.
/// assert_eq!(SloSet::parse("ttft:500")?.to_string(), "ttft:p95:500");
/// let mut point = std::collections::BTreeMap::new();
/// point.insert("p95_ttft_ms".to_string(), 420.0);
/// point.insert("p99_tpot_ms".to_string(), 51.0);
/// assert_eq!(slos.violations(&point), vec!["tpot:p99:50 (51.0 ms)".to_string()]);
/// // A typo for p95 is refused rather than read as the 9th percentile.
/// assert!(SloSet::parse("tpot:p9:50").is_err());
/// # Ok::<(), trtllm::bench::SloError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SloSet {
    objectives: Vec<PercentileSlo>,
}

impl SloSet {
    /// Parses `METRIC:pPERCENTILE:MS` or `METRIC:MS` (the [`DEFAULT_SLO_PERCENTILE`]) entries
    /// separated by commas or spaces.
    pub fn parse(text: &str) -> Result<Self, SloError> {
        let mut objectives: Vec<PercentileSlo> = Vec::new();
        for entry in text.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
            let parts: Vec<&str> = entry.split(':').collect();
            let (metric, percentile, limit) = match parts[..] {
                [metric, percentile, limit] => (metric, Some(percentile), limit),
                [metric, limit] => (metric, None, limit),
                _ => return Err(SloError::Shape(entry.to_string())),
            };
            let metric: SloMetric = metric.parse()?;
            let percentile = match percentile {
                None => DEFAULT_SLO_PERCENTILE,
                Some(text) => text
                    .strip_prefix(['p', 'P'])
                    .and_then(|p| p.parse::<f64>().ok())
                    .filter(|p| (MIN_SLO_PERCENTILE..=MAX_SLO_PERCENTILE).contains(p))
                    .ok_or_else(|| SloError::Percentile(text.to_string()))?,
            };
            let limit_ms = limit
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| SloError::Limit(limit.to_string()))?;
            let slo = PercentileSlo { metric, percentile, limit_ms };
            if objectives.iter().any(|o| o.metric == metric && o.percentile == percentile) {
                return Err(SloError::Duplicate(slo.key()));
            }
            objectives.push(slo);
        }
        if objectives.is_empty() {
            return Err(SloError::Empty);
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

    /// The percentiles of every metric over `records` (successful measured requests), ms: those
    /// in `reported` and those the objectives name.
    pub fn measure(&self, records: &[RequestRecord], reported: &[f64]) -> PercentileTable {
        let mut table = PercentileTable::new();
        for metric in SloMetric::ALL {
            // Sorted once: ITL has a sample per token of every request.
            let ms = metric.samples_s(records).into_iter().map(|s| s * 1e3).collect();
            let values = Distribution::from_samples(ms, &[]);
            for p in reported.iter().copied().chain(self.percentiles_of(metric)) {
                if let Some(v) = values.percentile(p) {
                    table.insert(percentile_key(p, metric.name()), v);
                }
            }
        }
        table
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

    /// The per-request limits goodput counts requests by: each metric's limit (the largest,
    /// when one metric has objectives at several percentiles). ITL has no per-request figure
    /// (it is per gap), so an ITL objective is judged on its percentile only.
    pub fn request_limits(&self) -> Slos {
        let limit = |metric| self.objectives.iter().filter(|o| o.metric == metric).map(|o| o.limit_ms).reduce(f64::max);
        Slos { ttft_ms: limit(SloMetric::Ttft), tpot_ms: limit(SloMetric::Tpot), e2el_ms: limit(SloMetric::E2el) }
    }

    /// How `records` (the measured ones) fare against these objectives.
    pub fn verdict(&self, records: &[RequestRecord]) -> SloVerdict {
        let measured: Vec<&RequestRecord> = records.iter().filter(|r| r.is_measured()).collect();
        let limits = self.request_limits();
        let met = measured.iter().filter(|r| r.is_success() && limits.is_met_by(r)).count();
        let table = self.measure(records, &[]);
        let objectives = self.objectives.iter().map(|o| (*o, table.get(&o.key()).copied())).collect();
        SloVerdict { requests: measured.len(), met_every_limit: met, objectives }
    }
}

impl fmt::Display for SloSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.objectives.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

impl FromStr for SloSet {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SloSet::parse(s)
    }
}

// `Slos` are read through the same grammar: the one parser of `--slo`. (Here rather than in
// slo.rs, which the grammar's `request_limits` names.)
impl Slos {
    /// Parses `--slo` ([`SloSet::parse`]) into its per-request limits
    /// ([`SloSet::request_limits`]), e.g. `"ttft:1000,tpot:40"` or `"ttft:p99:1000"`.
    pub fn parse(text: &str) -> Result<Self, SloError> {
        SloSet::parse(text).map(|set| set.request_limits())
    }
}

impl FromStr for Slos {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Slos::parse(s)
    }
}

/// How a point's requests fared against a [`SloSet`]: the share that met every limit (failed
/// requests count as misses) and each objective's percentile.
#[derive(Debug, Clone, PartialEq)]
pub struct SloVerdict {
    /// Measured requests, failed ones included.
    pub requests: usize,
    /// Of those, the successful requests within every per-request limit (the goodput's).
    pub met_every_limit: usize,
    /// Each objective with the percentile measured (`None`: nothing to measure it on).
    pub objectives: Vec<(PercentileSlo, Option<f64>)>,
}

impl SloVerdict {
    /// The share of measured requests that met every limit, 0 to 1 (0 without requests).
    pub fn attainment(&self) -> f64 {
        if self.requests == 0 { 0.0 } else { self.met_every_limit as f64 / self.requests as f64 }
    }

    /// Whether every objective's percentile is within its limit.
    pub fn all_met(&self) -> bool {
        self.objectives.iter().all(|(o, v)| v.is_some_and(|v| v <= o.limit_ms))
    }

    /// Each objective against its figure: `ttft p95 412.0 ms <= 500 met, tpot p95 61.2 ms > 50 MISSED`.
    pub fn describe_objectives(&self) -> String {
        let parts: Vec<String> = self
            .objectives
            .iter()
            .map(|(o, value)| {
                let name = format!("{} p{}", o.metric.name(), percentile_label(o.percentile));
                match value {
                    Some(v) if *v <= o.limit_ms => format!("{name} {v:.1} ms <= {} met", o.limit_ms),
                    Some(v) => format!("{name} {v:.1} ms > {} MISSED", o.limit_ms),
                    None => format!("{name} not measured (limit {})", o.limit_ms),
                }
            })
            .collect();
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::record::Phase;

    #[test]
    fn parsing_errors_name_the_bad_part() {
        let cases = [
            ("", SloError::Empty),
            ("ttft", SloError::Shape("ttft".into())),
            ("ttft:p95:500:1", SloError::Shape("ttft:p95:500:1".into())),
            ("latency:p95:500", SloError::UnknownMetric("latency".into())),
            ("latency:500", SloError::UnknownMetric("latency".into())),
            ("ttft:95:500", SloError::Percentile("95".into())),
            ("ttft:p0:500", SloError::Percentile("p0".into())),
            ("tpot:p9:50", SloError::Percentile("p9".into())),
            ("ttft:p49.9:500", SloError::Percentile("p49.9".into())),
            ("ttft:p99.999:500", SloError::Percentile("p99.999".into())),
            ("ttft:p100:500", SloError::Percentile("p100".into())),
            ("ttft:p95:-1", SloError::Limit("-1".into())),
            ("ttft:p95:fast", SloError::Limit("fast".into())),
            ("ttft:p95:500,TTFT:p95:400", SloError::Duplicate("p95_ttft_ms".into())),
            ("ttft:500,ttft:p95:400", SloError::Duplicate("p95_ttft_ms".into())),
        ];
        for (text, want) in cases {
            assert_eq!(SloSet::parse(text).unwrap_err(), want, "{text:?}");
        }
        let unknown = SloSet::parse("latency:500").unwrap_err().to_string();
        assert!(unknown.contains("ttft, tpot, itl, e2el"), "{unknown}");
        let typo = SloSet::parse("tpot:p9:50").unwrap_err().to_string();
        assert!(typo.contains("from 50 to 99.99"), "{typo}");
    }

    #[test]
    fn the_short_form_is_the_default_percentile_and_the_bounds_are_inclusive() {
        let short = SloSet::parse("ttft:500,tpot:50").unwrap();
        assert_eq!(short, SloSet::parse("ttft:p95:500,tpot:p95:50").unwrap());
        assert_eq!(short.to_string(), "ttft:p95:500,tpot:p95:50");
        let edges = SloSet::parse("ttft:p50:100 e2el:p99.99:2000").unwrap();
        assert_eq!(edges.to_string(), "ttft:p50:100,e2el:p99.99:2000");
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

    #[test]
    fn per_request_limits_take_each_metrics_loosest_limit_and_leave_itl_to_its_percentile() {
        let limits = SloSet::parse("ttft:p50:200,ttft:p99:1000,itl:20,e2el:3000").unwrap().request_limits();
        assert_eq!(limits, Slos { ttft_ms: Some(1000.0), tpot_ms: None, e2el_ms: Some(3000.0) });
        assert_eq!(Slos::parse("ttft:500,tpot:p99:40").unwrap().to_string(), "ttft:500,tpot:40");
    }

    /// A request sent at 0 with its first token at `ttft` and its last at `e2el`, 5 tokens.
    fn request(index: u64, ttft: f64, e2el: f64) -> RequestRecord {
        let mut r = RequestRecord::new(index, Phase::Measure, 0.0);
        r.record_chunk(ttft, 1);
        r.record_chunk(e2el, 4);
        r.finish(e2el, 5, None);
        r
    }

    #[test]
    fn the_verdict_counts_failed_requests_as_misses_and_judges_each_percentile() {
        // TTFTs of 100..=1000 ms: p50 550, p95 955.
        let mut records: Vec<RequestRecord> = (1..=10).map(|i| request(i, f64::from(i as u32) / 10.0, 2.0)).collect();
        let mut failed = RequestRecord::new(11, Phase::Measure, 0.0);
        failed.fail(0.1, "Prompt length (2000) exceeds maximum input length (1024)");
        records.push(failed);
        let verdict = SloSet::parse("ttft:p50:600,ttft:p95:900").unwrap().verdict(&records);
        assert_eq!((verdict.requests, verdict.met_every_limit), (11, 9), "within 900 ms: 9 of 10, and one failed");
        assert!((verdict.attainment() - 9.0 / 11.0).abs() < 1e-12);
        assert!(!verdict.all_met());
        let text = verdict.describe_objectives();
        assert!(text.contains("ttft p50 550.0 ms <= 600 met"), "{text}");
        assert!(text.contains("ttft p95 955.0 ms > 900 MISSED"), "{text}");
    }
}
