//! The search's trade-off chart: every load point as tokens/s/user against tokens/s/GPU, the
//! points within the SLOs highlighted and their Pareto front drawn as a line (SVG).

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

/// The chart as an SVG document: grey points miss an SLO, blue ones meet them all, the red
/// line joins the Pareto front, the star marks the recommendation.
///
/// ```rust
/// use trtllm::bench::search::{FrontPoint, pareto_front, plot_front};
///
/// let p = |user: f64, gpu: f64, ok: bool| FrontPoint {
///     key: "k".into(), label: "tp1".into(), load: "c1".into(),
///     tokens_per_s_per_user: user, tokens_per_s_per_gpu: gpu, meets_slos: ok,
/// };
/// let points = [p(50.0, 50.0, true), p(40.0, 320.0, true), p(20.0, 900.0, false)];
/// let svg = plot_front(&points, &pareto_front(&points), Some(&points[1]))?;
/// assert!(svg.contains("<svg") && svg.contains("Pareto front"));
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
    let x_max = finite.iter().map(|p| p.tokens_per_s_per_user).fold(0.0_f64, f64::max).max(1.0) * 1.05;
    let y_max = finite.iter().map(|p| p.tokens_per_s_per_gpu).fold(0.0_f64, f64::max).max(1.0) * 1.05;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .caption("Configurations: throughput per GPU vs speed per user", ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("output tokens/s per user")
            .y_desc("output tokens/s per GPU")
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(draw_err)?;
        let grey = RGBColor(170, 170, 170);
        chart
            .draw_series(finite.iter().filter(|p| !p.meets_slos).map(|p| Circle::new(xy(p), 3, grey.filled())))
            .map_err(draw_err)?
            .label("misses an SLO")
            .legend(move |(x, y)| Circle::new((x + 10, y), 3, grey.filled()));
        chart
            .draw_series(finite.iter().filter(|p| p.meets_slos).map(|p| Circle::new(xy(p), 4, BLUE.filled())))
            .map_err(draw_err)?
            .label("meets the SLOs")
            .legend(|(x, y)| Circle::new((x + 10, y), 4, BLUE.filled()));
        chart
            .draw_series(LineSeries::new(front.iter().map(xy), RED.stroke_width(2)))
            .map_err(draw_err)?
            .label("Pareto front")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], RED.stroke_width(2)));
        if let Some(best) = recommended {
            chart
                .draw_series(std::iter::once(TriangleMarker::new(xy(best), 9, BLACK.filled())))
                .map_err(draw_err)?
                .label(format!("recommended: {} at {}", best.label, best.load))
                .legend(|(x, y)| TriangleMarker::new((x + 10, y), 6, BLACK.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
    }
    Ok(svg)
}
