//! [`SummaryBuilder`]: computes a [`Summary`] from the request records of a point.

use std::collections::BTreeMap;

use super::engine_section::EngineSection;
use super::sections::{ClockSection, PredictionSection, RunMetadata, SummarySections, WorkloadSection};
use super::summary::Summary;
use super::summary_sections::{ClockKind, DetailedArrays, FailedRequest, RunInfo, ServerStats, TokenStats};
use crate::bench::metrics::calibration::Calibration;
use crate::bench::metrics::iteration_summary::{IterSection, KvSection};
use crate::bench::metrics::load_shape::{SteadyWindow, arrival_sync, sessions_by_turn};
use crate::bench::metrics::record::{Phase, RequestRecord};
use crate::bench::metrics::slo::Slos;
use crate::bench::metrics::speculative::SpeculativeSummary;
use crate::bench::metrics::stats::{DEFAULT_PERCENTILES, Distribution, StatsError, validate_percentile};
use crate::bench::metrics::throughput::Throughput;

/// Errors from building a [`Summary`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SummaryError {
    /// A configured percentile is outside 0..=100.
    #[error("invalid percentile: {0}")]
    Percentile(#[from] StatsError),
}

/// Options for [`Summary::builder`].
#[derive(Debug, Clone)]
pub struct SummaryBuilder {
    run: RunInfo,
    percentiles: Vec<f64>,
    slos: Option<Slos>,
    detailed: bool,
    iteration_end_s: BTreeMap<u64, f64>,
    clock: Option<ClockSection>,
    sections: SummarySections,
}

impl SummaryBuilder {
    /// Percentiles to report (default p50, p90, p95, p99).
    pub fn percentiles(mut self, percentiles: &[f64]) -> Self {
        self.percentiles = percentiles.to_vec();
        self
    }

    /// SLOs for `request_goodput` (without them `request_goodput` is `null`, as in vLLM).
    pub fn slos(mut self, slos: Slos) -> Self {
        self.slos = Some(slos);
        self
    }

    /// Whether to include the per-request arrays (`input_lens`, `ttfts`, `itls`, ...).
    pub fn detailed(mut self, detailed: bool) -> Self {
        self.detailed = detailed;
        self
    }

    /// End time (seconds on the run clock) of each executor iteration, by number, for the
    /// per-response ITL measurement error in `calibration`.
    pub fn iteration_end_times(mut self, iteration_end_s: BTreeMap<u64, f64>) -> Self {
        self.iteration_end_s = iteration_end_s;
        self
    }

    /// Says which clock the records' times come from (written as `clock`). On the virtual
    /// clock the runner's measurement error (`calibration`) is not computed: client and
    /// executor times are then the same figures.
    pub fn clock(mut self, clock: ClockSection) -> Self {
        self.clock = Some(clock);
        self
    }

    /// The `engine` section.
    pub fn engine(mut self, engine: EngineSection) -> Self {
        self.sections.engine = Some(engine);
        self
    }

    /// The `workload` section.
    pub fn workload(mut self, workload: WorkloadSection) -> Self {
        self.sections.workload = Some(workload);
        self
    }

    /// The `kv` section.
    pub fn kv(mut self, kv: KvSection) -> Self {
        self.sections.kv = Some(kv);
        self
    }

    /// The `iter` section.
    pub fn iter(mut self, iter: IterSection) -> Self {
        self.sections.iter = Some(iter);
        self
    }

    /// The `prediction` section (the performance model's expectation next to the measurement).
    pub fn prediction(mut self, prediction: PredictionSection) -> Self {
        self.sections.prediction = Some(prediction);
        self
    }

    /// The `metadata` section.
    pub fn metadata(mut self, metadata: RunMetadata) -> Self {
        self.sections.metadata = Some(metadata);
        self
    }

    /// Computes the summary. Warmup requests are counted but excluded from every statistic;
    /// only successful measured requests enter latency statistics.
    pub fn build(self, records: &[RequestRecord]) -> Result<Summary, SummaryError> {
        for &p in &self.percentiles {
            validate_percentile(p)?;
        }
        let ps = &self.percentiles;
        let measured: Vec<&RequestRecord> = records.iter().filter(|r| r.is_measured()).collect();
        let ok: Vec<&RequestRecord> = measured.iter().copied().filter(|r| r.is_success()).collect();
        let ms = |f: &dyn Fn(&RequestRecord) -> Option<f64>| -> Distribution {
            Distribution::from_samples(ok.iter().filter_map(|r| f(r)).map(to_ms).collect(), ps)
        };
        let pooled = |f: &dyn Fn(&RequestRecord) -> Vec<f64>| -> Distribution {
            Distribution::from_samples(ok.iter().flat_map(|r| f(r)).map(to_ms).collect(), ps)
        };

        let with_server: Vec<&RequestRecord> = ok.iter().copied().filter(|r| r.server.is_some()).collect();
        let server = (!with_server.is_empty()).then(|| {
            let dist = |f: fn(&RequestRecord) -> Option<f64>| {
                Distribution::from_samples(with_server.iter().filter_map(|r| f(r)).map(to_ms).collect(), ps)
            };
            ServerStats {
                requests: with_server.len() as u64,
                queue: dist(RequestRecord::server_queue_s),
                ttft: dist(RequestRecord::server_ttft_s),
                prefill: dist(RequestRecord::server_prefill_s),
                tpot: dist(RequestRecord::server_tpot_s),
                runner_overhead: dist(RequestRecord::runner_overhead_s),
            }
        });

        let failed_requests = measured
            .iter()
            .filter(|r| !r.is_success())
            .map(|r| FailedRequest {
                index: r.index,
                error: r.error.clone().unwrap_or_default(),
                prompt_len: r.prompt_tokens,
                start_time: r.send_s,
                latency: failure_latency_s(r),
                ttft: r.ttft_s().unwrap_or(0.0),
                output_tokens: r.output_tokens,
                itl: r.itl_s(),
            })
            .collect();

        let detailed = self.detailed.then(|| detailed_arrays(&measured));
        let mut run = self.run;
        run.num_prompts.get_or_insert(measured.len() as u64);
        let streaming = measured.iter().all(|r| r.streaming);
        let given = self.slos.filter(|s| !s.is_empty());
        let throughput = Throughput::compute(records, given.as_ref());
        let slos = given.map(|s| s.applicable_to(streaming)).filter(|s| !s.is_empty());
        let slos_not_applicable = given.map(|s| s.not_applicable_to(streaming)).filter(|s| !s.is_empty());
        let tokens = TokenStats::compute(&ok);
        let concurrency = run.max_concurrency.map_or(throughput.mean_concurrent_requests, |c| c as f64);
        let count_phase = |phase: Phase| records.iter().filter(|r| r.phase == phase).count() as u64;

        Ok(Summary {
            ttft: ms(&RequestRecord::ttft_s),
            tpot: ms(&RequestRecord::tpot_s),
            itl: pooled(&RequestRecord::itl_s),
            e2el: ms(&RequestRecord::e2el_s),
            itl_per_token: pooled(&RequestRecord::itl_per_token_s),
            request_output_throughput: Distribution::from_samples(
                ok.iter().filter_map(|r| r.output_tokens_per_s()).collect(),
                ps,
            ),
            streaming,
            inflight_input_tokens: concurrency * tokens.prompt.mean().unwrap_or(0.0),
            tokens,
            client_queue: ms(&|r| Some(r.client_queue_s)),
            dispatch_delay: ms(&RequestRecord::dispatch_delay_s),
            server,
            failed_requests,
            detailed,
            slos,
            slos_not_applicable,
            warmup_requests: count_phase(Phase::Warmup),
            ramp_up_requests: count_phase(Phase::RampUp),
            calibration: match self.clock.as_ref().map(|c| c.kind) {
                Some(ClockKind::Virtual) => None,
                _ => Calibration::compute(records, &self.iteration_end_s, ps),
            },
            clock: self.clock,
            throughput,
            run,
            sections: SummarySections {
                sessions: sessions_by_turn(records, ps),
                arrivals: (!measured.is_empty()).then(|| arrival_sync(records)),
                steady_state: SteadyWindow::find(records).map(|w| w.section(records, ps)),
                disaggregation: crate::bench::metrics::disagg_summary::split_section(records, ps),
                ..self.sections
            },
            speculative: SpeculativeSummary::compute(
                ok.iter().filter_map(|r| r.speculative.as_ref().map(|c| (r.output_tokens, c))),
            ),
        })
    }
}

fn to_ms(seconds: f64) -> f64 {
    seconds * 1000.0
}

/// How long a failed request ran: send to the error (to its last token if no end was stamped).
fn failure_latency_s(r: &RequestRecord) -> f64 {
    r.end_s.map(|e| e - r.send_s).or_else(|| r.e2el_s()).unwrap_or(0.0)
}

fn detailed_arrays(measured: &[&RequestRecord]) -> DetailedArrays {
    let mut d = DetailedArrays::default();
    for r in measured {
        let ok = r.is_success();
        d.input_lens.push(r.prompt_tokens);
        d.output_lens.push(if ok { r.output_tokens } else { 0 });
        d.ttfts.push(r.ttft_s().unwrap_or(0.0));
        d.itls.push(r.itl_s());
        d.latencies.push(if ok { r.e2el_s().unwrap_or(0.0) } else { failure_latency_s(r) });
        d.start_times.push(r.send_s);
        d.queue_times.push(r.client_queue_s);
        d.errors.push(r.error.clone().unwrap_or_default());
    }
    d
}

impl Summary {
    /// Starts a summary for a run described by `run`.
    pub fn builder(run: RunInfo) -> SummaryBuilder {
        SummaryBuilder {
            run,
            percentiles: DEFAULT_PERCENTILES.to_vec(),
            slos: None,
            detailed: false,
            iteration_end_s: BTreeMap::new(),
            clock: None,
            sections: SummarySections::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::record::{Phase, ServerTimes};

    fn ok(index: u64, send: f64, ttft: f64, gaps: &[f64]) -> RequestRecord {
        let mut r = RequestRecord::new(index, Phase::Measure, send);
        r.prompt_tokens = 10;
        let mut t = send + ttft;
        r.record_chunk(t, 1);
        for g in gaps {
            t += g;
            r.record_chunk(t, 1);
        }
        r.finish(t, 1 + gaps.len() as u64, Some("length".into()));
        r
    }

    #[test]
    fn warmup_is_excluded_but_counted() {
        let mut w = ok(0, 0.0, 5.0, &[1.0]);
        w.phase = Phase::Warmup;
        let m = ok(1, 10.0, 0.1, &[0.01]);
        let s = Summary::builder(RunInfo::default()).build(&[w, m]).unwrap();
        assert_eq!(s.warmup_requests, 1);
        assert_eq!(s.throughput.completed, 1);
        assert_eq!(s.ttft.count(), 1);
        assert!((s.ttft.mean().unwrap() - 100.0).abs() < 1e-9);
        assert_eq!(s.run.num_prompts, Some(1));
    }

    #[test]
    fn percentiles_must_be_within_0_and_100() {
        let err = Summary::builder(RunInfo::default()).percentiles(&[50.0, 120.0]).build(&[]).unwrap_err();
        assert!(matches!(err, SummaryError::Percentile(_)));
    }

    #[test]
    fn server_block_only_with_server_times() {
        let mut a = ok(0, 0.0, 0.2, &[0.1, 0.1]);
        let s = Summary::builder(RunInfo::default()).build(std::slice::from_ref(&a)).unwrap();
        assert!(s.to_json().get("server").is_none());
        a.server = Some(ServerTimes {
            arrival_s: Some(0.05),
            first_scheduled_s: Some(0.06),
            first_token_s: Some(0.15),
            last_token_s: Some(0.35),
            ..ServerTimes::default()
        });
        let json = Summary::builder(RunInfo::default()).percentiles(&[99.0]).build(&[a]).unwrap().to_json();
        let server = &json["server"];
        assert_eq!(server["requests"], 1);
        assert!((server["mean_queue_ms"].as_f64().unwrap() - 10.0).abs() < 1e-9);
        assert!((server["p99_ttft_ms"].as_f64().unwrap() - 100.0).abs() < 1e-9);
        assert!((server["mean_prefill_ms"].as_f64().unwrap() - 90.0).abs() < 1e-9);
        assert!((server["mean_tpot_ms"].as_f64().unwrap() - 100.0).abs() < 1e-9);
        assert!((server["mean_runner_overhead_ms"].as_f64().unwrap() - 100.0).abs() < 1e-9);
    }

    #[test]
    fn finite_rate_is_a_number() {
        let run = RunInfo { request_rate: 2.5, ..RunInfo::default() };
        let json = Summary::builder(run).build(&[]).unwrap().to_json();
        assert_eq!(json["request_rate"], 2.5);
        assert_eq!(json["request_goodput"], serde_json::Value::Null);
        assert_eq!(json["num_prompts"], 0);
    }

    #[test]
    fn serialized_order_starts_with_setup_keys() {
        let s = Summary::builder(RunInfo::default()).build(&[]).unwrap();
        let text = serde_json::to_string(&s).unwrap();
        let date = text.find("\"date\"").unwrap();
        let duration = text.find("\"duration\"").unwrap();
        let ttft = text.find("\"mean_ttft_ms\"").unwrap();
        assert!(date < duration && duration < ttft);
    }
}
