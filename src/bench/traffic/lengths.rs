//! Length distributions for random prompts and outputs: fixed, uniform, normal and lognormal.

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, LogNormal, Normal};
use serde::{Deserialize, Serialize};

/// A bad length distribution (`--input-dist`, `--output-dist` and their bounds).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LengthError {
    /// The mean, standard deviation or a bound is not usable.
    #[error("{what} length distribution: {problem}")]
    Invalid {
        /// `input` or `output`.
        what: &'static str,
        /// What is wrong.
        problem: String,
    },
}

/// The shape lengths are drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LengthShape {
    /// Always the mean.
    Fixed,
    /// Uniform over `min..=max` (by default mean ± √3·stddev, which has that standard deviation).
    Uniform,
    /// Normal with the mean and standard deviation, kept within `min..=max`.
    Normal,
    /// Lognormal whose lengths have the mean and standard deviation (a long right tail, as
    /// real prompts and answers have), kept within `min..=max`.
    Lognormal,
}

/// A distribution of token counts, drawn per request from the sampler's seeded stream.
///
/// ```rust
/// use trtllm::bench::{LengthDistribution, LengthShape};
///
/// let d = LengthDistribution::new("input", LengthShape::Normal, 512, 128.0, None, None).unwrap();
/// assert_eq!((d.min, d.max), (128, 896), "mean ± 3 stddev unless bounds are given");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LengthDistribution {
    /// The shape.
    pub shape: LengthShape,
    /// The mean length asked for (before the bounds cut the tails).
    pub mean: f64,
    /// The standard deviation asked for.
    pub stddev: f64,
    /// The shortest length drawn.
    pub min: u32,
    /// The longest length drawn.
    pub max: u32,
}

/// Draws that fall outside the bounds are redrawn this many times before being clamped, so
/// the bounds cut the tails rather than piling lengths up at the edges.
const REDRAWS: usize = 32;

impl LengthDistribution {
    /// One length, always.
    pub fn fixed(len: u32) -> Self {
        Self { shape: LengthShape::Fixed, mean: f64::from(len), stddev: 0.0, min: len, max: len }
    }

    /// A distribution of `shape` around `mean` with `stddev`, bounded by `min`/`max` (default:
    /// mean ± 3·stddev for normal and lognormal, mean ± √3·stddev for uniform, at least 1).
    /// `what` names the lengths (`input`, `output`) in errors.
    pub fn new(
        what: &'static str,
        shape: LengthShape,
        mean: u32,
        stddev: f64,
        min: Option<u32>,
        max: Option<u32>,
    ) -> Result<Self, LengthError> {
        let bad = |problem: String| LengthError::Invalid { what, problem };
        if mean == 0 {
            return Err(bad("the mean length must be at least 1".into()));
        }
        if !(stddev.is_finite() && stddev >= 0.0) {
            return Err(bad(format!("the standard deviation must be a finite number ≥ 0, not {stddev}")));
        }
        if shape == LengthShape::Fixed {
            if stddev > 0.0 || min.is_some() || max.is_some() {
                return Err(bad("a fixed length takes no standard deviation or bounds".into()));
            }
            return Ok(Self::fixed(mean));
        }
        let reach = match shape {
            LengthShape::Uniform => 3f64.sqrt() * stddev,
            _ => 3.0 * stddev,
        };
        let m = f64::from(mean);
        let min = min.unwrap_or(((m - reach).round().max(1.0)) as u32).max(1);
        let max = max.unwrap_or((m + reach).round().min(f64::from(u32::MAX)) as u32);
        if min > max {
            return Err(bad(format!("min {min} is above max {max}")));
        }
        if shape != LengthShape::Uniform && stddev == 0.0 {
            return Err(bad(format!("a {} distribution needs a standard deviation above 0", shape.name())));
        }
        Ok(Self { shape, mean: m, stddev, min, max })
    }

    /// The same distribution drawing no length above `max` (an engine's limit): the upper bound
    /// lowered to it, the tail above cut as any bound cuts it. Fails when the lower bound is
    /// above `max`; `what` names the lengths in the error.
    ///
    /// ```rust
    /// use trtllm::bench::{LengthDistribution, LengthShape};
    ///
    /// let d = LengthDistribution::new("input", LengthShape::Lognormal, 1024, 512.0, None, Some(4096)).unwrap();
    /// assert_eq!(d.clone().capped_at("input", 1024).unwrap().max, 1024);
    /// assert_eq!(d.clone().capped_at("input", 8192).unwrap(), d, "a cap above the bound changes nothing");
    /// assert!(d.capped_at("input", 0).is_err());
    /// ```
    pub fn capped_at(self, what: &'static str, max: u32) -> Result<Self, LengthError> {
        if self.min > max {
            return Err(LengthError::Invalid {
                what,
                problem: format!("the shortest length {} is above the limit {max}", self.min),
            });
        }
        Ok(Self { max: self.max.min(max), ..self })
    }

    /// One length from `rng`.
    pub fn sample(&self, rng: &mut StdRng) -> u32 {
        let (lo, hi) = (f64::from(self.min), f64::from(self.max));
        let draw = |rng: &mut StdRng| -> f64 {
            match self.shape {
                LengthShape::Fixed => self.mean,
                LengthShape::Uniform => return f64::from(rng.random_range(self.min..=self.max)),
                LengthShape::Normal => Normal::new(self.mean, self.stddev).map_or(self.mean, |d| d.sample(rng)),
                LengthShape::Lognormal => {
                    // The underlying normal's parameters for lengths with this mean and stddev.
                    let sigma2 = (1.0 + (self.stddev / self.mean).powi(2)).ln();
                    let mu = self.mean.ln() - sigma2 / 2.0;
                    LogNormal::new(mu, sigma2.sqrt()).map_or(self.mean, |d| d.sample(rng))
                }
            }
            .round()
        };
        let mut x = draw(rng);
        for _ in 0..REDRAWS {
            if (lo..=hi).contains(&x) {
                break;
            }
            x = draw(rng);
        }
        x.clamp(lo, hi) as u32
    }

    /// The distribution as one short line, e.g. `normal(mean 512, sd 128, 128..=896)`.
    pub fn describe(&self) -> String {
        match self.shape {
            LengthShape::Fixed => format!("fixed {}", self.min),
            LengthShape::Uniform => format!("uniform {}..={}", self.min, self.max),
            shape => format!("{}(mean {}, sd {}, {}..={})", shape.name(), self.mean, self.stddev, self.min, self.max),
        }
    }
}

impl std::str::FromStr for LengthShape {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [LengthShape::Fixed, LengthShape::Uniform, LengthShape::Normal, LengthShape::Lognormal]
            .into_iter()
            .find(|shape| shape.name() == s)
            .ok_or_else(|| format!("unknown length distribution {s:?}: fixed, uniform, normal or lognormal"))
    }
}

impl LengthShape {
    /// The shape's name as the options spell it.
    pub fn name(self) -> &'static str {
        match self {
            LengthShape::Fixed => "fixed",
            LengthShape::Uniform => "uniform",
            LengthShape::Normal => "normal",
            LengthShape::Lognormal => "lognormal",
        }
    }
}

/// The lengths a workload draws per request instead of its fixed ones: `None` keeps the
/// source's prompt length or the workload's output length.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LengthSpread {
    /// Prompt lengths (random and word prompts), in tokens the target sees.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<LengthDistribution>,
    /// Output lengths (`max_tokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<LengthDistribution>,
    /// Tokens a server adds around a word prompt (its chat template): drawn input lengths
    /// are of the whole prompt, so the runner sends this many fewer.
    #[serde(skip)]
    pub template_tokens: usize,
}

impl LengthSpread {
    /// Whether nothing is drawn.
    pub fn is_fixed(&self) -> bool {
        self.input.is_none() && self.output.is_none()
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn draws(d: &LengthDistribution, seed: u64, n: usize) -> Vec<f64> {
        let mut rng = StdRng::seed_from_u64(seed);
        (0..n).map(|_| f64::from(d.sample(&mut rng))).collect()
    }

    fn moments(xs: &[f64]) -> (f64, f64) {
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        (mean, var.sqrt())
    }

    #[test]
    fn every_shape_has_the_asked_moments_within_its_bounds() {
        for shape in [LengthShape::Uniform, LengthShape::Normal, LengthShape::Lognormal] {
            // Uniform's range is its bounds: by default the one with this stddev.
            let (min, max) = if shape == LengthShape::Uniform { (None, None) } else { (Some(1), Some(100_000)) };
            let d = LengthDistribution::new("input", shape, 1000, 200.0, min, max).unwrap();
            let xs = draws(&d, 11, 20_000);
            let (mean, sd) = moments(&xs);
            assert!((mean - 1000.0).abs() < 10.0, "{shape:?}: mean {mean}");
            assert!((sd - 200.0).abs() < 10.0, "{shape:?}: stddev {sd}");
            assert!(xs.iter().all(|&x| (1.0..=100_000.0).contains(&x)));
        }
    }

    #[test]
    fn bounds_are_kept_and_draws_reproduce_per_seed() {
        let d = LengthDistribution::new("output", LengthShape::Lognormal, 100, 300.0, Some(20), Some(400)).unwrap();
        let xs = draws(&d, 5, 5_000);
        assert!(xs.iter().all(|&x| (20.0..=400.0).contains(&x)), "within min..=max");
        assert!(xs.iter().any(|&x| x > 300.0) && xs.iter().any(|&x| x < 60.0), "spread over the range");
        assert_eq!(xs, draws(&d, 5, 5_000), "same seed, same lengths");
        assert_ne!(xs, draws(&d, 6, 5_000));
        let u = LengthDistribution::new("input", LengthShape::Uniform, 100, 0.0, Some(90), Some(110)).unwrap();
        let us = draws(&u, 1, 2_000);
        assert!(us.contains(&90.0) && us.contains(&110.0) && us.iter().all(|&x| (90.0..=110.0).contains(&x)));
    }

    #[test]
    fn fixed_is_one_length_and_bad_parameters_are_refused() {
        assert!(draws(&LengthDistribution::fixed(64), 0, 50).iter().all(|&x| x == 64.0));
        let bad = |shape, mean, sd, min, max| LengthDistribution::new("input", shape, mean, sd, min, max).is_err();
        assert!(bad(LengthShape::Normal, 0, 1.0, None, None), "zero mean");
        assert!(bad(LengthShape::Normal, 10, 0.0, None, None), "normal without spread");
        assert!(bad(LengthShape::Uniform, 10, 1.0, Some(20), Some(5)), "min above max");
        assert!(bad(LengthShape::Lognormal, 10, f64::NAN, None, None));
        assert!(bad(LengthShape::Fixed, 10, 2.0, None, None), "fixed with a stddev");
    }
}
