//! Scheduled arrivals on the simulator's virtual clock: requests stamped with a simulated arrival
//! time, and holds that keep the simulation from running ahead of arrivals still to come.
//!
//! The simulated executor alone has these (its own control channel beside the TensorRT-LLM API),
//! and only with an engine whose simulation.json runs the virtual clock:
//! [`Executor::sim_control`] is `None` otherwise. A request joins the first iteration that starts
//! at or after its arrival, and the executor starts no iteration at or after a hold's bound until
//! the hold is fulfilled or released, so a client reacting in wall time still shapes the load in
//! simulated time exactly as it would in real time.

use std::time::{Duration, Instant};

use super::stream::GenerationStream;
use super::sync_executor::Executor;
use crate::error::{Error, Result};
use crate::types::arrival::Arrival;
use crate::types::ids::{HoldKey, RequestId};
use crate::types::request::GenerationRequest;

/// The simulated executor's virtual-clock controls, from [`Executor::sim_control`].
#[derive(Debug, Clone, Copy)]
pub struct SimControl<'a> {
    executor: &'a Executor,
}

impl Executor {
    /// The simulator's virtual-clock controls: `Some` on the simulated executor with an engine that
    /// runs the virtual clock (simulation.json `"clock": "virtual"`), `None` on TensorRT-LLM.
    pub fn sim_control(&self) -> Option<SimControl<'_>> {
        self.virtual_clock.then_some(SimControl { executor: self })
    }
}

impl SimControl<'_> {
    /// The simulated executor's current time.
    pub fn now(&self) -> Result<Instant> {
        let shared = &self.executor.shared;
        let ns = shared.handle().sim_now_ns().map_err(|e| Error::from_executor(e.what()))?;
        shared.clock().instant_at(ns).ok_or_else(|| Error::Internal("the simulated clock reads zero".into()))
    }

    /// Enqueues `request` to arrive at `arrival` in simulated time. With `follow_up`, the executor
    /// keeps room for a follow-up request arriving that long after this one ends: it starts no
    /// iteration at or after that moment until the follow-up is enqueued
    /// ([`Arrival::After`]) or [`SimControl::release_follow_up`] is called with this request's id.
    /// A follow-up may be sent before its request ends (chained: it arrives when that one ends;
    /// cancelling it ends it at once). A request with more than one sequence is refused, and so
    /// is a second follow-up to the same request. Errors as for [`Executor::enqueue`].
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use std::time::Duration;
    /// use trtllm::sim::{Arrival, ClockMode, SimulatedEngine};
    /// use trtllm::{Executor, ExecutorConfig, GenerationRequest, StreamEvent};
    ///
    /// let dir = tempfile::tempdir()?;
    /// SimulatedEngine::builder().iteration_ms(10.0).clock(ClockMode::Virtual).build().write_to(dir.path())?;
    /// let executor = Executor::load(dir.path(), ExecutorConfig::default())?;
    /// let sim = executor.sim_control().expect("a virtual-clock simulated engine");
    /// let start = sim.now()? + Duration::from_secs(5);
    /// let first = sim.enqueue_at(GenerationRequest::new(vec![1, 2, 3], 4), Arrival::At(start), Some(Duration::ZERO))?;
    /// let id = first.request_id();
    /// let Some(Ok(StreamEvent::Final(done))) = first.blocking_iter().last() else { panic!("no final") };
    /// // Four tokens, one per 10 ms iteration, from the stamped arrival on.
    /// let perf = done.perf.expect("perf metrics");
    /// assert_eq!(perf.arrival, Some(start));
    /// assert_eq!(perf.last_token.unwrap() - start, Duration::from_millis(40));
    /// // The follow-up arrives when the first ended.
    /// let second = sim.enqueue_at(GenerationRequest::new(vec![4, 5], 1), Arrival::After(id), None)?;
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
        let executor = self.executor;
        executor.check(&request)?;
        let spec = request.to_ffi();
        let (arrival_ns, after) = match arrival {
            Arrival::At(at) => (self.nanos_of(at), 0),
            Arrival::After(id) => (0, id.get()),
        };
        let follow_up_ns = match follow_up {
            Some(delay) => i64::try_from(delay.as_nanos()).unwrap_or(i64::MAX),
            None => -1,
        };
        let mut streams = executor.register(std::slice::from_ref(&request), |handle| {
            handle.sim_enqueue_at(&spec, arrival_ns, after, follow_up_ns).map(|id| vec![id])
        })?;
        Ok(streams.remove(0))
    }

    /// Holds back every iteration that would start at or after `bound` until the returned key is
    /// released: a client announces arrivals it has not stamped yet (a first batch still being
    /// enqueued, a schedule still being generated).
    pub fn hold_arrivals(&self, bound: Instant) -> Result<HoldKey> {
        let handle = self.executor.shared.handle();
        handle.sim_hold_arrivals(self.nanos_of(bound)).map(HoldKey).map_err(|e| Error::from_executor(e.what()))
    }

    /// Releases a hold.
    pub fn release_hold(&self, key: HoldKey) -> Result<()> {
        self.release(key.0)
    }

    /// Releases the follow-up lease of a request (enqueued with a follow-up delay) that will not be
    /// used; releasing a lease that is not there does nothing.
    pub fn release_follow_up(&self, request: RequestId) -> Result<()> {
        self.release(request.get())
    }

    fn release(&self, key: u64) -> Result<()> {
        self.executor.shared.handle().sim_release_arrivals(key).map_err(|e| Error::from_executor(e.what()))
    }

    /// Executor-clock nanoseconds of `at`.
    fn nanos_of(&self, at: Instant) -> i64 {
        self.executor.shared.clock().nanos_at(at)
    }
}
