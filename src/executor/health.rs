//! The executor's health, derived from what its threads and calls observe: the response thread
//! alive, enqueue succeeding, the stats poll succeeding, and requests not all failing. Every
//! condition but a stopped response thread clears itself when the state recovers.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How many requests in a row must fail (with no success between) before the executor counts as
/// failing every request. One bad prompt must not take a worker out of rotation.
pub(crate) const FAILED_REQUESTS_THRESHOLD: u32 = 3;

/// How long failed requests in a row keep the executor unhealthy without a new failure: long
/// enough for a gateway's health poll to see it, short enough that a worker taken out of rotation
/// by a few poisonous prompts (and then sent nothing that could succeed) comes back by itself.
pub(crate) const FAILED_REQUESTS_MEMORY: Duration = Duration::from_secs(10);

/// One reason the executor is not fit to take work.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(tag = "kind", content = "detail", rename_all = "snake_case"))]
#[non_exhaustive]
pub enum HealthIssue {
    /// The response thread stopped on an executor error; only a restart recovers.
    ResponseThreadStopped(String),
    /// The last enqueue call threw (not a full queue, not an invalid request).
    EnqueueFailing(String),
    /// The last stats poll threw: load figures are stale.
    StatsPollFailing(String),
    /// The last requests all ended with an executor error, the last one recently.
    RequestsFailing {
        /// Requests in a row that failed.
        count: u32,
        /// The last one's error.
        last_error: String,
    },
}

impl HealthIssue {
    /// A short stable name, for metric labels: `response_thread`, `enqueue`, `stats_poll`,
    /// `requests_failing`.
    pub fn kind(&self) -> &'static str {
        match self {
            HealthIssue::ResponseThreadStopped(_) => "response_thread",
            HealthIssue::EnqueueFailing(_) => "enqueue",
            HealthIssue::StatsPollFailing(_) => "stats_poll",
            HealthIssue::RequestsFailing { .. } => "requests_failing",
        }
    }

    /// Whether the executor can no longer run anything (new requests are refused outright).
    pub fn is_fatal(&self) -> bool {
        matches!(self, HealthIssue::ResponseThreadStopped(_))
    }

    /// Every kind, for metrics that show each with 0 or 1.
    pub const KINDS: [&'static str; 4] = ["response_thread", "enqueue", "stats_poll", "requests_failing"];
}

impl std::fmt::Display for HealthIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HealthIssue::ResponseThreadStopped(e) => write!(f, "the response thread stopped ({e}); restart the server"),
            HealthIssue::EnqueueFailing(e) => write!(f, "enqueueing requests fails ({e})"),
            HealthIssue::StatsPollFailing(e) => {
                write!(f, "polling iteration stats fails ({e}); load figures are stale")
            }
            HealthIssue::RequestsFailing { count, last_error } => {
                write!(f, "the last {count} requests all failed (last: {last_error})")
            }
        }
    }
}

#[derive(Debug, Default)]
struct Conditions {
    fatal: Option<String>,
    enqueue: Option<String>,
    stats: Option<String>,
    failed_in_a_row: u32,
    last_request_error: String,
    last_failure_at: Option<Instant>,
}

impl Conditions {
    fn requests_failing(&self) -> bool {
        self.failed_in_a_row >= FAILED_REQUESTS_THRESHOLD
            && self.last_failure_at.is_some_and(|at| at.elapsed() < FAILED_REQUESTS_MEMORY)
    }
}

/// What the executor's calls report; read as a list of [`HealthIssue`]s.
#[derive(Debug, Default)]
pub(crate) struct HealthTracker {
    conditions: Mutex<Conditions>,
    cancel_failures: AtomicU64,
}

impl HealthTracker {
    fn with<T>(&self, f: impl FnOnce(&mut Conditions) -> T) -> T {
        let mut conditions = self.conditions.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        f(&mut conditions)
    }

    /// The response thread stopped for good.
    pub(crate) fn fatal(&self, message: &str) {
        self.with(|c| c.fatal.get_or_insert_with(|| message.to_string()).clone());
    }

    /// An enqueue call's outcome: `Some(error)` when the executor threw (not for a full queue or a
    /// refused request), `None` when it took the requests.
    pub(crate) fn enqueue(&self, error: Option<&str>) {
        let changed = self.with(|c| {
            let before = c.enqueue.is_some();
            c.enqueue = error.map(str::to_string);
            before != c.enqueue.is_some()
        });
        match error {
            Some(e) if changed => tracing::error!(error = e, "enqueueRequest fails: the executor is unhealthy"),
            None if changed => tracing::info!("enqueueRequest succeeds again"),
            _ => {}
        }
    }

    /// A stats poll's outcome.
    pub(crate) fn stats_poll(&self, error: Option<&str>) {
        let changed = self.with(|c| {
            let before = c.stats.is_some();
            c.stats = error.map(str::to_string);
            before != c.stats.is_some()
        });
        match error {
            Some(e) if changed => tracing::error!(error = e, "iteration stats poll fails: load figures are stale"),
            None if changed => tracing::info!("iteration stats poll succeeds again"),
            _ => {}
        }
    }

    /// A request's end: `Some(error)` when the executor failed it, `None` when it finished.
    pub(crate) fn request_ended(&self, error: Option<&str>) {
        let crossed = self.with(|c| match error {
            Some(e) => {
                c.failed_in_a_row = c.failed_in_a_row.saturating_add(1);
                c.last_request_error = e.lines().next().unwrap_or("").to_string();
                c.last_failure_at = Some(Instant::now());
                c.failed_in_a_row == FAILED_REQUESTS_THRESHOLD
            }
            None => {
                let was = c.requests_failing();
                c.failed_in_a_row = 0;
                if was {
                    tracing::info!("requests succeed again");
                }
                false
            }
        });
        if crossed {
            tracing::error!(
                count = FAILED_REQUESTS_THRESHOLD,
                error = error.unwrap_or(""),
                "requests in a row failed: the executor is unhealthy"
            );
        }
    }

    /// A cancel call threw: the request runs on in the executor.
    pub(crate) fn cancel_failed(&self) {
        self.cancel_failures.fetch_add(1, Ordering::Relaxed);
    }

    /// Cancel calls that threw since the start.
    pub(crate) fn cancel_failures(&self) -> u64 {
        self.cancel_failures.load(Ordering::Relaxed)
    }

    /// Whether requests failing in a row have reached the threshold.
    pub(crate) fn requests_failing(&self) -> bool {
        self.with(|c| c.requests_failing())
    }

    /// The current issues, the fatal one first; empty when healthy.
    pub(crate) fn issues(&self) -> Vec<HealthIssue> {
        self.with(|c| {
            let mut issues = Vec::new();
            if let Some(e) = &c.fatal {
                issues.push(HealthIssue::ResponseThreadStopped(e.clone()));
            }
            if let Some(e) = &c.enqueue {
                issues.push(HealthIssue::EnqueueFailing(e.clone()));
            }
            if let Some(e) = &c.stats {
                issues.push(HealthIssue::StatsPollFailing(e.clone()));
            }
            if c.requests_failing() {
                issues.push(HealthIssue::RequestsFailing {
                    count: c.failed_in_a_row,
                    last_error: c.last_request_error.clone(),
                });
            }
            issues
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_condition_flips_health_and_recovers_with_the_state() {
        let tracker = HealthTracker::default();
        assert!(tracker.issues().is_empty());
        tracker.enqueue(Some("boom"));
        tracker.stats_poll(Some("stats boom"));
        let kinds: Vec<_> = tracker.issues().iter().map(HealthIssue::kind).collect();
        assert_eq!(kinds, ["enqueue", "stats_poll"]);
        tracker.enqueue(None);
        tracker.stats_poll(None);
        assert!(tracker.issues().is_empty(), "both recover");

        for _ in 1..FAILED_REQUESTS_THRESHOLD {
            tracker.request_ended(Some("forward failed"));
        }
        assert!(tracker.issues().is_empty(), "fewer failures than the threshold are single bad requests");
        tracker.request_ended(Some("forward failed"));
        assert!(matches!(&tracker.issues()[..], [HealthIssue::RequestsFailing { count: 3, .. }]));
        tracker.request_ended(None);
        assert!(tracker.issues().is_empty(), "one success clears it");

        for _ in 0..FAILED_REQUESTS_THRESHOLD {
            tracker.request_ended(Some("forward failed"));
        }
        tracker.with(|c| c.last_failure_at = Instant::now().checked_sub(FAILED_REQUESTS_MEMORY));
        assert!(tracker.issues().is_empty(), "old failures are forgotten, so the worker gets traffic again");

        tracker.fatal("awaitResponses failed");
        tracker.fatal("a later error");
        let issues = tracker.issues();
        assert!(issues[0].is_fatal());
        assert!(issues[0].to_string().contains("awaitResponses failed"), "the first failure is kept");
    }
}
