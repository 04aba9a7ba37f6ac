//! `--input-dist`/`--output-dist`: each point's length distributions around its own lengths.

use anyhow::bail;
use trtllm::bench::{LengthDistribution, LengthShape, LengthSpread, PromptSource};

use super::args::{DatasetKind, RunArgs};
use super::plan::Point;

/// Which lengths the options draw (input, output), refusing them where no length is the
/// workload's to draw.
fn drawn(args: &RunArgs) -> anyhow::Result<(bool, bool)> {
    let input_given = args.input_dist != LengthShape::Fixed
        || args.input_stddev.is_some()
        || args.input_min.is_some()
        || args.input_max.is_some();
    let output_given = args.output_dist != LengthShape::Fixed
        || args.output_stddev.is_some()
        || args.output_min.is_some()
        || args.output_max.is_some();
    if input_given && (args.dataset != DatasetKind::Random || args.turns.is_some()) {
        bail!("--input-dist and its bounds apply to single-turn random prompts (--dataset random, no --turns)");
    }
    if output_given && args.turns.is_some() {
        bail!("--output-dist and its bounds apply to single-turn workloads (no --turns)");
    }
    if output_given && args.output_len.is_none() && args.dataset != DatasetKind::Random {
        bail!("--output-dist needs --output-len (its mean); a dataset's own output lengths are not drawn");
    }
    Ok((input_given, output_given))
}

/// Checks the length options before anything loads: each distribution the sweep's lengths
/// would draw from can be made.
pub fn check(args: &RunArgs) -> anyhow::Result<()> {
    let (input_given, output_given) = drawn(args)?;
    if input_given {
        for &mean in args.input_len.as_deref().unwrap_or(&super::plan::DEFAULT_INPUT_LENS) {
            distribution("input", args.input_dist, mean, args.input_stddev, args.input_min, args.input_max)?;
        }
    }
    if output_given {
        for &mean in args.output_len.as_deref().unwrap_or(&[super::plan::DEFAULT_OUTPUT_LEN]) {
            distribution("output", args.output_dist, mean, args.output_stddev, args.output_min, args.output_max)?;
        }
    }
    Ok(())
}

/// Sets each point's [`LengthSpread`] from the options: distributions whose mean is the point's
/// `--input-len` / `--output-len`. Refuses them where no length is the workload's to draw.
pub fn apply(args: &RunArgs, points: &mut [Point]) -> anyhow::Result<()> {
    let (input_given, output_given) = drawn(args)?;
    for point in points {
        let mut spread = LengthSpread::default();
        if let (true, Some(mean)) = (input_given, point.input_len) {
            spread.input =
                Some(distribution("input", args.input_dist, mean, args.input_stddev, args.input_min, args.input_max)?);
            // Word prompts are sized without the tokens the server's template adds.
            if let PromptSource::Words { input_len, .. } = &point.workload.source {
                spread.template_tokens = mean.saturating_sub(*input_len);
            }
        }
        if output_given {
            let Some(mean) = point.output_len else {
                bail!("--output-dist needs --output-len (its mean); a dataset's own output lengths are not drawn");
            };
            spread.output = Some(distribution(
                "output",
                args.output_dist,
                mean,
                args.output_stddev,
                args.output_min,
                args.output_max,
            )?);
        }
        point.workload.lengths = spread;
    }
    Ok(())
}

fn distribution(
    what: &'static str,
    shape: LengthShape,
    mean: usize,
    stddev: Option<f64>,
    min: Option<u32>,
    max: Option<u32>,
) -> anyhow::Result<LengthDistribution> {
    let mean = u32::try_from(mean)?;
    Ok(LengthDistribution::new(what, shape, mean, stddev.unwrap_or(0.0), min, max)?)
}
