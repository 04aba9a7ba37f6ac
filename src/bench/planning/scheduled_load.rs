//! Load shapes in simulated time: closed-loop users (with ramp-up and duration) and open-loop
//! arrivals (with burstiness, duration and a concurrency cap), every request stamped with its
//! simulated arrival on a virtual-clock executor (see [`crate::Arrival`]).
//!
//! A closed-loop user's next request arrives `client_latency` after its previous one ended: the
//! runner enqueues it as the follow-up of that request, and the executor, which kept room for it,
//! stamps it. A user with a fixed list of requests enqueues them all at once, each chained to the
//! one before, so the executor never waits for the runner (a round trip per request would pace
//! the simulation); under a duration the user decides after each request. An open-loop request arrives at its scheduled time, or (under a cap) when a slot
//! frees, whichever is later. The first requests are enqueued under a hold, so the executor
//! starts nothing before the whole first wave has arrived.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::bench::metrics::record::{Phase, RequestRecord, RunClock};
use crate::bench::runner::target::{consume_in_process, generation_request, new_record};
use crate::bench::traffic::workload::RequestSpec;
use crate::{Arrival, AsyncExecutor, GenerationStream};

/// How much later each further closed-loop user reacts to a response than the one before it.
pub(crate) const CLIENT_STAGGER: Duration = Duration::from_micros(10);

/// One request to send: its index, phase and content.
pub(crate) type Planned = (u64, Phase, RequestSpec);

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
}

/// What a closed-loop user does after each request.
#[derive(Clone, Copy)]
pub(crate) enum UserLimit {
    /// Sends exactly its list of requests.
    Count,
    /// Sends until its next arrival would be at or after this simulated time; requests arriving
    /// before `ramp_end` are ramp-up requests.
    Until { deadline: Instant, ramp_end: Instant },
}

/// When `record`'s request ended on the executor, seconds on the run clock.
fn end_s(record: &RequestRecord) -> Option<f64> {
    let server = record.server?;
    server.last_token_s.or(server.first_token_s).or(server.arrival_s)
}

/// Tells the LoRA traffic that a request which carried its adapter's weights has ended well: the
/// executor has cached them, so later requests may name the adapter by task id alone.
fn settled(record: RequestRecord) -> RequestRecord {
    if let (Some(task), true, None) = (record.lora_task, record.lora_with_weights, &record.error)
        && let Some(traffic) = crate::bench::lora::installed()
    {
        traffic.confirm(task);
    }
    record
}

impl ScheduledLoad {
    /// Enqueues one request; on refusal the failed record goes straight out and `None` returns.
    fn enqueue(
        &self,
        planned: &Planned,
        arrival: Arrival,
        follow_up: Option<Duration>,
    ) -> Option<(GenerationStream, RequestRecord)> {
        let (index, phase, spec) = planned;
        let send_s = match arrival {
            Arrival::At(at) => self.clock.offset_s(at),
            Arrival::After(_) => 0.0,
        };
        // LoRA traffic: the adapter is attached and the request enqueued in one step (see bench::lora).
        let step_responses = self.step_responses;
        let enqueue = |request: crate::GenerationRequest| {
            let request = if step_responses { request } else { request.with_streaming(false) };
            self.executor.executor().enqueue_at(request, arrival, follow_up)
        };
        let (lora, result) = match crate::bench::lora::installed() {
            Some(traffic) => {
                let (task, with_weights, result) = traffic.enqueue_unordered(*index, generation_request(spec), enqueue);
                (Some((task, with_weights)), result)
            }
            None => (None, enqueue(generation_request(spec))),
        };
        let with_lora = |mut record: RequestRecord| {
            if let Some((task, with_weights)) = lora {
                record.lora_task = Some(task);
                record.lora_with_weights = with_weights;
            }
            record
        };
        match result {
            Ok(stream) => Some((stream, with_lora(new_record(spec, *index, *phase, send_s)))),
            Err(e) => {
                if let Arrival::After(parent) = arrival {
                    // The lease the refused follow-up would have taken must not hold the run up.
                    let _ = self.executor.executor().release_arrivals(parent);
                }
                let mut record = with_lora(new_record(spec, *index, *phase, send_s));
                record.fail(send_s, e.to_string());
                let _ = self.done.send(record);
                None
            }
        }
    }

    /// Closed-loop users, user `u` sending `lists[u]` in order (or drawing from `next` under a
    /// duration), its first request arriving at `starts[u]`. Enqueues every first request before
    /// it returns (call it under a hold); the users then run as tasks.
    pub(crate) fn users(
        &self,
        lists: Vec<VecDeque<Planned>>,
        starts: Vec<Instant>,
        limit: UserLimit,
        next: Option<Arc<dyn Fn(usize, u64) -> Planned + Send + Sync>>,
    ) {
        // A user with a fixed list sends it all at once, each request chained to the one before
        // (unless LoRA traffic decides per request from what has ended well).
        let chained = matches!(limit, UserLimit::Count) && crate::bench::lora::installed().is_none();
        for (user, (mut list, start)) in lists.into_iter().zip(starts).enumerate() {
            let Some(first) = list.pop_front() else { continue };
            // Users whose requests end in the same iteration react one after another, as one
            // response thread hands them their finals: user u a little after user u - 1. An
            // idle executor starts on the first arrival, so the others wait an iteration, as
            // they do in real time.
            let delay = self.client_latency + CLIENT_STAGGER * user as u32;
            let keeps_going = move |list: &VecDeque<Planned>| match limit {
                UserLimit::Count => (!list.is_empty()).then_some(delay),
                UserLimit::Until { .. } => Some(delay),
            };
            let Some((stream, record)) = self.enqueue(&first, Arrival::At(start), keeps_going(&list)) else {
                continue;
            };
            if chained {
                self.chain(stream, record, list, delay);
                continue;
            }
            let (load, next) = (self.clone(), next.clone());
            tokio::spawn(async move {
                let (mut stream, mut record, mut sent) = (stream, record, 1_u64);
                loop {
                    let id = stream.request_id();
                    let finished = settled(consume_in_process(stream, record, &load.clock).await);
                    let ended_s = end_s(&finished);
                    let had_follow_up = keeps_going(&list).is_some();
                    let _ = load.done.send(finished);
                    let planned = match limit {
                        UserLimit::Count => list.pop_front(),
                        UserLimit::Until { deadline, ramp_end } => {
                            let arrival = ended_s.map(|s| load.clock.origin() + Duration::from_secs_f64(s.max(0.0)));
                            let arrival = arrival.map(|a| a + delay);
                            match (arrival, &next) {
                                (Some(a), Some(next)) if a < deadline => {
                                    let (index, _, spec) = next(user, sent);
                                    let phase = if a < ramp_end { Phase::RampUp } else { Phase::Measure };
                                    Some((index, phase, spec))
                                }
                                _ => None,
                            }
                        }
                    };
                    let Some(planned) = planned else {
                        if had_follow_up {
                            let _ = load.executor.executor().release_arrivals(id);
                        }
                        return;
                    };
                    sent += 1;
                    match load.enqueue(&planned, Arrival::After(id), keeps_going(&list)) {
                        Some((s, r)) => (stream, record) = (s, r),
                        None => return,
                    }
                }
            });
        }
    }

    /// Enqueues each of `rest` as the follow-up of the request before it, now: the executor
    /// admits each one `delay` after the one before ends, exactly as if the user had sent it
    /// then, but without waiting for the runner (a round trip per request would pace the
    /// simulation). Records come back in the user's order. A refused request ends the user, as
    /// it does when sent one by one.
    fn chain(&self, stream: GenerationStream, record: RequestRecord, mut rest: VecDeque<Planned>, delay: Duration) {
        let mut sent = vec![(stream, record)];
        while let Some(planned) = rest.pop_front() {
            let parent = sent.last().map_or(0, |(s, _)| s.request_id());
            let follow_up = (!rest.is_empty()).then_some(delay);
            match self.enqueue(&planned, Arrival::After(parent), follow_up) {
                Some(pair) => sent.push(pair),
                None => break,
            }
        }
        let load = self.clone();
        tokio::spawn(async move {
            for (stream, record) in sent {
                let finished = settled(consume_in_process(stream, record, &load.clock).await);
                let _ = load.done.send(finished);
            }
        });
    }

    /// Open loop: request `i` of `planned` scheduled `offsets_s[i]` after `start`; with a cap,
    /// at most `cap` in flight, the rest arriving as slots free. Enqueues everything it can
    /// before it returns (call it under a hold).
    pub(crate) fn open_loop(&self, planned: Vec<Planned>, offsets_s: Vec<f64>, start: Instant, cap: Option<usize>) {
        let due = |offset: f64| start + Duration::from_secs_f64(offset.max(0.0));
        let mut all: VecDeque<(Planned, Instant)> =
            planned.into_iter().zip(offsets_s).map(|(p, offset)| (p, due(offset))).collect();
        let first = cap.map_or(all.len(), |c| c.min(all.len()));
        let waiting = all.split_off(first);
        let capped = cap.is_some();
        let waiting = Arc::new(Mutex::new(waiting));
        for (planned, at) in all {
            self.open_request(planned, Arrival::At(at), at, at, capped, waiting.clone());
        }
    }

    /// Sends one open-loop request due at `due`, arriving at `at` (`arrival`); under a cap, its
    /// end lets the next waiting one in. The caller keeps the executor from starting an
    /// iteration at or after `at` until this returns.
    fn open_request(
        &self,
        mut planned: Planned,
        mut arrival: Arrival,
        mut at: Instant,
        mut due: Instant,
        capped: bool,
        waiting: Arc<Mutex<VecDeque<(Planned, Instant)>>>,
    ) {
        let (stream, mut record) = loop {
            match self.enqueue(&planned, arrival, capped.then_some(self.client_latency)) {
                Some(sent) => break sent,
                // Refused (its failed record is out): under a cap its slot is free again at once,
                // for the next waiting request, which arrives then or when due, whichever is later.
                None if capped => {
                    let Some((next, next_due)) = waiting.lock().ok().and_then(|mut w| w.pop_front()) else {
                        return;
                    };
                    at = at.max(next_due);
                    (planned, arrival, due) = (next, Arrival::At(at), next_due);
                }
                None => return,
            }
        };
        record.scheduled_send_s = Some(self.clock.offset_s(due));
        let load = self.clone();
        tokio::spawn(async move {
            let id = stream.request_id();
            let finished = settled(consume_in_process(stream, record, &load.clock).await);
            let ended_s = end_s(&finished);
            let _ = load.done.send(finished);
            if !capped {
                return;
            }
            let next = waiting.lock().ok().and_then(|mut w| w.pop_front());
            let Some((planned, due)) = next else {
                let _ = load.executor.executor().release_arrivals(id);
                return;
            };
            let free_at =
                ended_s.map(|s| load.clock.origin() + Duration::from_secs_f64(s.max(0.0)) + load.client_latency);
            match free_at {
                // The slot frees after the request was due: it arrives as the ended one's follow-up.
                // A hold at that moment outlives the follow-up's lease, which a refusal releases,
                // so that the next waiting request can still arrive then.
                Some(free) if free >= due => {
                    let hold = load.executor.executor().hold_arrivals(free).ok();
                    load.open_request(planned, Arrival::After(id), free, due, true, waiting);
                    if let Some(hold) = hold {
                        let _ = load.executor.executor().release_arrivals(hold);
                    }
                }
                _ => {
                    // Enqueued before the release, so the executor cannot run past its arrival.
                    load.open_request(planned, Arrival::At(due), due, due, true, waiting);
                    let _ = load.executor.executor().release_arrivals(id);
                }
            }
        });
    }
}
