//! Layers side by side: what each target (gRPC server, gateway, ...) adds to TTFT and ITL over a
//! baseline run of the same workload, with the executor's own first-token stamps as the common
//! reference where a layer returns them.

use serde::{Deserialize, Serialize};

use super::csv::{opt_num, push_row};
use crate::bench::metrics::record::RequestRecord;
use crate::bench::metrics::stats::percentile;

/// The latency figures of one layer on one sweep point (milliseconds; successful measured
/// streaming requests only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayerFigures {
    /// The target as given on the command line (`inprocess`, `grpc://...`, `http://.../v1`).
    pub layer: String,
    /// Successful measured requests.
    pub completed: u64,
    /// Failed measured requests.
    pub failed: u64,
    /// Median client TTFT.
    pub p50_ttft_ms: Option<f64>,
    /// 99th-percentile client TTFT.
    pub p99_ttft_ms: Option<f64>,
    /// Median per-chunk ITL.
    pub p50_itl_ms: Option<f64>,
    /// 99th-percentile per-chunk ITL.
    pub p99_itl_ms: Option<f64>,
    /// Median of client first token − the executor's first-token stamp, per request: everything
    /// between the executor producing the first token and the client seeing it. `None` when the
    /// layer returns no executor stamps (an OpenAI endpoint).
    pub p50_after_executor_ms: Option<f64>,
    /// 99th percentile of the same.
    pub p99_after_executor_ms: Option<f64>,
    /// Median of client TTFT − the executor's own TTFT (its arrival to its first token), per
    /// request of this run: what the layer costs both ways (the request in, the first token
    /// out), without the executor's queueing and whatever the run's arrivals did to it. `None`
    /// without executor stamps.
    #[serde(default)]
    pub p50_client_minus_executor_ttft_ms: Option<f64>,
    /// 99th percentile of the same.
    #[serde(default)]
    pub p99_client_minus_executor_ttft_ms: Option<f64>,
}

impl LayerFigures {
    /// The figures of `records` (one point's records; warmup and failures are left out).
    ///
    /// ```rust
    /// use trtllm::bench::{LayerFigures, Phase, RequestRecord};
    ///
    /// let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
    /// r.record_chunk(0.010, 1);
    /// r.record_chunk(0.015, 1);
    /// r.finish(0.015, 2, Some("length".into()));
    /// let figures = LayerFigures::from_records("inprocess", &[r]);
    /// assert_eq!(figures.completed, 1);
    /// assert!((figures.p50_ttft_ms.unwrap() - 10.0).abs() < 1e-9);
    /// assert!((figures.p99_itl_ms.unwrap() - 5.0).abs() < 1e-9);
    /// assert_eq!(figures.p50_after_executor_ms, None);
    /// ```
    pub fn from_records(layer: &str, records: &[RequestRecord]) -> Self {
        let measured = records.iter().filter(|r| r.is_measured());
        let ok: Vec<&RequestRecord> = measured.clone().filter(|r| r.is_success()).collect();
        let ms = |values: Vec<f64>| values.into_iter().map(|s| s * 1e3).collect::<Vec<_>>();
        let ttft = ms(ok.iter().filter_map(|r| r.ttft_s()).collect());
        let itl = ms(ok.iter().flat_map(|r| r.itl_s()).collect());
        let after = ms(ok.iter().filter_map(|r| r.ttft_measurement_error_s()).collect());
        let cost = ms(ok.iter().filter_map(|r| r.runner_overhead_s()).collect());
        LayerFigures {
            layer: layer.to_owned(),
            completed: ok.len() as u64,
            failed: measured.filter(|r| !r.is_success()).count() as u64,
            p50_ttft_ms: percentile(&ttft, 50.0),
            p99_ttft_ms: percentile(&ttft, 99.0),
            p50_itl_ms: percentile(&itl, 50.0),
            p99_itl_ms: percentile(&itl, 99.0),
            p50_after_executor_ms: percentile(&after, 50.0),
            p99_after_executor_ms: percentile(&after, 99.0),
            p50_client_minus_executor_ttft_ms: percentile(&cost, 50.0),
            p99_client_minus_executor_ttft_ms: percentile(&cost, 99.0),
        }
    }
}

/// One sweep point measured through several layers; the first layer is the baseline the others
/// are compared with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LayerComparison {
    /// The point's file stem (`c256_in128_out128`).
    pub point: String,
    /// One entry per layer, baseline first.
    pub layers: Vec<LayerFigures>,
}

/// Column names of `layers.csv`, in order.
pub const LAYER_CSV_COLUMNS: [&str; 20] = [
    "point",
    "layer",
    "completed",
    "failed",
    "p50_ttft_ms",
    "p99_ttft_ms",
    "p50_itl_ms",
    "p99_itl_ms",
    "p50_after_executor_ms",
    "p99_after_executor_ms",
    "added_p50_ttft_ms",
    "added_p99_ttft_ms",
    "added_p50_itl_ms",
    "added_p99_itl_ms",
    "added_p50_after_executor_ms",
    "added_p99_after_executor_ms",
    "p50_client_minus_executor_ttft_ms",
    "p99_client_minus_executor_ttft_ms",
    "added_p50_client_minus_executor_ttft_ms",
    "added_p99_client_minus_executor_ttft_ms",
];

fn minus(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some(a? - b?)
}

impl LayerComparison {
    /// What `layer` adds over the baseline, per figure: (p50 TTFT, p99 TTFT, p50 ITL, p99 ITL,
    /// p50 and p99 after the executor's stamp, p50 and p99 client-minus-executor TTFT).
    fn added(&self, layer: &LayerFigures) -> [Option<f64>; 8] {
        let Some(base) = self.layers.first() else { return [None; 8] };
        [
            minus(layer.p50_ttft_ms, base.p50_ttft_ms),
            minus(layer.p99_ttft_ms, base.p99_ttft_ms),
            minus(layer.p50_itl_ms, base.p50_itl_ms),
            minus(layer.p99_itl_ms, base.p99_itl_ms),
            minus(layer.p50_after_executor_ms, base.p50_after_executor_ms),
            minus(layer.p99_after_executor_ms, base.p99_after_executor_ms),
            minus(layer.p50_client_minus_executor_ttft_ms, base.p50_client_minus_executor_ttft_ms),
            minus(layer.p99_client_minus_executor_ttft_ms, base.p99_client_minus_executor_ttft_ms),
        ]
    }

    /// A Markdown table: each layer's cost from the same run where the layer returns executor
    /// stamps (client TTFT − the executor's own TTFT, per request, and what that adds over the
    /// baseline's), then its figures and what they add over the baseline's run (`+x` columns,
    /// which also carry how differently the two runs' arrivals bunched; `n/a` where a layer has
    /// no such figure).
    ///
    /// ```rust
    /// use trtllm::bench::{LayerComparison, LayerFigures};
    ///
    /// let base = LayerFigures { layer: "inprocess".into(), p50_ttft_ms: Some(10.0), ..Default::default() };
    /// let grpc = LayerFigures { layer: "grpc://h:1".into(), p50_ttft_ms: Some(12.5), ..Default::default() };
    /// let table = LayerComparison { point: "c4".into(), layers: vec![base, grpc] }.markdown();
    /// assert!(table.lines().nth(4).unwrap().contains("| 12.50 | n/a | n/a | n/a | +2.50 |"));
    /// assert!(table.lines().nth(4).unwrap().starts_with("| grpc://h:1 | 0 | 0 | n/a | n/a | n/a | n/a |"));
    /// ```
    pub fn markdown(&self) -> String {
        let cell = |v: Option<f64>| v.map_or("n/a".to_owned(), |v| format!("{v:.2}"));
        let delta = |v: Option<f64>| v.map_or("n/a".to_owned(), |v| format!("{v:+.2}"));
        let mut out = format!(
            "point {}: latencies in ms. layer cost: client TTFT - the executor's own TTFT, per request \
             of the same run (the layer both ways, without executor queueing); +cost: added over {}'s. \
             +TTFT/+ITL: one run's figure minus the other's (also carries how differently the runs' \
             arrivals bunched). after executor: client first token - the executor's first-token stamp\n",
            self.point,
            self.layers.first().map_or("-", |l| l.layer.as_str())
        );
        out.push_str(
            "| layer | ok | failed | p50 layer cost | p99 layer cost | +p50 cost | +p99 cost | p50 TTFT | p99 TTFT | \
             p50 ITL | p99 ITL | +p50 TTFT | +p99 TTFT | +p50 ITL | +p99 ITL | p50 after executor | p99 after executor |\n",
        );
        out.push_str("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for layer in &self.layers {
            let added = self.added(layer);
            let row = [
                layer.layer.clone(),
                layer.completed.to_string(),
                layer.failed.to_string(),
                cell(layer.p50_client_minus_executor_ttft_ms),
                cell(layer.p99_client_minus_executor_ttft_ms),
                delta(added[6]),
                delta(added[7]),
                cell(layer.p50_ttft_ms),
                cell(layer.p99_ttft_ms),
                cell(layer.p50_itl_ms),
                cell(layer.p99_itl_ms),
                delta(added[0]),
                delta(added[1]),
                delta(added[2]),
                delta(added[3]),
                cell(layer.p50_after_executor_ms),
                cell(layer.p99_after_executor_ms),
            ];
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        out
    }
}

/// `layers.csv` (RFC 4180, CRLF line ends): one row per point and layer, with what the layer
/// adds over its point's baseline (empty fields where a figure does not exist).
pub fn layers_csv(points: &[LayerComparison]) -> String {
    let mut out = String::new();
    push_row(&mut out, LAYER_CSV_COLUMNS);
    for point in points {
        for layer in &point.layers {
            let added = point.added(layer);
            let mut row = vec![
                point.point.clone(),
                layer.layer.clone(),
                layer.completed.to_string(),
                layer.failed.to_string(),
                opt_num(layer.p50_ttft_ms),
                opt_num(layer.p99_ttft_ms),
                opt_num(layer.p50_itl_ms),
                opt_num(layer.p99_itl_ms),
                opt_num(layer.p50_after_executor_ms),
                opt_num(layer.p99_after_executor_ms),
            ];
            row.extend(added[..6].iter().copied().map(opt_num));
            row.push(opt_num(layer.p50_client_minus_executor_ttft_ms));
            row.push(opt_num(layer.p99_client_minus_executor_ttft_ms));
            row.extend(added[6..].iter().copied().map(opt_num));
            push_row(&mut out, row);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::metrics::record::{Phase, ServerTimes};

    fn record(first_token_s: f64, gaps: &[f64], executor_first_token_s: Option<f64>) -> RequestRecord {
        let mut r = RequestRecord::new(0, Phase::Measure, 0.0);
        let mut t = first_token_s;
        r.record_chunk(t, 1);
        for gap in gaps {
            t += gap;
            r.record_chunk(t, 1);
        }
        r.server = executor_first_token_s.map(|s| ServerTimes { first_token_s: Some(s), ..ServerTimes::default() });
        r.finish(t, 1 + gaps.len() as u64, Some("length".into()));
        r
    }

    #[test]
    fn warmup_and_failures_stay_out_of_the_figures() {
        let mut warm = record(5.0, &[], None);
        warm.phase = Phase::Warmup;
        let mut failed = record(9.0, &[], None);
        failed.fail(9.0, "boom");
        let figures = LayerFigures::from_records("x", &[warm, failed, record(0.002, &[0.001], Some(0.0015))]);
        assert_eq!((figures.completed, figures.failed), (1, 1));
        assert!((figures.p99_ttft_ms.unwrap() - 2.0).abs() < 1e-9);
        assert!((figures.p50_after_executor_ms.unwrap() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn the_csv_has_what_each_layer_adds_over_the_first() {
        let base = LayerFigures::from_records("inprocess", &[record(0.010, &[0.005], Some(0.0099))]);
        let http = LayerFigures::from_records("http://h/v1", &[record(0.013, &[0.006], None)]);
        let csv = layers_csv(&[LayerComparison { point: "c1".into(), layers: vec![base, http] }]);
        let rows: Vec<Vec<&str>> = csv.lines().map(|l| l.split(',').collect()).collect();
        assert_eq!(rows[0], LAYER_CSV_COLUMNS);
        let http = &rows[2];
        let added_ttft: f64 = http[10].parse().unwrap();
        let added_itl: f64 = http[12].parse().unwrap();
        assert!((added_ttft - 3.0).abs() < 1e-6 && (added_itl - 1.0).abs() < 1e-6, "{http:?}");
        // No executor stamps through an OpenAI endpoint: empty, not zero.
        assert_eq!((http[8], http[14]), ("", ""));
        // The baseline adds nothing over itself.
        assert_eq!(rows[1][10].parse::<f64>().unwrap(), 0.0);
    }
}
