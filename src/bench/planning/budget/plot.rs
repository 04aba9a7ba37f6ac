//! The budget plan's chart: the deployments' estimates and their confirming runs as
//! tokens/s/user against tokens/s/GPU, each architecture in its own colour with its Pareto front,
//! the recommendation marked (SVG).

use plotters::prelude::*;
use serde::Serialize;

use super::super::search::{FrontPlotError, FrontPoint, axes, pareto_front};
use super::confirm::Confirmation;
use super::deploy::{Architecture, Deployment};

/// One point of the chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetPoint {
    /// Which architecture it is.
    pub architecture: Architecture,
    /// The configuration or deployment.
    pub label: String,
    /// The load (`r4.200`: requests/s of an estimate; `c64`: users of a confirming run).
    pub load: String,
    /// Decode speed per user, tokens/s.
    pub tokens_per_s_per_user: f64,
    /// Output tokens/s per GPU.
    pub tokens_per_s_per_gpu: f64,
    /// It meets every SLO.
    pub meets_slos: bool,
}

impl BudgetPoint {
    /// A deployment's confirming run on the virtual clock.
    pub fn confirmed(d: &Deployment, c: &Confirmation) -> Self {
        BudgetPoint {
            architecture: d.architecture,
            label: format!("{} (virtual clock)", d.label),
            load: c.point.load.clone(),
            tokens_per_s_per_user: c.point.tokens_per_s_per_user,
            tokens_per_s_per_gpu: c.point.tokens_per_s_per_gpu,
            meets_slos: c.point.meets_slos(),
        }
    }

    /// A deployment's estimate at its rate.
    pub fn deployment(d: &Deployment) -> Self {
        BudgetPoint {
            architecture: d.architecture,
            label: d.label.clone(),
            load: format!("r{:.3}", d.requests_per_s),
            tokens_per_s_per_user: d.tokens_per_s_per_user,
            tokens_per_s_per_gpu: d.tokens_per_s_per_gpu,
            meets_slos: true,
        }
    }

    fn front_point(&self) -> FrontPoint {
        FrontPoint {
            key: self.architecture.name().into(),
            label: self.label.clone(),
            load: self.load.clone(),
            tokens_per_s_per_user: self.tokens_per_s_per_user,
            tokens_per_s_per_gpu: self.tokens_per_s_per_gpu,
            meets_slos: self.meets_slos,
        }
    }
}

fn draw_err(e: impl std::fmt::Display) -> FrontPlotError {
    FrontPlotError::Draw(e.to_string())
}

/// The chart as an SVG document: aggregated points blue (grey when they miss an SLO),
/// disaggregated deployments green triangles, each architecture's Pareto front as a line, the
/// recommendation a black star.
///
/// ```rust
/// use trtllm::bench::budget::{BudgetPoint, plot_budget};
/// use trtllm::bench::budget::Architecture;
///
/// let p = |architecture, user: f64, gpu: f64| BudgetPoint {
///     architecture, label: "x".into(), load: "c1".into(),
///     tokens_per_s_per_user: user, tokens_per_s_per_gpu: gpu, meets_slos: true,
/// };
/// let svg = plot_budget(&[p(Architecture::Aggregated, 50.0, 300.0), p(Architecture::Disaggregated, 40.0, 500.0)], None)?;
/// assert!(svg.contains("aggregated") && svg.contains("disaggregated"));
/// # Ok::<(), trtllm::bench::search::FrontPlotError>(())
/// ```
pub fn plot_budget(points: &[BudgetPoint], recommended: Option<&Deployment>) -> Result<String, FrontPlotError> {
    let xy = |p: &BudgetPoint| (p.tokens_per_s_per_user, p.tokens_per_s_per_gpu);
    let finite: Vec<&BudgetPoint> = points.iter().filter(|p| xy(p).0.is_finite() && xy(p).1.is_finite()).collect();
    if finite.is_empty() {
        return Err(FrontPlotError::NoData);
    }
    let x_max = finite.iter().map(|p| p.tokens_per_s_per_user).fold(0.0_f64, f64::max).max(1.0) * 1.05;
    let y_max = finite.iter().map(|p| p.tokens_per_s_per_gpu).fold(0.0_f64, f64::max).max(1.0) * 1.05;
    let of =
        |a: Architecture| -> Vec<&BudgetPoint> { finite.iter().copied().filter(|p| p.architecture == a).collect() };
    let front = |a: Architecture| -> Vec<(f64, f64)> {
        let pts: Vec<FrontPoint> = of(a).iter().map(|p| p.front_point()).collect();
        pareto_front(&pts).iter().map(|p| (p.tokens_per_s_per_user, p.tokens_per_s_per_gpu)).collect()
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (900, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = axes(
            &root,
            "GPU budget: aggregated against disaggregated",
            "output tokens/s per GPU of the budget",
            (x_max, y_max),
        )?;
        let grey = RGBColor(170, 170, 170);
        let green = RGBColor(0, 150, 60);
        let aggregated = of(Architecture::Aggregated);
        chart
            .draw_series(aggregated.iter().filter(|p| !p.meets_slos).map(|p| Circle::new(xy(p), 3, grey.filled())))
            .map_err(draw_err)?
            .label("aggregated, misses an SLO")
            .legend(move |(x, y)| Circle::new((x + 10, y), 3, grey.filled()));
        chart
            .draw_series(aggregated.iter().filter(|p| p.meets_slos).map(|p| Circle::new(xy(p), 4, BLUE.filled())))
            .map_err(draw_err)?
            .label("aggregated workers (estimate or virtual clock)")
            .legend(|(x, y)| Circle::new((x + 10, y), 4, BLUE.filled()));
        chart
            .draw_series(LineSeries::new(front(Architecture::Aggregated), BLUE.stroke_width(1)))
            .map_err(draw_err)?
            .label("aggregated front")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], BLUE.stroke_width(1)));
        chart
            .draw_series(of(Architecture::Disaggregated).iter().map(|p| TriangleMarker::new(xy(p), 7, green.filled())))
            .map_err(draw_err)?
            .label("disaggregated deployment (rate-matched; estimate or virtual clock)")
            .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, green.filled()));
        chart
            .draw_series(LineSeries::new(front(Architecture::Disaggregated), green.stroke_width(1)))
            .map_err(draw_err)?
            .label("disaggregated front")
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], green.stroke_width(1)));
        if let Some(best) = recommended {
            let at = (best.tokens_per_s_per_user, best.tokens_per_s_per_gpu);
            chart
                .draw_series(std::iter::once(Cross::new(at, 9, BLACK.stroke_width(3))))
                .map_err(draw_err)?
                .label(format!("recommended ({}): {}", best.architecture.name(), best.label))
                .legend(|(x, y)| Cross::new((x + 10, y), 6, BLACK.stroke_width(3)));
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
