//! This host's floor, measured before anything else: how late a parked thread, a parked tokio
//! task and a sleep to a deadline wake up.

use std::time::{Duration, Instant};

/// The host's wake-up floor: how late a thread parked on a condition variable (the response
/// thread waiting in `awaitResponses`) and a tokio task parked on a channel (a stream's consumer)
/// run after another thread wakes them. No measurement taken on this host can be finer than this.
pub async fn wake_up_floor() -> (Vec<f64>, Vec<f64>) {
    const WAKES: usize = 2000;
    let gap = Duration::from_micros(500);
    // Thread to thread: a condition variable, as the executor wakes the response thread.
    let pair = std::sync::Arc::new((std::sync::Mutex::new(None::<Instant>), std::sync::Condvar::new()));
    let waiter = {
        let pair = pair.clone();
        std::thread::spawn(move || {
            let (slot, woken) = &*pair;
            let mut delays = Vec::with_capacity(WAKES);
            for _ in 0..WAKES {
                let mut guard = woken.wait_while(slot.lock().unwrap(), |s| s.is_none()).unwrap();
                let sent = guard.take().unwrap();
                delays.push(sent.elapsed().as_secs_f64() * 1e3);
            }
            delays
        })
    };
    for _ in 0..WAKES {
        std::thread::sleep(gap);
        let (slot, woken) = &*pair;
        *slot.lock().unwrap() = Some(Instant::now());
        woken.notify_one();
        // The waiter takes it before the next one: wait for the slot to empty.
        while slot.lock().unwrap().is_some() {
            std::thread::yield_now();
        }
    }
    let thread_delays = tokio::task::spawn_blocking(move || waiter.join().unwrap()).await.unwrap();
    // Thread to task: a bounded tokio channel, as the response thread wakes a stream's consumer.
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Instant>(1);
    let receiver = tokio::spawn(async move {
        let mut delays = Vec::with_capacity(WAKES);
        while let Some(sent) = rx.recv().await {
            delays.push(sent.elapsed().as_secs_f64() * 1e3);
        }
        delays
    });
    std::thread::spawn(move || {
        for _ in 0..WAKES {
            std::thread::sleep(gap);
            let _ = tx.blocking_send(Instant::now());
        }
    });
    (thread_delays, receiver.await.unwrap())
}

/// How late a thread sleeping until a deadline wakes (the real-time simulator sleeps until each
/// iteration's end and stamps that end, so its responses are at least this late), ms.
pub fn timer_lateness() -> Vec<f64> {
    (0..300)
        .map(|_| {
            let deadline = Instant::now() + Duration::from_millis(2);
            std::thread::sleep(deadline - Instant::now());
            deadline.elapsed().as_secs_f64() * 1e3
        })
        .collect()
}
