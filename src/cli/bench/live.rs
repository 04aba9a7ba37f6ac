//! What `trtllm bench` shows while it runs: the live view on a terminal, plain progress lines
//! otherwise (`--live false`, output not a terminal, or `--quiet`).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use ratatui::backend::CrosstermBackend;
use ratatui::{Terminal, TerminalOptions, Viewport};
use trtllm::bench::{LIVE_VIEW_HEIGHT, LiveSnapshot, LiveStats, draw_live_view, progress_line};

/// Redraws of the live view per second.
const VIEW_PERIOD: Duration = Duration::from_millis(250);
/// Seconds between plain progress lines.
const LINE_PERIOD: Duration = Duration::from_secs(5);

/// The running view: shared counters the runner and the progress callback update, and a thread
/// that reads a snapshot of them a few times a second.
pub struct LiveOutput {
    pub stats: Arc<LiveStats>,
    finished: Arc<Mutex<Vec<LiveSnapshot>>>,
    /// A point is running (progress lines are printed only then, not while results are written).
    running: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl LiveOutput {
    /// The view `live` asks for (default: on when stdout is a terminal and not `quiet`); plain
    /// progress lines when it is off.
    pub fn start(live: Option<bool>, quiet: bool) -> LiveOutput {
        let stats = Arc::new(LiveStats::default());
        let finished = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let running = Arc::new(AtomicBool::new(false));
        let terminal = live.unwrap_or(!quiet && std::io::stdout().is_terminal());
        let (s, f, r, st) = (stats.clone(), finished.clone(), running.clone(), stop.clone());
        let thread = trtllm::bench::spawn_observer("bench-live", move || match terminal {
            true => view(&s, &f, &r, &st),
            false => lines(&s, &r, &st),
        })
        .ok();
        LiveOutput { stats, finished, running, stop, thread }
    }

    /// A new point, `label`, of `total` measured requests when known.
    pub fn start_point(&self, label: &str, total: Option<u64>) {
        self.stats.start_point(label, total);
        self.running.store(true, Ordering::Relaxed);
    }

    /// The running point is done: its figures stay on the view.
    pub fn finish_point(&self) {
        self.running.store(false, Ordering::Relaxed);
        let snapshot = self.stats.snapshot();
        self.finished.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(snapshot);
    }

    /// Stops the view (its last frame stays on the terminal).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for LiveOutput {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The ratatui view, inline below the command line (no alternate screen, no raw mode, so
/// Ctrl-C still stops the run); falls back to lines when the terminal cannot be set up.
fn view(stats: &LiveStats, finished: &Mutex<Vec<LiveSnapshot>>, running: &AtomicBool, stop: &AtomicBool) {
    let options = TerminalOptions { viewport: Viewport::Inline(LIVE_VIEW_HEIGHT) };
    let Ok(mut terminal) = Terminal::with_options(CrosstermBackend::new(std::io::stdout()), options) else {
        return lines(stats, running, stop);
    };
    loop {
        let done = stop.load(Ordering::Relaxed);
        let current = stats.snapshot();
        let history = finished.lock().map(|f| f.clone()).unwrap_or_default();
        // The last frame shows the finished points only.
        let (rows, now) = match (done, history.split_last()) {
            (true, Some((last, rest))) => (rest.to_vec(), last.clone()),
            _ => (history, current),
        };
        if terminal.draw(|frame| draw_live_view(frame, &rows, &now)).is_err() || done {
            break;
        }
        std::thread::sleep(VIEW_PERIOD);
    }
    println!();
}

/// A plain progress line on stderr every few seconds while a point runs.
fn lines(stats: &LiveStats, running: &AtomicBool, stop: &AtomicBool) {
    let mut waited = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(VIEW_PERIOD);
        waited += VIEW_PERIOD;
        if waited >= LINE_PERIOD {
            waited = Duration::ZERO;
            if running.load(Ordering::Relaxed) {
                eprintln!("{}", progress_line(&stats.snapshot()));
            }
        }
    }
}
