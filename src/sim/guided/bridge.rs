//! The sim-only cxx bridge through which the C++ simulator reaches the grammar engine; the real
//! TensorRT-LLM build never compiles it.
//!
//! Every function catches panics, so no Rust unwind crosses into C++; errors become `rust::Error`
//! exceptions the simulator turns into the request's error response.

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::guided::{GrammarMatcher, GrammarMatcherFactory, GuideType, GuidedError};

#[cxx::bridge(namespace = "trtllm::sim::guided")]
#[allow(missing_docs)]
mod ffi {
    extern "Rust" {
        type SimGrammarFactory;
        type SimGrammarMatcher;

        fn new_factory(
            vocab: &Vec<String>,
            tokenizer_json: &str,
            has_tokenizer_json: bool,
            stop_ids: &[i32],
        ) -> Result<Box<SimGrammarFactory>>;
        fn new_matcher(
            factory: &SimGrammarFactory,
            guide_type: i32,
            guide: &str,
            has_guide: bool,
        ) -> Result<Box<SimGrammarMatcher>>;
        fn fill_mask(matcher: &mut SimGrammarMatcher, words: &mut [u32]) -> Result<()>;
        fn consume(matcher: &mut SimGrammarMatcher, token: i32) -> Result<()>;
        fn choose_token(matcher: &mut SimGrammarMatcher, seed: u64) -> Result<i32>;
        fn is_accepting(matcher: &mut SimGrammarMatcher) -> Result<bool>;
        fn is_stopped(matcher: &SimGrammarMatcher) -> Result<bool>;
        fn is_finished(matcher: &SimGrammarMatcher) -> bool;
    }
}

/// The executor's grammar factory, owned by the C++ simulator.
pub struct SimGrammarFactory(GrammarMatcherFactory);

/// One guided sequence's matcher, owned by the C++ simulator.
pub struct SimGrammarMatcher(GrammarMatcher);

/// Runs `f`, turning a panic into an error so it never unwinds into C++.
fn guarded<T>(f: impl FnOnce() -> Result<T, GuidedError>) -> Result<T, GuidedError> {
    catch_unwind(AssertUnwindSafe(f))
        .unwrap_or_else(|_| Err(GuidedError::Matcher("the grammar engine panicked".into())))
}

/// The guide type with the executor's number (`kJSON = 0` … `kSTRUCTURAL_TAG = 4`).
fn guide_type(value: i32) -> Result<GuideType, GuidedError> {
    Ok(match value {
        0 => GuideType::Json,
        1 => GuideType::JsonSchema,
        2 => GuideType::Regex,
        3 => GuideType::EbnfGrammar,
        4 => GuideType::StructuralTag,
        other => return Err(GuidedError::UnknownGuideType(other)),
    })
}

fn token_id(token: i32) -> Result<u32, GuidedError> {
    u32::try_from(token).map_err(|_| GuidedError::TokenNotAllowed(token as u32))
}

#[allow(clippy::ptr_arg)] // cxx passes a C++ `rust::Vec` by reference
fn new_factory(
    vocab: &Vec<String>,
    tokenizer_json: &str,
    has_tokenizer_json: bool,
    stop_ids: &[i32],
) -> Result<Box<SimGrammarFactory>, GuidedError> {
    guarded(|| {
        let stops = stop_ids.iter().map(|&id| token_id(id)).collect::<Result<Vec<u32>, _>>()?;
        let tokenizer = has_tokenizer_json.then_some(tokenizer_json);
        Ok(Box::new(SimGrammarFactory(GrammarMatcherFactory::shared(vocab, tokenizer, &stops)?)))
    })
}

fn new_matcher(
    factory: &SimGrammarFactory,
    guide_type: i32,
    guide: &str,
    has_guide: bool,
) -> Result<Box<SimGrammarMatcher>, GuidedError> {
    guarded(|| {
        let guide_type = self::guide_type(guide_type)?;
        let matcher = factory.0.matcher(guide_type, has_guide.then_some(guide))?;
        Ok(Box::new(SimGrammarMatcher(matcher)))
    })
}

fn fill_mask(matcher: &mut SimGrammarMatcher, words: &mut [u32]) -> Result<(), GuidedError> {
    guarded(|| matcher.0.fill_mask(words))
}

fn consume(matcher: &mut SimGrammarMatcher, token: i32) -> Result<(), GuidedError> {
    guarded(|| matcher.0.consume(token_id(token)?))
}

fn choose_token(matcher: &mut SimGrammarMatcher, seed: u64) -> Result<i32, GuidedError> {
    guarded(|| matcher.0.choose_token(seed).map(|t| t as i32))
}

fn is_accepting(matcher: &mut SimGrammarMatcher) -> Result<bool, GuidedError> {
    guarded(|| Ok(matcher.0.is_accepting()))
}

fn is_stopped(matcher: &SimGrammarMatcher) -> Result<bool, GuidedError> {
    guarded(|| Ok(matcher.0.is_stopped()))
}

fn is_finished(matcher: &SimGrammarMatcher) -> bool {
    matcher.0.is_finished()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guide_type_numbers_follow_the_executor_and_others_are_refused() {
        assert_eq!(guide_type(0).unwrap(), GuideType::Json);
        assert_eq!(guide_type(2).unwrap(), GuideType::Regex);
        assert_eq!(guide_type(4).unwrap(), GuideType::StructuralTag);
        assert_eq!(guide_type(5).unwrap_err(), GuidedError::UnknownGuideType(5));
    }
}
