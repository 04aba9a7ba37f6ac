//! The grammar matcher factory (one per executor) and the per-request matcher with its seeded,
//! terminating token choice.

use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use llguidance::toktrie::{SimpleVob, TokEnv};
use llguidance::{Matcher, ParserFactory};

use crate::error::invalid_request::InvalidGuide;
use crate::types::guided::GuideType;

use super::cache::GrammarCache;
use super::error::GuidedError;
use super::guide::grammar_for;
use super::text_tokens::TextTokens;
use super::vocab;

/// Steps after which a matcher mostly steers towards closing tokens (see [`GrammarMatcher::choose_token`]).
const SOFT_LENGTH: f64 = 24.0;
/// How many allowed tokens the closing heuristic looks at per step.
const CANDIDATES: usize = 24;
/// How many of the best-ranked candidates it test-consumes to find one that completes the grammar.
const COMPLETION_PROBES: usize = 4;
/// Compiled grammars a factory keeps (least recently used evicted first): enough for every response
/// format and tool list a deployment serves at once, small next to the vocabulary's token trie.
pub const GRAMMAR_CACHE_CAPACITY: usize = 64;

/// A factory [`GrammarMatcherFactory::shared`] can hand out again: its vocabulary's fingerprint,
/// its parts (alive while a clone is) and its stop ids.
type LiveFactory = (u64, Weak<ParserFactory>, Weak<GrammarCache>, Arc<[u32]>);

/// Compiles guides against one vocabulary (built once from a `GuidedDecodingConfig`); cheap to clone.
#[derive(Clone)]
pub struct GrammarMatcherFactory {
    parsers: Arc<ParserFactory>,
    stop_token_ids: Arc<[u32]>,
    /// Compiled grammars by guide, shared by the clones.
    compiled: Arc<GrammarCache>,
}

impl fmt::Debug for GrammarMatcherFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrammarMatcherFactory")
            .field("vocab_size", &self.vocab_size())
            .field("stop_token_ids", &self.stop_token_ids)
            .field("cached_grammars", &self.compiled.len())
            .finish()
    }
}

impl GrammarMatcherFactory {
    /// Builds the token trie from the encoded vocabulary (one token string per id, as in
    /// tokenizer.json), the tokenizer.json text (tells how token strings map to bytes and which
    /// tokens are special; without it the kind is guessed from the vocabulary) and the stop ids
    /// (at least one; they end a guided sequence where the grammar accepts).
    pub fn new(
        encoded_vocab: &[String],
        tokenizer_json: Option<&str>,
        stop_token_ids: &[u32],
    ) -> Result<Self, GuidedError> {
        let env: TokEnv = vocab::tok_env(encoded_vocab, tokenizer_json, stop_token_ids)?;
        let mut parsers = ParserFactory::new_simple(&env).map_err(|e| GuidedError::Vocabulary(e.to_string()))?;
        parsers.quiet();
        Ok(Self {
            parsers: Arc::new(parsers),
            stop_token_ids: stop_token_ids.into(),
            compiled: Arc::new(GrammarCache::new(GRAMMAR_CACHE_CAPACITY)),
        })
    }

    /// The factory for this vocabulary: a clone of one still alive in this process that was made
    /// from the same vocabulary, tokenizer text and stop ids, or a new one (then findable by later
    /// calls while any clone of it lives). The executor compiles guides before enqueueing them, and
    /// the simulated executor compiles them again when it admits the request: both go through this
    /// call, so they share one token trie and one cache of compiled grammars, and the second
    /// compile is a cache hit.
    pub fn shared(
        encoded_vocab: &[String],
        tokenizer_json: Option<&str>,
        stop_token_ids: &[u32],
    ) -> Result<Self, GuidedError> {
        static LIVE: Mutex<Vec<LiveFactory>> = Mutex::new(Vec::new());
        let mut hasher = DefaultHasher::new();
        (encoded_vocab, tokenizer_json, stop_token_ids).hash(&mut hasher);
        let key = hasher.finish();
        let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|(_, parsers, _, _)| parsers.strong_count() > 0);
        let found = live.iter().find_map(|(k, parsers, compiled, stops)| {
            (*k == key && **stops == *stop_token_ids)
                .then(|| Some((parsers.upgrade()?, compiled.upgrade()?, stops.clone())))?
        });
        if let Some((parsers, compiled, stop_token_ids)) = found {
            return Ok(Self { parsers, stop_token_ids, compiled });
        }
        let factory = Self::new(encoded_vocab, tokenizer_json, stop_token_ids)?;
        live.push((
            key,
            Arc::downgrade(&factory.parsers),
            Arc::downgrade(&factory.compiled),
            factory.stop_token_ids.clone(),
        ));
        Ok(factory)
    }

    /// The same factory with room for at most `capacity` compiled grammars (0: compile every guide
    /// anew, as before the cache existed); the clones made before keep the old cache.
    pub fn with_grammar_cache(mut self, capacity: usize) -> Self {
        self.compiled = Arc::new(GrammarCache::new(capacity));
        self
    }

    /// Compiled grammars held for reuse.
    pub fn cached_grammars(&self) -> usize {
        self.compiled.len()
    }

    /// Number of token ids the masks cover (the encoded vocabulary's length).
    pub fn vocab_size(&self) -> usize {
        self.parsers.tok_env().tok_trie().vocab_size()
    }

    /// The ids that end a guided sequence.
    pub fn stop_token_ids(&self) -> &[u32] {
        &self.stop_token_ids
    }

    /// A fresh matcher for one sequence: the guide's grammar compiled, or copied from the cache when
    /// this factory compiled the same guide recently.
    pub fn matcher(&self, guide_type: GuideType, guide: Option<&str>) -> Result<GrammarMatcher, GuidedError> {
        let refused = |e: String| GuidedError::Guide { guide_type, reason: InvalidGuide::Compile(e) };
        let parser = self.compiled.parser(guide_type, guide, || {
            self.parsers.create_parser(grammar_for(guide_type, guide)?).map_err(|e| refused(e.to_string()))
        })?;
        let inner = Matcher::new(Ok(parser));
        if let Some(err) = inner.get_error() {
            return Err(refused(err));
        }
        Ok(GrammarMatcher {
            inner,
            stop_token_ids: self.stop_token_ids.clone(),
            vocab_size: self.vocab_size(),
            mask: None,
            text: TextTokens::default(),
            finished: false,
            steps: 0,
        })
    }
}

/// The grammar state of one guided sequence.
pub struct GrammarMatcher {
    inner: Matcher,
    stop_token_ids: Arc<[u32]>,
    vocab_size: usize,
    /// The mask of the current step, computed at most once per step.
    mask: Option<SimpleVob>,
    /// The current step's allowed tokens but the stop ids, for the seeded choice (buffers reused).
    text: TextTokens,
    /// A stop id was consumed where the grammar accepts.
    finished: bool,
    /// Tokens consumed so far.
    steps: u32,
}

impl fmt::Debug for GrammarMatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrammarMatcher")
            .field("steps", &self.steps)
            .field("finished", &self.finished)
            .field("stopped", &self.inner.is_stopped())
            .finish()
    }
}

impl GrammarMatcher {
    /// Number of token ids the mask covers; ids at or above it are never allowed.
    pub fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// Tokens consumed so far.
    pub fn steps(&self) -> u32 {
        self.steps
    }

    fn mask(&mut self) -> Result<&SimpleVob, GuidedError> {
        if self.mask.is_none() {
            let mask = if self.finished {
                SimpleVob::alloc(self.vocab_size)
            } else {
                self.inner.compute_mask_or_eos().map_err(|e| GuidedError::Matcher(e.to_string()))?
            };
            self.mask = Some(mask);
        }
        self.mask.as_ref().ok_or_else(|| GuidedError::Matcher("mask missing".into()))
    }

    /// Writes the allowed-token bitmask of this step into `words` (bit `i % 32` of word `i / 32` is
    /// token `i`; words beyond the vocabulary are cleared).
    pub fn fill_mask(&mut self, words: &mut [u32]) -> Result<(), GuidedError> {
        let mask = self.mask()?.as_slice();
        let n = mask.len().min(words.len());
        words[..n].copy_from_slice(&mask[..n]);
        words[n..].fill(0);
        Ok(())
    }

    /// Whether `token` is allowed at this step.
    pub fn is_allowed(&mut self, token: u32) -> Result<bool, GuidedError> {
        let vocab_size = self.vocab_size;
        Ok((token as usize) < vocab_size && self.mask()?.is_allowed(token))
    }

    /// The allowed tokens of this step, in id order.
    pub fn allowed_tokens(&mut self) -> Result<Vec<u32>, GuidedError> {
        let mut out = Vec::new();
        self.mask()?.iter_set_entries(|i| out.push(i as u32));
        Ok(out)
    }

    /// Advances by `token`, which must be allowed; a stop id ends the sequence.
    pub fn consume(&mut self, token: u32) -> Result<(), GuidedError> {
        if !self.is_allowed(token)? {
            return Err(GuidedError::TokenNotAllowed(token));
        }
        self.mask = None;
        self.steps += 1;
        if self.stop_token_ids.contains(&token) {
            self.finished = true;
            return Ok(());
        }
        self.inner.consume_token(token).map_err(|e| GuidedError::Matcher(e.to_string()))
    }

    /// Whether the output so far is complete (a stop id is allowed now).
    pub fn is_accepting(&mut self) -> bool {
        self.finished || self.inner.is_accepting().unwrap_or(false)
    }

    /// Whether nothing but a stop id can follow (or the sequence already ended on one).
    pub fn is_stopped(&self) -> bool {
        self.finished || self.inner.is_stopped()
    }

    /// Whether a stop id was consumed.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Picks the next token among the allowed ones, deterministically for `(seed, self.steps())`,
    /// so that outputs stay short: where the grammar accepts, a stop id is taken with a probability
    /// that grows with length; otherwise, with a probability that also grows with length, the choice
    /// prefers a token that completes the grammar, then tokens that close something (`"`, `}`, `]`,
    /// `)`, `>`), then punctuation, over a uniformly random allowed token. Does not consume it.
    pub fn choose_token(&mut self, seed: u64) -> Result<u32, GuidedError> {
        let steps = self.steps;
        let mut rng = SplitMix::new(seed ^ u64::from(steps).wrapping_mul(0xA076_1D64_78BD_642F));
        self.mask()?;
        let Some(mask) = &self.mask else {
            return Err(GuidedError::Matcher("mask missing".into()));
        };
        // The first stop id (in configuration order) allowed now, and the other allowed tokens counted,
        // not listed: the choice below only ever needs a count and the n-th one in id order.
        let stop = self.stop_token_ids.iter().copied().find(|&s| (s as usize) < self.vocab_size && mask.is_allowed(s));
        self.text.fill(mask.as_slice(), &self.stop_token_ids);
        let progress = f64::from(steps) / SOFT_LENGTH;
        match (stop, self.text.is_empty()) {
            (None, true) => return Err(GuidedError::Matcher("the grammar allows no token".into())),
            (Some(stop), true) => return Ok(stop),
            (Some(stop), false) if rng.unit() < (0.3 + progress).min(0.97) => return Ok(stop),
            _ => {}
        }
        if rng.unit() >= progress.min(0.95) {
            return Ok(self.text.nth(rng.below(self.text.len())));
        }
        self.closing_token(&mut rng)
    }

    /// Among a seeded sample of this step's text tokens, one that completes the grammar, else the best
    /// closer.
    fn closing_token(&mut self, rng: &mut SplitMix) -> Result<u32, GuidedError> {
        let count = self.text.len();
        let sample: Vec<u32> = if count <= CANDIDATES {
            (0..count).map(|n| self.text.nth(n)).collect()
        } else {
            (0..CANDIDATES).map(|_| self.text.nth(rng.below(count))).collect()
        };
        let env = self.inner.tok_env().map_err(|e| GuidedError::Matcher(e.to_string()))?;
        let trie = env.tok_trie();
        let mut ranked: Vec<(u32, u32)> = sample.iter().map(|&t| (closing_rank(trie.token(t)), t)).collect();
        ranked.sort_by_key(|&(rank, _)| std::cmp::Reverse(rank));
        for &(_, token) in ranked.iter().take(COMPLETION_PROBES) {
            let mut probe = self.inner.clone();
            if probe.consume_token(token).is_ok() && probe.is_accepting().unwrap_or(false) {
                return Ok(token);
            }
        }
        Ok(ranked[0].1)
    }
}

/// How strongly a token's bytes close an open construct.
fn closing_rank(bytes: &[u8]) -> u32 {
    if bytes.iter().any(|b| matches!(b, b'"' | b'}' | b']' | b')' | b'>')) {
        2
    } else if !bytes.is_empty() && bytes.iter().all(|b| b.is_ascii_punctuation()) {
        1
    } else {
        0
    }
}

/// splitmix64: a tiny deterministic generator for the token choice.
#[derive(Debug, Clone)]
struct SplitMix(u64);

impl SplitMix {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}
