//! Summary statistics over latency samples: mean, median, population std and percentiles.
//!
//! Percentiles follow numpy's default (`method="linear"`): the rank is `(n − 1)·p/100` and the
//! value is interpolated between the two closest order statistics, exactly as `np.percentile`
//! does (including its two-sided interpolation formula). The nearest-rank variant
//! (`index = ceil(p/100·n) − 1`) matches NVIDIA's C++ benchmark reporting.

use serde_json::{Map, Value};

/// Percentiles reported when none are configured: p50, p90, p95 and p99.
pub const DEFAULT_PERCENTILES: [f64; 4] = [50.0, 90.0, 95.0, 99.0];

/// Errors from percentile configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// A percentile outside 0..=100 (or not a number).
    #[error("percentile {0} is outside 0..=100")]
    OutOfRange(f64),
    /// An entry of a percentile list that is not a number.
    #[error("cannot parse percentile {0:?}: expected a number such as 99 or 99.9")]
    NotANumber(String),
    /// A percentile list with no entries.
    #[error("percentile list is empty")]
    Empty,
}

/// Checks that `p` lies in 0..=100.
pub fn validate_percentile(p: f64) -> Result<f64, StatsError> {
    if (0.0..=100.0).contains(&p) { Ok(p) } else { Err(StatsError::OutOfRange(p)) }
}

/// Parses a comma-separated percentile list such as `"50,90,99.9"`.
///
/// ```rust
/// use trtllm::bench::parse_percentiles;
///
/// assert_eq!(parse_percentiles("50, 99.9").unwrap(), vec![50.0, 99.9]);
/// assert!(parse_percentiles("50,abc").is_err());
/// assert!(parse_percentiles("101").is_err());
/// ```
pub fn parse_percentiles(text: &str) -> Result<Vec<f64>, StatsError> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let p: f64 = part.parse().map_err(|_| StatsError::NotANumber(part.to_owned()))?;
        out.push(validate_percentile(p)?);
    }
    if out.is_empty() {
        return Err(StatsError::Empty);
    }
    Ok(out)
}

/// The percentile as it appears in key names: `99.0` → `"99"`, `99.9` → `"99.9"`.
///
/// ```rust
/// use trtllm::bench::{percentile_key, percentile_label};
///
/// assert_eq!(percentile_label(99.0), "99");
/// assert_eq!(percentile_label(99.9), "99.9");
/// assert_eq!(percentile_key(99.9, "ttft"), "p99.9_ttft_ms");
/// ```
pub fn percentile_label(p: f64) -> String {
    if p.fract() == 0.0 { format!("{}", p as i64) } else { format!("{p}") }
}

/// The vLLM-style key of a percentile of a millisecond metric: `p99_ttft_ms`.
pub fn percentile_key(p: f64, metric: &str) -> String {
    format!("p{}_{metric}_ms", percentile_label(p))
}

/// Arithmetic mean; `None` for no samples.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() { None } else { Some(values.iter().sum::<f64>() / values.len() as f64) }
}

/// Population standard deviation (ddof = 0, like `np.std`); `None` for no samples.
pub fn std_dev(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    let sum_sq: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    Some((sum_sq / values.len() as f64).sqrt())
}

/// Median (mean of the two middle values for an even count, like `np.median`).
pub fn median(values: &[f64]) -> Option<f64> {
    Distribution::from_samples(values.to_vec(), &[]).median()
}

/// Linear-interpolation percentile (numpy's default) of unsorted `values`.
///
/// `None` when `values` is empty or `p` is outside 0..=100.
///
/// ```rust
/// use trtllm::bench::percentile;
///
/// // rank = (4 - 1) * 0.5 = 1.5 → halfway between 2 and 3
/// assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 50.0), Some(2.5));
/// // rank = 3 * 0.9 = 2.7 → 3 + 0.7 * (4 - 3)
/// assert!((percentile(&[1.0, 2.0, 3.0, 4.0], 90.0).unwrap() - 3.7).abs() < 1e-12);
/// ```
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    Distribution::from_samples(values.to_vec(), &[]).percentile(p)
}

/// Nearest-rank percentile of unsorted `values`: the element at `ceil(p/100·n) − 1` (p = 0 gives
/// the minimum).
///
/// ```rust
/// use trtllm::bench::percentile_nearest_rank;
///
/// let v = [15.0, 20.0, 35.0, 40.0, 50.0];
/// assert_eq!(percentile_nearest_rank(&v, 30.0), Some(20.0)); // ceil(1.5) - 1 = 1
/// assert_eq!(percentile_nearest_rank(&v, 100.0), Some(50.0));
/// ```
pub fn percentile_nearest_rank(values: &[f64], p: f64) -> Option<f64> {
    Distribution::from_samples(values.to_vec(), &[]).percentile_nearest_rank(p)
}

/// Linear interpolation the way numpy writes it: from the lower end for `t < 0.5`, from the upper
/// end otherwise, which keeps results monotone and exact at both ends.
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 { b - diff * (1.0 - t) } else { a + diff * t }
}

/// Sorted samples of one metric with the percentile list to report.
///
/// The unit is whatever the samples are in; the summary stores milliseconds. Non-finite samples
/// are dropped on construction.
///
/// ```rust
/// use trtllm::bench::Distribution;
///
/// let d = Distribution::from_samples(vec![3.0, 1.0, 2.0, 10.0], &[50.0, 99.0]);
/// assert_eq!(d.count(), 4);
/// assert_eq!(d.mean(), Some(4.0));
/// assert_eq!(d.median(), Some(2.5));
/// assert_eq!(d.min(), Some(1.0));
/// assert_eq!(d.reported_percentiles()[0], (50.0, 2.5));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Distribution {
    sorted: Vec<f64>,
    percentiles: Vec<f64>,
}

impl Distribution {
    /// Sorts `samples` and remembers which `percentiles` to report.
    pub fn from_samples(mut samples: Vec<f64>, percentiles: &[f64]) -> Self {
        samples.retain(|v| v.is_finite());
        samples.sort_by(f64::total_cmp);
        Self { sorted: samples, percentiles: percentiles.to_vec() }
    }

    /// Number of samples.
    pub fn count(&self) -> usize {
        self.sorted.len()
    }

    /// True without samples.
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The samples in ascending order.
    pub fn sorted_samples(&self) -> &[f64] {
        &self.sorted
    }

    /// Arithmetic mean.
    pub fn mean(&self) -> Option<f64> {
        mean(&self.sorted)
    }

    /// Population standard deviation (ddof = 0).
    pub fn std(&self) -> Option<f64> {
        std_dev(&self.sorted)
    }

    /// Median, as `np.median`.
    pub fn median(&self) -> Option<f64> {
        let n = self.sorted.len();
        if n == 0 {
            return None;
        }
        let mid = n / 2;
        Some(if n % 2 == 1 { self.sorted[mid] } else { (self.sorted[mid - 1] + self.sorted[mid]) / 2.0 })
    }

    /// Smallest sample.
    pub fn min(&self) -> Option<f64> {
        self.sorted.first().copied()
    }

    /// Largest sample.
    pub fn max(&self) -> Option<f64> {
        self.sorted.last().copied()
    }

    /// Linear-interpolation percentile (numpy's default); `None` without samples or for `p`
    /// outside 0..=100.
    pub fn percentile(&self, p: f64) -> Option<f64> {
        let n = self.sorted.len();
        if n == 0 || validate_percentile(p).is_err() {
            return None;
        }
        let rank = (n - 1) as f64 * (p / 100.0);
        let lo = rank.floor();
        let lo_idx = (lo as usize).min(n - 1);
        let hi_idx = (lo_idx + 1).min(n - 1);
        Some(lerp(self.sorted[lo_idx], self.sorted[hi_idx], rank - lo))
    }

    /// Nearest-rank percentile: the sample at `ceil(p/100·n) − 1`, clamped to the sample range.
    pub fn percentile_nearest_rank(&self, p: f64) -> Option<f64> {
        let n = self.sorted.len();
        if n == 0 || validate_percentile(p).is_err() {
            return None;
        }
        let rank = (p / 100.0 * n as f64).ceil() as usize;
        Some(self.sorted[rank.saturating_sub(1).min(n - 1)])
    }

    /// The configured percentiles with their (linear) values; empty without samples.
    pub fn reported_percentiles(&self) -> Vec<(f64, f64)> {
        self.percentiles.iter().filter_map(|&p| self.percentile(p).map(|v| (p, v))).collect()
    }

    /// The configured percentile list.
    pub fn percentile_list(&self) -> &[f64] {
        &self.percentiles
    }

    /// Writes `mean_{name}_ms`, `median_{name}_ms`, `std_{name}_ms` and `p{P}_{name}_ms` into
    /// `map`, the way `vllm bench serve` does: without samples every value is `0.0`.
    ///
    /// ```rust
    /// use trtllm::bench::Distribution;
    ///
    /// let mut map = serde_json::Map::new();
    /// Distribution::from_samples(vec![1.0, 3.0], &[99.9]).write_ms_keys(&mut map, "ttft");
    /// assert_eq!(map["mean_ttft_ms"], 2.0);
    /// assert!(map.contains_key("p99.9_ttft_ms"));
    /// ```
    pub fn write_ms_keys(&self, map: &mut Map<String, Value>, name: &str) {
        let or_zero = |v: Option<f64>| Value::from(v.unwrap_or(0.0));
        map.insert(format!("mean_{name}_ms"), or_zero(self.mean()));
        map.insert(format!("median_{name}_ms"), or_zero(self.median()));
        map.insert(format!("std_{name}_ms"), or_zero(self.std()));
        for &p in &self.percentiles {
            map.insert(percentile_key(p, name), or_zero(self.percentile(p)));
        }
    }

    /// The `(key, value)` pairs of [`write_ms_keys`](Self::write_ms_keys), in report order.
    pub fn ms_entries(&self, name: &str) -> Vec<(String, f64)> {
        self.unit_entries(name, "ms")
    }

    /// `mean_{name}_{unit}`, `median_…`, `std_…` and `p{P}_{name}_{unit}` pairs in report order
    /// (`0.0` without samples), for metrics in other units than milliseconds.
    ///
    /// ```rust
    /// use trtllm::bench::Distribution;
    ///
    /// let d = Distribution::from_samples(vec![10.0, 30.0], &[50.0]);
    /// let keys: Vec<String> = d.unit_entries("request_output", "tok_s").into_iter().map(|(k, _)| k).collect();
    /// assert_eq!(keys, ["mean_request_output_tok_s", "median_request_output_tok_s",
    ///                   "std_request_output_tok_s", "p50_request_output_tok_s"]);
    /// ```
    pub fn unit_entries(&self, name: &str, unit: &str) -> Vec<(String, f64)> {
        let mut out = vec![
            (format!("mean_{name}_{unit}"), self.mean().unwrap_or(0.0)),
            (format!("median_{name}_{unit}"), self.median().unwrap_or(0.0)),
            (format!("std_{name}_{unit}"), self.std().unwrap_or(0.0)),
        ];
        for &p in &self.percentiles {
            out.push((format!("p{}_{name}_{unit}", percentile_label(p)), self.percentile(p).unwrap_or(0.0)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_percentiles_by_hand() {
        // Sorted: 1 2 3 4 5 6 7 8 9 10 ; rank = 9 * p / 100
        let v: Vec<f64> = (1..=10).rev().map(f64::from).collect();
        let d = Distribution::from_samples(v, &[]);
        assert_eq!(d.percentile(0.0), Some(1.0));
        assert_eq!(d.percentile(100.0), Some(10.0));
        assert_eq!(d.percentile(50.0), Some(5.5)); // rank 4.5
        assert!((d.percentile(90.0).unwrap() - 9.1).abs() < 1e-12); // rank 8.1
        assert!((d.percentile(95.0).unwrap() - 9.55).abs() < 1e-12); // rank 8.55
        assert!((d.percentile(99.0).unwrap() - 9.91).abs() < 1e-12); // rank 8.91
        assert!((d.percentile(99.9).unwrap() - 9.991).abs() < 1e-12); // rank 8.991
        assert!((d.percentile(25.0).unwrap() - 3.25).abs() < 1e-12); // rank 2.25
    }

    #[test]
    fn single_sample_is_every_percentile() {
        let d = Distribution::from_samples(vec![7.0], &[]);
        for p in [0.0, 1.0, 50.0, 99.9, 100.0] {
            assert_eq!(d.percentile(p), Some(7.0));
            assert_eq!(d.percentile_nearest_rank(p), Some(7.0));
        }
        assert_eq!(d.std(), Some(0.0));
    }

    #[test]
    fn nearest_rank_by_hand() {
        let d = Distribution::from_samples((1..=10).map(f64::from).collect(), &[]);
        assert_eq!(d.percentile_nearest_rank(50.0), Some(5.0)); // ceil(5) - 1 = 4
        assert_eq!(d.percentile_nearest_rank(90.0), Some(9.0)); // ceil(9) - 1 = 8
        assert_eq!(d.percentile_nearest_rank(91.0), Some(10.0)); // ceil(9.1) - 1 = 9
        assert_eq!(d.percentile_nearest_rank(0.0), Some(1.0));
        assert_eq!(d.percentile_nearest_rank(100.0), Some(10.0));
    }

    #[test]
    fn population_std_by_hand() {
        // mean 5, squared deviations 9 1 1 1 0 0 4 16 → 32 / 8 = 4 → std 2
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(std_dev(&v), Some(2.0));
        assert_eq!(mean(&v), Some(5.0));
        assert_eq!(median(&v), Some(4.5));
    }

    #[test]
    fn empty_and_invalid_inputs_give_none() {
        assert_eq!(mean(&[]), None);
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[1.0], 100.5), None);
        assert_eq!(percentile(&[1.0], f64::NAN), None);
        assert_eq!(percentile_nearest_rank(&[1.0], -1.0), None);
    }

    #[test]
    fn non_finite_samples_are_dropped() {
        let d = Distribution::from_samples(vec![1.0, f64::NAN, 3.0, f64::INFINITY], &[]);
        assert_eq!(d.count(), 2);
        assert_eq!(d.max(), Some(3.0));
    }

    #[test]
    fn empty_distribution_writes_zeros_like_vllm() {
        let mut map = Map::new();
        Distribution::from_samples(vec![], &[50.0, 99.9]).write_ms_keys(&mut map, "tpot");
        for key in ["mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p50_tpot_ms", "p99.9_tpot_ms"] {
            assert_eq!(map[key], 0.0, "{key}");
        }
    }

    #[test]
    fn percentile_lists_parse_and_reject() {
        assert_eq!(parse_percentiles("50,90,95,99").unwrap(), DEFAULT_PERCENTILES.to_vec());
        assert!(matches!(parse_percentiles(""), Err(StatsError::Empty)));
        assert!(matches!(parse_percentiles("p99"), Err(StatsError::NotANumber(_))));
        assert!(matches!(parse_percentiles("-1"), Err(StatsError::OutOfRange(_))));
    }

    #[test]
    fn labels_keep_only_needed_decimals() {
        assert_eq!(percentile_label(50.0), "50");
        assert_eq!(percentile_label(99.99), "99.99");
        assert_eq!(percentile_label(0.5), "0.5");
        assert_eq!(percentile_key(99.0, "itl"), "p99_itl_ms");
    }
}
