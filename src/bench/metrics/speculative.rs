//! Speculative-decoding figures of a run: per request the decoding steps and the draft tokens
//! proposed and accepted, and over the measured requests the acceptance rate, mean accepted
//! length, tokens per step and the draft tokens verified for nothing.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What one request reported about speculation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SpecCounts {
    /// Decoding steps (`decodingIter`); 0 when the target does not report them (gRPC).
    #[serde(default)]
    pub decoding_steps: u64,
    /// Draft tokens accepted.
    pub accepted_draft_tokens: u64,
    /// Draft tokens proposed.
    pub draft_tokens: u64,
}

/// The `speculative` section of a summary.
///
/// ```
/// use trtllm::bench::{SpecCounts, SpeculativeSummary};
/// let requests = [(10, SpecCounts { decoding_steps: 4, accepted_draft_tokens: 6, draft_tokens: 12 })];
/// let s = SpeculativeSummary::compute(requests.iter().map(|(t, c)| (*t, c))).unwrap();
/// assert_eq!(s.acceptance_rate, 0.5);
/// assert_eq!(s.tokens_per_step, Some(2.5));
/// assert_eq!(s.draft_tokens_wasted, 6);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpeculativeSummary {
    /// Σ accepted / Σ drafted.
    pub acceptance_rate: f64,
    /// Accepted draft tokens per decoding step (steps reported only).
    pub mean_accepted_length: Option<f64>,
    /// Output tokens per decoding step: accepted + 1 per step (steps reported only).
    pub tokens_per_step: Option<f64>,
    /// Draft tokens verified and rejected.
    pub draft_tokens_wasted: u64,
    /// Draft tokens proposed in all.
    pub draft_tokens: u64,
    /// Draft tokens accepted in all.
    pub accepted_draft_tokens: u64,
}

impl SpeculativeSummary {
    /// Aggregates `(output tokens, counts)` of the successful measured requests; `None` when no
    /// request proposed a draft token (no speculation in this run).
    pub fn compute<'a>(requests: impl IntoIterator<Item = (u64, &'a SpecCounts)>) -> Option<Self> {
        let (mut steps, mut accepted, mut drafted, mut tokens_with_steps) = (0u64, 0u64, 0u64, 0u64);
        for (output_tokens, c) in requests {
            accepted += c.accepted_draft_tokens;
            drafted += c.draft_tokens;
            if c.decoding_steps > 0 {
                steps += c.decoding_steps;
                tokens_with_steps += output_tokens;
            }
        }
        if drafted == 0 {
            return None;
        }
        let per_step = |v: u64| (steps > 0).then(|| v as f64 / steps as f64);
        Some(SpeculativeSummary {
            acceptance_rate: accepted as f64 / drafted as f64,
            mean_accepted_length: per_step(accepted),
            tokens_per_step: per_step(tokens_with_steps),
            draft_tokens_wasted: drafted - accepted.min(drafted),
            draft_tokens: drafted,
            accepted_draft_tokens: accepted,
        })
    }

    /// The section as JSON.
    pub fn to_json(&self) -> Value {
        json!(self)
    }
}
