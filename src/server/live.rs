//! The requests in flight by client request id: duplicate ids are refused and Abort finds the
//! executor request to cancel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tonic::Status;

/// Client request id → executor request id.
#[derive(Debug, Default)]
pub(crate) struct LiveTable {
    requests: Mutex<HashMap<String, u64>>,
}

impl LiveTable {
    /// Registers `request_id` with the executor request `enqueue` creates, under the table's lock,
    /// so that Abort never sees a half-registered request and a duplicate is refused before any
    /// work starts.
    pub(crate) fn register<T>(
        self: &Arc<Self>,
        request_id: String,
        enqueue: impl FnOnce() -> Result<(T, u64), Status>,
    ) -> Result<(T, LiveEntry), Status> {
        let mut requests = self.requests.lock().map_err(|_| Status::internal("request table poisoned"))?;
        if requests.contains_key(&request_id) {
            return Err(Status::already_exists(format!("request_id {request_id:?} is already in flight")));
        }
        let (value, executor_id) = enqueue()?;
        requests.insert(request_id.clone(), executor_id);
        Ok((value, LiveEntry { table: self.clone(), request_id, executor_id, released: false }))
    }

    /// The executor id of the request in flight under `request_id`.
    pub(crate) fn executor_id(&self, request_id: &str) -> Result<Option<u64>, Status> {
        let requests = self.requests.lock().map_err(|_| Status::internal("request table poisoned"))?;
        Ok(requests.get(request_id).copied())
    }
}

/// A request's entry in the table, removed when the request finishes however it ends.
///
/// It removes only its own entry (matched by executor id): a new request that reuses the client
/// id after this one completed is never touched.
#[derive(Debug)]
pub(crate) struct LiveEntry {
    table: Arc<LiveTable>,
    request_id: String,
    executor_id: u64,
    released: bool,
}

impl LiveEntry {
    /// Removes the entry now (before the final messages go out, so that the client may reuse the
    /// id as soon as it has seen them). Idempotent.
    pub(crate) fn release(&mut self) {
        if std::mem::replace(&mut self.released, true) {
            return;
        }
        if let Ok(mut requests) = self.table.requests.lock()
            && requests.get(&self.request_id) == Some(&self.executor_id)
        {
            requests.remove(&self.request_id);
        }
    }

    /// The client's request id.
    pub(crate) fn request_id(&self) -> &str {
        &self.request_id
    }

    /// The executor's id of the request.
    pub(crate) fn executor_id(&self) -> u64 {
        self.executor_id
    }

    /// Whether the entry was released (the request's final arrived).
    pub(crate) fn is_released(&self) -> bool {
        self.released
    }
}

impl Drop for LiveEntry {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_refused_and_entries_leave_with_their_request() {
        let table = Arc::new(LiveTable::default());
        let ((), mut first) = table.register("x".into(), || Ok(((), 1))).unwrap();
        let dup = table.register("x".into(), || Ok(((), 2))).unwrap_err();
        assert_eq!(dup.code(), tonic::Code::AlreadyExists);
        assert_eq!(table.executor_id("x").unwrap(), Some(1));
        first.release();
        assert_eq!(table.executor_id("x").unwrap(), None);
        // A failed enqueue registers nothing.
        let failed = table.register::<()>("y".into(), || Err(Status::unavailable("down")));
        assert!(failed.is_err());
        assert_eq!(table.executor_id("y").unwrap(), None);
    }

    #[test]
    fn an_old_entry_never_removes_a_new_request_under_the_same_id() {
        let table = Arc::new(LiveTable::default());
        let ((), mut old) = table.register("x".into(), || Ok(((), 1))).unwrap();
        old.release();
        let ((), new) = table.register("x".into(), || Ok(((), 2))).unwrap();
        drop(old);
        assert_eq!(table.executor_id("x").unwrap(), Some(2), "released entries stay released");
        // Even an entry that was never released leaves a newer request alone.
        let stale = LiveEntry { table: table.clone(), request_id: "x".into(), executor_id: 1, released: false };
        drop(stale);
        assert_eq!(table.executor_id("x").unwrap(), Some(2));
        drop(new);
        assert_eq!(table.executor_id("x").unwrap(), None);
    }
}
