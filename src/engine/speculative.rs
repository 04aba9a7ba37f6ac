//! The speculative-decoding parts of the engine directory: config.json's
//! `build_config.speculative_decoding_mode` / `max_draft_len` and simulation.json's acceptance.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `build_config.speculative_decoding_mode`. trtllm-build writes it as a flag value (1, 2, 4, ...);
/// names are accepted too and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpeculativeDecodingMode {
    /// No speculation (flag 1).
    None,
    /// Draft-target: draft tokens come with each request (flag 2).
    DraftTokensExternal,
    /// Medusa heads (flag 4).
    Medusa,
    /// Lookahead decoding (flag 8).
    LookaheadDecoding,
    /// ReDrafter explicit draft tokens (flag 16).
    ExplicitDraftTokens,
    /// Eagle heads (flag 32).
    Eagle,
}

const MODES: [(SpeculativeDecodingMode, &str, u64); 6] = [
    (SpeculativeDecodingMode::None, "none", 1),
    (SpeculativeDecodingMode::DraftTokensExternal, "draft_tokens_external", 2),
    (SpeculativeDecodingMode::Medusa, "medusa", 4),
    (SpeculativeDecodingMode::LookaheadDecoding, "lookahead_decoding", 8),
    (SpeculativeDecodingMode::ExplicitDraftTokens, "explicit_draft_tokens", 16),
    (SpeculativeDecodingMode::Eagle, "eagle", 32),
];

impl SpeculativeDecodingMode {
    /// The name config.json uses.
    pub fn name(self) -> &'static str {
        MODES.iter().find(|(m, _, _)| *m == self).map_or("none", |(_, n, _)| n)
    }

    /// The mode named `name` (config.json's name, or a short CLI alias such as `lookahead`).
    pub fn from_name(name: &str) -> Option<Self> {
        let alias = match name {
            "lookahead" => "lookahead_decoding",
            "draft-target" | "draft_target" => "draft_tokens_external",
            other => other,
        };
        MODES.iter().find(|(_, n, _)| *n == alias).map(|(m, _, _)| *m)
    }
}

impl Serialize for SpeculativeDecodingMode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for SpeculativeDecodingMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Flag(u64),
            Name(String),
        }
        let found = match Raw::deserialize(deserializer)? {
            Raw::Flag(flag) => MODES.iter().find(|(_, _, f)| *f == flag).map(|(m, _, _)| *m),
            Raw::Name(name) => SpeculativeDecodingMode::from_name(&name),
        };
        found.ok_or_else(|| {
            serde::de::Error::custom(
                "speculative_decoding_mode must be none, draft_tokens_external, medusa, lookahead_decoding, \
                 explicit_draft_tokens or eagle (or a flag value 1, 2, 4, 8, 16, 32)",
            )
        })
    }
}

/// simulation.json `speculative`: how often the simulated drafter is right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSpeculative {
    /// Probability that draft position i is accepted given the ones before it were (the last value
    /// repeats for deeper positions). A single number in the file means that value everywhere.
    #[serde(deserialize_with = "one_or_many", default = "default_acceptance")]
    pub acceptance: Vec<f64>,
    /// Tokens depend on the whole context (prompt + tokens so far), not on prompt and position, so
    /// a draft-target loop that re-sends the context continues the same text. Always on for
    /// `draft_tokens_external` engines and for draft models.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context_tokens: bool,
    /// Makes this engine a draft model: it yields the context's token with this probability and
    /// a different one otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draft_agreement: Option<f64>,
}

pub(crate) fn default_acceptance() -> Vec<f64> {
    vec![0.7]
}

fn one_or_many<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        One(f64),
        Many(Vec<f64>),
    }
    let values = match Raw::deserialize(deserializer)? {
        Raw::One(p) => vec![p],
        Raw::Many(ps) => ps,
    };
    if values.is_empty() || values.iter().any(|p| !(0.0..=1.0).contains(p)) {
        return Err(serde::de::Error::custom("acceptance must be probabilities in [0, 1]"));
    }
    Ok(values)
}
