//! A fast steady-state bound on what a configuration can reach, from the timing model alone: the
//! search runs a configuration only while that bound could still place it among the best.
//!
//! No load point can produce tokens faster than its largest possible batch (max_batch_size, the
//! most users of any load, and the requests the KV cache holds at the shortest prompt) decoding
//! at the shortest context with every request producing a token in every iteration: prompt
//! chunks, longer contexts and idle gaps only add time. So a point's output tokens/s per GPU is at
//! most `max over b of b / step(b)` divided by the GPUs, and one user's decode speed at most one
//! token per single-request step.
//!
//! A TPOT or ITL objective caps the batch as well, as a steady-state estimate: a batch whose
//! decode step at the shortest context already takes more than [`STEP_SLACK`] times the limit
//! cannot hold its users within it, so it is left out of the maximum. Without such objectives
//! the bound is exact, and a configuration whose bound lies below the goodput of the `k`-th best
//! configuration already run cannot rank among the best `k`.

use serde::Serialize;

use super::space::{Candidate, SearchSpace, WorkloadShape};
use crate::sim::PerfModel;
use crate::sim::perf_model::BatchWork;

/// Headroom on the bound for the rounding of figures measured from simulated timestamps.
const ROUNDING_HEADROOM: f64 = 1.001;

/// How far a batch's shortest decode step may exceed a TPOT or ITL limit and still count: steps
/// of a steady state at that batch are longer still (longer contexts, prompt chunks), so a
/// batch past this cannot meet the objective; the headroom covers the ramp-up and drain, whose
/// smaller batches pull a percentile down.
pub const STEP_SLACK: f64 = 1.5;

/// The most a configuration can reach at any load.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bound {
    /// Output tokens/s per GPU at most.
    pub tokens_per_s_per_gpu: f64,
    /// Decode speed of one user, tokens/s, at most.
    pub tokens_per_s_per_user: f64,
    /// The largest batch the bound allows.
    pub max_batch: usize,
    /// Output tokens/s per GPU at most with `b + 1` users at most, by `b`.
    #[serde(skip)]
    pub per_gpu_by_users: Vec<f64>,
}

impl Bound {
    /// The bound of `candidate` for `workload`, whose points have at most `max_users` users
    /// (`None`: open loop, bounded by the engine alone), under a TPOT or ITL limit of
    /// `step_limit_ms` if any (batches whose shortest step exceeds `STEP_SLACK` times it do not
    /// count).
    pub fn of(
        space: &SearchSpace,
        candidate: &Candidate,
        workload: &WorkloadShape,
        max_users: Option<usize>,
        step_limit_ms: Option<f64>,
    ) -> Result<Bound, crate::sim::SimError> {
        let engine = super::space::engine_for(&space.model, space, candidate, workload).build();
        let perf = engine.perf_model()?;
        let e = &candidate.engine;
        let reserve = perf.runtime_reserve_bytes(e.max_num_tokens, e.max_batch_size, 1);
        let capacity = perf.kv_capacity_tokens(candidate.runtime.kv_fraction, reserve)? as usize;
        // A request holds at least its prompt and the token being generated.
        let held = capacity / (workload.min_input_len + 1);
        let max_batch = e.max_batch_size.min(max_users.unwrap_or(usize::MAX)).min(held).max(1);
        // Graphs or not, whichever is faster: the executor's CUDA graph mode may turn them on.
        let models = [perf.clone().with_cuda_graphs(false), perf.with_cuda_graphs(true)];
        let context = workload.min_input_len as f64;
        let mut work = BatchWork::default();
        let (mut best_rate, mut single_step_ms) = (0.0_f64, f64::INFINITY);
        let per_gpu = |rate: f64| rate / candidate.gpus().max(1) as f64 * ROUNDING_HEADROOM;
        let mut per_gpu_by_users = Vec::with_capacity(max_batch);
        for b in 1..=max_batch {
            work.add_generation(context, 1.0);
            let step_ms = fastest_step_ms(&models, &work);
            if b == 1 {
                single_step_ms = step_ms;
            } else if step_limit_ms.is_some_and(|limit| step_ms > STEP_SLACK * limit) {
                // Steps only grow with the batch.
                break;
            }
            best_rate = best_rate.max(b as f64 * 1e3 / step_ms);
            per_gpu_by_users.push(per_gpu(best_rate));
        }
        Ok(Bound {
            tokens_per_s_per_gpu: per_gpu(best_rate),
            per_gpu_by_users,
            tokens_per_s_per_user: 1e3 / single_step_ms * ROUNDING_HEADROOM,
            max_batch,
        })
    }
}

impl Bound {
    /// Output tokens/s per GPU at most at a point with `users` users.
    pub fn per_gpu_at(&self, users: usize) -> f64 {
        let index = users.clamp(1, self.per_gpu_by_users.len().max(1)) - 1;
        self.per_gpu_by_users.get(index).copied().unwrap_or(self.tokens_per_s_per_gpu)
    }
}

fn fastest_step_ms(models: &[PerfModel], work: &BatchWork) -> f64 {
    models.iter().map(|m| m.iteration(work).total_ms).fold(f64::INFINITY, f64::min)
}

/// The goodput the `k`-th best configuration so far must be beaten by: `None` until `k` have a
/// goodput.
pub fn kth_best(goodputs: &[f64], k: usize) -> Option<f64> {
    let mut sorted: Vec<f64> = goodputs.iter().copied().filter(|g| *g > 0.0).collect();
    sorted.sort_by(|a, b| b.total_cmp(a));
    (k > 0).then(|| sorted.get(k - 1).copied()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::search::{EngineKnobs, RuntimeKnobs, SchedulerChoice};

    fn candidate(tp: usize, max_batch_size: usize) -> Candidate {
        Candidate {
            engine: EngineKnobs {
                tp,
                ep: 1,
                fp8_weights: false,
                fp8_kv_cache: false,
                max_batch_size,
                max_num_tokens: 8192,
            },
            runtime: RuntimeKnobs {
                kv_fraction: 0.9,
                block_reuse: true,
                chunked_context: true,
                scheduler: SchedulerChoice::GuaranteedNoEvict,
            },
        }
    }

    fn space() -> SearchSpace {
        SearchSpace { tp: vec![1, 2], max_batch_size: vec![16, 256], ..SearchSpace::llama_8b("h100-sxm") }
    }

    const SHAPE: WorkloadShape =
        WorkloadShape { min_input_len: 1000, max_input_len: 1000, max_output_len: 1000, shared_prefixes: false };

    #[test]
    fn bigger_batches_and_fewer_gpus_bound_higher_per_gpu() {
        let s = space();
        let small = Bound::of(&s, &candidate(1, 16), &SHAPE, None, None).unwrap();
        let big = Bound::of(&s, &candidate(1, 256), &SHAPE, None, None).unwrap();
        let users = Bound::of(&s, &candidate(1, 256), &SHAPE, Some(16), None).unwrap();
        let two = Bound::of(&s, &candidate(2, 256), &SHAPE, None, None).unwrap();
        assert!(big.tokens_per_s_per_gpu > 4.0 * small.tokens_per_s_per_gpu, "{small:?} {big:?}");
        assert_eq!(users.tokens_per_s_per_gpu, small.tokens_per_s_per_gpu, "16 users batch no more than 16");
        assert_eq!(big.per_gpu_at(16), small.tokens_per_s_per_gpu);
        assert!(big.per_gpu_at(1) < big.per_gpu_at(2) && big.per_gpu_at(4096) == big.tokens_per_s_per_gpu);
        assert!(
            two.tokens_per_s_per_gpu < big.tokens_per_s_per_gpu
                && two.tokens_per_s_per_user > big.tokens_per_s_per_user
        );
        assert_eq!(small.tokens_per_s_per_user, big.tokens_per_s_per_user);
    }

    #[test]
    fn a_step_limit_caps_the_batch() {
        let s = space();
        let free = Bound::of(&s, &candidate(1, 256), &SHAPE, None, None).unwrap();
        let single_ms = 1e3 / (free.tokens_per_s_per_user / ROUNDING_HEADROOM);
        let capped = Bound::of(&s, &candidate(1, 256), &SHAPE, None, Some(1.2 * single_ms)).unwrap();
        assert!(capped.tokens_per_s_per_gpu < free.tokens_per_s_per_gpu, "{capped:?} {free:?}");
        assert_eq!(capped.tokens_per_s_per_user, free.tokens_per_s_per_user);
        // A limit below even one request's step leaves the single request: no point meets it anyway.
        let none = Bound::of(&s, &candidate(1, 256), &SHAPE, None, Some(0.1 * single_ms)).unwrap();
        assert!((none.tokens_per_s_per_gpu - none.tokens_per_s_per_user).abs() < 1e-9);
    }

    #[test]
    fn the_kth_best_needs_k_goodputs() {
        assert_eq!(kth_best(&[3.0, 0.0, 1.0], 2), Some(1.0));
        assert_eq!(kth_best(&[3.0, 0.0, 1.0], 3), None);
        assert_eq!(kth_best(&[3.0], 0), None);
    }
}
