//! The C++ simulator's way into the grammar engine ([`crate::guided`]): a second cxx bridge that
//! only the simulated build compiles (build.rs adds it in `configure_simulated`; the real build
//! emits `cfg(trtllm_real)` and leaves it out).
//!
//! The bridge exposes opaque `GrammarMatcherFactory` / `GrammarMatcher` boxes with
//! `new_factory(vocab, tokenizer_json, stop_ids)`, `new_matcher(factory, guide_type, guide)`,
//! `fill_mask(matcher, words)`, `consume(matcher, token)`, `is_accepting`, `is_stopped` and
//! `choose_token(matcher, seed, step)`; every call returns `Result`, so a Rust error becomes a C++
//! exception the simulator turns into that request's error response. The C++ side declares the
//! calls in an implementation-only header under cpp/sim/src (never under
//! cpp/sim/include/tensorrt_llm, which mirrors the real headers), and the standalone C++ build
//! without Rust links a fallback that rejects guided requests.

#[cfg(not(trtllm_real))]
mod bridge;
