//! Sampling parameters of a request (`SamplingConfig`), their validation, and what the executor is sent.

use serde::{Deserialize, Serialize};

use crate::error::InvalidRequest;

/// Sampling parameters (`SamplingConfig`). `None` keeps the executor's default. Built from
/// [`SamplingParams::default`] with one setter per parameter; fields stay readable and writable.
///
/// ```
/// use trtllm::SamplingParams;
/// let sampling = SamplingParams::default().temperature(0.7).top_p(0.9).seed(42);
/// assert_eq!((sampling.temperature, sampling.seed, sampling.beam_width), (Some(0.7), Some(42), 1));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct SamplingParams {
    /// Beam width (1: no beam search).
    pub beam_width: u32,
    /// Sample from the k most likely tokens (0: all).
    pub top_k: Option<u32>,
    /// Nucleus sampling mass in (0, 1].
    pub top_p: Option<f32>,
    /// Lower bound of top-p decay.
    pub top_p_min: Option<f32>,
    /// Token id at which top-p decay resets.
    pub top_p_reset_ids: Option<i32>,
    /// Top-p decay factor.
    pub top_p_decay: Option<f32>,
    /// Random seed.
    pub seed: Option<u64>,
    /// Temperature (>= 0). 0 means greedy decoding: the request is sent to the executor as
    /// `top_k = 1` without a temperature, which picks the same tokens as TensorRT-LLM's own
    /// handling of 0 (it divides logits by `temperature + 1e-6`) without the huge logit scale.
    pub temperature: Option<f32>,
    /// Generate at least this many tokens before the end id may stop the request.
    pub min_tokens: Option<u32>,
    /// Diversity rate for beam search.
    pub beam_search_diversity_rate: Option<f32>,
    /// Repetition penalty (> 0; 1 is neutral).
    pub repetition_penalty: Option<f32>,
    /// Presence penalty.
    pub presence_penalty: Option<f32>,
    /// Frequency penalty.
    pub frequency_penalty: Option<f32>,
    /// Length penalty for beam search.
    pub length_penalty: Option<f32>,
    /// Early stopping for beam search.
    pub early_stopping: Option<i32>,
    /// Forbid repeating n-grams of this size.
    pub no_repeat_ngram_size: Option<u32>,
    /// Independent sequences to return (sampling) or beams to return (beam search).
    pub num_return_sequences: Option<u32>,
    /// Min-p sampling threshold in [0, 1].
    pub min_p: Option<f32>,
}

impl Default for SamplingParams {
    fn default() -> Self {
        SamplingParams {
            beam_width: 1,
            top_k: None,
            top_p: None,
            top_p_min: None,
            top_p_reset_ids: None,
            top_p_decay: None,
            seed: None,
            temperature: None,
            min_tokens: None,
            beam_search_diversity_rate: None,
            repetition_penalty: None,
            presence_penalty: None,
            frequency_penalty: None,
            length_penalty: None,
            early_stopping: None,
            no_repeat_ngram_size: None,
            num_return_sequences: None,
            min_p: None,
        }
    }
}

impl SamplingParams {
    /// Sets [`SamplingParams::beam_width`].
    #[must_use]
    pub fn beam_width(mut self, value: u32) -> Self {
        self.beam_width = value;
        self
    }

    /// Sets [`SamplingParams::top_k`] (`None` keeps the executor's default).
    #[must_use]
    pub fn top_k(mut self, value: impl Into<Option<u32>>) -> Self {
        self.top_k = value.into();
        self
    }

    /// Sets [`SamplingParams::top_p`] (`None` keeps the executor's default).
    #[must_use]
    pub fn top_p(mut self, value: impl Into<Option<f32>>) -> Self {
        self.top_p = value.into();
        self
    }

    /// Sets [`SamplingParams::top_p_min`] (`None` keeps the executor's default).
    #[must_use]
    pub fn top_p_min(mut self, value: impl Into<Option<f32>>) -> Self {
        self.top_p_min = value.into();
        self
    }

    /// Sets [`SamplingParams::top_p_reset_ids`] (`None` keeps the executor's default).
    #[must_use]
    pub fn top_p_reset_ids(mut self, value: impl Into<Option<i32>>) -> Self {
        self.top_p_reset_ids = value.into();
        self
    }

    /// Sets [`SamplingParams::top_p_decay`] (`None` keeps the executor's default).
    #[must_use]
    pub fn top_p_decay(mut self, value: impl Into<Option<f32>>) -> Self {
        self.top_p_decay = value.into();
        self
    }

    /// Sets [`SamplingParams::seed`] (`None` keeps the executor's default).
    #[must_use]
    pub fn seed(mut self, value: impl Into<Option<u64>>) -> Self {
        self.seed = value.into();
        self
    }

    /// Sets [`SamplingParams::temperature`] (`None` keeps the executor's default).
    #[must_use]
    pub fn temperature(mut self, value: impl Into<Option<f32>>) -> Self {
        self.temperature = value.into();
        self
    }

    /// Sets [`SamplingParams::min_tokens`] (`None` keeps the executor's default).
    #[must_use]
    pub fn min_tokens(mut self, value: impl Into<Option<u32>>) -> Self {
        self.min_tokens = value.into();
        self
    }

    /// Sets [`SamplingParams::beam_search_diversity_rate`] (`None` keeps the executor's default).
    #[must_use]
    pub fn beam_search_diversity_rate(mut self, value: impl Into<Option<f32>>) -> Self {
        self.beam_search_diversity_rate = value.into();
        self
    }

    /// Sets [`SamplingParams::repetition_penalty`] (`None` keeps the executor's default).
    #[must_use]
    pub fn repetition_penalty(mut self, value: impl Into<Option<f32>>) -> Self {
        self.repetition_penalty = value.into();
        self
    }

    /// Sets [`SamplingParams::presence_penalty`] (`None` keeps the executor's default).
    #[must_use]
    pub fn presence_penalty(mut self, value: impl Into<Option<f32>>) -> Self {
        self.presence_penalty = value.into();
        self
    }

    /// Sets [`SamplingParams::frequency_penalty`] (`None` keeps the executor's default).
    #[must_use]
    pub fn frequency_penalty(mut self, value: impl Into<Option<f32>>) -> Self {
        self.frequency_penalty = value.into();
        self
    }

    /// Sets [`SamplingParams::length_penalty`] (`None` keeps the executor's default).
    #[must_use]
    pub fn length_penalty(mut self, value: impl Into<Option<f32>>) -> Self {
        self.length_penalty = value.into();
        self
    }

    /// Sets [`SamplingParams::early_stopping`] (`None` keeps the executor's default).
    #[must_use]
    pub fn early_stopping(mut self, value: impl Into<Option<i32>>) -> Self {
        self.early_stopping = value.into();
        self
    }

    /// Sets [`SamplingParams::no_repeat_ngram_size`] (`None` keeps the executor's default).
    #[must_use]
    pub fn no_repeat_ngram_size(mut self, value: impl Into<Option<u32>>) -> Self {
        self.no_repeat_ngram_size = value.into();
        self
    }

    /// Sets [`SamplingParams::num_return_sequences`] (`None` keeps the executor's default).
    #[must_use]
    pub fn num_return_sequences(mut self, value: impl Into<Option<u32>>) -> Self {
        self.num_return_sequences = value.into();
        self
    }

    /// Sets [`SamplingParams::min_p`] (`None` keeps the executor's default).
    #[must_use]
    pub fn min_p(mut self, value: impl Into<Option<f32>>) -> Self {
        self.min_p = value.into();
        self
    }
}

impl SamplingParams {
    /// Greedy decoding: `top_k = 1`.
    pub fn greedy() -> Self {
        SamplingParams { top_k: Some(1), ..Default::default() }
    }

    /// What the executor is given: temperature 0 becomes greedy decoding (`top_k = 1`, no
    /// temperature).
    pub(super) fn for_executor(&self) -> SamplingParams {
        if self.temperature == Some(0.0) {
            SamplingParams { temperature: None, top_k: Some(1), ..self.clone() }
        } else {
            self.clone()
        }
    }

    /// Sequences this request produces: the independent samples, or under beam search the beams
    /// returned (`num_return_sequences`, at most `beam_width`; all beams when unset).
    pub fn sequences(&self) -> u32 {
        if self.beam_width > 1 {
            self.num_return_sequences.unwrap_or(self.beam_width).clamp(1, self.beam_width)
        } else {
            self.num_return_sequences.unwrap_or(1).max(1)
        }
    }

    pub(super) fn validate(&self) -> Result<(), InvalidRequest> {
        let param = |field, value: String, rule| Err(InvalidRequest::Parameter { field, value, rule });
        if let Some(t) = self.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            return param("temperature", t.to_string(), "must be a finite number >= 0 (0 is greedy)");
        }
        if let Some(p) = self.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return param("top_p", p.to_string(), "must be in (0, 1]");
        }
        if let Some(p) = self.min_p
            && !(0.0..=1.0).contains(&p)
        {
            return param("min_p", p.to_string(), "must be in [0, 1]");
        }
        if let Some(p) = self.top_p_min
            && !(0.0..=1.0).contains(&p)
        {
            return param("top_p_min", p.to_string(), "must be in [0, 1]");
        }
        if let Some(id) = self.top_p_reset_ids
            && id < 0
        {
            return param("top_p_reset_ids", id.to_string(), "must be >= 0");
        }
        if let Some(rate) = self.beam_search_diversity_rate
            && rate < 0.0
        {
            return param("beam_search_diversity_rate", rate.to_string(), "must be >= 0");
        }
        if let Some(e) = self.early_stopping
            && e < 0
        {
            return param("early_stopping", e.to_string(), "must be >= 0");
        }
        if let Some(p) = self.top_p_decay
            && !(p > 0.0 && p <= 1.0)
        {
            return param("top_p_decay", p.to_string(), "must be in (0, 1]");
        }
        if let Some(p) = self.repetition_penalty
            && !(p.is_finite() && p > 0.0)
        {
            return param("repetition_penalty", p.to_string(), "must be a finite number > 0");
        }
        for (field, value) in [
            ("presence_penalty", self.presence_penalty),
            ("frequency_penalty", self.frequency_penalty),
            ("length_penalty", self.length_penalty),
            ("beam_search_diversity_rate", self.beam_search_diversity_rate),
        ] {
            if let Some(v) = value
                && !v.is_finite()
            {
                return param(field, v.to_string(), "must be finite");
            }
        }
        if self.num_return_sequences == Some(0) {
            return param("num_return_sequences", "0".into(), "must be at least 1");
        }
        if self.beam_width > 1
            && let Some(n) = self.num_return_sequences
            && n > self.beam_width
        {
            return param("num_return_sequences", n.to_string(), "must not exceed beam_width under beam search");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_must_be_finite_and_not_negative() {
        for (t, ok) in [(0.0, true), (1.5, true), (-0.1, false), (f32::NAN, false), (f32::INFINITY, false)] {
            let sampling = SamplingParams { temperature: Some(t), ..Default::default() };
            assert_eq!(sampling.validate().is_ok(), ok, "temperature {t}");
        }
    }
}
