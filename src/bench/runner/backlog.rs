//! The backlog watch of an open-loop point that stops sending once the target cannot keep up.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crate::bench::metrics::record::RequestRecord;
use crate::bench::metrics::saturation::{BacklogWatch, SETTLE_REQUESTS};

/// The backlog watch of an open-loop point that stops when over-saturated.
pub(crate) struct Watch {
    pub(crate) backlog: Option<BacklogWatch>,
    pub(crate) stop: Arc<AtomicBool>,
    /// The run's request counter; requests sent since the watch began are those above `base`.
    pub(crate) sent: Arc<AtomicU64>,
    pub(crate) base: u64,
    pub(crate) started: Instant,
    pub(crate) finished: u64,
    pub(crate) stopped_at: Option<f64>,
    /// Latencies of the first finished measured requests (they set when the backlog settles).
    pub(crate) first_latencies: Vec<f64>,
}

impl Watch {
    pub(crate) fn none() -> Self {
        Watch {
            backlog: None,
            stop: Arc::new(AtomicBool::new(false)),
            sent: Arc::new(AtomicU64::new(0)),
            base: 0,
            started: Instant::now(),
            finished: 0,
            stopped_at: None,
            first_latencies: Vec::new(),
        }
    }

    /// Counts a finished request; the first ones' latency sets when the backlog has settled.
    pub(crate) fn finished(&mut self, record: &RequestRecord) {
        self.finished += 1;
        if let (Some(watch), Some(e2el)) = (&mut self.backlog, record.end_s.map(|e| e - record.send_s))
            && self.first_latencies.len() < SETTLE_REQUESTS
        {
            self.first_latencies.push(e2el);
            let mean = self.first_latencies.iter().sum::<f64>() / self.first_latencies.len() as f64;
            watch.settle_after(2.0 * mean);
        }
    }

    /// Samples the backlog; tells the launcher to stop once it keeps growing.
    pub(crate) fn sample(&mut self) {
        let Some(watch) = &mut self.backlog else { return };
        if self.stopped_at.is_some() {
            return;
        }
        let sent = self.sent.load(Ordering::Relaxed).saturating_sub(self.base);
        let t = self.started.elapsed().as_secs_f64();
        if watch.push(t, sent.saturating_sub(self.finished)) {
            self.stopped_at = Some(t);
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}
