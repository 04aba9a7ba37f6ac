//! What each request asks for: prompts (random or from a dataset), output lengths, stopping rules.

use std::sync::Arc;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use crate::types::guided::GuidedDecodingParams;

use super::lengths::LengthSpread;
pub use super::prompt::SampledPrompt;
use super::session::{Session, SessionPlan, SessionScript, TurnPrompt, UserMessage};
use crate::text::ChatMessage;

/// Where prompts come from.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptSource {
    /// Random token ids with exactly `input_len` tokens each, drawn from `1..vocab_size`.
    ///
    /// The first `shared_prefix` tokens are the same in every prompt of every point and phase
    /// (a warm prefix the KV cache can reuse); the rest differs per request, and the random
    /// part is seeded per point and phase, so no two points send the same prompts (cold).
    Random {
        /// Vocabulary to draw token ids from.
        vocab_size: usize,
        /// Prompt tokens per request, the shared prefix included.
        input_len: usize,
        /// Tokens shared by every prompt; 0 for fully distinct prompts.
        shared_prefix: usize,
    },
    /// Prompts of a dataset, drawn without replacement in a seeded order (reshuffled when used
    /// up), so each point and phase draws its own order.
    Dataset(Arc<[SampledPrompt]>),
    /// A request trace (`--dataset trace`): its prompts in arrival order, each sent at its
    /// trace time (see [`crate::bench::TraceReplay`]); the runner takes the arrivals from here.
    Trace(Arc<super::trace::TraceReplay>),
    /// Random text prompts of whole-word tokens ([`super::words::WordVocabulary`]) that
    /// round-trip through the tokenizer: `input_len` ids each (the first `shared_prefix` shared),
    /// which a server re-tokenizing their text gets back exactly.
    Words {
        /// The word tokens to draw from.
        words: super::words::WordVocabulary,
        /// Prompt tokens per request (before any template a server adds).
        input_len: usize,
        /// Tokens shared by every prompt.
        shared_prefix: usize,
    },
    /// Multi-turn sessions (`--turns`, or ShareGPT conversations): each turn resends the
    /// history; the runner drives them ([`PromptSampler::next_session`]). Drawn as plain
    /// prompts (a warmup), a session gives its first turn.
    Sessions(Arc<SessionPlan>),
}

/// What a single request asks of the executor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// Prompt token ids.
    pub prompt: Vec<u32>,
    /// Output tokens at most.
    pub max_tokens: u32,
    /// Output tokens at least (`max_tokens` for a fixed length).
    pub min_tokens: Option<u32>,
    /// Ignore the end id (the executor gets end id −1): a fixed output length.
    pub ignore_eos: bool,
    /// End id for natural stopping; `None` leaves the executor's default.
    pub end_id: Option<i32>,
    /// Stream tokens as they are produced.
    pub streaming: bool,
    /// The output length the workload expects, for counting mismatches.
    pub expected_output_tokens: Option<u64>,
    /// Guided decoding (structured output) for the request.
    pub guide: Option<GuidedDecodingParams>,
    /// The session and turn, when the request is a turn of a multi-turn session.
    pub session: Option<super::session::SessionTurn>,
    /// A session's history as chat messages (user, assistant, ..., user), which a chat
    /// completions target sends instead of the decoded prompt.
    pub messages: Option<Arc<[ChatMessage]>>,
}

/// A workload: prompts plus how each request ends.
///
/// With `ignore_eos` every request produces exactly its output length (end id −1 and
/// `min_tokens == max_tokens`), so every engine does the same work; without it requests stop
/// naturally at the end id, capped at the output length.
///
/// ```rust
/// use trtllm::bench::{PromptSource, Workload, WorkloadPhase};
///
/// let workload = Workload {
///     source: PromptSource::Random { vocab_size: 1000, input_len: 64, shared_prefix: 16 },
///     output_len: Some(32),
///     fallback_output_len: 128,
///     ignore_eos: true,
///     end_id: None,
///     streaming: true,
///     seed: 7,
///     guide: None,
///     lengths: Default::default(),
/// };
/// let mut a = workload.sampler(0, WorkloadPhase::Measure);
/// let mut b = workload.sampler(1, WorkloadPhase::Measure);
/// let (pa, pb) = (a.next_request(), b.next_request());
/// assert_eq!(pa.prompt.len(), 64);
/// assert_eq!(pa.prompt[..16], pb.prompt[..16], "the shared prefix");
/// assert_ne!(pa.prompt[16..], pb.prompt[16..], "points draw their own prompts");
/// assert_eq!((pa.max_tokens, pa.min_tokens, pa.ignore_eos), (32, Some(32), true));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// The prompts.
    pub source: PromptSource,
    /// Output tokens per request; `None` uses each prompt's own length, else
    /// `fallback_output_len`.
    pub output_len: Option<u32>,
    /// Output length for prompts that name none when `output_len` is `None`.
    pub fallback_output_len: u32,
    /// Fixed output length (true) or natural stopping (false).
    pub ignore_eos: bool,
    /// End id for natural stopping (the tokenizer's end-of-sequence id).
    pub end_id: Option<i32>,
    /// Streaming requests (false: one response per request, E2E latency only).
    pub streaming: bool,
    /// Seed for reproducible prompts.
    pub seed: u64,
    /// Guided decoding for every request (a structured workload); `None` is unconstrained.
    pub guide: Option<GuidedDecodingParams>,
    /// Prompt and output lengths drawn per request (random and word prompts) instead of the
    /// fixed ones; the default draws nothing.
    pub lengths: LengthSpread,
}

/// The phases a point draws prompts for; each gets its own seeded stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadPhase {
    /// Warmup requests.
    Warmup,
    /// Ramp-up and measured requests.
    Measure,
}

impl Workload {
    /// The sessions this workload runs, if it is multi-turn.
    pub fn sessions(&self) -> Option<&Arc<SessionPlan>> {
        match &self.source {
            PromptSource::Sessions(plan) => Some(plan),
            _ => None,
        }
    }

    /// The request for one turn of `session`: its prompt (the whole history), its tag and its
    /// messages, under the workload's output-length and stopping rules.
    pub fn session_request(&self, session: &Session, turn: TurnPrompt) -> RequestSpec {
        let mut spec = self.request(SampledPrompt { token_ids: turn.prompt, output_len: turn.output_len });
        spec.session = Some(turn.tag);
        spec.messages = Some(session.messages().to_vec().into());
        spec
    }

    /// The trace this workload replays, if its prompts come from one.
    pub fn trace(&self) -> Option<&super::trace::TraceReplay> {
        match &self.source {
            PromptSource::Trace(trace) => Some(trace),
            _ => None,
        }
    }

    /// A prompt stream for sweep point `point` and `phase`; streams of different points or
    /// phases differ, the same arguments give the same stream.
    pub fn sampler(&self, point: u64, phase: WorkloadPhase) -> PromptSampler {
        let phase_code = match phase {
            WorkloadPhase::Warmup => 1,
            WorkloadPhase::Measure => 2,
        };
        let stream_seed = mix(self.seed ^ mix(point.wrapping_mul(4).wrapping_add(phase_code)));
        let mut rng = StdRng::seed_from_u64(stream_seed);
        let (prefix, order) = match &self.source {
            PromptSource::Random { vocab_size, input_len, shared_prefix } => {
                // The prefix depends on the seed only: every point and phase shares it.
                let mut prefix_rng = StdRng::seed_from_u64(mix(self.seed));
                let vocab = (*vocab_size).max(2) as u32;
                let prefix: Vec<u32> =
                    (0..(*shared_prefix).min(*input_len)).map(|_| prefix_rng.random_range(1..vocab)).collect();
                (prefix, Vec::new())
            }
            PromptSource::Dataset(prompts) => {
                let mut order: Vec<usize> = (0..prompts.len()).collect();
                order.shuffle(&mut rng);
                (Vec::new(), order)
            }
            PromptSource::Words { words, input_len, shared_prefix } => {
                let mut prefix_rng = StdRng::seed_from_u64(mix(self.seed));
                let ids = words.ids();
                let prefix: Vec<u32> = match ids.is_empty() {
                    true => Vec::new(),
                    false => (0..(*shared_prefix).min(*input_len))
                        .map(|_| ids[prefix_rng.random_range(0..ids.len())])
                        .collect(),
                };
                (prefix, Vec::new())
            }
            PromptSource::Sessions(plan) => match &plan.script {
                SessionScript::Synthetic { vocab_size, first_len, shared_prefix, words, .. } => {
                    let mut prefix_rng = StdRng::seed_from_u64(mix(self.seed));
                    let prefix: Vec<u32> = (0..(*shared_prefix).min(*first_len))
                        .map(|_| draw_token(&mut prefix_rng, *vocab_size, words.as_ref()))
                        .collect();
                    (prefix, Vec::new())
                }
                SessionScript::Conversations(all) => {
                    let mut order: Vec<usize> = (0..all.len()).collect();
                    order.shuffle(&mut rng);
                    (Vec::new(), order)
                }
            },
            // A trace is replayed in its own order.
            PromptSource::Trace(_) => (Vec::new(), Vec::new()),
        };
        // Lengths come from their own stream, so drawing them leaves the token ids as they were.
        let length_rng = StdRng::seed_from_u64(mix(stream_seed ^ LENGTH_STREAM));
        PromptSampler { workload: self.clone(), rng, length_rng, prefix, order, next: 0, sessions: 0 }
    }

    /// The request for `prompt` under this workload's output-length and stopping rules.
    pub fn request(&self, prompt: SampledPrompt) -> RequestSpec {
        let max_tokens = self.output_len.or(prompt.output_len).unwrap_or(self.fallback_output_len).max(1);
        RequestSpec {
            prompt: prompt.token_ids,
            max_tokens,
            min_tokens: self.ignore_eos.then_some(max_tokens),
            ignore_eos: self.ignore_eos,
            end_id: if self.ignore_eos { Some(-1) } else { self.end_id },
            streaming: self.streaming,
            expected_output_tokens: Some(u64::from(max_tokens)),
            guide: self.guide.clone(),
            session: None,
            messages: None,
        }
    }
}

/// An endless, reproducible stream of requests for one point and phase.
#[derive(Debug)]
pub struct PromptSampler {
    workload: Workload,
    rng: StdRng,
    /// Draws prompt and output lengths ([`Workload::lengths`]).
    length_rng: StdRng,
    prefix: Vec<u32>,
    order: Vec<usize>,
    next: usize,
    /// Sessions drawn so far (their numbers).
    sessions: u64,
}

impl PromptSampler {
    /// The next prompt.
    pub fn next_prompt(&mut self) -> SampledPrompt {
        match &self.workload.source {
            PromptSource::Random { vocab_size, input_len, .. } => {
                let vocab = (*vocab_size).max(2) as u32;
                let input_len = input_len_of(&self.workload.lengths, &mut self.length_rng, *input_len);
                let mut ids = self.prefix[..self.prefix.len().min(input_len)].to_vec();
                ids.extend((ids.len()..input_len).map(|_| self.rng.random_range(1..vocab)));
                SampledPrompt { token_ids: ids, output_len: None }
            }
            PromptSource::Dataset(prompts) => {
                if prompts.is_empty() {
                    return SampledPrompt { token_ids: Vec::new(), output_len: None };
                }
                if self.next == self.order.len() {
                    self.order.shuffle(&mut self.rng);
                    self.next = 0;
                }
                let prompt = prompts[self.order[self.next]].clone();
                self.next += 1;
                prompt
            }
            PromptSource::Words { words, input_len, .. } => {
                let ids = words.ids();
                let input_len = input_len_of(&self.workload.lengths, &mut self.length_rng, *input_len);
                let mut prompt = self.prefix[..self.prefix.len().min(input_len)].to_vec();
                if !ids.is_empty() {
                    prompt.extend((prompt.len()..input_len).map(|_| ids[self.rng.random_range(0..ids.len())]));
                }
                SampledPrompt { token_ids: prompt, output_len: None }
            }
            PromptSource::Sessions(_) => {
                let mut session = self.next_session();
                match session.first() {
                    Ok(turn) => SampledPrompt { token_ids: turn.prompt, output_len: turn.output_len },
                    Err(_) => SampledPrompt { token_ids: Vec::new(), output_len: None },
                }
            }
            PromptSource::Trace(trace) => {
                if trace.prompts.is_empty() {
                    return SampledPrompt { token_ids: Vec::new(), output_len: None };
                }
                let prompt = trace.prompts[self.next % trace.prompts.len()].clone();
                self.next += 1;
                prompt
            }
        }
    }

    /// The next session (a workload of [`PromptSource::Sessions`]): synthetic messages drawn
    /// from this stream, or the next conversation of the dataset in this stream's order. Any
    /// other workload gives a one-turn session of its next prompt.
    pub fn next_session(&mut self) -> Session {
        let id = self.sessions;
        self.sessions += 1;
        let plan = match &self.workload.source {
            PromptSource::Sessions(plan) => plan.clone(),
            _ => {
                let prompt = self.next_prompt();
                let plan = SessionPlan {
                    script: SessionScript::Conversations(Arc::from(Vec::new())),
                    turns: 1,
                    think_time: std::time::Duration::ZERO,
                    tokenizer: None,
                    chat_template: false,
                };
                let message = UserMessage { token_ids: prompt.token_ids, text: None, output_len: prompt.output_len };
                return Session::new(Arc::new(plan), id, vec![message]);
            }
        };
        let script = match &plan.script {
            SessionScript::Synthetic { vocab_size, first_len, turn_len, words, .. } => (0..plan.turns.max(1))
                .map(|turn| {
                    let mut ids = if turn == 0 { self.prefix.clone() } else { Vec::new() };
                    let len = if turn == 0 { *first_len } else { *turn_len };
                    ids.extend((ids.len()..len).map(|_| draw_token(&mut self.rng, *vocab_size, words.as_ref())));
                    UserMessage { token_ids: ids, text: None, output_len: None }
                })
                .collect(),
            SessionScript::Conversations(all) => {
                if all.is_empty() {
                    vec![UserMessage { token_ids: Vec::new(), text: None, output_len: None }]
                } else {
                    if self.next == self.order.len() {
                        self.order.shuffle(&mut self.rng);
                        self.next = 0;
                    }
                    let conversation = all[self.order[self.next]].clone();
                    self.next += 1;
                    conversation
                }
            }
        };
        Session::new(plan, id, script)
    }

    /// The next request: the next prompt under the workload's rules, its output length drawn
    /// when the workload spreads output lengths.
    pub fn next_request(&mut self) -> RequestSpec {
        let prompt = self.next_prompt();
        let mut spec = self.workload.request(prompt);
        if let Some(output) = &self.workload.lengths.output {
            let max_tokens = output.sample(&mut self.length_rng).max(1);
            spec.max_tokens = max_tokens;
            spec.min_tokens = spec.min_tokens.map(|_| max_tokens);
            spec.expected_output_tokens = Some(u64::from(max_tokens));
        }
        spec
    }
}

/// The prompt length to send: drawn when `spread` spreads input lengths (less the template
/// tokens a server adds to word prompts), else the source's `fixed` length.
fn input_len_of(spread: &LengthSpread, rng: &mut StdRng, fixed: usize) -> usize {
    match &spread.input {
        Some(input) => (input.sample(rng) as usize).saturating_sub(spread.template_tokens).max(1),
        None => fixed,
    }
}

/// One random token: a word of `words` when given, else any id in `1..vocab_size`.
fn draw_token(rng: &mut StdRng, vocab_size: usize, words: Option<&super::words::WordVocabulary>) -> u32 {
    match words.map(super::words::WordVocabulary::ids).filter(|ids| !ids.is_empty()) {
        Some(ids) => ids[rng.random_range(0..ids.len())],
        None => rng.random_range(1..vocab_size.max(2) as u32),
    }
}

/// Salt of the length stream, apart from the prompt stream of the same point and phase.
const LENGTH_STREAM: u64 = 0x6c65_6e67_7468_7321;

/// SplitMix64's finaliser: spreads nearby seeds (point 0, 1, 2 ...) over the whole range.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(shared_prefix: usize) -> Workload {
        Workload {
            source: PromptSource::Random { vocab_size: 50_000, input_len: 96, shared_prefix },
            output_len: Some(8),
            fallback_output_len: 128,
            ignore_eos: true,
            end_id: None,
            streaming: true,
            seed: 3,
            guide: None,
            lengths: LengthSpread::default(),
        }
    }

    #[test]
    fn cold_prompts_differ_across_points_and_phases() {
        let w = random(0);
        let draw = |point, phase| w.sampler(point, phase).next_prompt().token_ids;
        let a = draw(0, WorkloadPhase::Measure);
        assert_eq!(a, draw(0, WorkloadPhase::Measure), "reproducible");
        assert_ne!(a[..32], draw(1, WorkloadPhase::Measure)[..32]);
        assert_ne!(a[..32], draw(0, WorkloadPhase::Warmup)[..32]);
    }

    #[test]
    fn warm_prompts_share_exactly_the_prefix() {
        let w = random(64);
        let mut s = w.sampler(5, WorkloadPhase::Measure);
        let (a, b) = (s.next_prompt().token_ids, s.next_prompt().token_ids);
        let c = w.sampler(9, WorkloadPhase::Warmup).next_prompt().token_ids;
        assert_eq!(a[..64], b[..64]);
        assert_eq!(a[..64], c[..64]);
        assert_ne!(a[64..], b[64..]);
        assert!(a.iter().all(|&t| (1..50_000).contains(&t)));
    }

    #[test]
    fn dataset_prompts_cycle_in_seeded_order() {
        let prompts: Arc<[SampledPrompt]> =
            (0..5).map(|i| SampledPrompt { token_ids: vec![i + 1], output_len: Some(10 + i) }).collect();
        let w = Workload { source: PromptSource::Dataset(prompts), output_len: None, ..random(0) };
        let mut s = w.sampler(0, WorkloadPhase::Measure);
        let mut first: Vec<u32> = (0..5).map(|_| s.next_prompt().token_ids[0]).collect();
        first.sort_unstable();
        assert_eq!(first, [1, 2, 3, 4, 5], "each prompt once before any repeats");
        let r = w.sampler(1, WorkloadPhase::Measure).next_request();
        assert_eq!(u64::from(r.max_tokens), r.expected_output_tokens.unwrap());
        assert_eq!(r.max_tokens, 10 + r.prompt[0] - 1, "the dataset's own output length");
    }

    #[test]
    fn natural_stopping_uses_the_end_id_and_no_minimum() {
        let w = Workload { ignore_eos: false, end_id: Some(2), ..random(0) };
        let r = w.sampler(0, WorkloadPhase::Measure).next_request();
        assert_eq!((r.end_id, r.min_tokens, r.max_tokens), (Some(2), None, 8));
    }

    #[test]
    fn drawn_lengths_reach_the_requests_and_keep_the_prompts_tokens() {
        use crate::bench::traffic::lengths::{LengthDistribution, LengthShape};
        let spread = LengthSpread {
            input: Some(LengthDistribution::new("input", LengthShape::Uniform, 96, 0.0, Some(40), Some(150)).unwrap()),
            output: Some(LengthDistribution::new("output", LengthShape::Lognormal, 8, 4.0, Some(2), Some(30)).unwrap()),
            template_tokens: 0,
        };
        let w = Workload { lengths: spread, ..random(32) };
        let requests: Vec<RequestSpec> = {
            let mut s = w.sampler(0, WorkloadPhase::Measure);
            (0..200).map(|_| s.next_request()).collect()
        };
        assert!(requests.iter().all(|r| (40..=150).contains(&r.prompt.len())));
        assert!(requests.iter().all(|r| (2..=30).contains(&r.max_tokens) && r.min_tokens == Some(r.max_tokens)));
        assert!(requests.iter().all(|r| r.expected_output_tokens == Some(u64::from(r.max_tokens))));
        let lens: std::collections::BTreeSet<usize> = requests.iter().map(|r| r.prompt.len()).collect();
        assert!(lens.len() > 50, "prompt lengths spread over the range");
        let fixed = random(32).sampler(0, WorkloadPhase::Measure).next_prompt().token_ids;
        assert_eq!(requests[0].prompt[..32], fixed[..32], "the shared prefix is unchanged");
        let again = w.sampler(0, WorkloadPhase::Measure).next_request();
        assert_eq!(again, requests[0], "reproducible per seed");
    }
}
