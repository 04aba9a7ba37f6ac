//! Speculative engines for the simulator: which mode a simulated engine was "built" with, its
//! draft length and the drafter's acceptance, written into config.json and simulation.json.

use serde::Serialize;

use crate::engine::speculative::{SimSpeculative, SpeculativeDecodingMode};

/// A simulated engine's speculative decoding.
///
/// ```
/// use trtllm::sim::{SimulatedEngine, SimulatedSpeculation};
/// use trtllm::speculative::SpeculativeDecodingMode;
/// let engine = SimulatedEngine::builder()
///     .speculation(SimulatedSpeculation::new(SpeculativeDecodingMode::Medusa, 4, 0.7))
///     .build();
/// assert_eq!(engine.config_json().build_config.max_draft_len, Some(4));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimulatedSpeculation {
    /// config.json `build_config.speculative_decoding_mode`.
    pub mode: SpeculativeDecodingMode,
    /// config.json `build_config.max_draft_len` (Medusa: also `num_medusa_heads`).
    pub max_draft_len: usize,
    /// simulation.json `speculative.acceptance`: per draft position (the last value repeats).
    pub acceptance: Vec<f64>,
    /// simulation.json `speculative.draft_agreement`: a draft model's agreement with the target.
    pub draft_agreement: Option<f64>,
}

impl SimulatedSpeculation {
    /// `mode` with `max_draft_len` drafts per step, each accepted with probability `acceptance`
    /// given the ones before it were.
    pub fn new(mode: SpeculativeDecodingMode, max_draft_len: usize, acceptance: f64) -> Self {
        SimulatedSpeculation { mode, max_draft_len, acceptance: vec![acceptance], draft_agreement: None }
    }

    /// A draft model for a draft-target pair: a plain engine whose token agrees with the context's
    /// (what a `draft_tokens_external` target generates) with probability `agreement`.
    pub fn draft_model(agreement: f64) -> Self {
        SimulatedSpeculation {
            mode: SpeculativeDecodingMode::None,
            max_draft_len: 0,
            acceptance: vec![agreement],
            draft_agreement: Some(agreement),
        }
    }

    /// Lookahead's default sizes (window 4, n-gram 3, verification set 4) verify
    /// (4 − 1 + 4) × (3 − 1) = 14 draft tokens per step; an engine must allow at least that many.
    pub const LOOKAHEAD_DEFAULT_DRAFT_TOKENS: usize = 14;

    pub(crate) fn simulation(&self) -> SimSpeculative {
        SimSpeculative {
            acceptance: self.acceptance.clone(),
            context_tokens: self.mode == SpeculativeDecodingMode::DraftTokensExternal || self.draft_agreement.is_some(),
            draft_agreement: self.draft_agreement,
        }
    }

    pub(crate) fn medusa_heads(&self) -> Option<usize> {
        (self.mode == SpeculativeDecodingMode::Medusa).then_some(self.max_draft_len)
    }
}
