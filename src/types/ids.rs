//! Newtypes for the numbers the executor hands out, so a request id and a hold key cannot be mixed up.

/// The executor's id of one request ([`GenerationStream::request_id`](crate::GenerationStream::request_id)).
///
/// ```
/// use trtllm::RequestId;
/// let id = RequestId::new(7);
/// assert_eq!(id.get(), 7);
/// assert_eq!(id.to_string(), "7");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct RequestId(u64);

impl RequestId {
    /// The id with this number (as a service stored it).
    pub const fn new(id: u64) -> Self {
        RequestId(id)
    }

    /// The number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A hold on the simulated clock, from [`SimControl::hold_arrivals`](crate::sim::SimControl::hold_arrivals);
/// released with [`SimControl::release_hold`](crate::sim::SimControl::release_hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HoldKey(pub(crate) u64);
