//! Threads that watch a run (the live view, GPU telemetry) at idle priority, so that they never
//! take a core from the runner.

use std::thread::JoinHandle;

/// Spawns `work` on a thread named `name` that runs only when a core would otherwise idle
/// (Linux `SCHED_IDLE`; elsewhere an ordinary thread).
///
/// A thread that wakes up on its own timer, as a view redrawn four times a second does, would
/// otherwise take a core at whatever moment it wakes, and a burst of responses (a thousand first
/// tokens at once) then waits behind it: on two cores that showed as a TTFT tail of several
/// milliseconds in `runner_overhead`. At idle priority it never preempts the runner; it still
/// runs on a saturated host, only later.
///
/// ```rust
/// let handle = trtllm::bench::spawn_observer("watcher", || 2 + 2).unwrap();
/// assert_eq!(handle.join().unwrap(), 4);
/// ```
pub fn spawn_observer<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<JoinHandle<T>> {
    std::thread::Builder::new().name(name.to_owned()).spawn(move || {
        lower_to_idle_priority();
        work()
    })
}

/// Moves the calling thread to `SCHED_IDLE`. Failing (a seccomp filter, say) leaves it an
/// ordinary thread, which is still correct.
#[cfg(target_os = "linux")]
fn lower_to_idle_priority() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid, initialized sched_param that outlives the call; pid 0 names the
    // calling thread, and SCHED_IDLE with priority 0 is a valid policy for it.
    let _ = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) };
}

#[cfg(not(target_os = "linux"))]
fn lower_to_idle_priority() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_observer_runs_at_idle_priority_and_its_spawner_does_not() {
        // SAFETY: sched_getscheduler only reads the policy of the thread pid 0 names (the caller).
        let policy = || unsafe { libc::sched_getscheduler(0) };
        let before = policy();
        let observed = super::spawn_observer("observer-test", policy).unwrap().join().unwrap();
        assert_eq!(observed, libc::SCHED_IDLE);
        assert_eq!(policy(), before);
    }
}
