//! Scheduled arrivals on the virtual clock: a request joins the first iteration starting at or
//! after its stamp, follow-ups arrive when their request ended, and leases keep the simulation
//! from running past arrivals still to come.

use std::time::Duration;

use trtllm::sim::{Arrival, ClockMode, SimControl, SimulatedEngine};
use trtllm::{Executor, ExecutorConfig, GenerationRequest, GenerationStream, StreamEvent};

fn executor(clock: ClockMode) -> (tempfile::TempDir, Executor) {
    let dir = tempfile::tempdir().unwrap();
    SimulatedEngine::builder().iteration_ms(10.0).clock(clock).build().write_to(dir.path()).unwrap();
    let executor = Executor::load(dir.path(), ExecutorConfig::default()).unwrap();
    (dir, executor)
}

fn sim(executor: &Executor) -> SimControl<'_> {
    executor.sim_control().expect("a virtual-clock simulated engine")
}

fn perf(stream: GenerationStream) -> trtllm::PerfMetrics {
    match stream.blocking_iter().last() {
        Some(Ok(StreamEvent::Final(done))) => done.perf.expect("perf metrics"),
        other => panic!("no final: {other:?}"),
    }
}

#[test]
fn a_request_arriving_mid_iteration_waits_for_the_next_one() {
    let (_dir, executor) = executor(ClockMode::Virtual);
    let t0 = sim(&executor).now().unwrap();
    let hold = sim(&executor).hold_arrivals(t0).unwrap();
    let busy = sim(&executor).enqueue_at(GenerationRequest::new(vec![1, 2, 3], 6), Arrival::At(t0), None).unwrap();
    // Arrives 15 ms in, halfway through the second iteration [10, 20) ms.
    let late = t0 + Duration::from_millis(15);
    let second = sim(&executor).enqueue_at(GenerationRequest::new(vec![4, 5, 6], 2), Arrival::At(late), None).unwrap();
    sim(&executor).release_hold(hold).unwrap();
    let p = perf(second);
    assert_eq!(p.arrival, Some(late));
    // Admitted at 20 ms, first token at the end of that iteration: 15 ms after it arrived.
    assert_eq!(p.first_token.unwrap() - late, Duration::from_millis(15));
    assert_eq!(perf(busy).last_token.unwrap() - t0, Duration::from_millis(60));
}

#[test]
fn an_idle_executor_starts_at_the_arrival_and_follow_ups_wait_for_their_lease() {
    let (_dir, executor) = executor(ClockMode::Virtual);
    let t0 = sim(&executor).now().unwrap() + Duration::from_secs(1);
    let delay = Duration::from_micros(500);
    let first = sim(&executor).enqueue_at(GenerationRequest::new(vec![1, 2], 3), Arrival::At(t0), Some(delay)).unwrap();
    let id = first.request_id();
    let p = perf(first);
    assert_eq!(p.first_token.unwrap() - t0, Duration::from_millis(10), "started at the arrival itself");
    // The executor waits for the follow-up, however long the runner takes in wall time.
    std::thread::sleep(Duration::from_millis(20));
    let follow = sim(&executor).enqueue_at(GenerationRequest::new(vec![3, 4], 1), Arrival::After(id), None).unwrap();
    let q = perf(follow);
    assert_eq!(q.arrival.unwrap(), p.last_token.unwrap() + delay);
    assert_eq!(q.first_token.unwrap() - q.arrival.unwrap(), Duration::from_millis(10));
    // A lease cannot be taken twice, and a request without one has no follow-up.
    assert!(sim(&executor).enqueue_at(GenerationRequest::new(vec![5], 1), Arrival::After(id), None).is_err());
}

#[test]
fn scheduled_arrivals_need_the_virtual_clock() {
    let (_dir, executor) = executor(ClockMode::Real);
    assert!(executor.sim_control().is_none(), "the real clock has no virtual-clock controls");
    let (_dir, executor) = self::executor(ClockMode::Virtual);
    assert!(executor.sim_control().is_some());
}

/// What a request's perf metrics say, relative to `t0`: arrival, first and last token, and the
/// iterations of its first and last token.
type Stamps = (Duration, Duration, Duration, Option<u64>, Option<u64>);

fn stamps(p: &trtllm::PerfMetrics, t0: std::time::Instant) -> Stamps {
    (p.arrival.unwrap() - t0, p.first_token.unwrap() - t0, p.last_token.unwrap() - t0, p.first_iter, p.last_iter)
}

/// A closed loop of `USERS` users with `PER_USER` requests each on the GPU timing model (the
/// default preset), user `u`'s requests arriving `DELAY + u * 10 µs` after its previous one ended.
const USERS: usize = 3;
const PER_USER: usize = 4;
const DELAY: Duration = Duration::from_micros(50);

fn timed_executor() -> (tempfile::TempDir, Executor) {
    let dir = tempfile::tempdir().unwrap();
    SimulatedEngine::builder().clock(ClockMode::Virtual).build().write_to(dir.path()).unwrap();
    let executor = Executor::load(dir.path(), ExecutorConfig::default()).unwrap();
    (dir, executor)
}

fn loop_request(user: usize, k: usize) -> GenerationRequest {
    let prompt: Vec<u32> = (0..(40 + 37 * k + 11 * user) as u32).map(|t| 1 + (t * 13 + user as u32) % 900).collect();
    GenerationRequest::new(prompt, 3 + (5 * k as u32 + 7 * user as u32) % 11)
}

fn delay(user: usize) -> Duration {
    DELAY + Duration::from_micros(10) * user as u32
}

/// Every user's requests sent one by one, each once the one before has ended (a thread per user).
fn closed_loop_one_by_one() -> Vec<Vec<Stamps>> {
    let (_dir, executor) = timed_executor();
    let t0 = sim(&executor).now().unwrap();
    let hold = sim(&executor).hold_arrivals(t0).unwrap();
    let firsts: Vec<GenerationStream> = (0..USERS)
        .map(|u| {
            let at = t0 + Duration::from_micros(10) * u as u32;
            sim(&executor).enqueue_at(loop_request(u, 0), Arrival::At(at), Some(delay(u))).unwrap()
        })
        .collect();
    sim(&executor).release_hold(hold).unwrap();
    std::thread::scope(|scope| {
        let users: Vec<_> = firsts
            .into_iter()
            .enumerate()
            .map(|(u, first)| {
                let executor = &executor;
                scope.spawn(move || {
                    let mut stream = first;
                    let mut out = Vec::new();
                    for k in 1..=PER_USER {
                        let id = stream.request_id();
                        out.push(stamps(&perf(stream), t0));
                        if k == PER_USER {
                            break;
                        }
                        let follow_up = (k + 1 < PER_USER).then(|| delay(u));
                        stream = sim(executor).enqueue_at(loop_request(u, k), Arrival::After(id), follow_up).unwrap();
                    }
                    out
                })
            })
            .collect();
        users.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Every user's requests sent at once, each chained to the one before it.
fn closed_loop_chained() -> Vec<Vec<Stamps>> {
    let (_dir, executor) = timed_executor();
    let t0 = sim(&executor).now().unwrap();
    let hold = sim(&executor).hold_arrivals(t0).unwrap();
    let streams: Vec<Vec<GenerationStream>> = (0..USERS)
        .map(|u| {
            let at = t0 + Duration::from_micros(10) * u as u32;
            let mut chain =
                vec![sim(&executor).enqueue_at(loop_request(u, 0), Arrival::At(at), Some(delay(u))).unwrap()];
            for k in 1..PER_USER {
                let parent = chain[k - 1].request_id();
                let follow_up = (k + 1 < PER_USER).then(|| delay(u));
                chain.push(sim(&executor).enqueue_at(loop_request(u, k), Arrival::After(parent), follow_up).unwrap());
            }
            chain
        })
        .collect();
    sim(&executor).release_hold(hold).unwrap();
    streams.into_iter().map(|chain| chain.into_iter().map(|s| stamps(&perf(s), t0)).collect()).collect()
}

#[test]
fn follow_ups_chained_in_advance_run_exactly_as_follow_ups_sent_when_their_request_ended() {
    let one_by_one = closed_loop_one_by_one();
    let chained = closed_loop_chained();
    assert_eq!(chained, one_by_one);
    // The loop did overlap users and wait for arrivals: not a trivially serial schedule.
    for user in &chained {
        for pair in user.windows(2) {
            assert!(pair[1].0 > pair[0].2, "a follow-up arrives after the request before it ended");
        }
    }
    assert!(chained[1][0].1 > chained[0][0].1, "the second user waited for the first one's iteration");
}

#[test]
fn a_cancelled_chained_follow_up_ends_at_once_and_lets_its_own_follow_up_in() {
    let (_dir, executor) = executor(ClockMode::Virtual);
    let t0 = sim(&executor).now().unwrap();
    let delay = Duration::from_micros(100);
    // Nothing runs before the hold is released: the cancellation reaches a follow-up still chained.
    let hold = sim(&executor).hold_arrivals(t0).unwrap();
    let first = sim(&executor).enqueue_at(GenerationRequest::new(vec![1, 2], 5), Arrival::At(t0), Some(delay)).unwrap();
    let second = sim(&executor)
        .enqueue_at(GenerationRequest::new(vec![3, 4], 5), Arrival::After(first.request_id()), Some(delay))
        .unwrap();
    let third =
        sim(&executor).enqueue_at(GenerationRequest::new(vec![5, 6], 2), Arrival::After(second.request_id()), None);
    let third = third.unwrap();
    executor.cancel(second.request_id()).unwrap();
    sim(&executor).release_hold(hold).unwrap();
    match second.blocking_iter().last() {
        Some(Ok(StreamEvent::Final(done))) => {
            assert_eq!(done.finish_reason, trtllm::FinishReason::Cancelled);
            assert_eq!(done.completion_tokens, 0);
        }
        other => panic!("no final for the cancelled follow-up: {other:?}"),
    }
    // It ended as the first iteration started, which lets its own follow-up in; that one joins
    // the first request's second iteration.
    let p = perf(third);
    assert_eq!(p.arrival.unwrap(), t0 + delay);
    assert_eq!(p.first_token.unwrap() - t0, Duration::from_millis(20));
    assert_eq!(perf(first).last_token.unwrap() - t0, Duration::from_millis(50));
    // Chaining to a request without a lease, or twice to the same one, is refused.
    let lone = sim(&executor).enqueue_at(GenerationRequest::new(vec![7], 1), Arrival::At(t0), None).unwrap();
    assert!(
        sim(&executor).enqueue_at(GenerationRequest::new(vec![8], 1), Arrival::After(lone.request_id()), None).is_err()
    );
    let leased = sim(&executor)
        .enqueue_at(GenerationRequest::new(vec![9], 4), Arrival::At(p.last_token.unwrap()), Some(delay))
        .unwrap();
    let id = leased.request_id();
    let chained = sim(&executor).enqueue_at(GenerationRequest::new(vec![10], 1), Arrival::After(id), None).unwrap();
    assert!(sim(&executor).enqueue_at(GenerationRequest::new(vec![11], 1), Arrival::After(id), None).is_err());
    assert_eq!(perf(chained).arrival.unwrap(), perf(leased).last_token.unwrap() + delay);
}
