//! Load shapes: closed-loop concurrency, open-loop gamma arrivals, linear ramp-up and sustained duration.

use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Gamma};

/// Errors from describing a load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A request rate that is not a positive finite number.
    #[error("request rate must be a positive number of requests per second, got {0}")]
    Rate(f64),
    /// A burstiness that is not positive (infinity is allowed: constant spacing).
    #[error("burstiness must be positive (1 = Poisson, inf = constant spacing), got {0}")]
    Burstiness(f64),
    /// A concurrency of zero.
    #[error("concurrency must be at least 1")]
    Concurrency,
    /// `--ramp-up` without a duration, or with open-loop arrivals.
    #[error("{0}")]
    Shape(&'static str),
}

/// How requests are offered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Closed loop: `concurrency` users, each sending its next request as soon as the previous
    /// one finishes.
    Closed {
        /// Requests in flight at once.
        concurrency: usize,
    },
    /// Open loop: requests arrive at `rate` per second with gamma-distributed gaps whatever the
    /// engine does, optionally capped at `max_concurrency` in flight (arrivals beyond the cap
    /// wait in the runner, which is their client queue time).
    Open {
        /// Mean arrivals per second.
        rate: f64,
        /// Gamma shape of the gaps: 1 is Poisson, larger is more regular, `inf` is constant
        /// spacing, below 1 is burstier.
        burstiness: f64,
        /// Cap on requests in flight.
        max_concurrency: Option<usize>,
    },
}

impl Load {
    /// Checks the numbers.
    pub fn validate(&self) -> Result<(), LoadError> {
        match *self {
            Load::Closed { concurrency: 0 } | Load::Open { max_concurrency: Some(0), .. } => {
                Err(LoadError::Concurrency)
            }
            Load::Closed { .. } => Ok(()),
            Load::Open { rate, burstiness, .. } => {
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(LoadError::Rate(rate));
                }
                if burstiness.is_nan() || burstiness <= 0.0 {
                    return Err(LoadError::Burstiness(burstiness));
                }
                Ok(())
            }
        }
    }

    /// The concurrency (closed loop) or the cap (open loop).
    pub fn concurrency(&self) -> Option<usize> {
        match *self {
            Load::Closed { concurrency } => Some(concurrency),
            Load::Open { max_concurrency, .. } => max_concurrency,
        }
    }
}

/// When closed-loop users send their first measured request.
///
/// Users that all start at once, with fixed output lengths, finish together and restart
/// together for the whole run (every wave prefills all their prompts at once), and the figures
/// then depend on that accident; spread out, their requests fall evenly over the request cycle,
/// as independent users' do.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum UserStart {
    /// Spread evenly over the warmup's mean request latency (one request cycle); together when
    /// there was no warmup.
    #[default]
    Auto,
    /// User `u` of `n` starts `u / n` of this after the first.
    Spread(Duration),
    /// All at once (lockstep, `--users-start-together`).
    Together,
}

impl UserStart {
    /// When user `user` of `users` starts after the first, given the warmup's mean request
    /// latency (`None`: no warmup).
    ///
    /// ```rust
    /// use std::time::Duration;
    /// use trtllm::bench::UserStart;
    ///
    /// let cycle = Some(Duration::from_millis(400));
    /// assert_eq!(UserStart::Auto.offset(2, 4, cycle), Duration::from_millis(200));
    /// assert_eq!(UserStart::Auto.offset(2, 4, None), Duration::ZERO);
    /// assert_eq!(UserStart::Together.offset(3, 4, cycle), Duration::ZERO);
    /// ```
    pub fn offset(&self, user: usize, users: usize, warmup_latency: Option<Duration>) -> Duration {
        let span = match self {
            UserStart::Auto => warmup_latency.unwrap_or_default(),
            UserStart::Spread(span) => *span,
            UserStart::Together => Duration::ZERO,
        };
        if users == 0 { Duration::ZERO } else { span.mul_f64(user as f64 / users as f64) }
    }
}

/// One sweep point's load: the shape, how many requests, warmup, and optional ramp-up and
/// duration.
///
/// Without a duration, `num_prompts` measured requests are sent. With one, closed-loop users
/// (added linearly over `ramp_up`, then all running) send requests until `ramp_up + duration`
/// has passed; open-loop arrivals continue for `duration`. Requests sent during the ramp-up
/// are recorded as ramp-up and excluded from statistics. In-flight requests are always allowed
/// to finish.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadPlan {
    /// The load shape.
    pub load: Load,
    /// Measured requests (ignored with a duration).
    pub num_prompts: usize,
    /// Warmup requests sent first (closed loop at the point's concurrency, or its cap, or all
    /// at once), recorded and excluded.
    pub warmup: usize,
    /// Closed loop only: time over which users are added linearly.
    pub ramp_up: Option<Duration>,
    /// Sustained load time after the ramp-up.
    pub duration: Option<Duration>,
    /// Closed loop: when users send their first measured request (spread out by default).
    pub user_start: UserStart,
    /// Open loop: stop sending once the backlog shows the target cannot keep up (the point is
    /// over-saturated; a saturation sweep's points), instead of sending every arrival.
    pub stop_when_saturated: bool,
}

impl LoadPlan {
    /// A closed-loop plan of `num_prompts` requests at `concurrency`, no warmup.
    pub fn closed(concurrency: usize, num_prompts: usize) -> Self {
        LoadPlan {
            load: Load::Closed { concurrency },
            num_prompts,
            warmup: 0,
            ramp_up: None,
            duration: None,
            user_start: UserStart::Auto,
            stop_when_saturated: false,
        }
    }

    /// Checks the numbers and combinations.
    pub fn validate(&self) -> Result<(), LoadError> {
        self.load.validate()?;
        if self.ramp_up.is_some() && self.duration.is_none() {
            return Err(LoadError::Shape("--ramp-up needs --duration (users are added, then run for the duration)"));
        }
        if self.ramp_up.is_some() && matches!(self.load, Load::Open { .. }) {
            return Err(LoadError::Shape("--ramp-up adds closed-loop users; use it with --concurrency, not a rate"));
        }
        Ok(())
    }
}

/// Gaps between open-loop arrivals: gamma with shape `burstiness` and mean `1 / rate`
/// (exponential, i.e. Poisson arrivals, at burstiness 1; constant at infinity).
///
/// ```rust
/// use trtllm::bench::ArrivalProcess;
///
/// let mut constant = ArrivalProcess::new(4.0, f64::INFINITY, 1).unwrap();
/// assert_eq!(constant.next_gap_s(), 0.25);
/// let mut poisson = ArrivalProcess::new(4.0, 1.0, 1).unwrap();
/// let mean = (0..10_000).map(|_| poisson.next_gap_s()).sum::<f64>() / 10_000.0;
/// assert!((mean - 0.25).abs() < 0.02);
/// ```
#[derive(Debug)]
pub struct ArrivalProcess {
    rate: f64,
    gamma: Option<Gamma<f64>>,
    rng: StdRng,
}

impl ArrivalProcess {
    /// Gaps for `rate` requests per second at `burstiness`, seeded.
    pub fn new(rate: f64, burstiness: f64, seed: u64) -> Result<Self, LoadError> {
        Load::Open { rate, burstiness, max_concurrency: None }.validate()?;
        let gamma = if burstiness.is_infinite() {
            None
        } else {
            Some(Gamma::new(burstiness, 1.0 / (rate * burstiness)).map_err(|_| LoadError::Burstiness(burstiness))?)
        };
        Ok(ArrivalProcess { rate, gamma, rng: StdRng::seed_from_u64(seed) })
    }

    /// The next gap, seconds.
    pub fn next_gap_s(&mut self) -> f64 {
        match &self.gamma {
            Some(gamma) => gamma.sample(&mut self.rng),
            None => 1.0 / self.rate,
        }
    }
}

/// Send times (seconds after the start) of `n` open-loop arrivals: cumulative gamma gaps,
/// rescaled so that the last arrival falls at `n / rate`, as `vllm bench serve` does to keep
/// the offered rate exact whatever the draw (the gaps keep their shape: a rescaling does not
/// change their coefficient of variation).
///
/// ```rust
/// use trtllm::bench::arrival_schedule;
///
/// let times = arrival_schedule(100, 10.0, 1.0, 7).unwrap();
/// assert_eq!(times.len(), 100);
/// assert!((times[99] - 10.0).abs() < 1e-9);
/// assert!(times.windows(2).all(|w| w[0] <= w[1]));
/// ```
pub fn arrival_schedule(n: usize, rate: f64, burstiness: f64, seed: u64) -> Result<Vec<f64>, LoadError> {
    let mut process = ArrivalProcess::new(rate, burstiness, seed)?;
    let mut t = 0.0;
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            t += process.next_gap_s();
            t
        })
        .collect();
    if let Some(&last) = times.last()
        && last > 0.0
    {
        let scale = n as f64 / rate / last;
        times.iter_mut().for_each(|x| *x *= scale);
    }
    Ok(times)
}

/// When user `index` of `users` starts under a linear ramp-up of `ramp_up_s` seconds: users
/// start evenly spaced, the first at 0, so all are running by `ramp_up_s`.
///
/// ```rust
/// use trtllm::bench::ramp_start_s;
///
/// assert_eq!(ramp_start_s(0, 4, 8.0), 0.0);
/// assert_eq!(ramp_start_s(2, 4, 8.0), 4.0);
/// assert_eq!(ramp_start_s(3, 4, 8.0), 6.0);
/// ```
pub fn ramp_start_s(index: usize, users: usize, ramp_up_s: f64) -> f64 {
    if users == 0 { 0.0 } else { ramp_up_s * index as f64 / users as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_loads_are_rejected() {
        assert!(matches!(Load::Closed { concurrency: 0 }.validate(), Err(LoadError::Concurrency)));
        let open = |rate, burstiness| Load::Open { rate, burstiness, max_concurrency: None }.validate();
        assert!(matches!(open(0.0, 1.0), Err(LoadError::Rate(_))));
        assert!(matches!(open(f64::INFINITY, 1.0), Err(LoadError::Rate(_))));
        assert!(matches!(open(1.0, 0.0), Err(LoadError::Burstiness(_))));
        assert!(matches!(open(1.0, f64::NAN), Err(LoadError::Burstiness(_))));
        assert!(open(1.0, f64::INFINITY).is_ok());
        let mut plan = LoadPlan::closed(4, 10);
        plan.ramp_up = Some(Duration::from_secs(1));
        assert!(matches!(plan.validate(), Err(LoadError::Shape(_))));
        plan.duration = Some(Duration::from_secs(1));
        assert!(plan.validate().is_ok());
        plan.load = Load::Open { rate: 1.0, burstiness: 1.0, max_concurrency: None };
        assert!(matches!(plan.validate(), Err(LoadError::Shape(_))));
    }

    #[test]
    fn same_seed_same_schedule() {
        assert_eq!(arrival_schedule(50, 3.0, 0.5, 9).unwrap(), arrival_schedule(50, 3.0, 0.5, 9).unwrap());
        assert_ne!(arrival_schedule(50, 3.0, 0.5, 9).unwrap(), arrival_schedule(50, 3.0, 0.5, 10).unwrap());
        assert!(arrival_schedule(0, 3.0, 1.0, 9).unwrap().is_empty());
    }
}
