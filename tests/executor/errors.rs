//! The one error type: `?` converts every module's error into `trtllm::Error` (checked at compile
//! time), the source chain is kept, and `kind()` classifies without reading messages.

use std::error::Error as _;

use trtllm::{Error, ErrorKind, InvalidRequest, KvEventsLagged, Result};

/// Compiles only if `?` converts `E` into `trtllm::Error`.
fn question_mark<E>(error: E) -> Result<()>
where
    Error: From<E>,
{
    Err(error)?
}

#[test]
fn every_module_error_converts_with_the_question_mark() {
    let text = trtllm::text::Tokenizer::from_dir("/nonexistent/tokenizer").expect_err("no such dir");
    assert_eq!(question_mark(text).unwrap_err().kind(), ErrorKind::Configuration);
    let lora = trtllm::lora::LoraError::NotEnabled;
    assert_eq!(question_mark(lora).unwrap_err().kind(), ErrorKind::InvalidRequest);
    let settings = trtllm::lora::LoraError::InvalidSettings("max_lora_rank is 0".into());
    assert_eq!(question_mark(settings).unwrap_err().kind(), ErrorKind::Configuration);
    let adapter_io = trtllm::lora::LoraError::Io { path: "adapter".into(), source: std::io::Error::other("eio") };
    assert_eq!(question_mark(adapter_io).unwrap_err().kind(), ErrorKind::Internal);
    let sim = trtllm::sim::SimError::Invalid("zero layers".into());
    assert_eq!(question_mark(sim).unwrap_err().kind(), ErrorKind::Configuration);
    let reason = trtllm::guided::InvalidGuide::Regex("(".into());
    let guide = trtllm::guided::GuidedError::Guide { guide_type: trtllm::guided::GuideType::Regex, reason };
    assert_eq!(question_mark(guide).unwrap_err().kind(), ErrorKind::InvalidRequest);
    let vocabulary = trtllm::guided::GuidedError::NoStopTokens;
    assert_eq!(question_mark(vocabulary).unwrap_err().kind(), ErrorKind::Configuration);
    assert_eq!(question_mark(InvalidRequest::EmptyPrompt).unwrap_err().kind(), ErrorKind::InvalidRequest);
    assert_eq!(question_mark(KvEventsLagged { missed: 3 }).unwrap_err().kind(), ErrorKind::Overloaded);
    let io = std::io::Error::other("disk");
    assert_eq!(question_mark(io).unwrap_err().kind(), ErrorKind::Internal);
}

#[test]
fn the_source_chain_is_kept() {
    let batch = Error::InvalidBatchRequest { index: 2, reason: InvalidRequest::ZeroMaxTokens };
    let source = batch.source().expect("a source");
    assert_eq!(source.to_string(), InvalidRequest::ZeroMaxTokens.to_string());
    let dir = Error::from(std::io::Error::other("disk full"));
    assert!(dir.to_string().contains("disk full"));
}

#[test]
fn kinds_give_the_status_a_service_answers_with() {
    let cases = [
        (Error::from(InvalidRequest::EmptyPrompt), ("INVALID_ARGUMENT", 400)),
        (Error::QueueFull("full".into()), ("RESOURCE_EXHAUSTED", 429)),
        (Error::ShutDown, ("UNAVAILABLE", 503)),
        (Error::Draining, ("UNAVAILABLE", 503)),
        (Error::RequestFailed("forward".into()), ("INTERNAL", 500)),
        (Error::KvEventsDisabled, ("FAILED_PRECONDITION", 500)),
    ];
    for (error, (grpc, http)) in cases {
        assert_eq!((error.kind().grpc_code().0, error.kind().http_status()), (grpc, http), "{error}");
    }
}
