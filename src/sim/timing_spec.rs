//! [`TimingSpec`]: what the timing model prices, an engine's resolved description held whole, with what
//! timing adds to it (the weights' kernel format, the drafter, MoE routing, CUDA graphs).

use serde::Serialize;

use super::kernels::WeightFormat;
use super::model::ModelShape;
use crate::engine::EngineDescription;
use crate::engine::description::{BuildLimits, KvQuant, WeightQuant};

/// What an engine is, as far as timing and memory go: its description, asked rather than copied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingSpec {
    description: EngineDescription,
    moe_imbalance: f64,
    cuda_graphs: bool,
}

/// The speculative drafter's work per step (zero for modes whose drafts cost only verified rows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Drafter {
    /// Parameters of one pass per GPU.
    pub params_per_gpu: f64,
    /// Bytes those parameters occupy.
    pub bytes_per_gpu: f64,
    /// Sequential passes per step.
    pub passes: f64,
}

impl TimingSpec {
    /// The spec of a resolved description whose architecture the model describes; uniform MoE routing and
    /// no CUDA graphs until said otherwise.
    pub(crate) fn new(description: EngineDescription) -> Self {
        TimingSpec { description, moe_imbalance: DEFAULT_MOE_IMBALANCE, cuda_graphs: false }
    }

    /// The same spec with this MoE routing imbalance (simulation.json `moe_imbalance`, checked at least 1
    /// by [`check_moe_imbalance`](crate::engine::simulation_json::check_moe_imbalance)).
    pub(crate) fn with_moe_imbalance(mut self, factor: f64) -> Self {
        self.moe_imbalance = factor;
        self
    }

    /// The same spec with kernels launched from CUDA graphs (`true`) or one host enqueue each.
    pub(crate) fn with_cuda_graphs(mut self, cuda_graphs: bool) -> Self {
        self.cuda_graphs = cuda_graphs;
        self
    }

    /// The engine's description.
    pub fn description(&self) -> &EngineDescription {
        &self.description
    }

    /// The model's shape.
    pub fn shape(&self) -> &ModelShape {
        self.description.shape()
    }

    /// How the linear layers' weights are stored and multiplied.
    pub fn weights(&self) -> WeightFormat {
        let precision = self.description.precision();
        WeightFormat { bytes_per_param: precision.weight_bytes(), fp8_math: precision.weights == WeightQuant::Fp8 }
    }

    /// Bytes per KV-cache element.
    pub fn kv_bytes_per_element(&self) -> f64 {
        self.description.precision().kv_bytes()
    }

    /// The KV cache is FP8 (needs FP8 support; INT8 does not).
    pub fn kv_cache_fp8(&self) -> bool {
        self.description.precision().kv_cache == KvQuant::Fp8
    }

    /// Bytes per activation element (the engine's dtype).
    pub fn activation_bytes(&self) -> f64 {
        self.description.precision().activation_bytes
    }

    /// Tensor-parallel ranks.
    pub fn tp(&self) -> usize {
        self.description.parallelism().tp
    }

    /// Pipeline-parallel stages.
    pub fn pp(&self) -> usize {
        self.description.parallelism().pp
    }

    /// Tensor parallelism inside each expert (MoE; moe_tp x moe_ep = tp).
    pub fn moe_tp(&self) -> usize {
        self.description.parallelism().moe_tp
    }

    /// Expert parallelism (MoE).
    pub fn moe_ep(&self) -> usize {
        self.description.parallelism().moe_ep
    }

    /// KV heads each tensor-parallel rank holds.
    pub fn kv_heads_per_rank(&self) -> usize {
        self.description.kv_heads_per_rank()
    }

    /// Vocabulary rows of the output head each tensor-parallel rank holds (the padded vocabulary / tp).
    pub fn vocab_rows_per_rank(&self) -> usize {
        self.description.vocab_rows_per_rank()
    }

    /// Routed rows of the busiest expert-parallel rank over the mean (simulation.json `moe_imbalance`).
    pub fn moe_imbalance(&self) -> f64 {
        self.moe_imbalance
    }

    /// The embedding table is split across tensor-parallel ranks.
    pub fn parallel_embedding(&self) -> bool {
        self.description.limits().parallel_embedding
    }

    /// Kernels launch from CUDA graphs (otherwise one host enqueue each).
    pub fn cuda_graphs(&self) -> bool {
        self.cuda_graphs
    }

    /// The build limits the runtime sizes its buffers for.
    pub fn limits(&self) -> &BuildLimits {
        self.description.limits()
    }
}

/// Routing imbalance assumed when simulation.json states none: uniform routing in expectation.
pub const DEFAULT_MOE_IMBALANCE: f64 = 1.0;
