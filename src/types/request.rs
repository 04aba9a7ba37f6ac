//! A generation request: prompt token ids, sampling, stop conditions and output options.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::EngineConfig;
use crate::error::InvalidRequest;
use crate::ffi::sys;
use crate::lora::LoraConfig;
use crate::types::disagg::RequestType;
use crate::types::guided::GuidedDecodingParams;
use crate::types::handoff::KvHandoff;
use crate::types::speculative::{DraftTokens, SpeculativeRequest};

// Re-exported here, where the request that carries it lives, for the paths the crate already uses.
pub use crate::types::sampling::SamplingParams;

/// Why a sequence stopped (`FinishReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Still running: never on a final, except a context-only request's (its generation goes on on the
    /// generation executor that takes its [`KvHandoff`]).
    NotFinished,
    /// The end id was generated.
    EndId,
    /// A stop word was generated.
    StopWords,
    /// `max_tokens` was reached.
    Length,
    /// The allotted time ran out.
    TimedOut,
    /// The request was cancelled.
    Cancelled,
    /// A value this crate does not know (the enum has grown before).
    Unknown(i32),
}

impl FinishReason {
    /// The bridge's finish reason; an unknown one keeps the upstream value.
    pub(crate) fn from_ffi(item: sys::FinishItem) -> Self {
        match item.kind {
            sys::FinishKind::NotFinished => FinishReason::NotFinished,
            sys::FinishKind::EndId => FinishReason::EndId,
            sys::FinishKind::StopWords => FinishReason::StopWords,
            sys::FinishKind::Length => FinishReason::Length,
            sys::FinishKind::TimedOut => FinishReason::TimedOut,
            sys::FinishKind::Cancelled => FinishReason::Cancelled,
            // `Unknown`, or a value outside the shared enum (cxx lets C++ pass any).
            _ => FinishReason::Unknown(item.raw),
        }
    }

    /// The OpenAI/SMG word for it: `stop`, `length`, `abort`, `timeout` (or `unknown`).
    pub fn as_openai_str(&self) -> &'static str {
        match self {
            FinishReason::EndId | FinishReason::StopWords => "stop",
            FinishReason::Length => "length",
            FinishReason::Cancelled => "abort",
            FinishReason::TimedOut => "timeout",
            FinishReason::NotFinished | FinishReason::Unknown(_) => "unknown",
        }
    }
}

impl std::fmt::Display for FinishReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FinishReason::NotFinished => f.write_str("not_finished"),
            FinishReason::EndId => f.write_str("end_id"),
            FinishReason::StopWords => f.write_str("stop_words"),
            FinishReason::Length => f.write_str("length"),
            FinishReason::TimedOut => f.write_str("timed_out"),
            FinishReason::Cancelled => f.write_str("cancelled"),
            FinishReason::Unknown(v) => write!(f, "unknown({v})"),
        }
    }
}

/// A request for the executor: token ids in, token ids out.
///
/// ```
/// use std::time::Duration;
/// use trtllm::{GenerationRequest, SamplingParams};
/// let request = GenerationRequest::new(vec![1, 2, 3], 16)
///     .with_streaming(true)
///     .with_sampling(SamplingParams::default().temperature(0.7))
///     .with_end_id(2)
///     .with_stop_words(vec![vec![13, 13]])
///     .with_allotted_time(Duration::from_secs(30));
/// assert_eq!(request.prompt().len(), 3);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationRequest {
    prompt: Vec<u32>,
    max_tokens: u32,
    streaming: bool,
    sampling: SamplingParams,
    end_id: Option<i32>,
    pad_id: Option<i32>,
    stop_words: Vec<Vec<u32>>,
    bad_words: Vec<Vec<u32>>,
    priority: f32,
    allotted_time: Option<Duration>,
    return_log_probs: bool,
    return_perf_metrics: bool,
    /// The LoRA adapter (weights are not serialized; see [`crate::lora::encode_wire`]).
    #[serde(skip)]
    lora: Option<LoraConfig>,
    #[serde(default)]
    speculative: SpeculativeRequest,
    /// Guided decoding (structured output).
    #[serde(default)]
    guided_decoding: Option<GuidedDecodingParams>,
    /// Disaggregated serving: which phases this executor runs.
    #[serde(default)]
    request_type: RequestType,
    /// Disaggregated serving: the context phase's handoff a generation-only request decodes from.
    #[serde(default)]
    handoff: Option<KvHandoff>,
}

impl GenerationRequest {
    /// A streaming request for at most `max_tokens` new tokens after `prompt`.
    pub fn new(prompt: Vec<u32>, max_tokens: u32) -> Self {
        GenerationRequest {
            prompt,
            max_tokens,
            streaming: true,
            sampling: SamplingParams::default(),
            end_id: None,
            pad_id: None,
            stop_words: Vec::new(),
            bad_words: Vec::new(),
            priority: 0.5,
            allotted_time: None,
            return_log_probs: false,
            return_perf_metrics: true,
            lora: None,
            speculative: SpeculativeRequest::default(),
            guided_decoding: None,
            request_type: RequestType::ContextAndGeneration,
            handoff: None,
        }
    }

    /// Runs the request with a LoRA adapter: its weights on first use ([`LoraConfig::with_weights`]),
    /// its task id alone while it stays cached ([`LoraConfig::cached`]). Checked against the engine
    /// before enqueue.
    #[must_use]
    pub fn with_lora(mut self, lora: LoraConfig) -> Self {
        self.lora = Some(lora);
        self
    }

    /// The LoRA adapter, if any.
    pub fn lora(&self) -> Option<&LoraConfig> {
        self.lora.as_ref()
    }

    /// Streaming (a chunk per iteration) or not (one final with every token). Default true.
    #[must_use]
    pub fn with_streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// Sampling parameters.
    #[must_use]
    pub fn with_sampling(mut self, sampling: SamplingParams) -> Self {
        self.sampling = sampling;
        self
    }

    /// Stop when this token is generated (not included in the output); `None`: no end id, the
    /// request runs to `max_tokens` (or a stop word). Unset, the executor's default applies.
    ///
    /// ```
    /// use trtllm::GenerationRequest;
    /// assert_eq!(GenerationRequest::new(vec![1], 4).with_end_id(2).end_id(), Some(Some(2)));
    /// assert_eq!(GenerationRequest::new(vec![1], 4).with_end_id(None).end_id(), Some(None));
    /// assert_eq!(GenerationRequest::new(vec![1], 4).end_id(), None);
    /// ```
    #[must_use]
    pub fn with_end_id(mut self, end_id: impl Into<Option<u32>>) -> Self {
        // The executor's "no end id" is -1.
        self.end_id = Some(end_id.into().map_or(-1, |id| i32::try_from(id).unwrap_or(i32::MAX)));
        self
    }

    /// Padding token id.
    #[must_use]
    pub fn with_pad_id(mut self, pad_id: u32) -> Self {
        self.pad_id = Some(i32::try_from(pad_id).unwrap_or(i32::MAX));
        self
    }

    /// Token sequences that stop generation when produced (included in the output).
    #[must_use]
    pub fn with_stop_words(mut self, stop_words: Vec<Vec<u32>>) -> Self {
        self.stop_words = stop_words;
        self
    }

    /// Token sequences that must never be generated.
    #[must_use]
    pub fn with_bad_words(mut self, bad_words: Vec<Vec<u32>>) -> Self {
        self.bad_words = bad_words;
        self
    }

    /// Scheduling priority in [0, 1] (default 0.5; higher runs first).
    #[must_use]
    pub fn with_priority(mut self, priority: f32) -> Self {
        self.priority = priority;
        self
    }

    /// A deadline after which the request finishes with [`FinishReason::TimedOut`].
    #[must_use]
    pub fn with_allotted_time(mut self, allotted: Duration) -> Self {
        self.allotted_time = Some(allotted);
        self
    }

    /// Return per-token log probabilities.
    #[must_use]
    pub fn with_log_probs(mut self, on: bool) -> Self {
        self.return_log_probs = on;
        self
    }

    /// Ask the executor for `RequestPerfMetrics` (default true; cheap).
    #[must_use]
    pub fn with_perf_metrics(mut self, on: bool) -> Self {
        self.return_perf_metrics = on;
        self
    }

    /// Speculative-decoding settings: lookahead / Eagle configs and draft tokens to verify.
    #[must_use]
    pub fn with_speculative(mut self, speculative: SpeculativeRequest) -> Self {
        self.speculative = speculative;
        self
    }

    /// Draft tokens for the target engine to verify (draft-target speculative decoding).
    #[must_use]
    pub fn with_draft_tokens(mut self, draft: DraftTokens) -> Self {
        self.speculative.draft = Some(draft);
        self
    }

    /// The speculative-decoding settings.
    pub fn speculative(&self) -> &SpeculativeRequest {
        &self.speculative
    }

    /// The prompt token ids.
    pub fn prompt(&self) -> &[u32] {
        &self.prompt
    }

    /// The maximum number of new tokens.
    pub fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    /// Whether the request streams.
    pub fn streaming(&self) -> bool {
        self.streaming
    }

    /// The sampling parameters.
    pub fn sampling(&self) -> &SamplingParams {
        &self.sampling
    }

    /// The end id: `None` when unset (the executor's default), `Some(None)` when the request has
    /// none, `Some(Some(id))` when it stops at `id`.
    pub fn end_id(&self) -> Option<Option<u32>> {
        self.end_id.map(|id| u32::try_from(id).ok())
    }

    /// The stop words.
    pub fn stop_words(&self) -> &[Vec<u32>] {
        &self.stop_words
    }

    /// Constrains the output with a guide (JSON, JSON schema, regex, grammar, structural tag); the
    /// executor needs a [`GuidedDecodingConfig`](crate::types::guided::GuidedDecodingConfig).
    #[must_use]
    pub fn with_guided_decoding(mut self, guide: GuidedDecodingParams) -> Self {
        self.guided_decoding = Some(guide);
        self
    }

    /// The output constraint, if any.
    pub fn guided_decoding(&self) -> Option<&GuidedDecodingParams> {
        self.guided_decoding.as_ref()
    }

    /// Which phases the executor runs (default both). [`RequestType::ContextOnly`] ends after the
    /// first token with a [`KvHandoff`] in the final; [`RequestType::GenerationOnly`] needs one
    /// ([`GenerationRequest::with_handoff`]). [`Executor::prefill`](crate::Executor::prefill) and
    /// [`Executor::decode`](crate::Executor::decode) set both for you.
    #[must_use]
    pub fn with_request_type(mut self, request_type: RequestType) -> Self {
        self.request_type = request_type;
        self
    }

    /// The request's type.
    pub fn request_type(&self) -> RequestType {
        self.request_type
    }

    /// Decodes from `handoff`: a generation-only request whose prompt's KV cache is pulled from the
    /// context executor that made the handoff. The prompt must be the one that executor prefilled.
    ///
    /// ```
    /// use trtllm::{GenerationRequest, KvHandoff, RequestType};
    /// let handoff = KvHandoff::from_parts(3, vec![42], Vec::new());
    /// let request = GenerationRequest::new(vec![1, 2, 3], 8).with_handoff(handoff);
    /// assert_eq!(request.request_type(), RequestType::GenerationOnly);
    /// assert_eq!(request.handoff().map(|h| h.first_tokens()), Some(&[42][..]));
    /// ```
    #[must_use]
    pub fn with_handoff(mut self, handoff: KvHandoff) -> Self {
        self.request_type = RequestType::GenerationOnly;
        self.handoff = Some(handoff);
        self
    }

    /// The handoff a generation-only request decodes from.
    pub fn handoff(&self) -> Option<&KvHandoff> {
        self.handoff.as_ref()
    }

    /// The request type and handoff agree, and the request is one disaggregation supports (one
    /// sequence; a handoff's prompt length, when known, matches the prompt).
    fn validate_disaggregation(&self) -> Result<(), InvalidRequest> {
        let rule = |rule| {
            Err(InvalidRequest::Parameter { field: "request_type", value: format!("{:?}", self.request_type), rule })
        };
        match (self.request_type, &self.handoff) {
            (RequestType::GenerationOnly, None) => return rule("a generation-only request needs a KV handoff"),
            (RequestType::ContextAndGeneration | RequestType::ContextOnly, Some(_)) => {
                return rule("only a generation-only request carries a KV handoff");
            }
            _ => {}
        }
        if self.request_type == RequestType::ContextAndGeneration {
            return Ok(());
        }
        if self.sampling.num_return_sequences.is_some_and(|n| n > 1) || self.sampling.beam_width > 1 {
            return rule("a disaggregated request runs one sequence (no beam search, num_return_sequences 1)");
        }
        if let Some(handoff) = &self.handoff {
            if handoff.first_tokens().is_empty() {
                return rule("the KV handoff carries no first token");
            }
            if let Some(n) = handoff.prompt_tokens()
                && n as usize != self.prompt.len()
            {
                return Err(InvalidRequest::Parameter {
                    field: "handoff",
                    value: format!("a {n}-token prompt's KV cache for a {}-token prompt", self.prompt.len()),
                    rule: "must cover the request's prompt",
                });
            }
        }
        Ok(())
    }

    /// Checks the request against the engine's limits; the error names the limit it broke.
    pub fn validate(&self, engine: &EngineConfig) -> Result<(), InvalidRequest> {
        let vocab = engine.vocab_size();
        if self.prompt.is_empty() {
            return Err(InvalidRequest::EmptyPrompt);
        }
        if self.max_tokens == 0 {
            return Err(InvalidRequest::ZeroMaxTokens);
        }
        if self.prompt.len() > engine.max_input_len() {
            return Err(InvalidRequest::PromptTooLong { len: self.prompt.len(), max: engine.max_input_len() });
        }
        if self.prompt.len() + self.max_tokens as usize > engine.max_seq_len() {
            return Err(InvalidRequest::SequenceTooLong {
                prompt: self.prompt.len(),
                max_tokens: self.max_tokens as usize,
                max_seq_len: engine.max_seq_len(),
            });
        }
        if let Some((position, &token)) = self.prompt.iter().enumerate().find(|(_, t)| **t as usize >= vocab) {
            return Err(InvalidRequest::TokenOutOfVocab { token, position, vocab_size: vocab });
        }
        let in_vocab = |field, token: i64| {
            if token < 0 || token as usize >= vocab {
                Err(InvalidRequest::ParamTokenOutOfVocab { field, token, vocab_size: vocab })
            } else {
                Ok(())
            }
        };
        if let Some(end_id) = self.end_id
            && end_id != -1
        {
            in_vocab("end_id", end_id.into())?;
        }
        if let Some(pad_id) = self.pad_id {
            in_vocab("pad_id", pad_id.into())?;
        }
        for (field, words) in [("stop_words", &self.stop_words), ("bad_words", &self.bad_words)] {
            for word in words {
                if word.is_empty() {
                    return Err(InvalidRequest::EmptyWord { field });
                }
                for &t in word {
                    in_vocab(field, t.into())?;
                }
            }
        }
        let beam = self.sampling.beam_width;
        if beam == 0 || beam as usize > engine.max_beam_width() {
            return Err(InvalidRequest::BeamWidth { requested: beam, max: engine.max_beam_width() as u32 });
        }
        // Each returned sequence takes a batch slot (and per-sequence state here): more than the
        // engine's batch could never run and would only allocate.
        if let Some(n) = self.sampling.num_return_sequences
            && n as usize > engine.max_batch_size()
        {
            return Err(InvalidRequest::Parameter {
                field: "num_return_sequences",
                value: n.to_string(),
                rule: "must not exceed the engine's max_batch_size",
            });
        }
        if !(0.0..=1.0).contains(&self.priority) {
            return Err(InvalidRequest::Parameter {
                field: "priority",
                value: self.priority.to_string(),
                rule: "must be in [0, 1]",
            });
        }
        if self.allotted_time.is_some_and(|d| d.is_zero()) {
            return Err(InvalidRequest::Parameter {
                field: "allotted_time",
                value: "0".into(),
                rule: "must be positive",
            });
        }
        self.validate_lora(engine)?;
        self.validate_disaggregation()?;
        if let Err(detail) = self.speculative.validate() {
            return Err(InvalidRequest::Parameter { field: "speculative", value: detail, rule: "must be in range" });
        }
        if let Some(guide) = &self.guided_decoding {
            guide.validate()?;
            if beam > 1 {
                return Err(InvalidRequest::Guide {
                    field: guide.guide_type.name(),
                    reason: crate::error::InvalidGuide::BeamWidth(beam),
                });
            }
        }
        self.sampling.validate()
    }

    /// The adapter against the engine's LoRA settings: none on an engine without LoRA, and weights
    /// that match its modules, layers, ranks and dtype.
    fn validate_lora(&self, engine: &EngineConfig) -> Result<(), InvalidRequest> {
        let Some(lora) = &self.lora else { return Ok(()) };
        let settings = engine.lora().ok_or(InvalidRequest::LoraNotSupported { task_id: lora.task_id })?;
        lora.validate(settings).map_err(|e| InvalidRequest::Lora { task_id: lora.task_id, reason: e.to_string() })
    }

    pub(crate) fn to_ffi(&self) -> sys::RequestSpec {
        let s = &self.sampling.for_executor();
        let oi = |v: Option<i32>| sys::OptI32 { set: v.is_some(), value: v.unwrap_or(0) };
        let ou = |v: Option<u32>| oi(v.map(|v| i32::try_from(v).unwrap_or(i32::MAX)));
        let of = |v: Option<f32>| sys::OptF32 { set: v.is_some(), value: v.unwrap_or(0.0) };
        let words = |w: &[Vec<u32>]| {
            w.iter().map(|ids| sys::TokenSeq { ids: ids.iter().map(|&t| t as i32).collect() }).collect()
        };
        sys::RequestSpec {
            input_token_ids: self.prompt.iter().map(|&t| t as i32).collect(),
            max_tokens: i32::try_from(self.max_tokens).unwrap_or(i32::MAX),
            streaming: self.streaming,
            sampling: sys::SamplingSpec {
                beam_width: s.beam_width as i32,
                top_k: ou(s.top_k),
                top_p: of(s.top_p),
                top_p_min: of(s.top_p_min),
                top_p_reset_ids: oi(s.top_p_reset_ids),
                top_p_decay: of(s.top_p_decay),
                seed: sys::OptU64 { set: s.seed.is_some(), value: s.seed.unwrap_or(0) },
                temperature: of(s.temperature),
                min_tokens: ou(s.min_tokens),
                beam_search_diversity_rate: of(s.beam_search_diversity_rate),
                repetition_penalty: of(s.repetition_penalty),
                presence_penalty: of(s.presence_penalty),
                frequency_penalty: of(s.frequency_penalty),
                length_penalty: of(s.length_penalty),
                early_stopping: oi(s.early_stopping),
                no_repeat_ngram_size: ou(s.no_repeat_ngram_size),
                num_return_sequences: ou(s.num_return_sequences),
                min_p: of(s.min_p),
            },
            return_log_probs: self.return_log_probs,
            // Outputs carry generated tokens only; the caller already has the prompt.
            exclude_input_from_output: true,
            return_perf_metrics: self.return_perf_metrics,
            end_id: oi(self.end_id),
            pad_id: oi(self.pad_id),
            stop_words: words(&self.stop_words),
            bad_words: words(&self.bad_words),
            client_id: sys::OptU64::default(),
            priority: self.priority,
            // Delta mode: each streamed chunk carries only its new tokens.
            return_all_generated_tokens: false,
            allotted_time_ms: self.allotted_time.map_or(0, |d| (d.as_millis() as u64).max(1)),
            lora: self.lora.as_ref().map(super::lora::to_ffi_spec).unwrap_or_default(),
            speculative: self.speculative.to_ffi(),
            guided_decoding: self.guided_decoding.as_ref().map(GuidedDecodingParams::to_ffi).unwrap_or_default(),
            request_type: self.request_type.to_ffi(),
            context_phase: self.handoff.as_ref().map(KvHandoff::to_ffi).unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temperature_zero_is_sent_as_greedy() {
        let greedy = GenerationRequest::new(vec![1], 4).with_sampling(SamplingParams {
            temperature: Some(0.0),
            top_p: Some(1.0),
            ..Default::default()
        });
        let spec = greedy.to_ffi();
        assert!(spec.sampling.top_k.set && spec.sampling.top_k.value == 1, "top_k 1");
        assert!(!spec.sampling.temperature.set, "no temperature");
        assert!(spec.sampling.top_p.set, "other settings kept");

        let warm = GenerationRequest::new(vec![1], 4)
            .with_sampling(SamplingParams { temperature: Some(0.7), ..Default::default() });
        let spec = warm.to_ffi();
        assert!(spec.sampling.temperature.set && !spec.sampling.top_k.set);
    }
}
