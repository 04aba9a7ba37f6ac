//! Request errors: refused with the limit named, before they reach the executor, and without
//! disturbing a request already running.
//!
//! The crate checks requests against config.json's limits before enqueue. Upstream would otherwise
//! fail a too-long prompt later, as an error response, and clamp an output that overruns
//! max_seq_len (cpp/include/tensorrt_llm/executor/executor.h, `Executor::enqueueRequest`; the
//! `kLENGTH` finish reason "also after clamping"), so a user could not tell why the output was short.

use crate::common::sim::drain;
use crate::harness::{executor, target};
use trtllm::{Error, FinishReason, InvalidRequest};

#[test]
fn bad_requests_are_refused_naming_the_limit_and_a_running_request_is_undisturbed() {
    let t = target();
    let e = &t.engine;
    let running = executor().enqueue(t.request(t.unique_prompt(300, 6), 20)).unwrap();

    let out_of_vocab = e.vocab_size() as u32 + 5;
    match executor().enqueue(t.request(vec![20, out_of_vocab], 4)) {
        Err(Error::InvalidRequest(InvalidRequest::TokenOutOfVocab { token, position: 1, vocab_size })) => {
            assert_eq!((token, vocab_size), (out_of_vocab, e.vocab_size()));
        }
        other => panic!("an out-of-vocabulary prompt id: expected TokenOutOfVocab, got {other:?}"),
    }

    let too_long = vec![20; e.max_input_len() + 1];
    let err = executor().enqueue(t.request(too_long, 4)).unwrap_err();
    assert!(
        matches!(err, Error::InvalidRequest(InvalidRequest::PromptTooLong { len, max }) if len == e.max_input_len() + 1 && max == e.max_input_len()),
        "{err:?}"
    );
    assert!(err.to_string().contains(&e.max_input_len().to_string()), "the message names the limit: {err}");

    let prompt = t.unique_prompt(301, 8);
    let over = (e.max_seq_len() - prompt.len() + 1) as u32;
    match executor().enqueue(t.request(prompt.clone(), over)) {
        Err(Error::InvalidRequest(InvalidRequest::SequenceTooLong { max_seq_len, .. })) => {
            assert_eq!(max_seq_len, e.max_seq_len())
        }
        other => panic!("max tokens over max_seq_len: expected SequenceTooLong, got {other:?}"),
    }
    assert!(matches!(
        executor().enqueue(t.request(prompt.clone(), 0)),
        Err(Error::InvalidRequest(InvalidRequest::ZeroMaxTokens))
    ));
    assert!(matches!(
        executor().enqueue(t.request(vec![], 4)),
        Err(Error::InvalidRequest(InvalidRequest::EmptyPrompt))
    ));
    // Exactly at the limit is fine.
    let edge = (e.max_seq_len() - prompt.len()) as u32;
    assert!(executor().enqueue(t.request(prompt, edge.min(8))).is_ok());

    let out = drain(running);
    assert_eq!(out.done().finish_reason, FinishReason::Length);
    assert_eq!(out.tokens().len(), 20, "the running request was not disturbed");
}
