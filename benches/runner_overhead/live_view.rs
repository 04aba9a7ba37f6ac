//! The live view as `trtllm bench` runs it, when `TRTLLM_BENCH_LIVE=1` asks for it: shared
//! counters, the GPU telemetry sampler's interval, and an observer thread drawing off screen.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use trtllm::bench::{LIVE_VIEW_HEIGHT, LiveStats, draw_live_view, spawn_observer};

/// `trtllm bench`'s default interval between GPU telemetry samples.
pub const GPU_SAMPLE_INTERVAL: Duration = Duration::from_millis(500);
/// How often `trtllm bench` redraws its live view.
pub const VIEW_PERIOD: Duration = Duration::from_millis(250);

/// The live view's counters, and the thread that draws them as `trtllm bench` does.
pub struct LiveView {
    pub stats: Arc<LiveStats>,
    /// Frames drawn, to show the view ran.
    pub frames: Arc<AtomicU64>,
    /// Time spent taking snapshots and drawing them.
    pub drawing_ns: Arc<AtomicU64>,
    /// The view's thread is an ordinary one (`TRTLLM_BENCH_VIEW_PRIORITY=normal`), not an
    /// idle-priority observer as in `trtllm bench`.
    pub normal_priority: bool,
    /// Whether the GPU telemetry sampler runs too (`TRTLLM_BENCH_TELEMETRY=0`: not, to tell
    /// its cost from the view's).
    pub telemetry: bool,
}

/// The live view when `TRTLLM_BENCH_LIVE=1` asks for it (started on first use; it draws until
/// the process ends).
pub fn live_view() -> Option<&'static LiveView> {
    static VIEW: OnceLock<Option<LiveView>> = OnceLock::new();
    VIEW.get_or_init(|| {
        if std::env::var("TRTLLM_BENCH_LIVE").as_deref() != Ok("1") {
            return None;
        }
        let stats = Arc::new(LiveStats::default());
        let (frames, drawing_ns) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (s, f, d) = (stats.clone(), frames.clone(), drawing_ns.clone());
        let draw = move || {
            // The terminal's cost is the view's drawing, not this host's terminal: draw off screen.
            let backend = ratatui::backend::TestBackend::new(120, LIVE_VIEW_HEIGHT);
            let mut terminal = ratatui::Terminal::new(backend).expect("test backend");
            loop {
                let started = Instant::now();
                let now = s.snapshot();
                let _ = terminal.draw(|frame| draw_live_view(frame, &[], &now));
                d.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
                f.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(VIEW_PERIOD);
            }
        };
        // `trtllm bench` draws from an observer thread at idle priority; `normal` compares an
        // ordinary thread.
        let normal = std::env::var("TRTLLM_BENCH_VIEW_PRIORITY").as_deref() == Ok("normal");
        match normal {
            true => drop(std::thread::spawn(draw)),
            false => drop(spawn_observer("bench-live", draw).expect("the live view's thread")),
        }
        let telemetry = std::env::var("TRTLLM_BENCH_TELEMETRY").as_deref() != Ok("0");
        Some(LiveView { stats, frames, drawing_ns, normal_priority: normal, telemetry })
    })
    .as_ref()
}
