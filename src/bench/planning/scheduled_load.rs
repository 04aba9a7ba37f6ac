//! Load shapes in simulated time: closed-loop users (with ramp-up and duration) and open-loop
//! arrivals (with burstiness, duration and a concurrency cap), every request stamped with its
//! simulated arrival on a virtual-clock executor (see [`crate::Arrival`]).
//!
//! A closed-loop user's next request arrives `client_latency` after its previous one ended: the
//! runner enqueues it as the follow-up of that request, and the executor, which kept room for it,
//! stamps it. A user with a fixed list of requests enqueues them all at once, each chained to the
//! one before, so the executor never waits for the runner (a round trip per request would pace
//! the simulation); under a duration the user decides after each request. A request the executor
//! refuses at enqueue is recorded with its error and ends at its arrival; the user's next request
//! arrives `client_latency` later, as a real client that got the error at once goes on. An
//! open-loop request arrives at its scheduled time, or (under a cap) when a slot frees, whichever
//! is later. The first requests are enqueued under a hold, so the executor starts nothing before
//! the whole first wave has arrived.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::bench::metrics::record::{Phase, RequestRecord, RunClock, ServerTimes};
use crate::bench::runner::target::{consume_in_process, generation_request, new_record};
use crate::bench::traffic::workload::RequestSpec;
use crate::sim::{Arrival, SimControl};
use crate::{AsyncExecutor, GenerationStream, RequestId};

/// The simulator's virtual-clock controls, which every scheduled load needs.
pub(crate) fn sim_control(executor: &AsyncExecutor) -> crate::Result<SimControl<'_>> {
    executor.executor().sim_control().ok_or(crate::Error::SimulatorOnly("the virtual clock"))
}

/// How much later each further closed-loop user reacts to a response than the one before it.
pub(crate) const CLIENT_STAGGER: Duration = Duration::from_micros(10);

/// One request to send: its index, phase and content.
pub(crate) type Planned = (u64, Phase, RequestSpec);

/// Where a user's requests after its first come from: request `n` of user `u`, given the one
/// before it as it finished (a session's next turn carries its answer); `None` ends the user.
pub(crate) type NextRequest = Arc<dyn Fn(usize, u64, Option<&RequestRecord>) -> Option<Planned> + Send + Sync>;

/// Sends requests to a virtual-clock executor and reports their records.
#[derive(Clone)]
pub(crate) struct ScheduledLoad {
    pub(crate) executor: AsyncExecutor,
    /// Run clock whose origin is the run's start in simulated time.
    pub(crate) clock: RunClock,
    /// Time from a request's end to its user's next arrival.
    pub(crate) client_latency: Duration,
    pub(crate) done: mpsc::UnboundedSender<RequestRecord>,
    /// Ask for a response per decoding step. Without, a streaming request is sent as a
    /// non-streaming one: its token times are rebuilt from the iteration log anyway, and one
    /// response per request instead of one per token keeps the runner from slowing the
    /// simulation (only speculative engines, whose steps carry several tokens, need them).
    pub(crate) step_responses: bool,
    /// LoRA traffic the requests carry, if any.
    pub(crate) lora: Option<Arc<crate::bench::lora::LoraTraffic>>,
}

/// What a closed-loop user does after each request.
#[derive(Clone, Copy)]
pub(crate) enum UserLimit {
    /// Sends exactly its list of requests.
    Count,
    /// Sends until its next arrival would be at or after this simulated time; requests arriving
    /// before `ramp_end` are ramp-up requests.
    Until { deadline: Instant, ramp_end: Instant },
    /// Multi-turn sessions: sends what `next` gives until it gives nothing or the next arrival
    /// would be at or after `deadline`; a user thinks `think` after each turn but a session's
    /// last (its next request's arrival is that much later).
    Sessions { deadline: Option<Instant>, ramp_end: Option<Instant>, think: Duration },
}

/// When `record`'s request ended on the executor, seconds on the run clock.
fn end_s(record: &RequestRecord) -> Option<f64> {
    let server = record.server?;
    server.last_token_s.or(server.first_token_s).or(server.arrival_s)
}

/// Tells the LoRA traffic that a request which carried its adapter's weights has ended well: the
/// executor has cached them, so later requests may name the adapter by task id alone.
fn settled(record: RequestRecord, lora: Option<&crate::bench::lora::LoraTraffic>) -> RequestRecord {
    if let (Some(task), true, None) = (record.lora_task, record.lora_with_weights, &record.error)
        && let Some(traffic) = lora
    {
        traffic.confirm(task);
    }
    record
}

impl ScheduledLoad {
    /// Enqueues one request: its stream and record, or the failed record of a refusal (not yet
    /// sent out; a lease of `arrival`'s parent stays as it was).
    fn enqueue(
        &self,
        planned: &Planned,
        arrival: Arrival,
        follow_up: Option<Duration>,
    ) -> Result<(GenerationStream, RequestRecord), Box<RequestRecord>> {
        let (index, phase, spec) = planned;
        let send_s = match arrival {
            Arrival::At(at) => self.clock.offset_s(at),
            Arrival::After(_) => 0.0,
        };
        // LoRA traffic: the adapter is attached and the request enqueued in one step (see bench::lora).
        let step_responses = self.step_responses;
        let enqueue = |request: crate::GenerationRequest| {
            let request = if step_responses { request } else { request.with_streaming(false) };
            sim_control(&self.executor)?.enqueue_at(request, arrival, follow_up)
        };
        let (lora, result) = match &self.lora {
            Some(traffic) => {
                let (task, with_weights, result) = traffic.enqueue_unordered(*index, generation_request(spec), enqueue);
                (Some((task, with_weights)), result)
            }
            None => (None, enqueue(generation_request(spec))),
        };
        let mut record = new_record(spec, *index, *phase, send_s);
        if let Some((task, with_weights)) = lora {
            record.lora_task = Some(task);
            record.lora_with_weights = with_weights;
        }
        match result {
            Ok(stream) => Ok((stream, record)),
            Err(e) => {
                record.fail(send_s, e.to_string());
                Err(Box::new(record))
            }
        }
    }

    /// Sends out the record of a request refused at enqueue. When its arrival `at` is known it
    /// ends there, stamped as arriving then (the executor saw it at that simulated moment), so
    /// it sits in time next to the requests around it.
    fn refused(&self, mut record: Box<RequestRecord>, at: Option<Instant>) {
        if let Some(at) = at {
            let s = self.clock.offset_s(at);
            record.send_s = s;
            record.end_s = Some(s);
            record.server = Some(ServerTimes { arrival_s: Some(s), ..ServerTimes::default() });
        }
        let _ = self.done.send(*record);
    }

    /// Closed-loop users, user `u` sending `lists[u]` in order (or drawing from `next` under a
    /// duration), its first request arriving at `starts[u]`. Enqueues every first request before
    /// it returns (call it under a hold); the users then run as tasks.
    pub(crate) fn users(
        &self,
        lists: Vec<VecDeque<Planned>>,
        starts: Vec<Instant>,
        limit: UserLimit,
        next: Option<NextRequest>,
    ) {
        // A user with a fixed list sends it all at once, each request chained to the one before
        // (unless LoRA traffic decides per request from what has ended well).
        let chained = matches!(limit, UserLimit::Count) && self.lora.is_none();
        for (user, (list, start)) in lists.into_iter().zip(starts).enumerate() {
            let mut user = ClosedLoopUser {
                load: self.clone(),
                // Users whose requests end in the same iteration react one after another, as one
                // response thread hands them their finals: user u a little after user u - 1. An
                // idle executor starts on the first arrival, so the others wait an iteration, as
                // they do in real time.
                delay: self.client_latency + CLIENT_STAGGER * user as u32,
                user,
                list,
                limit,
                next: next.clone(),
                sent: 1,
                gap: Duration::ZERO,
            };
            let Some(first) = user.list.pop_front() else { continue };
            // Under the caller's hold: no lease to release.
            let Some((stream, record)) = user.send(first, Arrival::At(start), Some(start), None) else {
                continue;
            };
            if chained {
                user.chain(stream, record);
            } else {
                tokio::spawn(user.one_by_one(stream, record));
            }
        }
    }

    /// Open loop: request `i` of `planned` scheduled `offsets_s[i]` after `start`; with a cap,
    /// at most `cap` in flight, the rest arriving as slots free. Enqueues everything it can
    /// before it returns (call it under a hold).
    pub(crate) fn open_loop(&self, planned: Vec<Planned>, offsets_s: Vec<f64>, start: Instant, cap: Option<usize>) {
        let due = |offset: f64| start + Duration::from_secs_f64(offset.max(0.0));
        let mut all: VecDeque<(Planned, Instant)> =
            planned.into_iter().zip(offsets_s).map(|(p, offset)| (p, due(offset))).collect();
        let first = cap.map_or(all.len(), |c| c.min(all.len()));
        let waiting = Arc::new(Mutex::new(all.split_off(first)));
        let capped = cap.is_some();
        let mut queue = waiting.lock().unwrap_or_else(PoisonError::into_inner);
        for (planned, at) in all {
            self.open_request(planned, at, at, capped, &mut queue, &waiting);
        }
    }

    /// Sends one open-loop request due at `due`, arriving at `at`; a refused one's slot goes to
    /// the next request of `queue` (the locked `waiting`) at once. Under a cap the request is
    /// enqueued with a follow-up lease of no delay: once it ends, the executor starts nothing
    /// until the runner has handed its slot on. Slots are therefore handed out in the order
    /// requests end, whatever order the runner's tasks wake in, and requests freed by the same
    /// iteration take the waiting ones in schedule order (the lock is held from taking a waiting
    /// request to enqueuing it; equal arrivals keep their enqueue order). The caller keeps the
    /// executor from starting an iteration at or after `at` until this returns.
    fn open_request(
        &self,
        mut planned: Planned,
        mut at: Instant,
        mut due: Instant,
        capped: bool,
        queue: &mut VecDeque<(Planned, Instant)>,
        waiting: &Arc<Mutex<VecDeque<(Planned, Instant)>>>,
    ) {
        let (stream, mut record) = loop {
            let mut record = match self.enqueue(&planned, Arrival::At(at), capped.then_some(Duration::ZERO)) {
                Ok(sent) => break sent,
                Err(record) => record,
            };
            record.scheduled_send_s = Some(self.clock.offset_s(due));
            self.refused(record, Some(at));
            if !capped {
                return;
            }
            // Under a cap the refused request's slot is free again at once, for the next waiting
            // request, which arrives then or when due, whichever is later.
            let Some((next, next_due)) = queue.pop_front() else { return };
            at = at.max(next_due);
            (planned, due) = (next, next_due);
        };
        record.scheduled_send_s = Some(self.clock.offset_s(due));
        let (load, waiting) = (self.clone(), waiting.clone());
        tokio::spawn(async move {
            let id = stream.request_id();
            let finished = settled(consume_in_process(stream, record, &load.clock).await, load.lora.as_deref());
            let ended = end_s(&finished).map(|s| load.clock.origin() + Duration::from_secs_f64(s.max(0.0)));
            let _ = load.done.send(finished);
            if !capped {
                return;
            }
            {
                let mut queue = waiting.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some((planned, due)) = queue.pop_front() {
                    // The slot frees a client latency after the end (an end unknown: when due).
                    let at = ended.map_or(due, |end| (end + load.client_latency).max(due));
                    load.open_request(planned, at, due, true, &mut queue, &waiting);
                }
            }
            // Released once the next request is in, so the executor cannot run past its arrival.
            let _ = sim_control(&load.executor).map(|sim| sim.release_follow_up(id));
        });
    }
}

/// One closed-loop user on the virtual clock: sends its requests in order, each arriving `delay`
/// after the one before ended. A request the executor refuses at enqueue ends at its arrival,
/// and the next one arrives `delay` later, as a client that got an error at once goes on.
struct ClosedLoopUser {
    load: ScheduledLoad,
    user: usize,
    /// Requests still to send (a duration run: only the first; later ones come from `next`).
    list: VecDeque<Planned>,
    limit: UserLimit,
    /// Under a duration or sessions: request `n` of user `u` is `next(u, n, previous)`.
    next: Option<NextRequest>,
    /// Requests drawn so far (from the list's first on).
    sent: u64,
    /// Think time after the request in flight (a session's turn but its last).
    gap: Duration,
    /// Time from a request's end to the user's next arrival.
    delay: Duration,
}

impl ClosedLoopUser {
    /// The follow-up lease to ask for with the request about to be sent: whether one may follow.
    fn follow_up(&self) -> Option<Duration> {
        match self.limit {
            UserLimit::Count => (!self.list.is_empty()).then_some(self.delay),
            UserLimit::Until { .. } => Some(self.delay),
            UserLimit::Sessions { .. } => Some(self.delay + self.gap),
        }
    }

    /// Sets the think time that follows `planned` (before it is enqueued: its follow-up lease
    /// asks for it).
    fn think_after(&mut self, planned: &Planned) {
        if let UserLimit::Sessions { think, .. } = self.limit {
            self.gap = match planned.2.session {
                Some(tag) if !tag.last => think,
                _ => Duration::ZERO,
            };
        }
    }

    /// The user's next request after `previous`, arriving at `at` (`None`: unknown, which ends
    /// a duration run's user), or `None` when it has nothing more to send.
    fn next_request(&mut self, at: Option<Instant>, previous: Option<&RequestRecord>) -> Option<Planned> {
        match self.limit {
            UserLimit::Count => self.list.pop_front(),
            UserLimit::Until { deadline, ramp_end } => {
                let at = at.filter(|&a| a < deadline)?;
                let (index, _, spec) = self.next.as_ref()?(self.user, self.sent, previous)?;
                self.sent += 1;
                let phase = if at < ramp_end { Phase::RampUp } else { Phase::Measure };
                Some((index, phase, spec))
            }
            UserLimit::Sessions { deadline, ramp_end, .. } => {
                let at = at.filter(|&a| deadline.is_none_or(|d| a < d))?;
                let (index, _, spec) = self.next.as_ref()?(self.user, self.sent, previous)?;
                self.sent += 1;
                let phase = if ramp_end.is_some_and(|r| at < r) { Phase::RampUp } else { Phase::Measure };
                Some((index, phase, spec))
            }
        }
    }

    /// Sends `planned` to arrive as `arrival` (at `at`, when known); after each refusal, the
    /// user's next request one client latency after the refused one's arrival (in its place when
    /// that is unknown). `lease` (a request id) holds the executor at or before the arrival and
    /// is released once a request is in without taking it, or when none is left.
    fn send(
        &mut self,
        mut planned: Planned,
        mut arrival: Arrival,
        mut at: Option<Instant>,
        lease: Option<RequestId>,
    ) -> Option<(GenerationStream, RequestRecord)> {
        loop {
            self.think_after(&planned);
            match self.load.enqueue(&planned, arrival, self.follow_up()) {
                Ok(sent) => {
                    if let (Some(key), Arrival::At(_)) = (lease, arrival) {
                        // Enqueued first, so the executor cannot run past its arrival.
                        let _ = sim_control(&self.load.executor).map(|sim| sim.release_follow_up(key));
                    }
                    return Some(sent);
                }
                Err(record) => (planned, arrival, at) = self.after_refusal(record, at, arrival, lease)?,
            }
        }
    }

    /// Sends out the record of a request refused at `at` and returns the user's next request
    /// with its arrival (`retry` when `at` is unknown); releases `lease` when none is left.
    fn after_refusal(
        &mut self,
        record: Box<RequestRecord>,
        at: Option<Instant>,
        retry: Arrival,
        lease: Option<RequestId>,
    ) -> Option<(Planned, Arrival, Option<Instant>)> {
        let next_at = at.map(|a| a + self.delay);
        let next = self.next_request(next_at, Some(&record));
        self.load.refused(record, at);
        match next {
            Some(planned) => Some((planned, next_at.map_or(retry, Arrival::At), next_at)),
            None => {
                if let Some(key) = lease {
                    let _ = sim_control(&self.load.executor).map(|sim| sim.release_follow_up(key));
                }
                None
            }
        }
    }

    /// Runs the user from its request in flight on, sending each next one when the one before
    /// has ended (its arrival stamped by the executor from that end).
    async fn one_by_one(mut self, mut stream: GenerationStream, mut record: RequestRecord) {
        loop {
            let id = stream.request_id();
            let finished =
                settled(consume_in_process(stream, record, &self.load.clock).await, self.load.lora.as_deref());
            let arrival = self.arrival_after(&finished);
            let next = self.next_request(arrival, Some(&finished));
            let _ = self.load.done.send(finished);
            let Some(planned) = next else {
                // A lease it did not ask for is not there: releasing it does nothing.
                let _ = sim_control(&self.load.executor).map(|sim| sim.release_follow_up(id));
                return;
            };
            match self.send(planned, Arrival::After(id), arrival, Some(id)) {
                Some(sent) => (stream, record) = sent,
                None => return,
            }
        }
    }

    /// When the user's next request arrives after `finished` (`None` when its end is unknown).
    fn arrival_after(&self, finished: &RequestRecord) -> Option<Instant> {
        let ended = end_s(finished)?;
        Some(self.load.clock.origin() + Duration::from_secs_f64(ended.max(0.0)) + self.delay + self.gap)
    }

    /// Enqueues the rest of the list now, each as the follow-up of the request before: the
    /// executor admits each one `delay` after the one before ends, exactly as if the user had
    /// sent it then, but without waiting for the runner (a round trip per request would pace the
    /// simulation). A refused request cannot be chained (the one after it arrives a client
    /// latency after its arrival, which is not known yet): the user goes on one by one from the
    /// request before it.
    fn chain(mut self, stream: GenerationStream, record: RequestRecord) {
        let mut sent = vec![(stream, record)];
        let mut refused = None;
        while let Some(planned) = self.list.pop_front() {
            let parent = sent.last().map_or(RequestId::new(0), |(s, _)| s.request_id());
            match self.load.enqueue(&planned, Arrival::After(parent), self.follow_up()) {
                Ok(pair) => sent.push(pair),
                Err(record) => {
                    refused = Some(record);
                    break;
                }
            }
        }
        tokio::spawn(async move {
            let mut last = None;
            for (stream, record) in sent {
                let id = stream.request_id();
                let finished =
                    settled(consume_in_process(stream, record, &self.load.clock).await, self.load.lora.as_deref());
                last = Some((id, self.arrival_after(&finished)));
                let _ = self.load.done.send(finished);
            }
            let (Some(record), Some((parent, at))) = (refused, last) else { return };
            // The request before the refused one kept its follow-up lease: it holds the executor
            // at the refused request's arrival until the next one is in.
            let retry = Arrival::After(parent);
            let Some((planned, arrival, at)) = self.after_refusal(record, at, retry, Some(parent)) else { return };
            if let Some((stream, record)) = self.send(planned, arrival, at, Some(parent)) {
                self.one_by_one(stream, record).await;
            }
        });
    }
}
