//! Speculative-decoding settings and figures: the executor's `DecodingConfig`, the per-request
//! lookahead / Eagle / draft-token configs, and the acceptance counts a request reports.

use serde::{Deserialize, Serialize};

use crate::engine::speculative::SpeculativeDecodingMode;
use crate::ffi::sys;

/// The executor's decoding mode (`DecodingMode`). The speculative ones must match the mode the
/// engine was built with (`build_config.speculative_decoding_mode`), or loading fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DecodingMode {
    /// Top-k/top-p sampling for beam width 1, beam search otherwise (the default).
    Auto,
    /// Top-k / top-p sampling.
    TopKTopP,
    /// Beam search.
    BeamSearch,
    /// Medusa heads propose a tree of draft tokens.
    Medusa,
    /// Lookahead (Jacobi) decoding: n-grams proposed by the model itself.
    Lookahead,
    /// ReDrafter-style explicit draft tokens.
    ExplicitDraftTokens,
    /// Draft-target: a separate draft model proposes tokens that the target verifies.
    ExternalDraftTokens,
    /// Eagle draft heads.
    Eagle,
}

impl DecodingMode {
    /// The decoding mode an engine built with `mode` (`build_config.speculative_decoding_mode`) runs
    /// with, if it speculates.
    ///
    /// ```
    /// use trtllm::speculative::{DecodingMode, SpeculativeDecodingMode};
    /// assert_eq!(DecodingMode::of_engine(SpeculativeDecodingMode::Medusa), Some(DecodingMode::Medusa));
    /// assert_eq!(DecodingMode::of_engine(SpeculativeDecodingMode::None), None);
    /// ```
    pub fn of_engine(mode: SpeculativeDecodingMode) -> Option<Self> {
        match mode {
            SpeculativeDecodingMode::None => None,
            SpeculativeDecodingMode::DraftTokensExternal => Some(DecodingMode::ExternalDraftTokens),
            SpeculativeDecodingMode::Medusa => Some(DecodingMode::Medusa),
            SpeculativeDecodingMode::LookaheadDecoding => Some(DecodingMode::Lookahead),
            SpeculativeDecodingMode::ExplicitDraftTokens => Some(DecodingMode::ExplicitDraftTokens),
            SpeculativeDecodingMode::Eagle => Some(DecodingMode::Eagle),
        }
    }
}

/// Lookahead decoding's sizes (`LookaheadDecodingConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookaheadConfig {
    /// N-grams in the lookahead branch per step.
    pub window_size: u32,
    /// Tokens per n-gram.
    pub ngram_size: u32,
    /// Candidate n-grams verified per step.
    pub verification_set_size: u32,
}

impl Default for LookaheadConfig {
    /// TensorRT-LLM's defaults: window 4, n-gram 3, verification set 4.
    fn default() -> Self {
        LookaheadConfig { window_size: 4, ngram_size: 3, verification_set_size: 4 }
    }
}

impl LookaheadConfig {
    /// Each size must be positive.
    pub fn validate(&self) -> Result<(), String> {
        if self.window_size == 0 || self.ngram_size == 0 || self.verification_set_size == 0 {
            return Err(format!(
                "lookahead window ({}), ngram ({}) and verification set ({}) sizes must be positive",
                self.window_size, self.ngram_size, self.verification_set_size
            ));
        }
        Ok(())
    }

    fn to_ffi(self) -> sys::LookaheadSpec {
        let c = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
        sys::LookaheadSpec {
            set: true,
            window_size: c(self.window_size),
            ngram_size: c(self.ngram_size),
            verification_set_size: c(self.verification_set_size),
        }
    }
}

/// Eagle's draft tree and acceptance (`EagleConfig`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EagleConfig {
    /// Eagle-1's static tree (paths of top-k indices); empty for the engine's default.
    pub choices: Vec<Vec<u32>>,
    /// Greedy acceptance (true) or typical acceptance.
    pub greedy_sampling: bool,
    /// Typical acceptance's minimum probability, in (0, 1).
    pub posterior_threshold: Option<f32>,
    /// Eagle-2's dynamic tree.
    pub use_dynamic_tree: bool,
    /// Eagle-2: draft tokens expanded per node.
    pub dynamic_tree_max_top_k: Option<u32>,
}

impl Default for EagleConfig {
    fn default() -> Self {
        EagleConfig {
            choices: Vec::new(),
            greedy_sampling: true,
            posterior_threshold: None,
            use_dynamic_tree: false,
            dynamic_tree_max_top_k: None,
        }
    }
}

fn choices_to_ffi(choices: &[Vec<u32>]) -> Vec<sys::TokenSeq> {
    choices.iter().map(|path| sys::TokenSeq { ids: path.iter().map(|&v| v as i32).collect() }).collect()
}

impl EagleConfig {
    fn to_ffi(&self) -> sys::EagleSpec {
        sys::EagleSpec {
            set: true,
            choices: choices_to_ffi(&self.choices),
            greedy_sampling: self.greedy_sampling,
            posterior_threshold: sys::OptF32 {
                set: self.posterior_threshold.is_some(),
                value: self.posterior_threshold.unwrap_or(0.0),
            },
            use_dynamic_tree: self.use_dynamic_tree,
            dynamic_tree_max_top_k: sys::OptI32 {
                set: self.dynamic_tree_max_top_k.is_some(),
                value: self.dynamic_tree_max_top_k.map_or(0, |v| i32::try_from(v).unwrap_or(i32::MAX)),
            },
        }
    }
}

/// The executor's `DecodingConfig`.
///
/// ```
/// use trtllm::ExecutorConfig;
/// use trtllm::speculative::{DecodingConfig, LookaheadConfig};
/// let config = ExecutorConfig::builder()
///     .decoding(DecodingConfig::lookahead(LookaheadConfig { window_size: 5, ngram_size: 4, verification_set_size: 5 }))
///     .build()
///     .unwrap();
/// assert!(config.decoding.is_some());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DecodingConfig {
    /// The decoding mode; `None` lets the executor choose (or the config below imply it).
    pub mode: Option<DecodingMode>,
    /// Lookahead sizes (implies [`DecodingMode::Lookahead`]).
    pub lookahead: Option<LookaheadConfig>,
    /// Medusa's draft tree (implies [`DecodingMode::Medusa`]).
    pub medusa_choices: Option<Vec<Vec<u32>>>,
    /// Eagle's settings (implies [`DecodingMode::Eagle`]).
    pub eagle: Option<EagleConfig>,
}

impl DecodingConfig {
    /// Just a mode.
    pub fn mode(mode: DecodingMode) -> Self {
        DecodingConfig { mode: Some(mode), ..Default::default() }
    }

    /// Lookahead decoding with these sizes.
    pub fn lookahead(config: LookaheadConfig) -> Self {
        DecodingConfig { mode: Some(DecodingMode::Lookahead), lookahead: Some(config), ..Default::default() }
    }

    /// Checks the settings agree with each other.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(lookahead) = &self.lookahead {
            lookahead.validate()?;
        }
        let implied = [
            (self.lookahead.is_some(), DecodingMode::Lookahead, "lookahead"),
            (self.medusa_choices.is_some(), DecodingMode::Medusa, "medusa_choices"),
            (self.eagle.is_some(), DecodingMode::Eagle, "eagle"),
        ];
        for (set, needs, name) in implied {
            if set && self.mode.is_some_and(|m| m != needs) {
                return Err(format!("decoding {name} settings need decoding mode {needs:?}, got {:?}", self.mode));
            }
        }
        if let Some(t) = self.eagle.as_ref().and_then(|e| e.posterior_threshold)
            && !(t > 0.0 && t < 1.0)
        {
            return Err(format!("eagle posterior_threshold {t} is outside (0, 1)"));
        }
        Ok(())
    }

    pub(crate) fn to_ffi(config: Option<&DecodingConfig>) -> sys::DecodingOptions {
        let Some(c) = config else {
            return sys::DecodingOptions::default();
        };
        sys::DecodingOptions {
            mode: match c.mode {
                None => sys::DecodingModeKind::Unset,
                Some(DecodingMode::Auto) => sys::DecodingModeKind::Auto,
                Some(DecodingMode::TopKTopP) => sys::DecodingModeKind::TopKTopP,
                Some(DecodingMode::BeamSearch) => sys::DecodingModeKind::BeamSearch,
                Some(DecodingMode::Medusa) => sys::DecodingModeKind::Medusa,
                Some(DecodingMode::Lookahead) => sys::DecodingModeKind::Lookahead,
                Some(DecodingMode::ExplicitDraftTokens) => sys::DecodingModeKind::ExplicitDraftTokens,
                Some(DecodingMode::ExternalDraftTokens) => sys::DecodingModeKind::ExternalDraftTokens,
                Some(DecodingMode::Eagle) => sys::DecodingModeKind::Eagle,
            },
            lookahead: c.lookahead.map_or_else(sys::LookaheadSpec::default, LookaheadConfig::to_ffi),
            medusa_choices: c.medusa_choices.as_deref().map_or_else(Vec::new, choices_to_ffi),
            eagle: c.eagle.as_ref().map_or_else(sys::EagleSpec::default, EagleConfig::to_ffi),
        }
    }
}

/// Draft-target verification: the draft tokens a request asks the target engine to check
/// (`ExternalDraftTokensConfig`). The target accepts the longest prefix it agrees with and adds
/// one token of its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DraftTokens {
    /// The proposed tokens, in order.
    pub tokens: Vec<u32>,
    /// Acceptance threshold in (0, 1] for non-greedy verification with draft logits.
    pub acceptance_threshold: Option<f32>,
}

/// A request's speculative-decoding settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SpeculativeRequest {
    /// Per-request lookahead sizes (at most the executor's).
    pub lookahead: Option<LookaheadConfig>,
    /// Per-request Eagle settings.
    pub eagle: Option<EagleConfig>,
    /// Draft tokens to verify (draft-target engines).
    pub draft: Option<DraftTokens>,
}

impl SpeculativeRequest {
    /// Checks the values are in range.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(lookahead) = &self.lookahead {
            lookahead.validate()?;
        }
        if let Some(t) = self.draft.as_ref().and_then(|d| d.acceptance_threshold)
            && !(t > 0.0 && t <= 1.0)
        {
            return Err(format!("draft acceptance_threshold {t} is outside (0, 1]"));
        }
        Ok(())
    }

    pub(crate) fn to_ffi(&self) -> sys::SpeculativeSpec {
        sys::SpeculativeSpec {
            lookahead: self.lookahead.map_or_else(sys::LookaheadSpec::default, LookaheadConfig::to_ffi),
            eagle: self.eagle.as_ref().map_or_else(sys::EagleSpec::default, EagleConfig::to_ffi),
            has_draft_tokens: self.draft.is_some(),
            draft_tokens: self.draft.as_ref().map_or_else(Vec::new, |d| d.tokens.iter().map(|&t| t as i32).collect()),
            draft_acceptance_threshold: sys::OptF32 {
                set: self.draft.as_ref().is_some_and(|d| d.acceptance_threshold.is_some()),
                value: self.draft.as_ref().and_then(|d| d.acceptance_threshold).unwrap_or(0.0),
            },
        }
    }
}

/// Draft tokens a request proposed and got accepted (`RequestPerfMetrics::speculativeDecoding`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct SpeculativeMetrics {
    /// accepted / drafted (0 without drafts).
    pub acceptance_rate: f32,
    /// Draft tokens accepted over the request.
    pub accepted_draft_tokens: u32,
    /// Draft tokens proposed over the request.
    pub draft_tokens: u32,
}

impl SpeculativeMetrics {
    pub(crate) fn from_ffi(m: &sys::PerfMetricsItem) -> Self {
        SpeculativeMetrics {
            acceptance_rate: m.spec_acceptance_rate,
            accepted_draft_tokens: u32::try_from(m.spec_total_accepted_draft_tokens).unwrap_or(0),
            draft_tokens: u32::try_from(m.spec_total_draft_tokens).unwrap_or(0),
        }
    }
}
