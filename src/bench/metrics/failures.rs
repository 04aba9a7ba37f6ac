//! Failed requests grouped by reason, and the failure budget a run may spend (`--max-failed`).

use std::fmt;
use std::str::FromStr;

use super::record::RequestRecord;

/// One reason requests failed for: the error with its numbers masked (`Prompt length (N) exceeds
/// maximum input length (N)`), how many measured requests failed so, and the first one's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureReason {
    /// The error with every run of digits replaced by `N`, so one cause is one reason.
    pub reason: String,
    /// Measured requests that failed for it.
    pub count: usize,
    /// The first such request's error, as the target said it.
    pub example: String,
}

/// The measured requests of a point that failed, grouped by reason, most frequent first.
///
/// ```rust
/// use trtllm::bench::{FailureSummary, Phase, RequestRecord};
///
/// let mut records = Vec::new();
/// for (i, len) in [(0, 1500), (1, 2000)] {
///     let mut r = RequestRecord::new(i, Phase::Measure, 0.0);
///     r.fail(0.1, format!("Prompt length ({len}) exceeds maximum input length (1024)"));
///     records.push(r);
/// }
/// let summary = FailureSummary::of(&records);
/// assert_eq!((summary.failed, summary.measured), (2, 2));
/// assert_eq!(summary.reasons[0].reason, "Prompt length (N) exceeds maximum input length (N)");
/// assert_eq!(summary.reasons[0].count, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FailureSummary {
    /// Measured requests.
    pub measured: usize,
    /// Of those, failed.
    pub failed: usize,
    /// The reasons, most frequent first (then in the order first seen).
    pub reasons: Vec<FailureReason>,
}

impl FailureSummary {
    /// Groups the measured failures of `records`.
    pub fn of(records: &[RequestRecord]) -> Self {
        let mut summary = FailureSummary::default();
        for record in records.iter().filter(|r| r.is_measured()) {
            summary.measured += 1;
            let Some(error) = record.error.as_deref() else { continue };
            summary.failed += 1;
            let reason = mask_numbers(error);
            match summary.reasons.iter_mut().find(|r| r.reason == reason) {
                Some(known) => known.count += 1,
                None => summary.reasons.push(FailureReason { reason, count: 1, example: error.to_string() }),
            }
        }
        // Stable: equal counts keep the order first seen.
        summary.reasons.sort_by_key(|r| std::cmp::Reverse(r.count));
        summary
    }

    /// One console line per reason: `22 x Prompt length (1534) exceeds maximum input length (1024)`
    /// (the first request's own error, so the numbers are real ones).
    pub fn reason_lines(&self) -> Vec<String> {
        self.reasons.iter().map(|r| format!("{} x {}", r.count, r.example)).collect()
    }
}

/// Replaces each run of ASCII digits with `N`.
fn mask_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('N');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

/// How many failed requests a point may have before the run counts as failed (`--max-failed`):
/// a count, or a share of the point's measured requests.
///
/// ```rust
/// use trtllm::bench::FailureBudget;
///
/// let none = FailureBudget::default();
/// assert!(none.allows(0, 64) && !none.allows(1, 64));
/// let share: FailureBudget = "5%".parse().unwrap();
/// assert!(share.allows(3, 64) && !share.allows(4, 64));
/// let count: FailureBudget = "22".parse().unwrap();
/// assert!(count.allows(22, 64) && !count.allows(23, 64));
/// assert!("-1".parse::<FailureBudget>().is_err() && "150%".parse::<FailureBudget>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailureBudget {
    /// At most this many failed requests per point.
    Count(usize),
    /// At most this percentage (0 to 100) of a point's measured requests.
    Percent(f64),
}

impl Default for FailureBudget {
    /// No failure allowed.
    fn default() -> Self {
        FailureBudget::Count(0)
    }
}

impl FailureBudget {
    /// Whether `failed` of `measured` requests are within the budget.
    pub fn allows(&self, failed: usize, measured: usize) -> bool {
        match *self {
            FailureBudget::Count(n) => failed <= n,
            FailureBudget::Percent(p) => failed as f64 <= p / 100.0 * measured as f64,
        }
    }
}

/// A `--max-failed` value that is neither a count nor a percentage from 0 to 100.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--max-failed {0:?} is neither a count of requests (e.g. 3) nor a percentage from 0 to 100 (e.g. 5%)")]
pub struct FailureBudgetError(String);

impl FromStr for FailureBudget {
    type Err = FailureBudgetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || FailureBudgetError(s.to_string());
        match s.trim().strip_suffix('%') {
            Some(p) => {
                let p: f64 = p.trim().parse().map_err(|_| bad())?;
                (0.0..=100.0).contains(&p).then_some(FailureBudget::Percent(p)).ok_or_else(bad)
            }
            None => s.trim().parse().map(FailureBudget::Count).map_err(|_| bad()),
        }
    }
}

impl fmt::Display for FailureBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FailureBudget::Count(n) => write!(f, "{n}"),
            FailureBudget::Percent(p) => write!(f, "{p}%"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::record::Phase;

    #[test]
    fn failures_group_by_reason_most_frequent_first_and_warmup_is_left_out() {
        let fail = |i: u64, phase: Phase, error: &str| {
            let mut r = RequestRecord::new(i, phase, 0.0);
            r.fail(0.1, error);
            r
        };
        let mut ok = RequestRecord::new(9, Phase::Measure, 0.0);
        ok.finish(0.2, 4, Some("length".into()));
        let records = vec![
            fail(0, Phase::Measure, "executor error: out of KV blocks"),
            fail(1, Phase::Measure, "Prompt length (1500) exceeds maximum input length (1024)"),
            fail(2, Phase::Warmup, "Prompt length (1700) exceeds maximum input length (1024)"),
            fail(3, Phase::Measure, "Prompt length (2048) exceeds maximum input length (1024)"),
            ok,
        ];
        let summary = FailureSummary::of(&records);
        assert_eq!((summary.measured, summary.failed), (4, 3));
        assert_eq!(
            summary.reason_lines(),
            ["2 x Prompt length (1500) exceeds maximum input length (1024)", "1 x executor error: out of KV blocks"]
        );
    }

    #[test]
    fn budgets_parse_and_display_as_given() {
        for text in ["0", "3", "5%", "0.5%", "100%"] {
            assert_eq!(text.parse::<FailureBudget>().unwrap().to_string(), text);
        }
        for text in ["", "x", "3.5", "-2", "101%", "%"] {
            assert!(text.parse::<FailureBudget>().is_err(), "{text:?}");
        }
    }
}
