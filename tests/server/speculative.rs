//! Speculative decoding over gRPC: `lookahead_config` is honoured, the stream carries
//! multi-token chunks, and `GenerateComplete` reports the draft tokens proposed and accepted.

use crate::common;

use common::server::{TestServer, chunks_and_completes, collect, request};
use trtllm::proto::trtllm as pb;
use trtllm::sim::SimulatedSpeculation;
use trtllm::speculative::SpeculativeDecodingMode;

fn lookahead(window: i32, ngram: i32, verification: i32) -> pb::LookaheadConfig {
    pb::LookaheadConfig { max_window_size: window, max_ngram_size: ngram, max_verification_set_size: verification }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_reports_accepted_and_drafted_tokens_and_chunks_carry_runs() {
    let server = TestServer::builder()
        .iteration_ms(1.0)
        .engine(|e| e.speculation = Some(SimulatedSpeculation::new(SpeculativeDecodingMode::Medusa, 4, 0.8)))
        .start()
        .await;
    let mut client = server.client().await;
    let messages = collect(&mut client, request("s1", vec![5, 6, 7], 48, true)).await.unwrap();
    let (tokens, completes) = chunks_and_completes(&messages);
    assert_eq!(tokens.len(), 48);
    let done = &completes[0];
    assert_eq!(done.output_token_ids, tokens, "the complete carries exactly the streamed tokens");
    assert!(done.spec_draft_tokens > 0 && done.spec_accepted_tokens > 0);
    assert!(done.spec_accepted_tokens <= done.spec_draft_tokens);
    let chunks = messages.len() - 1;
    // Each chunk is one decoding step: accepted drafts + 1 token.
    assert_eq!(chunks as u32 + done.spec_accepted_tokens, 48);
    let mut running = 0;
    for m in &messages[..chunks] {
        let Some(pb::generate_response::Response::Chunk(c)) = &m.response else { panic!("a chunk") };
        running += c.token_ids.len() as u32;
        assert_eq!(c.completion_tokens, running);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookahead_config_is_honoured_on_a_lookahead_engine_and_refused_elsewhere() {
    let draft_len = SimulatedSpeculation::LOOKAHEAD_DEFAULT_DRAFT_TOKENS;
    let server = TestServer::builder()
        .iteration_ms(1.0)
        .engine(|e| {
            e.speculation = Some(SimulatedSpeculation::new(SpeculativeDecodingMode::LookaheadDecoding, draft_len, 0.9))
        })
        .start()
        .await;
    let mut client = server.client().await;
    let mut req = request("l1", vec![1, 2, 3], 16, true);
    req.lookahead_config = Some(lookahead(4, 3, 4));
    let messages = collect(&mut client, req).await.unwrap();
    let (tokens, completes) = chunks_and_completes(&messages);
    assert_eq!(tokens.len(), 16);
    assert!(completes[0].spec_draft_tokens > 0);

    let mut larger = request("l4", vec![1, 2, 3], 16, true);
    larger.lookahead_config = Some(lookahead(8, 3, 4));
    let status = collect(&mut client, larger).await.expect_err("more than the executor's lookahead");
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("exceeds the executor's"), "{}", status.message());

    let mut bad = request("l2", vec![1, 2, 3], 16, true);
    bad.lookahead_config = Some(lookahead(0, 3, 4));
    let status = collect(&mut client, bad).await.expect_err("a zero window is invalid");
    assert_eq!(status.code(), tonic::Code::InvalidArgument);
    assert!(status.message().contains("max_window_size"), "{}", status.message());

    let plain = TestServer::builder().iteration_ms(1.0).start().await;
    let mut client = plain.client().await;
    let mut req = request("l3", vec![1, 2, 3], 8, true);
    req.lookahead_config = Some(lookahead(4, 3, 4));
    let status = collect(&mut client, req).await.expect_err("no lookahead on a plain engine");
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("lookahead"), "{}", status.message());
}

/// The upstream Python stubs read `spec_accepted_tokens` / `spec_draft_tokens` consistently with
/// the streamed steps, for a lookahead request and for an engine-drafted (Medusa) one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upstream_stubs_see_spec_counts_that_match_the_stream() {
    use common::python::{python_script, python_with_smg_stubs, run_python};
    use std::ffi::OsStr;
    let Some(python) = python_with_smg_stubs() else {
        return;
    };
    let engines = [
        ("lookahead", SpeculativeDecodingMode::LookaheadDecoding, SimulatedSpeculation::LOOKAHEAD_DEFAULT_DRAFT_TOKENS),
        ("medusa", SpeculativeDecodingMode::Medusa, 4),
    ];
    for (name, mode, draft_len) in engines {
        let server = TestServer::builder()
            .iteration_ms(1.0)
            .engine(move |e| e.speculation = Some(SimulatedSpeculation::new(mode, draft_len, 0.7)))
            .start()
            .await;
        let addr = server.addr.to_string();
        let (python, script) = (python.clone(), python_script("speculative_client.py"));
        let output =
            tokio::task::spawn_blocking(move || run_python(&python, &script, &[OsStr::new(&addr), OsStr::new(name)]))
                .await
                .unwrap()
                .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{name}: speculative client failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.lines().any(|l| l == "done"), "{stdout}");
    }
}
