//! Service-level objectives for goodput, parsed from `ttft:MS,tpot:MS,e2el:MS`.

use std::fmt;
use std::str::FromStr;

use super::record::RequestRecord;

/// Errors from parsing an SLO specification.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SloError {
    /// The specification has no `name:value` pair.
    #[error("no service level objective given; expected e.g. \"ttft:1000,tpot:40\"")]
    Empty,
    /// A pair without a `:` between name and value.
    #[error("invalid SLO {0:?}: expected NAME:MILLISECONDS, e.g. \"ttft:1000\"")]
    MissingColon(String),
    /// A metric name other than `ttft`, `tpot` or `e2el`.
    #[error("unknown SLO metric {0:?}: expected one of ttft, tpot, e2el")]
    UnknownMetric(String),
    /// A value that is not a non-negative finite number of milliseconds.
    #[error("invalid SLO value {value:?} for {metric}: expected a non-negative number of milliseconds")]
    InvalidValue {
        /// The metric the value was given for.
        metric: String,
        /// The text that failed to parse.
        value: String,
    },
    /// The same metric given twice.
    #[error("SLO metric {0} given more than once")]
    Duplicate(String),
}

/// Latency limits a request must meet, all at once, to count towards `request_goodput`.
///
/// Semantics follow `vllm bench serve --goodput`: a request is good when each given limit is at
/// least its value; a request with at most one output token counts as TPOT 0. A successful
/// request that never received a token fails a TTFT limit.
///
/// ```rust
/// use trtllm::bench::Slos;
///
/// let slos: Slos = "ttft:1000,tpot:40".parse().unwrap();
/// assert_eq!(slos.ttft_ms, Some(1000.0));
/// assert_eq!(slos.tpot_ms, Some(40.0));
/// assert_eq!(slos.e2el_ms, None);
/// assert!("ttft=1000".parse::<Slos>().is_err());
/// assert!("latency:5".parse::<Slos>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Slos {
    /// Limit on time to first token, milliseconds.
    pub ttft_ms: Option<f64>,
    /// Limit on time per output token, milliseconds.
    pub tpot_ms: Option<f64>,
    /// Limit on end-to-end latency, milliseconds.
    pub e2el_ms: Option<f64>,
}

impl Slos {
    /// Parses pairs separated by commas or whitespace, e.g. `"ttft:1000,tpot:40"`.
    pub fn parse(text: &str) -> Result<Self, SloError> {
        let mut slos = Slos::default();
        let mut any = false;
        for pair in text.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
            let (name, value) = pair.split_once(':').ok_or_else(|| SloError::MissingColon(pair.to_owned()))?;
            let name = name.trim().to_ascii_lowercase();
            let slot = match name.as_str() {
                "ttft" => &mut slos.ttft_ms,
                "tpot" => &mut slos.tpot_ms,
                "e2el" => &mut slos.e2el_ms,
                _ => return Err(SloError::UnknownMetric(name)),
            };
            let ms: f64 = value
                .trim()
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| SloError::InvalidValue { metric: name.clone(), value: value.to_owned() })?;
            if slot.replace(ms).is_some() {
                return Err(SloError::Duplicate(name));
            }
            any = true;
        }
        if any { Ok(slos) } else { Err(SloError::Empty) }
    }

    /// True when no limit is set.
    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_none() && self.tpot_ms.is_none() && self.e2el_ms.is_none()
    }

    /// The limits a run can be held to: all of them with streaming; without streaming only E2E
    /// latency (a non-streaming client observes no first token, so TTFT and TPOT limits would
    /// always pass or always fail for reasons that are not the engine's).
    ///
    /// ```rust
    /// use trtllm::bench::Slos;
    ///
    /// let slos = Slos::parse("ttft:500,e2el:3000").unwrap();
    /// assert_eq!(slos.applicable_to(true), slos);
    /// assert_eq!(slos.applicable_to(false).to_string(), "e2el:3000");
    /// assert!(Slos::parse("tpot:40").unwrap().applicable_to(false).is_empty());
    /// ```
    pub fn applicable_to(&self, streaming: bool) -> Slos {
        if streaming { *self } else { Slos { ttft_ms: None, tpot_ms: None, e2el_ms: self.e2el_ms } }
    }

    /// The limits [`applicable_to`](Self::applicable_to) drops for a run.
    pub fn not_applicable_to(&self, streaming: bool) -> Slos {
        if streaming { Slos::default() } else { Slos { e2el_ms: None, ..*self } }
    }

    /// Whether a (successful) request meets every limit that applies to it
    /// ([`applicable_to`](Self::applicable_to) its streaming mode).
    pub fn is_met_by(&self, record: &RequestRecord) -> bool {
        let slos = self.applicable_to(record.streaming);
        let within = |limit_ms: Option<f64>, value_s: Option<f64>| match (limit_ms, value_s) {
            (None, _) => true,
            // Compared in seconds, as vLLM does, so boundary cases agree with it.
            (Some(limit), Some(v)) => v <= limit / 1000.0,
            (Some(_), None) => false,
        };
        within(slos.ttft_ms, record.ttft_s())
            && within(slos.tpot_ms, Some(record.tpot_s().unwrap_or(0.0)))
            && within(slos.e2el_ms, record.e2el_s())
    }
}

impl FromStr for Slos {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Slos::parse(s)
    }
}

impl fmt::Display for Slos {
    /// Writes the canonical `ttft:MS,tpot:MS,e2el:MS` form (only the limits that are set).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [("ttft", self.ttft_ms), ("tpot", self.tpot_ms), ("e2el", self.e2el_ms)]
            .iter()
            .filter_map(|(n, v)| v.map(|v| format!("{n}:{v}")))
            .collect();
        f.write_str(&parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::record::Phase;

    #[test]
    fn parses_all_forms() {
        let s = Slos::parse("TTFT:500 e2el:2000.5").unwrap();
        assert_eq!(s.ttft_ms, Some(500.0));
        assert_eq!(s.e2el_ms, Some(2000.5));
        assert_eq!(s.to_string(), "ttft:500,e2el:2000.5");
        assert_eq!(Slos::parse(&s.to_string()).unwrap(), s);
    }

    #[test]
    fn rejects_bad_input_with_clear_errors() {
        assert!(matches!(Slos::parse(" , "), Err(SloError::Empty)));
        assert!(matches!(Slos::parse("ttft1000"), Err(SloError::MissingColon(_))));
        assert!(matches!(Slos::parse("itl:10"), Err(SloError::UnknownMetric(_))));
        assert!(matches!(Slos::parse("tpot:-1"), Err(SloError::InvalidValue { .. })));
        assert!(matches!(Slos::parse("tpot:fast"), Err(SloError::InvalidValue { .. })));
        assert!(matches!(Slos::parse("tpot:1,tpot:2"), Err(SloError::Duplicate(_))));
        let msg = Slos::parse("itl:10").unwrap_err().to_string();
        assert!(msg.contains("ttft, tpot, e2el"), "{msg}");
    }

    #[test]
    fn one_token_request_counts_as_tpot_zero() {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.record_chunk(0.2, 1);
        r.finish(0.2, 1, None);
        assert!(Slos::parse("tpot:0").unwrap().is_met_by(&r));
        assert!(Slos::parse("ttft:200").unwrap().is_met_by(&r));
        assert!(!Slos::parse("ttft:199").unwrap().is_met_by(&r));
    }

    #[test]
    fn missing_first_token_fails_ttft_limit() {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.finish(0.2, 0, Some("cancelled".into()));
        assert!(!Slos::parse("ttft:10000").unwrap().is_met_by(&r));
        assert!(Slos::parse("e2el:10000").unwrap().is_met_by(&r));
    }
}
