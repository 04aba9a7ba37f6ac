//! Multi-turn sessions in real time: each turn is sent when the one before it has been answered
//! (and its user has thought), carrying that answer in its history.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, mpsc};

use super::target::BenchTarget;
use crate::bench::metrics::record::{Phase, RequestRecord, RunClock};
use crate::bench::traffic::load::{ArrivalProcess, Load, LoadError, LoadPlan, arrival_schedule, ramp_start_s};
use crate::bench::traffic::session::{Answer, Session};
use crate::bench::traffic::workload::{PromptSampler, Workload};

/// How long a closed-loop user (a duration run's, or a session's) waits after a failed request
/// before sending the next.
pub(crate) const FAILURE_BACKOFF: Duration = Duration::from_millis(10);

/// The answer a finished request gave, for its session's next turn.
pub(crate) fn answer_of(record: &RequestRecord) -> Answer {
    match &record.answer_text {
        Some(text) => Answer::Text(text.clone()),
        None => Answer::TokenIds(record.answer_ids.clone()),
    }
}

/// Multi-turn sessions in real time: closed-loop users each running one session after another
/// (a user thinks `think_time` between a session's turns), or open-loop session starts each
/// running its session's turns. A failed turn ends its session (its history is incomplete).
pub(crate) struct SessionRun {
    pub(crate) target: BenchTarget,
    pub(crate) clock: RunClock,
    pub(crate) workload: Workload,
    pub(crate) sampler: Arc<Mutex<PromptSampler>>,
    pub(crate) next_index: Arc<AtomicU64>,
    /// Requests still to send (a count run), shared by every user.
    pub(crate) budget: Option<Arc<AtomicUsize>>,
    /// No request is sent at or after this (a duration run).
    pub(crate) deadline: Option<Instant>,
    /// Requests sent before this are ramp-up requests.
    pub(crate) ramp_end: Option<Instant>,
    /// Counts each turn's send and return for a live view.
    pub(crate) live: Arc<crate::bench::metrics::live::LiveStats>,
}

impl Clone for SessionRun {
    fn clone(&self) -> Self {
        SessionRun {
            target: self.target.clone(),
            clock: self.clock,
            workload: self.workload.clone(),
            sampler: self.sampler.clone(),
            next_index: self.next_index.clone(),
            budget: self.budget.clone(),
            deadline: self.deadline,
            ramp_end: self.ramp_end,
            live: self.live.clone(),
        }
    }
}

impl SessionRun {
    pub(crate) fn start(
        mut self,
        plan: &LoadPlan,
        seed: u64,
        spread: impl Fn(usize) -> Vec<Duration>,
    ) -> Result<mpsc::UnboundedReceiver<RequestRecord>, LoadError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let start = Instant::now();
        let turns = self.workload.sessions().map_or(1, |p| p.turns.max(1)) as usize;
        match plan.load {
            Load::Closed { concurrency } => {
                let ramp_up = plan.ramp_up.unwrap_or_default();
                match plan.duration {
                    Some(d) => {
                        self.deadline = Some(start + ramp_up + d);
                        self.ramp_end = Some(start + ramp_up);
                    }
                    None => self.budget = Some(Arc::new(AtomicUsize::new(plan.num_prompts))),
                }
                for (user, offset) in spread(concurrency).into_iter().enumerate() {
                    let begin = start
                        + Duration::from_secs_f64(ramp_start_s(user, concurrency, ramp_up.as_secs_f64()))
                        + offset;
                    let (run, tx) = (self.clone(), tx.clone());
                    tokio::spawn(async move {
                        tokio::time::sleep_until(begin.into()).await;
                        while run.deadline.is_none_or(|d| Instant::now() < d) {
                            let session = run.sampler.lock().await.next_session();
                            if !run.converse(session, &tx).await {
                                return;
                            }
                        }
                    });
                }
            }
            Load::Open { rate, burstiness, .. } => {
                // Arrivals are session starts; each session then sends its turns.
                let offsets = match plan.duration {
                    None => arrival_schedule(plan.num_prompts.div_ceil(turns).max(1), rate, burstiness, seed)?,
                    Some(d) => {
                        let mut process = ArrivalProcess::new(rate, burstiness, seed)?;
                        let mut t = process.next_gap_s();
                        let mut offsets = Vec::new();
                        while t < d.as_secs_f64() {
                            offsets.push(t);
                            t += process.next_gap_s();
                        }
                        offsets
                    }
                };
                let run = self.clone();
                tokio::spawn(async move {
                    for offset in offsets {
                        tokio::time::sleep_until((start + Duration::from_secs_f64(offset)).into()).await;
                        let session = run.sampler.lock().await.next_session();
                        let (run, tx) = (run.clone(), tx.clone());
                        tokio::spawn(async move { run.converse(session, &tx).await });
                    }
                });
            }
        }
        Ok(rx)
    }

    /// Takes one request from the budget; false when none is left.
    fn take(&self) -> bool {
        match &self.budget {
            Some(budget) => budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1)).is_ok(),
            None => true,
        }
    }

    /// Runs `session` turn by turn; false when the run is over (budget spent, deadline passed,
    /// or nobody listens).
    async fn converse(&self, mut session: Session, tx: &mpsc::UnboundedSender<RequestRecord>) -> bool {
        let think = self.workload.sessions().map_or(Duration::ZERO, |p| p.think_time);
        let mut turn = session.first();
        loop {
            if self.deadline.is_some_and(|d| Instant::now() >= d) || !self.take() {
                return false;
            }
            let phase = match self.ramp_end {
                Some(end) if Instant::now() < end => Phase::RampUp,
                _ => Phase::Measure,
            };
            let index = self.next_index.fetch_add(1, Ordering::Relaxed);
            let record = match turn {
                Ok(turn) => {
                    let spec = self.workload.session_request(&session, turn);
                    self.live.created();
                    self.live.sent();
                    let record = self.target.send(spec, &self.clock, index, phase).await;
                    self.live.returned();
                    record
                }
                Err(e) => {
                    let mut record = RequestRecord::new(index, phase, self.clock.now_s());
                    record.session = Some(session.id());
                    record.fail(self.clock.now_s(), e.to_string());
                    record
                }
            };
            let failed = !record.is_success();
            let answer = answer_of(&record);
            if tx.send(record).is_err() {
                return false;
            }
            if failed {
                tokio::time::sleep(FAILURE_BACKOFF).await;
                return true;
            }
            match session.next(&answer) {
                None => return true,
                Some(next) => {
                    tokio::time::sleep(think).await;
                    turn = next;
                }
            }
        }
    }
}
