//! The search space: engine and runtime knobs, their combinations, and the pruning of those that
//! cannot run (weights that do not fit, FP8 without FP8 hardware, prompts that cannot be scheduled).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::sim::{ClockMode, GpuPreset, KvCacheDtype, ModelPreset, SimulatedEngine, WeightDtype};
use crate::{ExecutorConfig, SchedulerPolicy};

use super::parallelism::expert_parallel_refusal;

/// Knobs fixed when the engine is built (`trtllm sim build` / `trtllm-build`).
///
/// Each field is one axis of [`SearchSpace::candidates`]. The GPUs are `tp` whatever `ep` is:
/// TensorRT-LLM splits an MoE layer's `tp` GPUs into `moe_tp × moe_ep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EngineKnobs {
    /// Tensor-parallel GPUs.
    pub tp: usize,
    /// Expert-parallel ranks among them (`moe_ep_size`; Mixture-of-Experts models only, 1 for
    /// dense ones). Serialized only above 1, so the keys of results without it stay the same.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub ep: usize,
    /// FP8 weights (else BF16).
    pub fp8_weights: bool,
    /// FP8 KV cache (else 16-bit).
    pub fp8_kv_cache: bool,
    /// `build_config.max_batch_size`.
    pub max_batch_size: usize,
    /// `build_config.max_num_tokens`.
    pub max_num_tokens: usize,
}

/// Capacity scheduler policies the search may try (the serializable mirror of [`SchedulerPolicy`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SchedulerChoice {
    /// `GUARANTEED_NO_EVICT`: admit only with KV blocks for the whole request.
    GuaranteedNoEvict,
    /// `MAX_UTILIZATION`: admit greedily, pause requests when blocks run out.
    MaxUtilization,
}

impl SchedulerChoice {
    /// The executor's policy.
    pub fn policy(self) -> SchedulerPolicy {
        match self {
            SchedulerChoice::GuaranteedNoEvict => SchedulerPolicy::GuaranteedNoEvict,
            SchedulerChoice::MaxUtilization => SchedulerPolicy::MaxUtilization,
        }
    }

    /// The value of `trtllm serve --scheduler-policy`.
    pub fn flag_value(self) -> &'static str {
        match self {
            SchedulerChoice::GuaranteedNoEvict => "guaranteed-no-evict",
            SchedulerChoice::MaxUtilization => "max-utilization",
        }
    }
}

/// Knobs set when the executor starts (`trtllm serve` flags).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RuntimeKnobs {
    /// Fraction of free GPU memory for the KV cache.
    pub kv_fraction: f64,
    /// KV block reuse across requests with shared prefixes.
    pub block_reuse: bool,
    /// Split long prompts across iterations.
    pub chunked_context: bool,
    /// Capacity scheduler policy.
    pub scheduler: SchedulerChoice,
}

impl RuntimeKnobs {
    /// The executor flags that set these knobs, as `trtllm serve` and `trtllm bench` both take
    /// them (one shared set of flags), each with a leading space.
    pub fn flags(&self) -> String {
        let mut flags = format!(
            " --kv-cache-free-gpu-memory-fraction {} --scheduler-policy {}",
            self.kv_fraction,
            self.scheduler.flag_value()
        );
        if !self.block_reuse {
            flags += " --no-block-reuse";
        }
        if !self.chunked_context {
            flags += " --no-chunked-context";
        }
        flags
    }

    /// `config` with these knobs applied.
    pub fn apply(&self, config: ExecutorConfig) -> ExecutorConfig {
        ExecutorConfig {
            kv_cache_free_gpu_memory_fraction: Some(self.kv_fraction as f32),
            kv_cache_enable_block_reuse: self.block_reuse,
            enable_chunked_context: self.chunked_context,
            scheduler_policy: self.scheduler.policy(),
            ..config
        }
    }
}

/// One configuration of the search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// Build-time knobs.
    pub engine: EngineKnobs,
    /// Start-time knobs.
    pub runtime: RuntimeKnobs,
}

impl Candidate {
    /// A stable key: 16 hex digits of the FNV-1a hash of the configuration's JSON (field order
    /// is the declaration order, so the key is the same on every run and machine).
    pub fn key(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        let hash =
            json.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
        format!("{hash:016x}")
    }

    /// How many runtime knobs differ from the executor's defaults (KV fraction 0.9, block
    /// reuse, chunked context, guaranteed-no-evict): among equally good configurations the one
    /// closest to the defaults is recommended, since the others buy nothing.
    pub fn departures_from_defaults(&self) -> usize {
        let r = &self.runtime;
        usize::from((r.kv_fraction - crate::sim::perf_model::DEFAULT_FREE_GPU_MEMORY_FRACTION).abs() > 1e-6)
            + usize::from(!r.block_reuse)
            + usize::from(!r.chunked_context)
            + usize::from(r.scheduler != SchedulerChoice::GuaranteedNoEvict)
    }

    /// GPUs the configuration occupies.
    pub fn gpus(&self) -> usize {
        self.engine.tp
    }

    /// A one-line description: `tp1 bf16/fp16kv mbs64 mnt8192 kv0.90 reuse chunked gne`, with
    /// ` ep2` after the TP where experts are spread over ranks (`tp4 ep2 ...`).
    pub fn label(&self) -> String {
        let e = &self.engine;
        let r = &self.runtime;
        format!(
            "tp{}{} {}/{} mbs{} mnt{} kv{:.2}{}{} {}",
            e.tp,
            if e.ep > 1 { format!(" ep{}", e.ep) } else { String::new() },
            if e.fp8_weights { "fp8" } else { "bf16" },
            if e.fp8_kv_cache { "fp8kv" } else { "16bkv" },
            e.max_batch_size,
            e.max_num_tokens,
            r.kv_fraction,
            if r.block_reuse { " reuse" } else { "" },
            if r.chunked_context { " chunked" } else { "" },
            match r.scheduler {
                SchedulerChoice::GuaranteedNoEvict => "gne",
                SchedulerChoice::MaxUtilization => "maxutil",
            }
        )
    }
}

/// What the search explores: the model and GPU, and the values of every knob.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchSpace {
    /// The model: a preset, or one read from a config.json (`trtllm plan --model`), carried whole.
    #[serde(serialize_with = "model_id")]
    pub model: ModelPreset,
    /// GPU preset id.
    pub gpu: String,
    /// GPU figures replaced by name (a calibration file's, `trtllm plan --calibration`): applied to the
    /// pruning's model and to every engine the search runs.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub gpu_overrides: BTreeMap<String, f64>,
    /// Tensor-parallel sizes.
    pub tp: Vec<usize>,
    /// Expert-parallel sizes (`moe_ep`); each is combined with the `tp` values it divides.
    pub ep: Vec<usize>,
    /// Try FP8 weights and FP8 KV cache (each with and without) where the GPU has FP8.
    pub try_fp8: bool,
    /// Engine max_batch_size values.
    pub max_batch_size: Vec<usize>,
    /// Engine max_num_tokens values.
    pub max_num_tokens: Vec<usize>,
    /// KV-cache free-memory fractions.
    pub kv_fraction: Vec<f64>,
    /// Block reuse on/off.
    pub block_reuse: Vec<bool>,
    /// Chunked context on/off.
    pub chunked_context: Vec<bool>,
    /// Scheduler policies.
    pub scheduler: Vec<SchedulerChoice>,
}

/// A search space's model as its id (the preset id, or the config path given).
fn model_id<S: serde::Serializer>(model: &ModelPreset, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&model.id)
}

/// A configuration left out before running, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pruned {
    /// The configuration.
    pub candidate: Candidate,
    /// Why it cannot run.
    pub reason: String,
}

/// What each request of the workload needs: the longest prompt and output, and whether prompts
/// share prefixes (without shared prefixes block reuse changes nothing, so it is not searched).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkloadShape {
    /// Shortest prompt, tokens (the steady-state bound's smallest context).
    pub min_input_len: usize,
    /// Longest prompt, tokens.
    pub max_input_len: usize,
    /// Longest output, tokens.
    pub max_output_len: usize,
    /// Prompts share prefixes.
    pub shared_prefixes: bool,
}

impl SearchSpace {
    /// Every combination, split into those to run and those pruned (with the reason). Values
    /// are deduplicated; FP8 variants are only generated where the GPU has FP8; an `ep` that
    /// does not divide a `tp` is no configuration of it (`moe_tp` would not be whole) and is
    /// skipped, while one the model cannot take (a dense model, experts it does not divide) is
    /// pruned with the reason.
    pub fn candidates(&self, workload: &WorkloadShape) -> Result<(Vec<Candidate>, Vec<Pruned>), crate::sim::SimError> {
        let model = &self.model;
        let gpu = GpuPreset::by_id(&self.gpu)?;
        let fp8 = if self.try_fp8 && gpu.has_fp8() { vec![false, true] } else { vec![false] };
        let reuse = if workload.shared_prefixes { dedup(&self.block_reuse) } else { vec![true] };
        let mut run = Vec::new();
        let mut pruned = Vec::new();
        let tp_ep = dedup(&self.tp)
            .into_iter()
            .flat_map(|tp| dedup(&self.ep).into_iter().map(move |ep| (tp, ep)))
            .filter(|&(tp, ep)| ep == 0 || tp.is_multiple_of(ep));
        for (tp, ep) in tp_ep {
            for &fp8_weights in &fp8 {
                for &fp8_kv_cache in &fp8 {
                    for &max_batch_size in &dedup(&self.max_batch_size) {
                        for &max_num_tokens in &dedup(&self.max_num_tokens) {
                            let engine =
                                EngineKnobs { tp, ep, fp8_weights, fp8_kv_cache, max_batch_size, max_num_tokens };
                            for &kv_fraction in &dedup_f64(&self.kv_fraction) {
                                for &block_reuse in &reuse {
                                    for &chunked_context in &dedup(&self.chunked_context) {
                                        for &scheduler in &dedup(&self.scheduler) {
                                            let runtime =
                                                RuntimeKnobs { kv_fraction, block_reuse, chunked_context, scheduler };
                                            let candidate = Candidate { engine, runtime };
                                            match prune_reason(model, self, &candidate, workload) {
                                                Some(reason) => pruned.push(Pruned { candidate, reason }),
                                                None => run.push(candidate),
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok((run, pruned))
    }

    /// The simulated engine for `candidate` (virtual clock for planning).
    pub fn engine(
        &self,
        candidate: &Candidate,
        workload: &WorkloadShape,
    ) -> Result<SimulatedEngine, crate::sim::SimError> {
        Ok(engine_for(&self.model, self, candidate, workload).clock(ClockMode::Virtual).build())
    }

    /// The `trtllm sim build` command line that builds `candidate`'s engine into `output`.
    pub fn sim_build_command(&self, candidate: &Candidate, workload: &WorkloadShape, output: &str) -> String {
        let e = &candidate.engine;
        let mut cmd =
            format!("trtllm sim build --model {} --gpu {} --tp {}", shell_word(&self.model.id), self.gpu, e.tp);
        if e.ep > 1 {
            cmd += &format!(" --moe-ep {}", e.ep);
        }
        if e.fp8_weights {
            cmd += " --dtype fp8";
        }
        if e.fp8_kv_cache {
            cmd += " --kv-cache-dtype fp8";
        }
        for (figure, value) in &self.gpu_overrides {
            cmd += &format!(" --gpu-override {figure}={value}");
        }
        cmd += &format!(
            " --max-batch-size {} --max-num-tokens {} --max-input-len {} --output {}",
            e.max_batch_size,
            e.max_num_tokens,
            workload.max_input_len,
            shell_word(output)
        );
        cmd
    }

    /// The `trtllm serve` command line that runs `candidate` on the engine in `engine_dir`.
    pub fn serve_command(candidate: &Candidate, engine_dir: &str) -> String {
        format!("trtllm serve --engine-dir {}{}", shell_word(engine_dir), candidate.runtime.flags())
    }
}

/// The engine builder for a candidate, as `trtllm sim build` configures it.
pub(super) fn engine_for(
    model: &ModelPreset,
    space: &SearchSpace,
    candidate: &Candidate,
    workload: &WorkloadShape,
) -> crate::sim::SimulatedEngineBuilder {
    let e = &candidate.engine;
    let mut builder = SimulatedEngine::builder().model(model).gpu(&space.gpu);
    for (figure, value) in &space.gpu_overrides {
        builder = builder.gpu_override(figure.clone(), *value);
    }
    builder
        .tensor_parallel(e.tp)
        .expert_parallel(e.ep)
        .dtype(if e.fp8_weights { WeightDtype::Fp8 } else { WeightDtype::Bf16 })
        .kv_cache_dtype(if e.fp8_kv_cache { KvCacheDtype::Fp8 } else { KvCacheDtype::Auto })
        .max_batch_size(e.max_batch_size)
        .max_num_tokens(e.max_num_tokens)
        .max_seq_len(model.max_position_embeddings)
        .max_input_len(workload.max_input_len.min(model.max_position_embeddings))
}

/// Why `candidate` cannot serve the workload, or `None` when it can.
fn prune_reason(
    model: &ModelPreset,
    space: &SearchSpace,
    candidate: &Candidate,
    workload: &WorkloadShape,
) -> Option<String> {
    let e = &candidate.engine;
    if e.tp == 0 || e.max_batch_size == 0 || e.max_num_tokens == 0 {
        return Some("tp, max_batch_size and max_num_tokens must be at least 1".into());
    }
    if let Some(reason) = expert_parallel_refusal(model, e.ep) {
        return Some(reason);
    }
    if !e.tp.is_multiple_of(e.ep) {
        return Some(format!("expert parallelism {} does not divide tp {}", e.ep, e.tp));
    }
    if !(candidate.runtime.kv_fraction > 0.0 && candidate.runtime.kv_fraction <= 1.0) {
        return Some(format!("KV fraction {} is outside (0, 1]", candidate.runtime.kv_fraction));
    }
    if workload.max_input_len + workload.max_output_len > model.max_position_embeddings {
        return Some(format!("requests exceed the model's context of {} tokens", model.max_position_embeddings));
    }
    if !candidate.runtime.chunked_context && workload.max_input_len > e.max_num_tokens {
        return Some(format!(
            "without chunked context a {}-token prompt does not fit max_num_tokens {}",
            workload.max_input_len, e.max_num_tokens
        ));
    }
    if candidate.runtime.scheduler == SchedulerChoice::MaxUtilization
        && !candidate.runtime.chunked_context
        && workload.max_output_len > 1
    {
        // A streaming request may then only run if prompt + output fits max_input_len, which
        // the engine is built to the longest prompt.
        return Some("MAX_UTILIZATION without chunked context cannot stream prompts built to max_input_len".into());
    }
    let engine = engine_for(model, space, candidate, workload).build();
    let perf = match engine.perf_model() {
        Ok(perf) => perf,
        Err(e) => return Some(e.to_string()),
    };
    let reserve = perf.runtime_reserve_bytes(e.max_num_tokens, e.max_batch_size, 1);
    let capacity = match perf.kv_capacity_tokens(candidate.runtime.kv_fraction, reserve) {
        Ok(tokens) => tokens as usize,
        Err(e) => return Some(e.to_string()),
    };
    let one_request = workload.max_input_len + workload.max_output_len;
    if capacity < one_request {
        return Some(format!("KV cache of {capacity} tokens cannot hold one {one_request}-token request"));
    }
    None
}

fn one() -> usize {
    1
}

fn is_one(value: &usize) -> bool {
    *value == 1
}

fn dedup<T: Copy + PartialEq>(values: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(values.len());
    for v in values {
        if !out.contains(v) {
            out.push(*v);
        }
    }
    out
}

fn dedup_f64(values: &[f64]) -> Vec<f64> {
    dedup(values)
}

/// `text` quoted for a POSIX shell when it holds anything but safe characters.
pub(crate) fn shell_word(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./:=+,@%".contains(c);
    if !text.is_empty() && text.chars().all(safe) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
impl SearchSpace {
    /// Llama-3.1-8B on `gpu` with one value of each knob (TP 1, BF16, max_batch_size 256,
    /// max_num_tokens 8192, chunked context, block reuse, GUARANTEED_NO_EVICT): the space tests
    /// start from and widen.
    pub(crate) fn llama_8b(gpu: &str) -> SearchSpace {
        SearchSpace {
            model: ModelPreset::by_id("llama-3.1-8b").unwrap().clone(),
            gpu: gpu.into(),
            gpu_overrides: BTreeMap::new(),
            tp: vec![1],
            ep: vec![1],
            try_fp8: false,
            max_batch_size: vec![256],
            max_num_tokens: vec![8192],
            kv_fraction: vec![0.9],
            block_reuse: vec![true],
            chunked_context: vec![true],
            scheduler: vec![SchedulerChoice::GuaranteedNoEvict],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(gpu: &str) -> SearchSpace {
        SearchSpace {
            tp: vec![1, 2],
            try_fp8: true,
            max_batch_size: vec![16, 64, 64],
            max_num_tokens: vec![256, 8192],
            block_reuse: vec![true, false],
            chunked_context: vec![true, false],
            ..SearchSpace::llama_8b(gpu)
        }
    }

    const SHAPE: WorkloadShape =
        WorkloadShape { min_input_len: 1024, max_input_len: 1024, max_output_len: 128, shared_prefixes: false };

    #[test]
    fn fp8_only_where_the_gpu_has_it_and_unschedulable_prompts_are_pruned() {
        let (ampere, pruned) = space("rtx-a6000").candidates(&SHAPE).unwrap();
        assert!(ampere.iter().all(|c| !c.engine.fp8_weights && !c.engine.fp8_kv_cache));
        // 2 tp × 2 batch sizes × 2 token budgets × 2 chunking, reuse collapsed: 16, of which the
        // 256-token budget without chunking cannot take a 1024-token prompt.
        assert_eq!(ampere.len() + pruned.len(), 16);
        assert_eq!(pruned.len(), 4);
        assert!(pruned.iter().all(|p| p.reason.contains("without chunked context")), "{pruned:?}");
        let (hopper, _) = space("h100-sxm").candidates(&SHAPE).unwrap();
        assert_eq!(hopper.len(), 4 * ampere.len());
    }

    #[test]
    fn configurations_that_do_not_fit_memory_are_pruned() {
        let mut big = space("rtx-a6000");
        big.model = ModelPreset::by_id("llama-3.1-70b").unwrap().clone();
        let (run, pruned) = big.candidates(&SHAPE).unwrap();
        assert!(run.is_empty(), "70B in BF16 fits on neither one nor two 48 GB GPUs: {run:?}");
        assert!(pruned.iter().any(|p| p.reason.contains("fit")), "{pruned:?}");
        let shared = WorkloadShape { shared_prefixes: true, ..SHAPE };
        let (with_reuse, _) = space("rtx-a6000").candidates(&shared).unwrap();
        assert!(with_reuse.iter().any(|c| !c.runtime.block_reuse));
    }

    #[test]
    fn keys_are_stable_and_distinct() {
        let (run, _) = space("h100-sxm").candidates(&SHAPE).unwrap();
        let keys: std::collections::BTreeSet<String> = run.iter().map(Candidate::key).collect();
        assert_eq!(keys.len(), run.len());
        let first = run[0];
        assert_eq!(first.key(), Candidate { ..first }.key());
        assert_eq!(first.key().len(), 16);
    }

    #[test]
    fn command_lines_carry_every_knob() {
        let s = space("h100-sxm");
        let c = Candidate {
            engine: EngineKnobs {
                tp: 2,
                ep: 1,
                fp8_weights: true,
                fp8_kv_cache: true,
                max_batch_size: 64,
                max_num_tokens: 4096,
            },
            runtime: RuntimeKnobs {
                kv_fraction: 0.85,
                block_reuse: false,
                chunked_context: false,
                scheduler: SchedulerChoice::MaxUtilization,
            },
        };
        assert_eq!(
            s.sim_build_command(&c, &SHAPE, "my engine"),
            "trtllm sim build --model llama-3.1-8b --gpu h100-sxm --tp 2 --dtype fp8 --kv-cache-dtype fp8 \
             --max-batch-size 64 --max-num-tokens 4096 --max-input-len 1024 --output 'my engine'"
        );
        assert_eq!(
            SearchSpace::serve_command(&c, "e"),
            "trtllm serve --engine-dir e --kv-cache-free-gpu-memory-fraction 0.85 --scheduler-policy max-utilization \
             --no-block-reuse --no-chunked-context"
        );
    }

    #[test]
    fn expert_parallelism_pairs_with_the_tps_it_divides_and_needs_experts_it_divides() {
        let mut moe = space("h100-sxm");
        moe.model = ModelPreset::by_id("mixtral-8x7b").unwrap().clone();
        (moe.tp, moe.ep, moe.try_fp8) = (vec![1, 2, 4, 8], vec![1, 2, 4, 8, 3], false);
        (moe.max_batch_size, moe.max_num_tokens, moe.chunked_context) = (vec![64], vec![8192], vec![true]);
        let (run, pruned) = moe.candidates(&SHAPE).unwrap();
        let pairs = |cs: Vec<Candidate>| cs.iter().map(|c| (c.engine.tp, c.engine.ep)).collect::<Vec<_>>();
        let all = pairs(run.iter().chain(pruned.iter().map(|p| &p.candidate)).copied().collect());
        // ep 3 pairs with no TP here; the others with every TP they divide.
        let divides = [(1, 1), (2, 1), (2, 2), (4, 1), (4, 2), (4, 4), (8, 1), (8, 2), (8, 4), (8, 8)];
        assert_eq!(all.len(), divides.len(), "{all:?}");
        assert!(divides.iter().all(|p| all.contains(p)), "{all:?}");
        // Mixtral 8x7B in BF16 (~94 GB) fits no single 80 GB GPU; every split of two or more runs.
        assert_eq!(pairs(pruned.iter().map(|p| p.candidate).collect()), [(1, 1)], "{pruned:?}");
        assert!(run.iter().any(|c| c.engine.ep == 8 && c.label().starts_with("tp8 ep8 ")));
        let ep2 = run.iter().find(|c| c.engine.ep == 2).unwrap();
        assert!(moe.sim_build_command(ep2, &SHAPE, "e").contains(&format!("--tp {} --moe-ep 2 ", ep2.engine.tp)));
        let ep1 = Candidate { engine: EngineKnobs { ep: 1, ..ep2.engine }, ..*ep2 };
        assert!(!moe.sim_build_command(&ep1, &SHAPE, "e").contains("--moe-ep"));
        assert_ne!(ep1.key(), ep2.key());
        assert!(!serde_json::to_string(&ep1).unwrap().contains("\"ep\""), "ep 1 keeps the keys of before");

        // An ep the model cannot take is pruned with the reason, as is any ep above 1 of a dense model.
        moe.tp = vec![6];
        moe.ep = vec![3];
        let (run, pruned) = moe.candidates(&SHAPE).unwrap();
        assert!(run.is_empty() && pruned[0].reason.contains("does not divide the 8 experts"), "{pruned:?}");
        let mut dense = space("h100-sxm");
        (dense.tp, dense.ep) = (vec![2], vec![2]);
        let (run, pruned) = dense.candidates(&SHAPE).unwrap();
        assert!(run.is_empty() && pruned.iter().all(|p| p.reason.contains("dense model")), "{pruned:?}");
    }
}
