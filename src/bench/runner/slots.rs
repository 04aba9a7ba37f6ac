//! In-flight slots under a concurrency cap, handed out in the order the requests were made.
//!
//! A semaphore is fair to the order in which tasks *ask*, and the runtime polls request tasks in
//! an order of its own (work stealing, the LIFO slot, a stalled worker): a later request could
//! take a freed slot first. Each waiting request therefore asks only once the request made
//! before it holds its slot.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

/// A request's claim on a slot.
#[derive(Debug)]
pub(crate) enum Slot {
    /// No cap.
    Free,
    /// Taken when the request was made: a slot was free and nobody was waiting.
    Held(OwnedSemaphorePermit),
    /// Waits for a slot after the request ahead of it.
    Queued {
        slots: Arc<Semaphore>,
        /// Fires (or closes) once the request ahead holds its slot; `None` at the head.
        ahead: Option<oneshot::Receiver<()>>,
        /// Tells the request behind that this one holds its slot.
        holding: oneshot::Sender<()>,
    },
}

impl Slot {
    /// Waits for the slot; `None` without a cap.
    pub(crate) async fn take(self) -> Option<OwnedSemaphorePermit> {
        match self {
            Slot::Free => None,
            Slot::Held(permit) => Some(permit),
            Slot::Queued { slots, ahead, holding } => {
                if let Some(ahead) = ahead {
                    // Closed: the request ahead is gone (its task ended), so this one is next.
                    let _ = ahead.await;
                }
                let permit = slots.acquire_owned().await.ok();
                let _ = holding.send(());
                permit
            }
        }
    }
}

/// Hands out [`Slot`]s in the order of [`SlotQueue::next`] calls.
#[derive(Debug)]
pub(crate) struct SlotQueue {
    slots: Option<Arc<Semaphore>>,
    /// The last queued request's "holding" signal, while it may still be waiting.
    last: Option<oneshot::Receiver<()>>,
}

impl SlotQueue {
    /// At most `cap` requests hold a slot at once; `None`: no cap.
    pub(crate) fn new(cap: Option<usize>) -> Self {
        SlotQueue { slots: cap.map(|c| Arc::new(Semaphore::new(c.max(1)))), last: None }
    }

    /// The next request's slot: held at once when one is free and nobody waits, else queued
    /// behind the requests made before it.
    pub(crate) fn next(&mut self) -> Slot {
        let Some(slots) = &self.slots else { return Slot::Free };
        let waiting = self.last.as_mut().is_some_and(|rx| rx.try_recv() == Err(oneshot::error::TryRecvError::Empty));
        if !waiting {
            self.last = None;
            if let Ok(permit) = slots.clone().try_acquire_owned() {
                return Slot::Held(permit);
            }
        }
        let (holding, rx) = oneshot::channel();
        let ahead = self.last.replace(rx);
        Slot::Queued { slots: slots.clone(), ahead, holding }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::Mutex;

    /// Waiting requests take slots in the order they were made, even when their tasks start
    /// last-made first.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn freed_slots_go_to_the_waiting_requests_in_order() {
        let mut queue = SlotQueue::new(Some(1));
        let first = queue.next().take().await.expect("a cap gives permits");
        let waiting: Vec<Slot> = (0..6).map(|_| queue.next()).collect();
        assert!(waiting.iter().all(|s| matches!(s, Slot::Queued { .. })));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (k, slot) in waiting.into_iter().enumerate().rev() {
            let order = order.clone();
            tasks.push(tokio::spawn(async move {
                let permit = slot.take().await;
                order.lock().unwrap().push(k);
                tokio::task::yield_now().await;
                drop(permit);
            }));
            tokio::task::yield_now().await;
        }
        drop(first);
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3, 4, 5]);
    }

    #[tokio::test]
    async fn a_free_slot_is_held_at_once_unless_someone_waits() {
        let mut queue = SlotQueue::new(Some(2));
        let (a, b) = (queue.next(), queue.next());
        assert!(matches!((&a, &b), (Slot::Held(_), Slot::Held(_))));
        let c = queue.next();
        assert!(matches!(c, Slot::Queued { ahead: None, .. }));
        drop(a);
        // A slot is free again, but `c` waits for it: the next request queues behind `c`.
        assert!(matches!(queue.next(), Slot::Queued { ahead: Some(_), .. }));
        assert!(matches!(SlotQueue::new(None).next(), Slot::Free));
    }
}
