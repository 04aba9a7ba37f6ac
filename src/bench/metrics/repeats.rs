//! Repeated runs of one point: the spread of each headline figure (mean, standard deviation,
//! coefficient of variation, Student-t 95% confidence interval), and Welch's test of whether
//! two sets of runs differ beyond their noise.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The headline figures of a summary that repeats report, by their result-file keys.
pub const HEADLINE_FIGURES: [&str; 16] = [
    "request_throughput",
    "request_goodput",
    "output_throughput",
    "total_token_throughput",
    "mean_ttft_ms",
    "p50_ttft_ms",
    "p99_ttft_ms",
    "mean_tpot_ms",
    "p50_tpot_ms",
    "p99_tpot_ms",
    "mean_itl_ms",
    "p50_itl_ms",
    "p99_itl_ms",
    "mean_e2el_ms",
    "p50_e2el_ms",
    "p99_e2el_ms",
];

/// Two-sided 95% quantiles of Student's t for 1 to 30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// Student's t 0.975 quantile beyond 30 degrees of freedom, at the degrees the usual tables give
/// (40, 60, 120), each paired with its degrees.
const T_975_LARGE: [(f64, f64); 3] = [(40.0, 2.021), (60.0, 2.000), (120.0, 1.980)];

/// The two-sided 95% quantile of Student's t with `df` degrees of freedom. Fractional degrees (as
/// Welch's test gives) and degrees between the table's rows round down to the row below, whose
/// quantile is larger: the interval comes out wider, never narrower, than the exact one. Up to 30
/// degrees every integer has its row; above, rows at 40, 60 and 120 keep the widening to about 1%
/// at most (the normal's 1.96 alone would be about 4% narrow just above 30 degrees); 1.96 only for
/// infinite degrees, and degrees that are not a number take the widest row.
///
/// ```rust
/// use trtllm::bench::t_quantile_975;
///
/// assert_eq!(t_quantile_975(4.0), 2.776);
/// assert_eq!(t_quantile_975(4.7), 2.776);
/// assert_eq!(t_quantile_975(45.0), 2.021);
/// assert_eq!(t_quantile_975(1000.0), 1.98);
/// assert_eq!(t_quantile_975(f64::INFINITY), 1.96);
/// ```
pub fn t_quantile_975(df: f64) -> f64 {
    if df == f64::INFINITY {
        return 1.96;
    }
    if df.is_nan() || df <= 30.0 {
        // `as` turns NaN into 0, which the clamp makes the first (widest) row.
        return T_975[(df.floor() as usize).clamp(1, 30) - 1];
    }
    T_975_LARGE.iter().rev().find(|&&(rows_df, _)| df >= rows_df).map_or(T_975[29], |&(_, t)| t)
}

/// The spread of one figure over repeated runs.
#[derive(Debug, Clone, PartialEq)]
pub struct RepeatStats {
    /// The figure of each run, in run order.
    pub values: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// Their sample standard deviation (n - 1); 0 for one run.
    pub std: f64,
}

impl RepeatStats {
    /// Statistics of `values` (`None` when there are none or one is not finite).
    ///
    /// ```rust
    /// use trtllm::bench::RepeatStats;
    ///
    /// let s = RepeatStats::new(&[10.0, 12.0, 11.0, 9.0, 13.0]).unwrap();
    /// assert_eq!(s.mean, 11.0);
    /// assert!((s.std - 1.5811).abs() < 1e-4);
    /// let (low, high) = s.ci95().unwrap();
    /// assert!((high - s.mean - 2.776 * s.std / 5f64.sqrt()).abs() < 1e-9);
    /// assert!(low < 11.0 && high > 11.0);
    /// ```
    pub fn new(values: &[f64]) -> Option<Self> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let std = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some(RepeatStats { values: values.to_vec(), mean, std })
    }

    /// Runs.
    pub fn n(&self) -> usize {
        self.values.len()
    }

    /// Coefficient of variation, std / mean (`None` at a zero mean).
    pub fn cv(&self) -> Option<f64> {
        (self.mean != 0.0).then(|| self.std / self.mean.abs())
    }

    /// The 95% confidence interval of the mean (Student's t); `None` for one run.
    pub fn ci95(&self) -> Option<(f64, f64)> {
        if self.n() < 2 {
            return None;
        }
        let half = t_quantile_975((self.n() - 1) as f64) * self.std / (self.n() as f64).sqrt();
        Some((self.mean - half, self.mean + half))
    }
}

/// A `repeats` figure as written: its statistics, then the per-run values.
#[derive(Serialize)]
struct RepeatStatsFile<'a> {
    n: usize,
    mean: f64,
    std: f64,
    cv: Option<f64>,
    ci95_low: Option<f64>,
    ci95_high: Option<f64>,
    values: &'a [f64],
}

impl Serialize for RepeatStats {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ci = self.ci95();
        RepeatStatsFile {
            n: self.n(),
            mean: self.mean,
            std: self.std,
            cv: self.cv(),
            ci95_low: ci.map(|c| c.0),
            ci95_high: ci.map(|c| c.1),
            values: &self.values,
        }
        .serialize(serializer)
    }
}

/// Read back from the per-run values alone: the statistics are recomputed from them.
impl<'de> Deserialize<'de> for RepeatStats {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Values {
            values: Vec<f64>,
        }
        let Values { values } = Values::deserialize(deserializer)?;
        RepeatStats::new(&values).ok_or_else(|| serde::de::Error::custom("a repeats figure needs finite values"))
    }
}

/// Whether two sets of runs of a figure differ beyond their noise: Welch's t-test at 5%.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseVerdict {
    /// B's mean over A's.
    pub ratio: f64,
    /// Welch's t statistic.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// |t| beyond the two-sided 95% quantile.
    pub beyond_noise: bool,
}

impl NoiseVerdict {
    /// Compares `a` and `b` (`None` when either has fewer than two runs).
    ///
    /// ```rust
    /// use trtllm::bench::{NoiseVerdict, RepeatStats};
    ///
    /// let a = RepeatStats::new(&[10.0, 10.2, 9.9, 10.1]).unwrap();
    /// let far = RepeatStats::new(&[12.0, 12.1, 11.9, 12.2]).unwrap();
    /// let near = RepeatStats::new(&[10.1, 9.8, 10.2, 10.0]).unwrap();
    /// assert!(NoiseVerdict::new(&a, &far).unwrap().beyond_noise);
    /// assert!(!NoiseVerdict::new(&a, &near).unwrap().beyond_noise);
    /// ```
    pub fn new(a: &RepeatStats, b: &RepeatStats) -> Option<Self> {
        if a.n() < 2 || b.n() < 2 {
            return None;
        }
        let (va, vb) = (a.std.powi(2) / a.n() as f64, b.std.powi(2) / b.n() as f64);
        let ratio = if a.mean != 0.0 { b.mean / a.mean } else { f64::NAN };
        let diff = b.mean - a.mean;
        let scale = a.mean.abs().max(b.mean.abs()).max(f64::MIN_POSITIVE);
        if (va + vb).sqrt() <= scale * 1e-12 {
            // No noise at all (a seeded virtual-clock run repeated with one seed): any
            // difference is real.
            return Some(NoiseVerdict { ratio, t: f64::INFINITY, df: f64::INFINITY, beyond_noise: diff != 0.0 });
        }
        let t = diff / (va + vb).sqrt();
        let df = (va + vb).powi(2)
            / (va.powi(2) / (a.n() as f64 - 1.0) + vb.powi(2) / (b.n() as f64 - 1.0)).max(f64::MIN_POSITIVE);
        Some(NoiseVerdict { ratio, t, df, beyond_noise: t.abs() > t_quantile_975(df) })
    }
}

/// The summary's `repeats` (`--repeats N`): each headline figure's [`RepeatStats`] over the
/// runs of one point, written into the first run's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatsSection {
    /// How many times the point ran.
    #[serde(default)]
    pub runs: usize,
    /// What the interval is.
    #[serde(default)]
    pub interval: String,
    /// Each headline figure present in every run, in [`HEADLINE_FIGURES`] order.
    pub figures: RepeatFigures,
}

impl RepeatsSection {
    /// The statistics of figure `key` (`p50_ttft_ms`), when every run had it.
    pub fn figure(&self, key: &str) -> Option<&RepeatStats> {
        self.figures.0.iter().find(|(k, _)| k == key).map(|(_, s)| s)
    }
}

/// `repeats.figures`: statistics by result-file key, in report order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepeatFigures(Vec<(String, RepeatStats)>);

impl Serialize for RepeatFigures {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for RepeatFigures {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Figures;
        impl<'de> serde::de::Visitor<'de> for Figures {
            type Value = RepeatFigures;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("repeated figures by key")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RepeatFigures, A::Error> {
                let mut figures = Vec::new();
                // A figure this version cannot read is left out, not the whole section.
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    if let Ok(stats) = serde_json::from_value(v) {
                        figures.push((k, stats));
                    }
                }
                Ok(RepeatFigures(figures))
            }
        }
        deserializer.deserialize_map(Figures)
    }
}

/// The `repeats` section of a point run `summaries.len()` times: each headline figure's
/// [`RepeatStats`] (figures missing from any run are left out).
///
/// ```rust
/// use serde_json::json;
/// use trtllm::bench::repeats_section;
///
/// let runs = [json!({"mean_ttft_ms": 10.0}), json!({"mean_ttft_ms": 12.0}), json!({"mean_ttft_ms": 11.0})];
/// let section = repeats_section(&runs);
/// assert_eq!(section.runs, 3);
/// assert_eq!(section.figure("mean_ttft_ms").unwrap().mean, 11.0);
/// assert_eq!(serde_json::to_value(&section).unwrap()["figures"]["mean_ttft_ms"]["n"], 3);
/// ```
pub fn repeats_section(summaries: &[Value]) -> RepeatsSection {
    let figures = HEADLINE_FIGURES
        .iter()
        .filter_map(|key| {
            let values: Option<Vec<f64>> = summaries.iter().map(|s| s.get(*key).and_then(Value::as_f64)).collect();
            values.as_deref().and_then(RepeatStats::new).map(|stats| (key.to_string(), stats))
        })
        .collect();
    RepeatsSection {
        runs: summaries.len(),
        interval: "95% confidence interval of the mean, Student's t with n - 1 degrees of freedom".into(),
        figures: RepeatFigures(figures),
    }
}
