//! The host's timer jitter: how late a short sleep wakes up, measured next to a real-time run so
//! that its latencies can be read against the host's noise (a shared, loaded host oversleeps by
//! milliseconds, which a real-time simulated executor pays on every iteration).

use std::time::{Duration, Instant};

use serde_json::Value;

use super::stats::percentile;

/// Oversleep of `samples` sleeps of `sleep` each, in milliseconds.
///
/// ```
/// use std::time::Duration;
/// use trtllm::bench::TimerJitter;
///
/// let jitter = TimerJitter::measure(20, Duration::from_micros(500));
/// assert_eq!(jitter.samples, 20);
/// assert!(jitter.p50_ms >= 0.0 && jitter.p50_ms <= jitter.p99_ms && jitter.p99_ms <= jitter.max_ms);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TimerJitter {
    /// Sleeps measured.
    pub samples: usize,
    /// Length of each sleep, ms.
    pub sleep_ms: f64,
    /// Median oversleep, ms.
    #[serde(rename = "oversleep_p50_ms")]
    pub p50_ms: f64,
    /// 99th percentile oversleep, ms.
    #[serde(rename = "oversleep_p99_ms")]
    pub p99_ms: f64,
    /// Largest oversleep, ms.
    #[serde(rename = "oversleep_max_ms")]
    pub max_ms: f64,
}

impl TimerJitter {
    /// Sleeps `samples` times for `sleep` (blocking the calling thread) and records how late
    /// each wake-up was.
    pub fn measure(samples: usize, sleep: Duration) -> Self {
        let late: Vec<f64> = (0..samples.max(1))
            .map(|_| {
                let start = Instant::now();
                std::thread::sleep(sleep);
                (start.elapsed().saturating_sub(sleep)).as_secs_f64() * 1e3
            })
            .collect();
        let p = |q| percentile(&late, q).unwrap_or(0.0);
        TimerJitter {
            samples: late.len(),
            sleep_ms: sleep.as_secs_f64() * 1e3,
            p50_ms: p(50.0),
            p99_ms: p(99.0),
            max_ms: late.iter().copied().fold(0.0, f64::max),
        }
    }

    /// The figures as JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// One console line.
    pub fn console_line(&self) -> String {
        format!("host timer jitter: {}", self.describe())
    }

    /// The figures in words: `100 sleeps of 1.0 ms overslept by p50 0.061 ms, ...`.
    pub fn describe(&self) -> String {
        format!(
            "{} sleeps of {:.1} ms overslept by p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            self.samples, self.sleep_ms, self.p50_ms, self.p99_ms, self.max_ms
        )
    }
}
