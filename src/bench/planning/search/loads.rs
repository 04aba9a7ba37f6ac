//! The load axis of one configuration's sweep: a listed set of loads, or closed-loop users
//! doubled until goodput has peaked and then refined around the peak.

use serde::Serialize;

use super::result::PointResult;

/// One value of the load axis.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadStep {
    /// Closed loop with this many users.
    Concurrency(usize),
    /// Open loop at this many requests per second.
    Rate(f64),
}

impl LoadStep {
    /// `c16` or `r2.5`.
    pub fn name(&self) -> String {
        match self {
            LoadStep::Concurrency(c) => format!("c{c}"),
            LoadStep::Rate(r) => format!("r{r}"),
        }
    }
}

/// Which loads a configuration is measured at.
#[derive(Debug, Clone, PartialEq)]
pub enum Loads {
    /// These loads, lowest first (`--concurrency`, `--request-rate`).
    Listed(Vec<LoadStep>),
    /// Closed loop from one user, doubling up to the engine's max_batch_size (more users only
    /// queue), until a point misses an SLO or goodput has fallen for two steps; then one point
    /// halfway between the best point and the next load run above it.
    UntilPeak,
}

impl Loads {
    /// The description stored in the study's fingerprint (a listed axis as its steps, so
    /// results of earlier runs with the same list still match).
    pub fn fingerprint(&self) -> serde_json::Value {
        match self {
            Loads::Listed(steps) => serde_json::json!(steps),
            Loads::UntilPeak => serde_json::json!("until-peak"),
        }
    }

    /// `c1,c2,c4` or `c1, c2, c4, ... until goodput peaks`.
    pub fn describe(&self) -> String {
        match self {
            Loads::Listed(steps) => steps.iter().map(LoadStep::name).collect::<Vec<_>>().join(","),
            Loads::UntilPeak => "c1, c2, c4, ... up to max_batch_size until goodput peaks".into(),
        }
    }

    /// The most users any point may have (`None`: open loop, or no limit besides the engine's).
    pub fn max_concurrency(&self) -> Option<usize> {
        match self {
            Loads::Listed(steps) => steps
                .iter()
                .map(|s| match s {
                    LoadStep::Concurrency(c) => Some(*c),
                    LoadStep::Rate(_) => None,
                })
                .collect::<Option<Vec<usize>>>()
                .and_then(|c| c.into_iter().max()),
            Loads::UntilPeak => None,
        }
    }

    /// The load to run after `done` (the points so far, in the order run) on an engine built
    /// for `max_batch_size` requests, or `None` when the sweep is over. A point that misses an
    /// SLO ends the climb (more load only adds delay); closed-loop loads above max_batch_size
    /// are not run (they only queue), except a first one. An [`Loads::UntilPeak`] climb starts
    /// at the first of 1, 2, 4, ... that `worth_running` accepts (lower loads cannot be the best).
    pub fn next(
        &self,
        done: &[PointResult],
        max_batch_size: usize,
        worth_running: impl Fn(usize) -> bool,
    ) -> Option<LoadStep> {
        match self {
            Loads::Listed(steps) => {
                if done.last().is_some_and(|p| !p.meets_slos()) {
                    return None;
                }
                let step = *steps.get(done.len())?;
                match step {
                    LoadStep::Concurrency(c) if c > max_batch_size && !done.is_empty() => None,
                    _ => Some(step),
                }
            }
            Loads::UntilPeak => {
                let cap = max_batch_size.max(1);
                let start = std::iter::successors(Some(1_usize), |c| (*c < cap).then(|| (2 * c).min(cap)))
                    .find(|&c| worth_running(c))
                    .unwrap_or(cap);
                until_peak(done, cap, start).map(LoadStep::Concurrency)
            }
        }
    }
}

/// The next number of users of an [`Loads::UntilPeak`] sweep.
fn until_peak(done: &[PointResult], cap: usize, start: usize) -> Option<usize> {
    let users: Vec<usize> =
        done.iter().map(|p| p.load.strip_prefix('c').and_then(|c| c.parse().ok())).collect::<Option<_>>()?;
    let Some(&last) = users.last() else { return Some(start) };
    let peak = done.iter().filter(|p| p.meets_slos()).map(|p| p.tokens_per_s_per_gpu).fold(f64::NEG_INFINITY, f64::max);
    // Climbing while each load doubles the one before.
    let climbing = users.windows(2).all(|w| w[1] == (2 * w[0]).min(cap));
    if climbing {
        let missed = !done[done.len() - 1].meets_slos();
        let fell_twice =
            done.len() >= 3 && done[done.len() - 2..].iter().all(|p| p.meets_slos() && p.tokens_per_s_per_gpu < peak);
        if !missed && !fell_twice && last < cap {
            return Some((2 * last).min(cap));
        }
    } else {
        // The refinement point has run.
        return None;
    }
    // Refine once: halfway between the best point and the next load run above it.
    let best = done
        .iter()
        .zip(&users)
        .filter(|(p, _)| p.meets_slos() && p.tokens_per_s_per_gpu == peak)
        .map(|(_, &c)| c)
        .next()?;
    let above = users.iter().copied().filter(|&c| c > best).min()?;
    let middle = best + (above - best) / 2;
    (middle > best && !users.contains(&middle)).then_some(middle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(users: usize, per_gpu: f64, ok: bool) -> PointResult {
        PointResult::with_goodput(&format!("c{users}"), per_gpu, ok)
    }

    /// Runs the sweep against `goodput(users)` (`None`: the point misses an SLO).
    fn sweep(cap: usize, goodput: impl Fn(usize) -> Option<f64>) -> Vec<usize> {
        let mut done = Vec::new();
        while let Some(LoadStep::Concurrency(c)) = Loads::UntilPeak.next(&done, cap, |_| true) {
            done.push(match goodput(c) {
                Some(g) => point(c, g, true),
                None => point(c, 0.0, false),
            });
        }
        done.iter().map(|p| p.load[1..].parse().unwrap()).collect()
    }

    #[test]
    fn users_double_until_an_slo_fails_then_the_peak_is_refined() {
        let loads = sweep(4096, |c| (c <= 300).then_some(c as f64));
        assert_eq!(loads, [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 384]);
    }

    #[test]
    fn users_stop_doubling_when_goodput_falls_twice() {
        // Goodput peaks at 64 users and falls after, within the SLOs.
        let loads = sweep(4096, |c| Some(if c <= 64 { c as f64 } else { 64.0 * 64.0 / c as f64 }));
        assert_eq!(loads, [1, 2, 4, 8, 16, 32, 64, 128, 256, 96]);
    }

    #[test]
    fn users_stop_at_the_batch_cap() {
        let loads = sweep(100, |c| Some(c as f64));
        assert_eq!(loads, [1, 2, 4, 8, 16, 32, 64, 100]);
        // Nothing met the SLOs: nothing to refine.
        assert_eq!(sweep(100, |_| None), [1]);
        // Loads that cannot be the best are not climbed through.
        let mut done = Vec::new();
        while let Some(LoadStep::Concurrency(c)) = Loads::UntilPeak.next(&done, 100, |c| c >= 10) {
            done.push(point(c, c as f64, true));
        }
        assert_eq!(done.iter().map(|p| p.load.as_str()).collect::<Vec<_>>(), ["c16", "c32", "c64", "c100"]);
    }

    #[test]
    fn listed_loads_stop_at_the_first_miss_and_above_the_cap() {
        let listed = Loads::Listed(vec![LoadStep::Concurrency(1), LoadStep::Concurrency(8), LoadStep::Concurrency(64)]);
        let all = |_: usize| true;
        assert_eq!(listed.next(&[], 16, all), Some(LoadStep::Concurrency(1)));
        assert_eq!(listed.next(&[point(1, 1.0, true)], 16, all), Some(LoadStep::Concurrency(8)));
        assert_eq!(listed.next(&[point(1, 1.0, true), point(8, 8.0, true)], 16, all), None);
        assert_eq!(listed.next(&[point(1, 1.0, false)], 16, all), None);
        assert_eq!(listed.max_concurrency(), Some(64));
    }
}
