//! One row per benchmark request: raw timestamps on the run clock and the metrics derived from them.

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Which part of a run a request belongs to.
///
/// Warmup and ramp-up requests are recorded (so the request files show them) but never enter
/// statistics; ramp-up requests do appear in a duration run's time series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Sent before measurement to warm the engine; excluded from every statistic.
    Warmup,
    /// Sent while users were still being added (`--ramp-up`); excluded from statistics.
    RampUp,
    /// Part of the measured load.
    Measure,
}

impl Phase {
    /// The name used in the JSONL and CSV files (`"warmup"`, `"ramp_up"` or `"measure"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Warmup => "warmup",
            Phase::RampUp => "ramp_up",
            Phase::Measure => "measure",
        }
    }
}

/// Finish reasons, in the words both targets report (the OpenAI words the gRPC protocol uses),
/// that end a request without its answer: such a request counts as failed.
pub const UNSUCCESSFUL_FINISH_REASONS: [&str; 2] = ["abort", "timeout"];

/// One streamed response that carried at least one token.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RecordedChunk {
    /// Receive time, seconds since the run start.
    pub t_s: f64,
    /// Number of new tokens in this response (more than one under speculative decoding).
    pub tokens: u32,
    /// When the runner's task handled this response, seconds since the run start (in process
    /// only: `t_s` is then the response thread's receive stamp, and the difference is what the
    /// async runtime added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handled_s: Option<f64>,
}

/// Executor-side timestamps from `RequestPerfMetrics`, converted to seconds since the run start.
///
/// Each field is optional because the executor leaves a stamp unset when the event never
/// happened (for example no first token on a request cancelled while queued).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerTimes {
    /// When the executor took the request off its input queue (`arrivalTime`).
    pub arrival_s: Option<f64>,
    /// When the scheduler first scheduled the request (`firstScheduledTime`).
    pub first_scheduled_s: Option<f64>,
    /// When the executor produced the first token (`firstTokenTime`).
    pub first_token_s: Option<f64>,
    /// When the executor produced the last token (`lastTokenTime`).
    pub last_token_s: Option<f64>,
    /// Executor iteration that produced the first token (in process only).
    #[serde(default)]
    pub first_iter: Option<u64>,
    /// Executor iteration that produced the last token (in process only).
    #[serde(default)]
    pub last_iter: Option<u64>,
}

/// Everything measured about one request.
///
/// All times are `f64` seconds since the run start on one monotonic clock (see [`RunClock`]);
/// plain numbers keep the JSONL/CSV rows readable and let server-side stamps, converted to the
/// same origin, be subtracted directly. Derived values are methods and are `None` when the
/// stamps they need are missing.
///
/// A request is *successful* when [`error`](Self::error) is `None`; [`finish`](Self::finish)
/// with a cancelled or timed-out reason sets an error.
///
/// A non-streaming request ([`streaming`](Self::streaming) false) has one response, the final
/// one: it has an E2E latency but no TTFT, TPOT or ITL (its first token is not observable).
///
/// ```rust
/// use trtllm::bench::{Phase, RequestRecord};
///
/// let mut r = RequestRecord::new(0, Phase::Measure, 1.0);
/// r.record_chunk(1.2, 1); // first token after 200 ms
/// r.record_chunk(1.3, 2); // two tokens 100 ms later
/// r.finish(1.3, 3, Some("length".into()));
/// assert!((r.ttft_s().unwrap() - 0.2).abs() < 1e-12);
/// assert!((r.e2el_s().unwrap() - 0.3).abs() < 1e-12);
/// assert!((r.tpot_s().unwrap() - 0.05).abs() < 1e-12); // (0.3 - 0.2) / (3 - 1)
/// assert_eq!(r.itl_s().len(), 1); // one gap between two chunks
/// assert_eq!(r.itl_per_token_s().len(), 2); // that gap split over its two tokens
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Position of the request in the run (warmup and measured requests share one sequence).
    pub index: u64,
    /// Warmup, ramp-up or measured.
    pub phase: Phase,
    /// Whether tokens were streamed; without streaming only E2E latency is observable.
    #[serde(default = "streaming_default")]
    pub streaming: bool,
    /// When the load generator meant to send it (open-loop rate mode); `None` in closed loop.
    #[serde(default)]
    pub scheduled_send_s: Option<f64>,
    /// Just before `enqueueRequest` (or the RPC).
    pub send_s: f64,
    /// First response that carried at least one token.
    #[serde(default)]
    pub first_token_s: Option<f64>,
    /// Every response that carried tokens, in arrival order; the first one is the first token.
    #[serde(default)]
    pub chunks: Vec<RecordedChunk>,
    /// The final response (or the error), whichever ended the request.
    #[serde(default)]
    pub end_s: Option<f64>,
    /// Token ids actually enqueued.
    pub prompt_tokens: u64,
    /// Tokens the executor returned (its own count, never re-tokenized text).
    #[serde(default)]
    pub output_tokens: u64,
    /// Output length the workload asked for (the fixed length, or the dataset's expected
    /// length under natural stopping); `None` when it named none.
    #[serde(default)]
    pub expected_output_tokens: Option<u64>,
    /// Prompt tokens served from reused KV-cache blocks.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Finish reason in the OpenAI words both targets use (`"length"`, `"stop"`, `"abort"`,
    /// `"timeout"`, `"unknown"`), if the request finished.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Error message; `Some` marks the request as failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Time the request waited in the runner for a concurrency slot, seconds.
    #[serde(default)]
    pub client_queue_s: f64,
    /// Executor-side stamps when `returnPerfMetrics` was on.
    #[serde(default)]
    pub server: Option<ServerTimes>,
    /// The LoRA adapter's task id (`--lora-adapters`).
    #[serde(default)]
    pub lora_task: Option<u64>,
    /// The adapter went with its weights (not in the executor's host cache), not by id alone.
    #[serde(default)]
    pub lora_with_weights: bool,
    /// Speculative decoding: steps and draft tokens, when the target reported any drafts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<crate::bench::metrics::speculative::SpecCounts>,
    /// Output tokens counted by re-tokenizing the streamed text with the client's tokenizer (as
    /// vLLM's bench does); only the OpenAI-compatible HTTP target fills it, beside the server's
    /// `usage` count in `output_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_output_tokens: Option<u64>,
    /// The multi-turn session the request belongs to (`--turns`, ShareGPT conversations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    /// Its turn in the session, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// A disaggregated request's legs and the stamps that split its TTFT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disagg: Option<crate::bench::metrics::disagg::DisaggTimes>,
    /// The generated token ids, kept for a session's next turn only (never written out).
    #[serde(skip)]
    pub answer_ids: Vec<u32>,
    /// The generated text (an HTTP target), kept for a session's next turn only.
    #[serde(skip)]
    pub answer_text: Option<String>,
}

impl RequestRecord {
    /// A record for a request sent at `send_s` (seconds since the run start) with nothing received
    /// yet.
    pub fn new(index: u64, phase: Phase, send_s: f64) -> Self {
        Self {
            index,
            phase,
            streaming: true,
            scheduled_send_s: None,
            send_s,
            first_token_s: None,
            chunks: Vec::new(),
            end_s: None,
            prompt_tokens: 0,
            output_tokens: 0,
            expected_output_tokens: None,
            cached_tokens: 0,
            finish_reason: None,
            error: None,
            client_queue_s: 0.0,
            server: None,
            lora_task: None,
            lora_with_weights: false,
            speculative: None,
            client_output_tokens: None,
            session: None,
            turn: None,
            disagg: None,
            answer_ids: Vec::new(),
            answer_text: None,
        }
    }

    /// Records a streamed response received at `t_s` carrying `tokens` new tokens.
    ///
    /// Responses without tokens are ignored here (they do not start TTFT nor make an ITL gap);
    /// the final one still ends the request through [`finish`](Self::finish).
    pub fn record_chunk(&mut self, t_s: f64, tokens: u32) {
        if tokens == 0 {
            return;
        }
        if self.first_token_s.is_none() {
            self.first_token_s = Some(t_s);
        }
        self.chunks.push(RecordedChunk { t_s, tokens, handled_s: None });
    }

    /// Like [`record_chunk`](Self::record_chunk), also noting when the runner handled the response.
    pub fn record_chunk_handled(&mut self, t_s: f64, tokens: u32, handled_s: f64) {
        self.record_chunk(t_s, tokens);
        if tokens > 0
            && let Some(last) = self.chunks.last_mut()
        {
            last.handled_s = Some(handled_s);
        }
    }

    /// Marks the request finished at `end_s` with the executor's token count and finish reason.
    ///
    /// A reason in [`UNSUCCESSFUL_FINISH_REASONS`] (cancelled, timed out) also records an error,
    /// so the request counts as failed rather than as a short success.
    pub fn finish(&mut self, end_s: f64, output_tokens: u64, finish_reason: Option<String>) {
        self.end_s = Some(end_s);
        self.release_spare_room();
        self.output_tokens = output_tokens;
        if let Some(reason) = finish_reason.as_deref().filter(|r| UNSUCCESSFUL_FINISH_REASONS.contains(r))
            && self.error.is_none()
        {
            self.error = Some(format!("request ended with finish reason {reason:?}"));
        }
        self.finish_reason = finish_reason;
    }

    /// Marks the request failed at `end_s` with an error message.
    pub fn fail(&mut self, end_s: f64, error: impl Into<String>) {
        self.end_s = Some(end_s);
        self.error = Some(error.into());
        self.release_spare_room();
    }

    /// A streaming record reserves room for its whole `max_tokens` up front (no regrowth per
    /// token); a finished one keeps only what it used, so a long run's records stay the size of
    /// their tokens.
    fn release_spare_room(&mut self) {
        self.chunks.shrink_to_fit();
    }

    /// True when no error was recorded.
    pub fn is_success(&self) -> bool {
        self.error.is_none()
    }

    /// True for measured (not warmup, not ramp-up) requests.
    pub fn is_measured(&self) -> bool {
        self.phase == Phase::Measure
    }

    /// Tokens received over all chunks.
    pub fn chunk_tokens(&self) -> u64 {
        self.chunks.iter().map(|c| u64::from(c.tokens)).sum()
    }

    /// Receive time of the last token: the last chunk, else the first-token stamp.
    pub fn last_token_s(&self) -> Option<f64> {
        self.chunks.last().map(|c| c.t_s).or(self.first_token_s)
    }

    /// Time to first token: first token − send (streaming requests only).
    pub fn ttft_s(&self) -> Option<f64> {
        if !self.streaming {
            return None;
        }
        self.first_token_s.map(|t| t - self.send_s)
    }

    /// End-to-end latency: last token received − send; for a request that received no token,
    /// end − send.
    pub fn e2el_s(&self) -> Option<f64> {
        self.last_token_s().or(self.end_s).map(|t| t - self.send_s)
    }

    /// Time per output token after the first: (E2EL − TTFT) / (output_tokens − 1), only for a
    /// streaming request whose executor returned more than one token.
    pub fn tpot_s(&self) -> Option<f64> {
        if self.output_tokens <= 1 {
            return None;
        }
        let (e2el, ttft) = (self.e2el_s()?, self.ttft_s()?);
        Some((e2el - ttft) / (self.output_tokens - 1) as f64)
    }

    /// Gaps between consecutive token-carrying responses (vLLM's per-chunk ITL).
    pub fn itl_s(&self) -> Vec<f64> {
        self.chunks.windows(2).map(|w| w[1].t_s - w[0].t_s).collect()
    }

    /// Inter-token latency attributed per token: each chunk gap divided by the tokens of the
    /// chunk that closed it, once per token.
    ///
    /// Extra tokens that arrived together with the first token get a gap of zero, so a request
    /// yields `tokens − 1` values that sum to `last token − first token`; their mean equals the
    /// request's TPOT when the executor's count matches the streamed tokens.
    pub fn itl_per_token_s(&self) -> Vec<f64> {
        let mut out = Vec::new();
        let Some(first) = self.chunks.first() else {
            return out;
        };
        out.extend(std::iter::repeat_n(0.0, first.tokens.saturating_sub(1) as usize));
        for w in self.chunks.windows(2) {
            let per_token = (w[1].t_s - w[0].t_s) / f64::from(w[1].tokens);
            out.extend(std::iter::repeat_n(per_token, w[1].tokens as usize));
        }
        out
    }

    /// Output tokens per second of this request alone: output tokens / E2E latency (the figure a
    /// non-streaming client can measure); `None` without tokens or time.
    pub fn output_tokens_per_s(&self) -> Option<f64> {
        let e2el = self.e2el_s()?;
        (self.output_tokens > 0 && e2el > 0.0).then(|| self.output_tokens as f64 / e2el)
    }

    /// Whether the executor returned a different number of tokens than the workload asked for.
    pub fn output_len_mismatch(&self) -> bool {
        self.expected_output_tokens.is_some_and(|e| e != self.output_tokens)
    }

    /// The runner's first-token measurement error: client-side first-token time − the executor's
    /// firstTokenTime (streaming only). Unlike [`runner_overhead_s`](Self::runner_overhead_s) it
    /// excludes the executor's input-queue wait.
    pub fn ttft_measurement_error_s(&self) -> Option<f64> {
        if !self.streaming {
            return None;
        }
        Some(self.first_token_s? - self.server?.first_token_s?)
    }

    /// Per response: when the runner handled it − when the response thread received it.
    pub fn runner_scheduling_delays_s(&self) -> impl Iterator<Item = f64> + '_ {
        self.chunks.iter().filter_map(|c| c.handled_s.map(|h| h - c.t_s))
    }

    /// Actual send − scheduled send (open-loop rate mode only).
    pub fn dispatch_delay_s(&self) -> Option<f64> {
        self.scheduled_send_s.map(|s| self.send_s - s)
    }

    /// Executor queue time: firstScheduledTime − arrivalTime.
    pub fn server_queue_s(&self) -> Option<f64> {
        let s = self.server?;
        Some(s.first_scheduled_s? - s.arrival_s?)
    }

    /// Executor TTFT: firstTokenTime − arrivalTime (excludes the executor's input-queue wait).
    pub fn server_ttft_s(&self) -> Option<f64> {
        let s = self.server?;
        Some(s.first_token_s? - s.arrival_s?)
    }

    /// Executor prefill time: firstTokenTime − firstScheduledTime.
    pub fn server_prefill_s(&self) -> Option<f64> {
        let s = self.server?;
        Some(s.first_token_s? - s.first_scheduled_s?)
    }

    /// Executor TPOT: (lastTokenTime − firstTokenTime) / (output_tokens − 1), only with more than
    /// one output token.
    pub fn server_tpot_s(&self) -> Option<f64> {
        if self.output_tokens <= 1 {
            return None;
        }
        let s = self.server?;
        Some((s.last_token_s? - s.first_token_s?) / (self.output_tokens - 1) as f64)
    }

    /// What the transport and runner add to TTFT: client TTFT − executor TTFT.
    pub fn runner_overhead_s(&self) -> Option<f64> {
        Some(self.ttft_s()? - self.server_ttft_s()?)
    }
}

fn streaming_default() -> bool {
    true
}

/// The run's time origin: converts [`Instant`]s into the `f64` second offsets records use.
///
/// ```rust
/// use std::time::{Duration, Instant};
/// use trtllm::bench::RunClock;
///
/// let t0 = Instant::now();
/// let clock = RunClock::from_instant(t0);
/// assert!((clock.offset_s(t0 + Duration::from_millis(1500)) - 1.5).abs() < 1e-9);
/// assert!(clock.offset_s(t0) == 0.0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    start: Instant,
}

impl RunClock {
    /// A clock whose origin is now.
    pub fn start() -> Self {
        Self { start: Instant::now() }
    }

    /// A clock with the given origin.
    pub fn from_instant(start: Instant) -> Self {
        Self { start }
    }

    /// The origin.
    pub fn origin(&self) -> Instant {
        self.start
    }

    /// Seconds from the origin to `t`; negative when `t` precedes the origin.
    pub fn offset_s(&self, t: Instant) -> f64 {
        match t.checked_duration_since(self.start) {
            Some(d) => d.as_secs_f64(),
            None => -(self.start - t).as_secs_f64(),
        }
    }

    /// Seconds from the origin to now.
    pub fn now_s(&self) -> f64 {
        self.offset_s(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_finished_record_keeps_only_the_room_its_chunks_use() {
        for end in [(|r: &mut RequestRecord| r.finish(1.0, 3, Some("length".into()))) as fn(&mut RequestRecord), |r| {
            r.fail(1.0, "boom")
        }] {
            let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
            r.chunks.reserve(4096);
            for i in 0..3 {
                r.record_chunk(0.1 * f64::from(i + 1), 1);
            }
            end(&mut r);
            assert_eq!(r.chunks.len(), 3);
            assert!(r.chunks.capacity() < 64, "capacity {} kept after the end", r.chunks.capacity());
        }
    }

    #[test]
    fn zero_token_chunks_do_not_start_ttft() {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.record_chunk(0.1, 0);
        r.record_chunk(0.3, 1);
        assert_eq!(r.first_token_s, Some(0.3));
        assert_eq!(r.chunks.len(), 1);
    }

    #[test]
    fn single_token_request_has_no_tpot() {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.record_chunk(0.5, 1);
        r.finish(0.5, 1, None);
        assert_eq!(r.tpot_s(), None);
        assert!(r.itl_s().is_empty());
        assert!(close(r.e2el_s().unwrap(), 0.5));
    }

    #[test]
    fn e2el_uses_last_token_not_a_later_empty_final() {
        let mut r = RequestRecord::new(0, Phase::Measure, 1.0);
        r.record_chunk(1.1, 1);
        r.record_chunk(1.2, 1);
        r.finish(1.9, 2, Some("length".into()));
        assert!(close(r.e2el_s().unwrap(), 0.2));
    }

    #[test]
    fn failed_before_any_token_measures_to_the_error() {
        let mut r = RequestRecord::new(0, Phase::Measure, 1.0);
        r.fail(1.25, "prompt too long");
        assert!(!r.is_success());
        assert_eq!(r.ttft_s(), None);
        assert!(close(r.e2el_s().unwrap(), 0.25));
    }

    #[test]
    fn per_token_itl_splits_multi_token_chunks() {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        r.record_chunk(0.1, 2); // first token plus one riding along
        r.record_chunk(0.4, 3); // 0.3 s gap over 3 tokens
        r.record_chunk(0.5, 1);
        r.finish(0.5, 6, None);
        let per_token = r.itl_per_token_s();
        let expected = [0.0, 0.1, 0.1, 0.1, 0.1];
        assert_eq!(per_token.len(), expected.len());
        for (a, b) in per_token.iter().zip(expected) {
            assert!(close(*a, b), "{per_token:?}");
        }
        let chunk_gaps = r.itl_s();
        assert_eq!(chunk_gaps.len(), 2);
        assert!(close(chunk_gaps[0], 0.3) && close(chunk_gaps[1], 0.1));
        let mean = per_token.iter().sum::<f64>() / per_token.len() as f64;
        assert!(close(mean, r.tpot_s().unwrap()));
    }

    #[test]
    fn server_side_values_and_overhead() {
        let mut r = RequestRecord::new(0, Phase::Measure, 10.0);
        r.record_chunk(10.5, 1);
        r.record_chunk(10.9, 1);
        r.finish(10.9, 5, None);
        r.server = Some(ServerTimes {
            arrival_s: Some(10.1),
            first_scheduled_s: Some(10.15),
            first_token_s: Some(10.45),
            last_token_s: Some(10.85),
            ..ServerTimes::default()
        });
        assert!(close(r.server_queue_s().unwrap(), 0.05));
        assert!(close(r.server_ttft_s().unwrap(), 0.35));
        assert!(close(r.server_prefill_s().unwrap(), 0.30));
        assert!(close(r.server_tpot_s().unwrap(), 0.1));
        assert!(close(r.runner_overhead_s().unwrap(), 0.15));
    }

    #[test]
    fn dispatch_delay_only_with_schedule() {
        let mut r = RequestRecord::new(0, Phase::Measure, 2.003);
        assert_eq!(r.dispatch_delay_s(), None);
        r.scheduled_send_s = Some(2.0);
        assert!(close(r.dispatch_delay_s().unwrap(), 0.003));
    }

    #[test]
    fn run_clock_offsets_before_origin_are_negative() {
        let t0 = Instant::now();
        let clock = RunClock::from_instant(t0 + std::time::Duration::from_secs(1));
        assert!(close(clock.offset_s(t0), -1.0));
    }

    #[test]
    fn record_round_trips_through_json() {
        let mut r = RequestRecord::new(3, Phase::Warmup, 0.25);
        r.record_chunk(0.5, 2);
        r.fail(0.7, "boom, \"quoted\"");
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"phase\":\"warmup\""));
        let back: RequestRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}
