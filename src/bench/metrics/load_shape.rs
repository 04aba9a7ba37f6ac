//! How the load actually fell: figures by session turn, how synchronised the sends were, and
//! the steady part of the run (after ramp-up, before drain) found from the in-flight count.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::record::{Phase, RequestRecord};
use super::stats::{Distribution, mean};

/// Sends closer than this to the one before count as arriving together.
pub const TOGETHER_S: f64 = 0.001;

fn ms(samples: impl IntoIterator<Item = f64>, percentiles: &[f64]) -> Distribution {
    Distribution::from_samples(samples.into_iter().map(|s| s * 1000.0).collect(), percentiles)
}

/// Latency statistics by key (`mean_ttft_ms`, `p50_ttft_ms`, ...), ms, in report order: each
/// metric's mean, median (and std, where the section has it) and percentiles, metric after metric.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyFigures(Vec<(String, f64)>);

impl LatencyFigures {
    /// The figure named `key` (`p50_ttft_ms`).
    pub fn get(&self, key: &str) -> Option<f64> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    /// Every figure, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

impl FromIterator<(String, f64)> for LatencyFigures {
    fn from_iter<I: IntoIterator<Item = (String, f64)>>(iter: I) -> Self {
        LatencyFigures(iter.into_iter().collect())
    }
}

impl Serialize for LatencyFigures {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for LatencyFigures {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Figures;
        impl<'de> serde::de::Visitor<'de> for Figures {
            type Value = LatencyFigures;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("latency figures by key")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<LatencyFigures, A::Error> {
                let mut figures = Vec::new();
                // Flattened beside other fields: keep the numbers, skip what is not one.
                while let Some((k, v)) = map.next_entry::<String, serde_json::Value>()? {
                    if let Some(x) = v.as_f64() {
                        figures.push((k, x));
                    }
                }
                Ok(LatencyFigures(figures))
            }
        }
        deserializer.deserialize_map(Figures)
    }
}

fn latency_entries(d: &Distribution, name: &str) -> Vec<(String, f64)> {
    d.ms_entries(name).into_iter().filter(|(k, _)| !k.starts_with("std_")).collect()
}

/// The summary's `sessions`: how many sessions ran and each turn's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionsByTurn {
    /// Sessions with a measured request.
    pub sessions: usize,
    /// One row per turn, in turn order.
    pub turns: Vec<TurnFigures>,
}

/// One turn of [`SessionsByTurn`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnFigures {
    /// The turn number, from 1.
    pub turn: u32,
    /// Measured requests of this turn.
    pub requests: usize,
    /// Of which failed.
    pub failed: usize,
    /// Mean prompt tokens of the successful ones (`null` without any).
    pub mean_prompt_tokens: Option<f64>,
    /// Mean prompt tokens served from reused KV blocks (`null` without any).
    pub mean_cached_tokens: Option<f64>,
    /// Cached prompt tokens over prompt tokens.
    pub cache_hit_rate: f64,
    /// TTFT, ITL and E2E statistics, ms.
    #[serde(flatten)]
    pub latency: LatencyFigures,
}

/// The summary's `arrivals`: how synchronised the measured sends were ([`arrival_sync`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrivalSync {
    /// Measured requests.
    pub requests: usize,
    /// Mean gap between consecutive sends, ms (absent with fewer than two sends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_send_gap_ms: Option<f64>,
    /// Coefficient of variation of the gaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_gap_cv: Option<f64>,
    /// Share of sends within `together_within_ms` of the one before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent_together_share: Option<f64>,
    /// The "together" threshold, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub together_within_ms: Option<f64>,
    /// `lockstep: ...`, `bursty` or `spread out`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reading: Option<String>,
    /// Set when the backlog showed the target could not keep up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_saturated: Option<OverSaturated>,
}

impl ArrivalSync {
    /// Whether most sends came in waves.
    pub fn is_lockstep(&self) -> bool {
        self.reading.as_deref().is_some_and(|r| r.starts_with("lockstep"))
    }
}

/// `arrivals.over_saturated`: when the backlog of sent, unfinished requests kept growing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverSaturated {
    /// Seconds into the run when it began.
    pub after_s: f64,
    /// Whether the runner stopped sending then.
    pub stopped_sending: bool,
    /// What it means.
    pub reading: String,
}

/// The summary's `steady_state`: the figures of the [`SteadyWindow`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    /// How the window is found.
    pub definition: String,
    /// The in-flight count that defines it.
    pub in_flight_level: u64,
    /// Start, seconds on the run clock.
    pub start_s: f64,
    /// End, seconds on the run clock.
    pub end_s: f64,
    /// `end_s - start_s`.
    pub duration_s: f64,
    /// Measured requests sent and finished inside it.
    pub requests: usize,
    /// Their share of the measured requests.
    pub share_of_measured: f64,
    /// Output tokens per second over the window.
    pub output_throughput: f64,
    /// TTFT, TPOT, ITL and E2E statistics of the requests inside, ms.
    #[serde(flatten)]
    pub latency: LatencyFigures,
}

/// TTFT, ITL, E2E latency and KV-cache hits by session turn (`None` when no request had a turn).
///
/// Each turn's `cache_hit_rate` is its cached prompt tokens over its prompt tokens; a session's
/// later turns resend the history, so on an engine with block reuse they should hit.
///
/// ```rust
/// use trtllm::bench::{Phase, RequestRecord, sessions_by_turn};
///
/// let mut records = Vec::new();
/// for (turn, cached) in [(1, 0), (2, 96)] {
///     let mut r = RequestRecord::new(turn as u64, Phase::Measure, 0.0);
///     (r.session, r.turn, r.prompt_tokens, r.cached_tokens) = (Some(0), Some(turn), 128, cached);
///     r.record_chunk(0.01, 1);
///     r.finish(0.02, 1, Some("length".into()));
///     records.push(r);
/// }
/// let by_turn = sessions_by_turn(&records, &[50.0]).unwrap();
/// assert_eq!(by_turn.sessions, 1);
/// assert_eq!(by_turn.turns[1].cache_hit_rate, 0.75);
/// ```
pub fn sessions_by_turn(records: &[RequestRecord], percentiles: &[f64]) -> Option<SessionsByTurn> {
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| r.is_measured() && r.turn.is_some()).collect();
    if measured.is_empty() {
        return None;
    }
    let mut turns: BTreeMap<u32, Vec<&RequestRecord>> = BTreeMap::new();
    for r in &measured {
        turns.entry(r.turn.unwrap_or(1)).or_default().push(r);
    }
    let rows: Vec<TurnFigures> = turns
        .iter()
        .map(|(turn, all)| {
            let ok: Vec<&&RequestRecord> = all.iter().filter(|r| r.is_success()).collect();
            let prompt: u64 = ok.iter().map(|r| r.prompt_tokens).sum();
            let cached: u64 = ok.iter().map(|r| r.cached_tokens).sum();
            let prompts: Vec<f64> = ok.iter().map(|r| r.prompt_tokens as f64).collect();
            let hits: Vec<f64> = ok.iter().map(|r| r.cached_tokens as f64).collect();
            let ttft = ms(ok.iter().filter_map(|r| r.ttft_s()), percentiles);
            let itl = ms(ok.iter().flat_map(|r| r.itl_s()), percentiles);
            let e2el = ms(ok.iter().filter_map(|r| r.e2el_s()), percentiles);
            let latency = [(&ttft, "ttft"), (&itl, "itl"), (&e2el, "e2el")]
                .into_iter()
                .flat_map(|(d, name)| latency_entries(d, name))
                .collect();
            TurnFigures {
                turn: *turn,
                requests: all.len(),
                failed: all.len() - ok.len(),
                mean_prompt_tokens: mean(&prompts),
                mean_cached_tokens: mean(&hits),
                cache_hit_rate: if prompt > 0 { cached as f64 / prompt as f64 } else { 0.0 },
                latency,
            }
        })
        .collect();
    let sessions: std::collections::BTreeSet<u64> = measured.iter().filter_map(|r| r.session).collect();
    Some(SessionsByTurn { sessions: sessions.len(), turns: rows })
}

/// How synchronised the measured sends were: the coefficient of variation of the gaps between
/// consecutive sends (0: evenly spaced; about 1: Poisson; well above 1: bursts) and the share
/// of sends within [`TOGETHER_S`] of the one before. Closed-loop users in lockstep send in
/// waves: most sends come together.
///
/// ```rust
/// use trtllm::bench::{Phase, RequestRecord, arrival_sync};
///
/// let wave: Vec<RequestRecord> =
///     (0..8).map(|i| RequestRecord::new(i, Phase::Measure, (i / 4) as f64 * 0.1 + i as f64 * 1e-5)).collect();
/// let sync = arrival_sync(&wave);
/// assert!(sync.sent_together_share.unwrap() > 0.7);
/// assert!(sync.is_lockstep());
/// ```
pub fn arrival_sync(records: &[RequestRecord]) -> ArrivalSync {
    let mut sends: Vec<f64> = records.iter().filter(|r| r.is_measured()).map(|r| r.send_s).collect();
    sends.sort_by(f64::total_cmp);
    let gaps: Vec<f64> = sends.windows(2).map(|w| w[1] - w[0]).collect();
    if gaps.is_empty() {
        return ArrivalSync {
            requests: sends.len(),
            mean_send_gap_ms: None,
            send_gap_cv: None,
            sent_together_share: None,
            together_within_ms: None,
            reading: None,
            over_saturated: None,
        };
    }
    let m = mean(&gaps).unwrap_or(0.0);
    let sd = super::stats::std_dev(&gaps).unwrap_or(0.0);
    let cv = if m > 0.0 { sd / m } else { 0.0 };
    let together = gaps.iter().filter(|&&g| g < TOGETHER_S).count() as f64 / gaps.len() as f64;
    let reading = if together > 0.5 {
        "lockstep: most requests are sent in waves"
    } else if cv > 1.5 {
        "bursty"
    } else {
        "spread out"
    };
    ArrivalSync {
        requests: sends.len(),
        mean_send_gap_ms: Some(m * 1000.0),
        send_gap_cv: Some(cv),
        sent_together_share: Some(together),
        together_within_ms: Some(TOGETHER_S * 1000.0),
        reading: Some(reading.to_owned()),
        over_saturated: None,
    }
}

/// The steady part of a run: from when the in-flight count (ramp-up and measured requests)
/// first reaches its time-weighted median over the run to when it last is at or above it (the
/// drain starts after). `None` without measured requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyWindow {
    /// Start, seconds on the run clock.
    pub start_s: f64,
    /// End, seconds on the run clock.
    pub end_s: f64,
    /// The in-flight level that defines it.
    pub level: u64,
}

impl SteadyWindow {
    /// Finds the window in `records`.
    ///
    /// ```rust
    /// use trtllm::bench::{Phase, RequestRecord, SteadyWindow};
    ///
    /// // Four users: one request each from 0-1 s, 0.1-1.1 s, ..., and a long tail request.
    /// let mut records = Vec::new();
    /// for i in 0..4 {
    ///     let mut r = RequestRecord::new(i, Phase::Measure, i as f64 * 0.1);
    ///     r.finish(1.0 + i as f64 * 0.1 + if i == 3 { 5.0 } else { 0.0 }, 1, Some("length".into()));
    ///     records.push(r);
    /// }
    /// let w = SteadyWindow::find(&records).unwrap();
    /// assert_eq!(w.level, 1);
    /// ```
    pub fn find(records: &[RequestRecord]) -> Option<SteadyWindow> {
        let load: Vec<&RequestRecord> =
            records.iter().filter(|r| r.phase != Phase::Warmup && r.end_s.is_some()).collect();
        if load.is_empty() {
            return None;
        }
        let mut events: Vec<(f64, i64)> = Vec::with_capacity(load.len() * 2);
        for r in &load {
            events.push((r.send_s, 1));
            events.push((r.end_s.unwrap_or(r.send_s).max(r.send_s), -1));
        }
        // Ends before sends at the same instant: a closed-loop user's next request replaces it.
        events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // Time spent at each level.
        let mut at_level: BTreeMap<u64, f64> = BTreeMap::new();
        let mut level = 0_i64;
        let mut steps: Vec<(f64, u64)> = Vec::with_capacity(events.len());
        for (i, &(t, delta)) in events.iter().enumerate() {
            level += delta;
            let next_t = events.get(i + 1).map_or(t, |e| e.0);
            *at_level.entry(level.max(0) as u64).or_default() += next_t - t;
            steps.push((t, level.max(0) as u64));
        }
        let total: f64 = at_level.values().sum();
        if total <= 0.0 {
            let (start_s, end_s) = (events[0].0, events[events.len() - 1].0);
            return Some(SteadyWindow { start_s, end_s, level: 1 });
        }
        let mut acc = 0.0;
        let mut median = 0;
        for (&l, &t) in &at_level {
            acc += t;
            median = l;
            if acc >= total / 2.0 {
                break;
            }
        }
        let median = median.max(1);
        let start_s = steps.iter().find(|(_, l)| *l >= median).map(|s| s.0)?;
        // The end: the first step after which the level stays below the median.
        let last_at = steps.iter().rposition(|(_, l)| *l >= median)?;
        let end_s = steps.get(last_at + 1).map_or(steps[last_at].0, |s| s.0);
        Some(SteadyWindow { start_s, end_s, level: median })
    }

    /// The window's figures: measured requests sent and ended inside it, their latency
    /// statistics, and output tokens per second over it (every token received inside it).
    pub fn section(&self, records: &[RequestRecord], percentiles: &[f64]) -> SteadyState {
        let inside: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| r.is_measured() && r.is_success())
            .filter(|r| r.send_s >= self.start_s && r.end_s.is_some_and(|e| e <= self.end_s))
            .collect();
        let span = (self.end_s - self.start_s).max(0.0);
        let tokens: u64 = records
            .iter()
            .filter(|r| r.phase != Phase::Warmup)
            .flat_map(|r| r.chunks.iter())
            .filter(|c| c.t_s >= self.start_s && c.t_s <= self.end_s)
            .map(|c| u64::from(c.tokens))
            .sum();
        let measured = records.iter().filter(|r| r.is_measured()).count();
        let entries = [
            ("ttft", ms(inside.iter().filter_map(|r| r.ttft_s()), percentiles)),
            ("tpot", ms(inside.iter().filter_map(|r| r.tpot_s()), percentiles)),
            ("itl", ms(inside.iter().flat_map(|r| r.itl_s()), percentiles)),
            ("e2el", ms(inside.iter().filter_map(|r| r.e2el_s()), percentiles)),
        ];
        SteadyState {
            definition:
                "from when the in-flight count first reaches its time-weighted median to when it last is at or above it"
                    .into(),
            in_flight_level: self.level,
            start_s: self.start_s,
            end_s: self.end_s,
            duration_s: span,
            requests: inside.len(),
            share_of_measured: inside.len() as f64 / measured.max(1) as f64,
            output_throughput: if span > 0.0 { tokens as f64 / span } else { 0.0 },
            latency: entries.iter().flat_map(|(name, d)| latency_entries(d, name)).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(i: u64, send: f64, end: f64) -> RequestRecord {
        let mut r = RequestRecord::new(i, Phase::Measure, send);
        r.record_chunk(send + 0.01, 1);
        r.finish(end, 1, Some("length".into()));
        r
    }

    #[test]
    fn the_steady_window_leaves_out_ramp_up_and_drain() {
        // Four users ramped in over 0.3 s, running back to back until 10 s, finishing one by one.
        let mut records = Vec::new();
        let mut i = 0;
        for user in 0..4 {
            let mut t = user as f64 * 0.1;
            let stop = 10.0 + user as f64 * 0.5;
            while t < stop {
                records.push(request(i, t, t + 1.0));
                i += 1;
                t += 1.0;
            }
        }
        let w = SteadyWindow::find(&records).unwrap();
        assert_eq!(w.level, 4);
        assert!((w.start_s - 0.3).abs() < 1e-9, "{w:?}");
        assert!(w.end_s >= 10.0 && w.end_s <= 10.5 + 1e-9, "{w:?}");
        let section = w.section(&records, &[50.0]);
        assert!(section.requests < records.len());
    }

    #[test]
    fn evenly_spread_sends_are_not_lockstep() {
        let records: Vec<RequestRecord> = (0..20).map(|i| request(i, i as f64 * 0.05, i as f64 * 0.05 + 0.2)).collect();
        let sync = arrival_sync(&records);
        assert!(sync.send_gap_cv.unwrap() < 0.01);
        assert_eq!(sync.reading.as_deref(), Some("spread out"));
    }
}
