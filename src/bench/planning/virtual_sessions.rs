//! Virtual-clock pieces of closed-loop users: sessions whose next turn carries the previous
//! answer, and the request cycle over which users spread their first arrivals.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::scheduled_load::{NextRequest, Planned, ScheduledLoad, UserLimit};
use crate::bench::metrics::record::{Phase, RequestRecord};
use crate::bench::runner::sessions::answer_of;
use crate::bench::traffic::session::Session;
use crate::bench::traffic::workload::{PromptSampler, Workload};

/// The mean simulated latency of the warmup's requests (arrival to last token): one request
/// cycle, over which closed-loop users spread their first arrivals.
pub(crate) fn warmup_cycle(records: &[RequestRecord]) -> Option<Duration> {
    let latencies: Vec<f64> = records
        .iter()
        .filter(|r| r.phase == Phase::Warmup && r.error.is_none())
        .filter_map(|r| Some(r.server?.last_token_s? - r.send_s))
        .filter(|s| s.is_finite() && *s > 0.0)
        .collect();
    (!latencies.is_empty()).then(|| Duration::from_secs_f64(latencies.iter().sum::<f64>() / latencies.len() as f64))
}

/// Where session users' requests come from: each user's session goes on with the answer to its
/// previous turn (a failed turn ends it) and a new session starts when one ends, until `budget`
/// requests have been drawn (a count run). Indexes count on from `base`.
fn session_hook(
    workload: &Workload,
    sampler: PromptSampler,
    users: usize,
    base: u64,
    budget: Option<usize>,
) -> NextRequest {
    struct State {
        sampler: PromptSampler,
        sessions: Vec<Option<Session>>,
        drawn: u64,
    }
    let state = Mutex::new(State { sampler, sessions: vec![None; users.max(1)], drawn: 0 });
    let workload = workload.clone();
    Arc::new(move |user: usize, _sent: u64, previous: Option<&RequestRecord>| {
        let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
        let state = &mut *guard;
        if budget.is_some_and(|b| state.drawn >= b as u64) {
            return None;
        }
        let slot = state.sessions.get_mut(user)?;
        let follow_on = match (slot.as_mut(), previous) {
            (Some(session), Some(done)) if done.is_success() => match session.next(&answer_of(done)) {
                Some(Ok(turn)) => Some(workload.session_request(session, turn)),
                _ => None,
            },
            _ => None,
        };
        let spec = match follow_on {
            Some(spec) => spec,
            None => {
                // A new session; one whose first turn cannot be built is skipped (a handful
                // of tries, so a broken template ends the user instead of spinning).
                let mut started = None;
                for _ in 0..8 {
                    let mut session = state.sampler.next_session();
                    if let Ok(turn) = session.first() {
                        let spec = workload.session_request(&session, turn);
                        *slot = Some(session);
                        started = Some(spec);
                        break;
                    }
                }
                started?
            }
        };
        let index = base + state.drawn;
        state.drawn += 1;
        Some((index, Phase::Measure, spec))
    })
}

/// Closed-loop session users of one point: each runs sessions one after another, its first
/// arrival at its start, until `budget` requests (a count run) or the duration's end.
pub(crate) struct SessionUsers {
    /// The phase's start in simulated time.
    pub(crate) start: Instant,
    /// Users added over this (requests before its end are ramp-up requests).
    pub(crate) ramp_up: Duration,
    /// Sustained load after the ramp-up; `None`: a count run of `budget` requests.
    pub(crate) duration: Option<Duration>,
    /// Requests of a count run.
    pub(crate) budget: usize,
    /// The index of the phase's first request.
    pub(crate) first_index: u64,
}

impl SessionUsers {
    /// Enqueues every user's first turn (call it under a hold); the users then run as tasks.
    pub(crate) fn run(self, load: &ScheduledLoad, workload: &Workload, sampler: PromptSampler, starts: Vec<Instant>) {
        let users = starts.len();
        let think = workload.sessions().map_or(Duration::ZERO, |p| p.think_time);
        let ramp_end = self.start + self.ramp_up;
        let limit = UserLimit::Sessions {
            deadline: self.duration.map(|d| ramp_end + d),
            ramp_end: self.duration.map(|_| ramp_end),
            think,
        };
        let budget = self.duration.is_none().then_some(self.budget);
        let next = session_hook(workload, sampler, users, self.first_index, budget);
        let firsts: Vec<VecDeque<Planned>> = (0..users)
            .map(|u| {
                let first = next(u, 0, None).map(|(index, _, spec)| {
                    let phase = if starts[u] < ramp_end { Phase::RampUp } else { Phase::Measure };
                    (index, phase, spec)
                });
                first.into_iter().collect()
            })
            .collect();
        load.users(firsts, starts, limit, Some(next));
    }
}
