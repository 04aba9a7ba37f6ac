//! Scheduled arrivals on the virtual clock: a request joins the first iteration starting at or
//! after its stamp, follow-ups arrive when their request ended, and leases keep the simulation
//! from running past arrivals still to come.

use std::time::Duration;

use trtllm::sim::{ClockMode, SimulatedEngine};
use trtllm::{Arrival, Executor, ExecutorConfig, GenerationRequest, GenerationStream, StreamEvent};

fn executor(clock: ClockMode) -> (tempfile::TempDir, Executor) {
    let dir = tempfile::tempdir().unwrap();
    SimulatedEngine::builder().iteration_ms(10.0).clock(clock).build().write_to(dir.path()).unwrap();
    let executor = Executor::load(dir.path(), ExecutorConfig::default()).unwrap();
    (dir, executor)
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
    let t0 = executor.simulated_now().unwrap();
    let hold = executor.hold_arrivals(t0).unwrap();
    let busy = executor.enqueue_at(GenerationRequest::new(vec![1, 2, 3], 6), Arrival::At(t0), None).unwrap();
    // Arrives 15 ms in, halfway through the second iteration [10, 20) ms.
    let late = t0 + Duration::from_millis(15);
    let second = executor.enqueue_at(GenerationRequest::new(vec![4, 5, 6], 2), Arrival::At(late), None).unwrap();
    executor.release_arrivals(hold).unwrap();
    let p = perf(second);
    assert_eq!(p.arrival, Some(late));
    // Admitted at 20 ms, first token at the end of that iteration: 15 ms after it arrived.
    assert_eq!(p.first_token.unwrap() - late, Duration::from_millis(15));
    assert_eq!(perf(busy).last_token.unwrap() - t0, Duration::from_millis(60));
}

#[test]
fn an_idle_executor_starts_at_the_arrival_and_follow_ups_wait_for_their_lease() {
    let (_dir, executor) = executor(ClockMode::Virtual);
    let t0 = executor.simulated_now().unwrap() + Duration::from_secs(1);
    let delay = Duration::from_micros(500);
    let first = executor.enqueue_at(GenerationRequest::new(vec![1, 2], 3), Arrival::At(t0), Some(delay)).unwrap();
    let id = first.request_id();
    let p = perf(first);
    assert_eq!(p.first_token.unwrap() - t0, Duration::from_millis(10), "started at the arrival itself");
    // The executor waits for the follow-up, however long the runner takes in wall time.
    std::thread::sleep(Duration::from_millis(20));
    let follow = executor.enqueue_at(GenerationRequest::new(vec![3, 4], 1), Arrival::After(id), None).unwrap();
    let q = perf(follow);
    assert_eq!(q.arrival.unwrap(), p.last_token.unwrap() + delay);
    assert_eq!(q.first_token.unwrap() - q.arrival.unwrap(), Duration::from_millis(10));
    // A lease cannot be taken twice, and a request without one has no follow-up.
    assert!(executor.enqueue_at(GenerationRequest::new(vec![5], 1), Arrival::After(id), None).is_err());
}

#[test]
fn scheduled_arrivals_need_the_virtual_clock() {
    let (_dir, executor) = executor(ClockMode::Real);
    let now = std::time::Instant::now();
    let error = executor.enqueue_at(GenerationRequest::new(vec![1], 1), Arrival::At(now), None).unwrap_err();
    assert!(error.to_string().contains("virtual clock"), "{error}");
    assert!(executor.hold_arrivals(now).is_err());
}
