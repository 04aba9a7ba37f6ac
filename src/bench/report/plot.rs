//! SVG charts of benchmark results: TTFT under input-token pressure, latency vs throughput, time series
//! (the sweep's points are [`super::sweep_points`]).

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;

use super::output::{OutputError, write_file};
use super::sweep_points::{LatencyMetric, LatencyThroughputPoint, PressurePoint};
use crate::bench::metrics::timeseries::TimeSample;
use crate::bench::telemetry::GpuSample;

/// Errors from drawing or writing a chart.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlotError {
    /// Nothing finite to draw.
    #[error("no data to plot for {0}")]
    NoData(&'static str),
    /// The drawing backend failed.
    #[error("drawing failed: {0}")]
    Draw(String),
    /// Writing the SVG file failed.
    #[error(transparent)]
    Output(#[from] OutputError),
}

fn draw_err(e: impl std::fmt::Display) -> PlotError {
    PlotError::Draw(e.to_string())
}

struct Series {
    label: String,
    points: Vec<(f64, f64)>,
    /// Text written beside each point (its load); empty for none.
    point_labels: Vec<String>,
}

impl Series {
    fn plain(label: &str, points: Vec<(f64, f64)>) -> Self {
        Series { label: label.to_owned(), points, point_labels: Vec::new() }
    }
}

/// Sweep lines in the order both sweep charts give them colours: by input, then output length,
/// numerically, so one shape has one colour in every chart.
type ShapeKey = (u64, u64, String);

fn shape_order(label: &str) -> ShapeKey {
    let number =
        |key: &str| label.split_whitespace().find_map(|w| w.strip_prefix(key)?.parse::<u64>().ok()).unwrap_or(u64::MAX);
    (number("in="), number("out="), label.to_owned())
}

/// One sweep line from `(x, y, load label)` points, in x order.
fn sweep_series(label: String, mut points: Vec<(f64, f64, String)>) -> Series {
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    let point_labels = points.iter().map(|p| p.2.clone()).collect();
    Series { label, points: points.into_iter().map(|(x, y, _)| (x, y)).collect(), point_labels }
}

struct Panel<'a> {
    title: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
    series: &'a [Series],
    legend: bool,
}

const SIZE: (u32, u32) = (900, 560);

/// p95 TTFT against in-flight input tokens (concurrency × actual prompt tokens, log scale), one
/// line per shape (coloured as in [`plot_latency_vs_throughput`]), each point labelled with its
/// load, as an SVG document.
///
/// ```rust
/// use trtllm::bench::{plot_ttft_vs_inflight_tokens, PressurePoint};
///
/// let points: Vec<PressurePoint> =
///     [1u64, 4, 16].iter().map(|&c| PressurePoint::closed(512, c, 512.0, 20.0 * c as f64)).collect();
/// let svg = plot_ttft_vs_inflight_tokens(&points).unwrap();
/// assert!(svg.contains("<svg") && svg.contains("in=512") && svg.contains("\nc16\n</text>"));
/// ```
pub fn plot_ttft_vs_inflight_tokens(points: &[PressurePoint]) -> Result<String, PlotError> {
    let series = pressure_series(points);
    let (x, y) = ranges(&series).ok_or(PlotError::NoData("TTFT vs in-flight tokens"))?;
    let x = (x.start / 1.25)..(x.end * 1.25);
    render(SIZE, |root| {
        draw_panel(
            root,
            &Panel {
                title: "p95 TTFT vs in-flight input tokens",
                x_desc: "in-flight input tokens (concurrency x prompt tokens)",
                y_desc: "p95 TTFT (ms)",
                series: &series,
                legend: true,
            },
            x.log_scale(),
            y,
        )
    })
}

/// Latency (p50 TPOT or TTFT) against output tokens per second, one line per shape with points
/// ordered by concurrency (or rate) and labelled with it, as an SVG document.
///
/// ```rust
/// use trtllm::bench::{plot_latency_vs_throughput, LatencyMetric, LatencyThroughputPoint};
///
/// let points: Vec<LatencyThroughputPoint> = [1u64, 2, 4]
///     .iter()
///     .map(|&c| LatencyThroughputPoint {
///         series: "in=128 out=128".into(),
///         load: c as f64,
///         load_label: format!("c{c}"),
///         output_throughput: 100.0 * c as f64,
///         latency_ms: 10.0 + c as f64,
///     })
///     .collect();
/// let svg = plot_latency_vs_throughput(&points, LatencyMetric::P50Tpot).unwrap();
/// assert!(svg.contains("p50 TPOT (ms)") && svg.contains("\nc4\n</text>"));
/// ```
pub fn plot_latency_vs_throughput(
    points: &[LatencyThroughputPoint],
    metric: LatencyMetric,
) -> Result<String, PlotError> {
    let series = latency_series(points);
    let (x, y) = ranges(&series).ok_or(PlotError::NoData("latency vs throughput"))?;
    // Room on the right for the last point's load label.
    let x = x.start..(x.end + (x.end - x.start) * 0.06);
    let title = format!("{} vs output throughput", metric.label());
    render(SIZE, |root| {
        draw_panel(
            root,
            &Panel { title: &title, x_desc: "output tokens/s", y_desc: metric.label(), series: &series, legend: true },
            x,
            y,
        )
    })
}

/// Four stacked panels over run time: mean TTFT, output token rate, active requests and KV-cache
/// use (panels without data are left empty), as an SVG document.
///
/// ```rust
/// use trtllm::bench::{plot_time_series, TimeSample};
///
/// let samples: Vec<TimeSample> = (0..5)
///     .map(|k| TimeSample {
///         start_s: k as f64 * 5.0,
///         end_s: (k + 1) as f64 * 5.0,
///         mean_ttft_ms: Some(40.0 + k as f64),
///         output_tokens_per_s: 900.0,
///         active_requests: 8.0,
///         kv_utilization: Some(0.1 * k as f64),
///     })
///     .collect();
/// let svg = plot_time_series(&samples).unwrap();
/// assert!(svg.contains("KV cache use (%)"));
/// ```
pub fn plot_time_series(samples: &[TimeSample]) -> Result<String, PlotError> {
    type Pick = fn(&TimeSample) -> Option<f64>;
    let panels: [(&str, Pick); 4] = [
        ("TTFT (ms)", |s| s.mean_ttft_ms),
        ("output tokens/s", |s| Some(s.output_tokens_per_s)),
        ("active requests", |s| Some(s.active_requests)),
        ("KV cache use (%)", |s| s.kv_utilization.map(|u| u * 100.0)),
    ];
    let series: Vec<Series> = panels
        .iter()
        .map(|(label, pick)| {
            Series::plain(
                label,
                samples
                    .iter()
                    .filter_map(|s| Some((s.mid_s(), pick(s)?)))
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .collect(),
            )
        })
        .collect();
    let time = ranges(&series).ok_or(PlotError::NoData("time series"))?.0;
    render((SIZE.0, 1000), |root| {
        for (area, s) in root.split_evenly((4, 1)).iter().zip(&series) {
            let y = ranges(std::slice::from_ref(s)).map_or(0.0..1.0, |r| r.1);
            draw_panel(
                area,
                &Panel {
                    title: &s.label,
                    x_desc: "time since start (s)",
                    y_desc: &s.label,
                    series: std::slice::from_ref(s),
                    legend: false,
                },
                time.clone(),
                y,
            )?;
        }
        Ok(())
    })
}

/// GPU telemetry beside throughput, one panel each over time: the run's output tokens per second
/// (`output_tok_s`, `(second, tokens/s)`), power, compute and memory-bandwidth utilization and
/// memory in use (GPU 0's, or the simulated GPU's). Figures the source does not report get no panel.
///
/// ```rust
/// use trtllm::bench::{GpuSample, plot_gpu_telemetry};
///
/// let samples: Vec<GpuSample> = (0..5)
///     .map(|i| GpuSample { t_s: i as f64, gpu_util_pct: Some(50.0), ..Default::default() })
///     .collect();
/// let svg = plot_gpu_telemetry(&samples, &[(0.5, 100.0), (1.5, 120.0)]).unwrap();
/// assert!(svg.contains("GPU compute utilization (%)") && !svg.contains("power (W)"));
/// ```
pub fn plot_gpu_telemetry(samples: &[GpuSample], output_tok_s: &[(f64, f64)]) -> Result<String, PlotError> {
    type Pick = fn(&GpuSample) -> Option<f64>;
    let figures: [(&str, Pick); 4] = [
        ("power (W)", |s| s.power_w),
        ("GPU compute utilization (%)", |s| s.gpu_util_pct),
        ("memory-bandwidth utilization (%)", |s| s.mem_util_pct),
        ("memory in use (GiB)", |s| s.memory_used_bytes.map(|b| b / f64::from(1u32 << 30))),
    ];
    let first_gpu = samples.iter().map(|s| s.gpu).min();
    let mut series = vec![Series::plain("output tokens/s", output_tok_s.to_vec())];
    series.extend(figures.iter().map(|(label, pick)| {
        Series::plain(
            label,
            samples
                .iter()
                .filter(|s| Some(s.gpu) == first_gpu)
                .filter_map(|s| Some((s.t_s, pick(s)?)))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect(),
        )
    }));
    series.retain(|s| !s.points.is_empty());
    if series.iter().all(|s| s.label == "output tokens/s") {
        return Err(PlotError::NoData("GPU telemetry"));
    }
    let time = ranges(&series).ok_or(PlotError::NoData("GPU telemetry"))?.0;
    let rows = series.len();
    render((SIZE.0, 250 * rows as u32), |root| {
        for (area, s) in root.split_evenly((rows, 1)).iter().zip(&series) {
            let y = ranges(std::slice::from_ref(s)).map_or(0.0..1.0, |r| r.1);
            let panel = Panel {
                title: &s.label,
                x_desc: "time since start (s)",
                y_desc: &s.label,
                series: std::slice::from_ref(s),
                legend: false,
            };
            draw_panel(area, &panel, time.clone(), y)?;
        }
        Ok(())
    })
}

/// The TTFT-pressure chart's lines, in colour order.
fn pressure_series(points: &[PressurePoint]) -> Vec<Series> {
    let mut lines: BTreeMap<ShapeKey, Vec<(f64, f64, String)>> = BTreeMap::new();
    for p in points {
        let xy = (p.inflight_tokens, p.p95_ttft_ms);
        if xy.0 > 0.0 && xy.0.is_finite() && xy.1.is_finite() {
            lines.entry(shape_order(&p.series())).or_default().push((xy.0, xy.1, p.load.clone()));
        }
    }
    lines.into_iter().map(|((_, _, label), pts)| sweep_series(label, pts)).collect()
}

/// The latency-vs-throughput chart's lines, in colour order.
fn latency_series(points: &[LatencyThroughputPoint]) -> Vec<Series> {
    let mut lines: BTreeMap<ShapeKey, Vec<(f64, &LatencyThroughputPoint)>> = BTreeMap::new();
    for p in points {
        if p.output_throughput.is_finite() && p.latency_ms.is_finite() {
            lines.entry(shape_order(&p.series)).or_default().push((p.load, p));
        }
    }
    lines
        .into_iter()
        .map(|((_, _, label), mut pts)| {
            // Along a line in load order, whatever the throughput did.
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let pts = pts.into_iter().map(|(_, p)| (p.output_throughput, p.latency_ms, p.load_label.clone()));
            let mut s = sweep_series(label, Vec::new());
            for (x, y, l) in pts {
                s.points.push((x, y));
                s.point_labels.push(l);
            }
            s
        })
        .collect()
}

/// Writes an SVG document to `path` (creating parent directories).
pub fn write_svg(path: &Path, svg: &str) -> Result<(), PlotError> {
    Ok(write_file(path, svg.as_bytes())?)
}

/// Draws into an in-memory SVG of `size` and returns the document.
fn render(
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Result<(), PlotError>,
) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        draw(&root)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// X and y ranges covering every point of every series: y starts at 0 for non-negative data;
/// degenerate spans are widened so a single point still has an axis.
fn ranges(series: &[Series]) -> Option<(Range<f64>, Range<f64>)> {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    let mut any = false;
    for &(x, y) in all {
        any = true;
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    if !any {
        return None;
    }
    let widen = |lo: f64, hi: f64| {
        if hi > lo {
            (lo, hi)
        } else {
            let pad = lo.abs().max(1.0) * 0.5;
            (lo - pad, hi + pad)
        }
    };
    let (x0, x1) = widen(x0, x1);
    let y0 = if y0 >= 0.0 { 0.0 } else { y0 };
    let (y0, y1) = widen(y0, y1);
    Some((x0..x1, y0..(y1 + (y1 - y0) * 0.05)))
}

/// Axis tick text: whole numbers above 10 (with k/M for large values), two decimals below.
fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn draw_panel<X>(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    panel: &Panel<'_>,
    x: X,
    y: Range<f64>,
) -> Result<(), PlotError>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(area)
        .caption(panel.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc(panel.x_desc)
        .y_desc(panel.y_desc)
        .label_style(("sans-serif", 14))
        .x_label_formatter(&|v| compact(*v))
        .y_label_formatter(&|v| compact(*v))
        .draw()
        .map_err(draw_err)?;
    for (i, s) in panel.series.iter().enumerate() {
        let style = Palette99::pick(i).stroke_width(2);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), style).point_size(3))
            .map_err(draw_err)?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        let labels = s.points.iter().zip(&s.point_labels).filter(|(_, l)| !l.is_empty());
        chart
            .draw_series(labels.map(|(&xy, label)| {
                EmptyElement::at(xy) + Text::new(label.clone(), (5, -16), ("sans-serif", 13).into_font().color(&BLACK))
            }))
            .map_err(draw_err)?;
    }
    if panel.legend {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::sweep::SweepRow;

    #[test]
    fn tick_labels_are_compact() {
        assert_eq!(compact(2_500_000.0), "2.5M");
        assert_eq!(compact(32_768.0), "33k");
        assert_eq!(compact(1024.0), "1024");
        assert_eq!(compact(0.456), "0.46");
    }

    #[test]
    fn empty_inputs_are_no_data() {
        assert!(matches!(plot_ttft_vs_inflight_tokens(&[]), Err(PlotError::NoData(_))));
        assert!(matches!(plot_latency_vs_throughput(&[], LatencyMetric::P50Ttft), Err(PlotError::NoData(_))));
        assert!(matches!(plot_time_series(&[]), Err(PlotError::NoData(_))));
    }

    #[test]
    fn single_point_still_renders() {
        let p = PressurePoint::closed(64, 1, 64.0, 3.0);
        let svg = plot_ttft_vs_inflight_tokens(&[p]).unwrap();
        assert!(svg.contains("in=64"));
    }

    #[test]
    fn a_shape_has_one_colour_and_its_points_their_load_in_both_sweep_charts() {
        let rows: Vec<SweepRow> = [(512, 128), (128, 512), (128, 128)]
            .into_iter()
            .flat_map(|(i, o)| {
                [1_u64, 4].map(|c| SweepRow {
                    concurrency: Some(c),
                    input_len: Some(i),
                    output_len: Some(o),
                    inflight_input_tokens: (c * i) as f64,
                    mean_prompt_tokens: i as f64,
                    mean_output_tokens: o as f64,
                    p95_ttft_ms: Some(c as f64),
                    p50_tpot_ms: Some(c as f64),
                    output_throughput: 100.0 * c as f64,
                    ..SweepRow::default()
                })
            })
            .collect();
        let pressure = pressure_series(&PressurePoint::from_rows(&rows));
        let latency = latency_series(&LatencyThroughputPoint::from_rows(&rows, LatencyMetric::P50Tpot));
        let labels = |s: &[Series]| s.iter().map(|s| s.label.clone()).collect::<Vec<_>>();
        // The same lines in the same order: the same palette colour for each.
        assert_eq!(labels(&pressure), ["in=128 out=128", "in=128 out=512", "in=512 out=128"]);
        assert_eq!(labels(&pressure), labels(&latency));
        for s in pressure.iter().chain(&latency) {
            assert_eq!(s.point_labels, ["c1", "c4"], "{}", s.label);
        }
    }

    #[test]
    fn rows_become_points() {
        let row = SweepRow {
            concurrency: Some(4),
            inflight_input_tokens: 4.0 * 511.6,
            mean_prompt_tokens: 511.6,
            mean_output_tokens: 128.0,
            p95_ttft_ms: Some(10.0),
            p50_tpot_ms: Some(2.0),
            output_throughput: 300.0,
            ..SweepRow::default()
        };
        let p = PressurePoint::from_rows(std::slice::from_ref(&row));
        assert_eq!(p[0].input_len, 512);
        assert!((p[0].inflight_tokens - 4.0 * 511.6).abs() < 1e-9);
        let l = LatencyThroughputPoint::from_rows(&[row.with_shape(500, 100)], LatencyMetric::P50Tpot);
        assert_eq!(l[0].series, "in=500 out=100");
        assert_eq!(l[0].latency_ms, 2.0);
    }
}
