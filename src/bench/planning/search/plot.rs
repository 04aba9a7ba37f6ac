//! The search's trade-off chart: every load point as tokens/s/user against tokens/s/GPU, the
//! points within the SLOs highlighted and their Pareto front drawn as a line (SVG).

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::pareto::FrontPoint;

/// Errors drawing the chart.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FrontPlotError {
    /// No point with finite figures.
    #[error("no load point to plot")]
    NoData,
    /// The drawing backend failed.
    #[error("drawing the Pareto chart failed: {0}")]
    Draw(String),
}

fn draw_err(e: impl std::fmt::Display) -> FrontPlotError {
    FrontPlotError::Draw(e.to_string())
}

/// The parallelism of a configuration label (`tp2 ep2 fp8/16bkv ...` gives `tp2 ep2`): the
/// points of one parallelism share a colour.
fn parallelism(label: &str) -> String {
    let words: Vec<&str> = label
        .split_whitespace()
        .filter(|w| {
            ["tp", "pp", "ep", "cp"].iter().any(|p| w.strip_prefix(p).is_some_and(|n| n.parse::<u32>().is_ok()))
        })
        .collect();
    if words.is_empty() { "other".into() } else { words.join(" ") }
}

/// The chart as an SVG document: each parallelism in its own colour (filled: meets every SLO;
/// hollow: misses one), the Pareto front as a red line, the recommendation as a black
/// triangle, and the legend in its own column right of the plot, off the data.
///
/// ```rust
/// use trtllm::bench::search::{FrontPoint, pareto_front, plot_front};
///
/// let p = |label: &str, user: f64, gpu: f64, ok: bool| FrontPoint {
///     key: "k".into(), label: label.into(), load: "c1".into(),
///     tokens_per_s_per_user: user, tokens_per_s_per_gpu: gpu, meets_slos: ok,
/// };
/// let points = [p("tp1 bf16", 50.0, 50.0, true), p("tp2 bf16", 40.0, 320.0, true), p("tp2 fp8", 20.0, 900.0, false)];
/// let svg = plot_front(&points, &pareto_front(&points), Some(&points[1]))?;
/// assert!(svg.contains("<svg") && svg.contains("Pareto front"));
/// assert!(svg.contains("\ntp1\n") && svg.contains("\ntp2\n"));
/// # Ok::<(), trtllm::bench::search::FrontPlotError>(())
/// ```
pub fn plot_front(
    points: &[FrontPoint],
    front: &[FrontPoint],
    recommended: Option<&FrontPoint>,
) -> Result<String, FrontPlotError> {
    let xy = |p: &FrontPoint| (p.tokens_per_s_per_user, p.tokens_per_s_per_gpu);
    let finite: Vec<&FrontPoint> = points.iter().filter(|p| xy(p).0.is_finite() && xy(p).1.is_finite()).collect();
    if finite.is_empty() {
        return Err(FrontPlotError::NoData);
    }
    let mut groups: Vec<String> = finite.iter().map(|p| parallelism(&p.label)).collect();
    groups.sort_by_key(|g| (g.split_whitespace().count(), g.clone()));
    groups.dedup();
    let colour = |p: &FrontPoint| {
        let group = parallelism(&p.label);
        Palette99::pick(groups.iter().position(|g| *g == group).unwrap_or(0)).to_rgba()
    };
    let x_max = finite.iter().map(|p| p.tokens_per_s_per_user).fold(0.0_f64, f64::max).max(1.0) * 1.05;
    let y_max = finite.iter().map(|p| p.tokens_per_s_per_gpu).fold(0.0_f64, f64::max).max(1.0) * 1.05;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (plot_area, legend_area) = root.split_horizontally(760);
        let mut chart = axes(
            &plot_area,
            "Configurations: throughput per GPU vs speed per user",
            "output tokens/s per GPU",
            (x_max, y_max),
        )?;
        chart
            .draw_series(finite.iter().map(|p| {
                let c = colour(p);
                if p.meets_slos { Circle::new(xy(p), 4, c.filled()) } else { Circle::new(xy(p), 4, c.stroke_width(1)) }
            }))
            .map_err(draw_err)?;
        chart.draw_series(LineSeries::new(front.iter().map(xy), RED.stroke_width(2))).map_err(draw_err)?;
        if let Some(best) = recommended {
            chart.draw_series(std::iter::once(TriangleMarker::new(xy(best), 9, BLACK.filled()))).map_err(draw_err)?;
        }
        // The legend, in its own column.
        let font = ("sans-serif", 14).into_font();
        let mut y = 60;
        let mut line = |text: String, mark: &dyn Fn(i32) -> Result<(), FrontPlotError>| -> Result<(), FrontPlotError> {
            mark(y)?;
            legend_area.draw(&Text::new(text, (34, y - 7), font.clone())).map_err(draw_err)?;
            y += 24;
            Ok(())
        };
        line("parallelism".into(), &|_| Ok(()))?;
        for (i, group) in groups.iter().enumerate() {
            let c = Palette99::pick(i).to_rgba();
            line(group.clone(), &|y| legend_area.draw(&Circle::new((18, y), 5, c.filled())).map_err(draw_err))?;
        }
        let grey = RGBColor(90, 90, 90);
        line("meets the SLOs".into(), &|y| {
            legend_area.draw(&Circle::new((18, y), 5, grey.filled())).map_err(draw_err)
        })?;
        line("misses an SLO".into(), &|y| {
            legend_area.draw(&Circle::new((18, y), 5, grey.stroke_width(1))).map_err(draw_err)
        })?;
        line("Pareto front".into(), &|y| {
            legend_area.draw(&PathElement::new([(8, y), (28, y)], RED.stroke_width(2))).map_err(draw_err)
        })?;
        if let Some(best) = recommended {
            line(format!("recommended: {} at {}", parallelism(&best.label), best.load), &|y| {
                legend_area.draw(&TriangleMarker::new((18, y), 7, BLACK.filled())).map_err(draw_err)
            })?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}

/// A chart of output tokens/s per user (x, up to `x_max`) against `y_desc` (up to `y_max`) on
/// `area`, with its caption and mesh drawn: the frame both planning charts share.
pub(crate) fn axes<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
    y_desc: &str,
    (x_max, y_max): (f64, f64),
) -> Result<ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>, FrontPlotError> {
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc("output tokens/s per user")
        .y_desc(y_desc)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(draw_err)?;
    Ok(chart)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallelism_is_read_from_the_label() {
        assert_eq!(parallelism("tp2 ep2 fp8/16bkv mbs64 mnt8192 kv0.90 reuse gne"), "tp2 ep2");
        assert_eq!(parallelism("tp1 bf16/16bkv mbs8"), "tp1");
        assert_eq!(parallelism("custom"), "other");
    }

    #[test]
    fn the_legend_is_right_of_the_data() {
        let p = |label: &str, user: f64, gpu: f64| FrontPoint {
            key: label.into(),
            label: label.into(),
            load: "c1".into(),
            tokens_per_s_per_user: user,
            tokens_per_s_per_gpu: gpu,
            meets_slos: true,
        };
        let points = [p("tp1 bf16", 90.0, 900.0), p("tp2 bf16", 10.0, 100.0)];
        let svg = plot_front(&points, &points, None).unwrap();
        // Every legend text starts right of the plot's 760-pixel column.
        for name in ["parallelism", "\ntp1\n", "\ntp2\n", "Pareto front"] {
            let at = svg.find(name).unwrap_or_else(|| panic!("{name} missing"));
            let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
            let x: f64 = tag.split("x=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
            assert!(x > 760.0, "{name} at x={x}");
        }
    }
}
