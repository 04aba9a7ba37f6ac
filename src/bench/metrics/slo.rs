//! Per-request latency limits for goodput (`request_goodput`), read from `--slo` through the one
//! SLO grammar (`slo_set.rs`).

use std::fmt;

use super::record::RequestRecord;

/// Latency limits a request must meet, all at once, to count towards `request_goodput`.
///
/// Semantics follow `vllm bench serve --goodput`: a request is good when each given limit is at
/// least its value; a request with at most one output token counts as TPOT 0. A successful
/// request that never received a token fails a TTFT limit. [`Slos::parse`] reads `--slo` in the
/// grammar of [`SloSet`](super::slo_set::SloSet) (`ttft:500` is `ttft:p95:500`), keeping each
/// metric's limit.
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
/// assert!("ttft:p9:1000".parse::<Slos>().is_err(), "percentiles run from p50 to p99.99");
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
        use crate::bench::metrics::slo_set::SloError;
        assert!(matches!(Slos::parse(" , "), Err(SloError::Empty)));
        assert!(matches!(Slos::parse("ttft1000"), Err(SloError::Shape(_))));
        assert!(matches!(Slos::parse("latency:10"), Err(SloError::UnknownMetric(_))));
        assert!(matches!(Slos::parse("tpot:-1"), Err(SloError::Limit(_))));
        assert!(matches!(Slos::parse("tpot:fast"), Err(SloError::Limit(_))));
        assert!(matches!(Slos::parse("tpot:1,tpot:2"), Err(SloError::Duplicate(_))));
        let msg = Slos::parse("latency:10").unwrap_err().to_string();
        assert!(msg.contains("ttft, tpot, itl, e2el"), "{msg}");
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
