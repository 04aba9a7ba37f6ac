//! Scheduled arrivals on the simulator's virtual clock: requests stamped with a simulated arrival
//! time, and leases that keep the simulation from running ahead of arrivals still to come.
//!
//! The simulated executor alone has these (its own control channel beside the TensorRT-LLM API);
//! with a real TensorRT-LLM library, or an engine whose simulation.json keeps the real clock,
//! every call fails with [`Error::ExecutorFailed`]. A request joins the first iteration that starts at
//! or after its arrival, and the executor starts no iteration at or after a lease's bound until
//! the lease is fulfilled or released, so a client reacting in wall time still shapes the load
//! in simulated time exactly as it would in real time.

use std::time::{Duration, Instant};

use super::Executor;
use crate::error::{Error, Result};
use crate::executor::stream::GenerationStream;
use crate::types::arrival::Arrival;
use crate::types::request::GenerationRequest;

impl Executor {
    /// The simulated executor's current time. Virtual clock only.
    pub fn simulated_now(&self) -> Result<Instant> {
        let ns = self.shared.handle().sim_now_ns().map_err(|e| Error::from_executor(e.what()))?;
        self.shared.clock().instant_at(ns).ok_or_else(|| Error::Internal("the simulated clock reads zero".into()))
    }

    /// Enqueues `request` to arrive at `arrival` in simulated time. With `follow_up`, the executor
    /// keeps room for a follow-up request arriving that long after this one ends: it starts no
    /// iteration at or after that moment until the follow-up is enqueued
    /// ([`Arrival::After`]) or [`Executor::release_arrivals`] is called with this request's id.
    /// A follow-up may be sent before its request ends (chained: it arrives when that one ends;
    /// cancelling it ends it at once). A request with more than one sequence is refused, and so
    /// is a second follow-up to the same request. Errors as for [`Executor::enqueue`].
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use trtllm::sim::{ClockMode, SimulatedEngine};
    /// use trtllm::{Arrival, Executor, ExecutorConfig, GenerationRequest, StreamEvent};
    ///
    /// let dir = tempfile::tempdir()?;
    /// SimulatedEngine::builder().iteration_ms(10.0).clock(ClockMode::Virtual).build().write_to(dir.path())?;
    /// let executor = Executor::load(dir.path(), ExecutorConfig::default())?;
    /// let start = executor.simulated_now()? + Duration::from_secs(5);
    /// let first = executor.enqueue_at(GenerationRequest::new(vec![1, 2, 3], 4), Arrival::At(start), Some(Duration::ZERO))?;
    /// let id = first.request_id();
    /// let Some(Ok(StreamEvent::Final(done))) = first.blocking_iter().last() else { panic!("no final") };
    /// // Four tokens, one per 10 ms iteration, from the stamped arrival on.
    /// let perf = done.perf.expect("perf metrics");
    /// assert_eq!(perf.arrival, Some(start));
    /// assert_eq!(perf.last_token.unwrap() - start, Duration::from_millis(40));
    /// // The follow-up arrives when the first ended.
    /// let second = executor.enqueue_at(GenerationRequest::new(vec![4, 5], 1), Arrival::After(id), None)?;
    /// let Some(Ok(StreamEvent::Final(done))) = second.blocking_iter().last() else { panic!("no final") };
    /// assert_eq!(done.perf.unwrap().arrival, Some(start + Duration::from_millis(40)));
    /// # Ok(()) }
    /// ```
    pub fn enqueue_at(
        &self,
        request: GenerationRequest,
        arrival: Arrival,
        follow_up: Option<Duration>,
    ) -> Result<GenerationStream> {
        self.check(&request)?;
        let spec = request.to_ffi();
        let (arrival_ns, after) = match arrival {
            Arrival::At(at) => (self.nanos_of(at)?, 0),
            Arrival::After(id) => (0, id),
        };
        let follow_up_ns = match follow_up {
            Some(delay) => i64::try_from(delay.as_nanos()).unwrap_or(i64::MAX),
            None => -1,
        };
        let mut streams = self.register(std::slice::from_ref(&request), |handle| {
            handle.sim_enqueue_at(&spec, arrival_ns, after, follow_up_ns).map(|id| vec![id])
        })?;
        Ok(streams.remove(0))
    }

    /// Holds back every iteration that would start at or after `bound` until the returned key is
    /// released: a client announces arrivals it has not stamped yet (a first batch still being
    /// enqueued, a schedule still being generated).
    pub fn hold_arrivals(&self, bound: Instant) -> Result<u64> {
        let ns = self.nanos_of(bound)?;
        self.shared.handle().sim_hold_arrivals(ns).map_err(|e| Error::from_executor(e.what()))
    }

    /// Releases a hold (its key) or a follow-up lease (the request's id) that will not be used.
    pub fn release_arrivals(&self, key: u64) -> Result<()> {
        self.shared.handle().sim_release_arrivals(key).map_err(|e| Error::from_executor(e.what()))
    }

    /// Executor-clock nanoseconds of `at`.
    fn nanos_of(&self, at: Instant) -> Result<i64> {
        Ok(self.shared.clock().nanos_at(at))
    }
}
