//! How to generate: length, sampling, stop strings, a guide.

use crate::text::TextOptions;
use crate::types::guided::GuidedDecodingParams;
use crate::types::request::GenerationRequest;
use crate::types::sampling::SamplingParams;

/// The options of [`Engine::generate`](crate::Engine::generate), built up from
/// [`GenerateOptions::new`] (64 new tokens, the executor's default sampling, streamed).
///
/// ```
/// use trtllm::GenerateOptions;
/// use trtllm::guided::GuidedDecodingParams;
/// let options = GenerateOptions::new()
///     .max_tokens(128)
///     .temperature(0.7)
///     .seed(7)
///     .stop(["\n\n"])
///     .guide(GuidedDecodingParams::json());
/// assert_eq!(options.max_tokens_value(), 128);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    max_tokens: u32,
    sampling: SamplingParams,
    text: TextOptions,
    guide: Option<GuidedDecodingParams>,
    streaming: bool,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        GenerateOptions {
            max_tokens: 64,
            sampling: SamplingParams::default(),
            text: TextOptions::default(),
            guide: None,
            streaming: true,
        }
    }
}

impl GenerateOptions {
    /// 64 new tokens, the executor's default sampling, no stop strings, streamed.
    pub fn new() -> Self {
        Self::default()
    }

    /// The most tokens to generate.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The most tokens to generate, as set.
    pub fn max_tokens_value(&self) -> u32 {
        self.max_tokens
    }

    /// Every sampling parameter at once.
    pub fn sampling(mut self, sampling: SamplingParams) -> Self {
        self.sampling = sampling;
        self
    }

    /// The sampling temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.sampling.temperature = Some(temperature);
        self
    }

    /// Nucleus sampling mass in (0, 1].
    pub fn top_p(mut self, top_p: f32) -> Self {
        self.sampling.top_p = Some(top_p);
        self
    }

    /// Sample from the k most likely tokens.
    pub fn top_k(mut self, top_k: u32) -> Self {
        self.sampling.top_k = Some(top_k);
        self
    }

    /// The random seed (the same seed and prompt give the same output).
    pub fn seed(mut self, seed: u64) -> Self {
        self.sampling.seed = Some(seed);
        self
    }

    /// Sequences to return (`n`).
    pub fn n(mut self, n: u32) -> Self {
        self.sampling.num_return_sequences = Some(n);
        self
    }

    /// Stop strings: the text ends before the first one that appears.
    pub fn stop<I, S>(mut self, stop: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.text = self.text.stop_strings(stop);
        self
    }

    /// Keeps the matched stop string at the end of the text.
    pub fn include_stop_string(mut self, include: bool) -> Self {
        self.text = self.text.include_stop_string(include);
        self
    }

    /// Generates past the tokenizer's EOS until `max_tokens`.
    pub fn ignore_eos(mut self, ignore: bool) -> Self {
        self.text = self.text.ignore_eos(ignore);
        self
    }

    /// Leaves special tokens out of the text (the default) or keeps them.
    pub fn skip_special_tokens(mut self, skip: bool) -> Self {
        self.text = self.text.skip_special_tokens(skip);
        self
    }

    /// Constrains the output to a JSON schema, regex, grammar or structural tag.
    pub fn guide(mut self, guide: GuidedDecodingParams) -> Self {
        self.guide = Some(guide);
        self
    }

    /// Streams tokens as they are generated (the default), or delivers them all at the end.
    pub fn streaming(mut self, streaming: bool) -> Self {
        self.streaming = streaming;
        self
    }

    /// The executor request for `prompt` and the text options.
    pub(crate) fn into_parts(self, prompt: Vec<u32>) -> (GenerationRequest, TextOptions) {
        let mut request = GenerationRequest::new(prompt, self.max_tokens)
            .with_streaming(self.streaming)
            .with_sampling(self.sampling)
            .with_perf_metrics(true);
        if let Some(guide) = self.guide {
            request = request.with_guided_decoding(guide);
        }
        (request, self.text)
    }
}
