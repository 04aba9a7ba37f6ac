//! Maps the executor's steady-clock time points onto `std::time::Instant`.
//!
//! On Linux both `std::chrono::steady_clock` (libstdc++) and Rust's `Instant` read
//! `CLOCK_MONOTONIC`; the mapping takes one reference pair so that no raw epoch is relied on.

use std::time::{Duration, Instant};

use crate::ffi::sys;

/// A reference pair (`Instant`, steady-clock nanoseconds) taken back to back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SteadyClock {
    instant: Instant,
    nanos: i64,
}

impl SteadyClock {
    pub(crate) fn calibrate() -> Self {
        // Take the pair twice and keep the tighter bracket: a preemption between the two reads
        // would otherwise skew every converted time point.
        let mut best: Option<(Duration, SteadyClock)> = None;
        for _ in 0..3 {
            let before = Instant::now();
            let nanos = sys::steady_clock_now_ns();
            let after = Instant::now();
            let width = after - before;
            let mid = before + width / 2;
            if best.as_ref().is_none_or(|(w, _)| width < *w) {
                best = Some((width, SteadyClock { instant: mid, nanos }));
            }
        }
        best.map(|(_, c)| c).unwrap_or(SteadyClock { instant: Instant::now(), nanos: sys::steady_clock_now_ns() })
    }

    /// Converts an `Instant` to steady-clock nanoseconds (the inverse of [`SteadyClock::instant_at`]).
    pub(crate) fn nanos_at(self, at: Instant) -> i64 {
        let nanos = |d: Duration| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX);
        match at.checked_duration_since(self.instant) {
            Some(after) => self.nanos.saturating_add(nanos(after)),
            None => self.nanos.saturating_sub(nanos(self.instant - at)),
        }
    }

    /// Converts steady-clock nanoseconds to an `Instant`; `None` for an unset (zero) time point.
    pub(crate) fn instant_at(self, nanos: i64) -> Option<Instant> {
        if nanos <= 0 {
            return None;
        }
        let delta = nanos - self.nanos;
        if delta >= 0 {
            self.instant.checked_add(Duration::from_nanos(delta as u64))
        } else {
            self.instant.checked_sub(Duration::from_nanos(delta.unsigned_abs()))
        }
    }
}

/// Reads the executor's clock (`std::chrono::steady_clock::now()`) in nanoseconds since its epoch.
///
/// Exposed so that callers can check it against `CLOCK_MONOTONIC` themselves.
pub fn executor_clock_now_ns() -> i64 {
    sys::steady_clock_now_ns()
}
