//! Grammar-constrained token choice for the simulated executor's guided decoding (llguidance).
//!
//! The simulated executor receives the same `GuidedDecodingConfig` as TensorRT-LLM (one encoded
//! string per token id, the tokenizer.json text and the stop ids). From it a
//! [`GrammarMatcherFactory`] builds llguidance's token trie once; each guided request then gets a
//! [`GrammarMatcher`] compiled from its guide ([`GuideType`] plus guide text; a bounded cache of
//! recently compiled guides lets a repeated guide skip compilation), which gives the allowed-token
//! mask of every step, consumes the chosen token, tells whether the grammar accepts (a stop id may
//! end the sequence) and picks a deterministic, terminating token for a seed.
//!
//! Guide conversion follows TensorRT-LLM's grammar backends: JSON is any JSON object; JSON_SCHEMA a
//! JSON Schema (compact separators, no free whitespace); REGEX a full match; EBNF_GRAMMAR xgrammar's
//! GBNF dialect (`root ::= ...`, converted to llguidance's Lark syntax; Lark text is accepted too);
//! STRUCTURAL_TAG both xgrammar formats (`{"structures", "triggers"}` and
//! `{"type": "structural_tag", "format": {...}}`).
//!
//! # Bridge to the C++ simulator (sim-only)
//!
//! The C++ simulator reaches this module through a second cxx bridge that only the simulated build
//! compiles (build.rs adds it in `configure_simulated`; the real build emits `cfg(trtllm_real)` and
//! leaves the bridge out). Both builds use the grammar engine itself: the executor compiles every
//! guide before enqueueing it, so a guide the engine cannot compile is that request's error. The bridge exposes opaque `GrammarMatcherFactory` /
//! `GrammarMatcher` boxes with `new_factory(vocab, tokenizer_json, stop_ids)`,
//! `new_matcher(factory, guide_type, guide)`, `fill_mask(matcher, words)`, `consume(matcher,
//! token)`, `is_accepting`, `is_stopped` and `choose_token(matcher, seed, step)`; every call returns
//! `Result`, so a Rust error becomes a C++ exception the simulator turns into that request's error
//! response. The C++ side declares the calls in an implementation-only header under cpp/sim/src
//! (never under cpp/sim/include/tensorrt_llm, which mirrors the real headers), and the standalone
//! C++ build without Rust links a fallback that rejects guided requests.

#[cfg(not(trtllm_real))]
mod bridge;
mod cache;
pub(crate) mod error;
mod gbnf;
mod grammar_parts;
mod guide;
mod matcher;
mod structural_tag;
mod text_tokens;
mod vocab;

#[cfg(all(test, feature = "text"))]
mod tests;

pub use error::GuidedError;
pub use guide::{GuideType, validate_guide};
pub use matcher::{GRAMMAR_CACHE_CAPACITY, GrammarMatcher, GrammarMatcherFactory};
