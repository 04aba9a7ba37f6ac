//! Prefill/decode disaggregation over gRPC: context and generation workers (`--disagg-role`), as
//! separate `trtllm serve` processes and as servers in this process, the handoff in the context
//! leg's `complete`, roles, corrupt handoffs, cancellation during the transfer, and clean ends.

use crate::common;

use std::time::Duration;

use common::server::{TestServer, chunks_and_completes, collect, drain, request, spawn_serve};
use common::sim::eventually_async;
use tonic::Code;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
use trtllm::server::{DisaggRole, ServeOptions};
use trtllm::{CacheTransceiverConfig, KvLink};

type Client = TrtllmServiceClient<tonic::transport::Channel>;

fn prompt(seed: u32, len: u32) -> Vec<u32> {
    (0..len).map(|i| 1 + (i * 31 + seed * 7919) % 3000).collect()
}

/// A greedy request (temperature 0) of `max_tokens` tokens.
fn greedy(id: &str, prompt: Vec<u32>, max_tokens: u32) -> pb::GenerateRequest {
    pb::GenerateRequest {
        sampling_config: Some(pb::SamplingConfig { temperature: Some(0.0), ..Default::default() }),
        ..request(id, prompt, max_tokens, true)
    }
}

fn params(
    kind: pb::disaggregated_params::RequestType,
    phase: Option<pb::ContextPhaseParams>,
) -> pb::DisaggregatedParams {
    pb::DisaggregatedParams { request_type: kind as i32, ctx_request_id: String::new(), context_phase_params: phase }
}

/// The context leg of `base`: its single complete (first token, `kv_handoff`).
async fn prefill(client: &mut Client, base: &pb::GenerateRequest) -> pb::GenerateComplete {
    let mut context = base.clone();
    context.disaggregated_params = Some(params(pb::disaggregated_params::RequestType::ContextOnly, None));
    let messages = collect(client, context).await.expect("the context leg succeeds");
    let (tokens, completes) = chunks_and_completes(&messages);
    assert_eq!(completes.len(), 1, "one complete: {messages:?}");
    let done = completes.into_iter().next().unwrap();
    assert_eq!(done.output_token_ids.len(), 1, "the context leg ends after its first token");
    let streamed = if base.streaming { done.output_token_ids.clone() } else { Vec::new() };
    assert_eq!(tokens, streamed, "a streamed context leg streams that token once, a plain one not at all");
    assert_eq!(done.finish_reason, "length");
    assert!(done.kv_handoff.as_ref().is_some_and(|h| !h.is_empty()), "the complete carries the handoff");
    done
}

/// The generation-only request of `base` decoding from a context complete.
fn generation_leg(base: &pb::GenerateRequest, context: &pb::GenerateComplete) -> pb::GenerateRequest {
    let phase = pb::ContextPhaseParams {
        first_gen_token_id: context.output_token_ids[0],
        kv_cache_blocks: context.kv_handoff.clone().unwrap_or_default(),
    };
    pb::GenerateRequest {
        disaggregated_params: Some(params(pb::disaggregated_params::RequestType::GenerationOnly, Some(phase))),
        ..base.clone()
    }
}

/// Runs `base` on a prefill and a decode worker; checks the decode stream ends with exactly one
/// complete after its chunks, and returns that complete.
async fn disaggregated(
    prefill_client: &mut Client,
    decode_client: &mut Client,
    base: &pb::GenerateRequest,
) -> pb::GenerateComplete {
    let context = prefill(prefill_client, base).await;
    let messages = collect(decode_client, generation_leg(base, &context)).await.expect("the generation leg succeeds");
    let (tokens, completes) = chunks_and_completes(&messages);
    assert_eq!(completes.len(), 1);
    assert!(matches!(messages.last().unwrap().response, Some(pb::generate_response::Response::Complete(_))));
    let done = completes.into_iter().next().unwrap();
    let streamed = if base.streaming { done.output_token_ids.clone() } else { Vec::new() };
    assert_eq!(tokens, streamed, "the chunks carry every token, the first one included");
    assert_eq!(done.output_token_ids[0], context.output_token_ids[0]);
    assert!(done.kv_handoff.is_none());
    let perf = done.perf_metrics.expect("perf metrics were asked for");
    assert!(
        perf.kv_cache_transfer_end >= perf.kv_cache_transfer_start && perf.kv_cache_transfer_start > 0.0,
        "{perf:?}"
    );
    assert!(perf.kv_cache_size > 0, "the transfer's bytes: {perf:?}");
    done
}

async fn connect(addr: &str) -> Client {
    TrtllmServiceClient::connect(format!("http://{addr}")).await.unwrap()
}

async fn disaggregation(client: &mut Client) -> trtllm::proto::smg::grpc::common::EngineDisaggregation {
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.unwrap().into_inner();
    info.disaggregation.expect("a disaggregated worker reports its figures")
}

/// Waits until a worker has no leg in flight and no finished context waiting (the transfer
/// timeout frees those), and nothing is in flight under `ids`.
async fn settles(client: &mut Client, ids: &[&str]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let d = disaggregation(client).await;
        if d.prefill_inflight_queue_reqs + d.decode_transfer_queue_reqs == 0 {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "legs or finished contexts left: {d:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for id in ids {
        let abort = client.abort(pb::AbortRequest { request_id: (*id).into() }).await.unwrap().into_inner();
        assert!(!abort.success, "{id} is still known: {}", abort.message);
    }
}

struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(args: &[&str]) -> (Killed, String) {
    let (child, addr) = spawn_serve(args);
    (Killed(child), addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_prefill_one_decode_process_give_the_aggregated_tokens() {
    let (_context, context_addr) = serve(&["--disagg-role", "context", "--kv-transfer-timeout-ms", "1500"]);
    let (_generation, generation_addr) = serve(&["--disagg-role", "generation"]);
    let (_aggregated, aggregated_addr) = serve(&[]);
    let (mut p, mut d, mut a) =
        (connect(&context_addr).await, connect(&generation_addr).await, connect(&aggregated_addr).await);
    assert_eq!(disaggregation(&mut p).await.mode, "prefill");
    assert_eq!(disaggregation(&mut d).await.mode, "decode");
    let info = a.get_server_info(pb::GetServerInfoRequest {}).await.unwrap().into_inner();
    assert!(info.disaggregation.is_none(), "a plain worker has no transceiver");
    for (i, streaming) in [(0, true), (1, false)] {
        let id = format!("pd-{i}");
        let base = pb::GenerateRequest { streaming, ..greedy(&id, prompt(i, 100 + 37 * i), 24) };
        let done = disaggregated(&mut p, &mut d, &base).await;
        let reference = collect(&mut a, base.clone()).await.unwrap();
        let (_, aggregated) = chunks_and_completes(&reference);
        assert_eq!(done.output_token_ids, aggregated[0].output_token_ids, "request {i}");
        assert_eq!((done.finish_reason.as_str(), done.completion_tokens), ("length", 24));
    }
    let figures = disaggregation(&mut d).await;
    assert!(figures.kv_transfer_speed_gb_s > 0.0 && figures.kv_transfer_latency_ms > 0.0, "{figures:?}");
    settles(&mut p, &["pd-0", "pd-1"]).await;
    settles(&mut d, &["pd-0", "pd-1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_prefill_workers_feed_one_decode_worker() {
    let timeout = ["--disagg-role", "context", "--kv-transfer-timeout-ms", "1500"];
    let (_c0, c0) = serve(&timeout);
    let (_c1, c1) = serve(&timeout);
    let (_g, g) = serve(&["--disagg-role", "generation"]);
    let mut prefill = [connect(&c0).await, connect(&c1).await];
    let mut d = connect(&g).await;
    // Two at a time, one per prefill worker, both decoding on the one generation worker.
    let mut outputs = Vec::new();
    for round in 0..2u32 {
        let [p0, p1] = &mut prefill;
        let (b0, b1) = (
            greedy(&format!("a{round}"), prompt(round, 64), 16),
            greedy(&format!("b{round}"), prompt(round + 9, 80), 16),
        );
        let (mut d0, mut d1) = (d.clone(), d.clone());
        let (x, y) = tokio::join!(disaggregated(p0, &mut d0, &b0), disaggregated(p1, &mut d1, &b1));
        outputs.push((b0, x));
        outputs.push((b1, y));
    }
    // The same prompts prefilled by the other worker decode to the same tokens.
    for (i, (base, done)) in outputs.iter().enumerate() {
        let again = disaggregated(
            &mut prefill[(i + 1) % 2],
            &mut d,
            &pb::GenerateRequest { request_id: format!("again-{i}"), ..base.clone() },
        )
        .await;
        assert_eq!(again.output_token_ids, done.output_token_ids, "{}", base.request_id);
    }
    let ids: Vec<String> = outputs.iter().map(|(b, _)| b.request_id.clone()).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    for p in &mut prefill {
        settles(p, &ids).await;
    }
    settles(&mut d, &ids).await;
}

/// A context and a generation server in this process; transfers over a slow link (`link_gb_s`).
async fn pair(link_gb_s: f64, timeout: Option<Duration>) -> (TestServer, TestServer) {
    let transceiver = match timeout {
        Some(t) => CacheTransceiverConfig::new().kv_transfer_timeout(t),
        None => CacheTransceiverConfig::new(),
    };
    let link = KvLink { bandwidth_gb_s: link_gb_s, latency_us: 0.0, efficiency: 1.0 };
    let start = |role| {
        TestServer::builder()
            .iteration_ms(1.0)
            .config(move |c| c.cache_transceiver(transceiver).sim_kv_link(link))
            .options(ServeOptions { disagg_role: role, ..ServeOptions::default() })
            .start()
    };
    (start(DisaggRole::Context).await, start(DisaggRole::Generation).await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_for_the_other_role_is_failed_precondition_naming_the_role() {
    let (context, generation) = pair(100.0, None).await;
    let (mut p, mut d) = (context.client().await, generation.client().await);
    let base = greedy("r", prompt(1, 32), 8);
    let done = prefill(&mut p, &base).await;
    for (client, request, role) in [
        (
            d.clone(),
            pb::GenerateRequest {
                disaggregated_params: Some(params(pb::disaggregated_params::RequestType::ContextOnly, None)),
                ..base.clone()
            },
            "generation",
        ),
        (d.clone(), base.clone(), "generation"),
        (p.clone(), generation_leg(&base, &done), "context"),
        (p.clone(), base.clone(), "context"),
    ] {
        let mut client = client;
        let status = collect(&mut client, request).await.unwrap_err();
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert!(status.message().contains(&format!("role is {role}")), "{}", status.message());
    }
    // The handoff was not spent by the refusals: it still decodes.
    let messages = collect(&mut d, generation_leg(&base, &done)).await.unwrap();
    assert_eq!(chunks_and_completes(&messages).1[0].output_token_ids.len(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_handoff_bytes_are_invalid_argument() {
    let (context, generation) = pair(100.0, None).await;
    let (mut p, mut d) = (context.client().await, generation.client().await);
    let base = greedy("c", prompt(2, 48), 8);
    let done = prefill(&mut p, &base).await;
    let good = done.kv_handoff.clone().unwrap();
    let mut altered = good.clone();
    let last = altered.len() - 1;
    altered[last / 2] ^= 0x10;
    let cut = good[..good.len() - 5].to_vec();
    for bytes in [altered, cut] {
        let mut request = generation_leg(&base, &done);
        request.disaggregated_params.as_mut().unwrap().context_phase_params.as_mut().unwrap().kv_cache_blocks = bytes;
        let status = collect(&mut d, request).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains("kv_cache_blocks"), "{}", status.message());
    }
    // trtllm-serve's mapping with state bytes the executor cannot read.
    let mut raw = generation_leg(&base, &done);
    let params = raw.disaggregated_params.as_mut().unwrap();
    params.ctx_request_id = "12345".into();
    params.context_phase_params.as_mut().unwrap().kv_cache_blocks = b"not a transceiver state".to_vec();
    let status = collect(&mut d, raw).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    // None of it disturbed the real handoff.
    let messages = collect(&mut d, generation_leg(&base, &done)).await.unwrap();
    assert_eq!(chunks_and_completes(&messages).1[0].output_token_ids.len(), 8);
    generation.wait_executor_idle(Duration::from_secs(5)).await;
}

/// Starts the generation leg of a long prompt and waits until the worker reports it transferring.
async fn transferring(p: &mut Client, d: &mut Client, id: &str) -> tonic::Streaming<pb::GenerateResponse> {
    let base = greedy(id, prompt(3, 2000), 16);
    let done = prefill(p, &base).await;
    let stream = d.generate(generation_leg(&base, &done)).await.unwrap().into_inner();
    let mut probe = d.clone();
    let waiting = eventually_async(Duration::from_secs(5), || {
        let mut probe = probe.clone();
        async move { disaggregation(&mut probe).await.decode_transfer_queue_reqs == 1 }
    })
    .await;
    assert!(waiting, "the generation leg never waited for its transfer: {:?}", disaggregation(&mut probe).await);
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_generation_leg_during_the_transfer_ends_it_once() {
    // 2,000 prompt tokens of the built-in engine's KV (about 45 MB) at 0.01 GB/s: seconds.
    let (context, generation) = pair(0.01, Some(Duration::from_secs(3))).await;
    let (mut p, mut d) = (context.client().await, generation.client().await);
    let mut stream = transferring(&mut p, &mut d, "cancel-g").await;
    let abort = d.abort(pb::AbortRequest { request_id: "cancel-g".into() }).await.unwrap().into_inner();
    assert!(abort.success, "{}", abort.message);
    let (messages, status) = drain(&mut stream).await;
    assert!(status.is_none(), "an aborted request ends with a complete, not a status: {status:?}");
    let (tokens, completes) = chunks_and_completes(&messages);
    assert_eq!(completes.len(), 1);
    assert_eq!(completes[0].finish_reason, "abort");
    assert!(tokens.is_empty(), "nothing was decoded before the transfer ended");
    generation.wait_executor_idle(Duration::from_secs(5)).await;
    settles(&mut d, &["cancel-g"]).await;
    settles(&mut p, &["cancel-g"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_the_context_leg_during_the_transfer_ends_both_legs_cleanly() {
    let (context, generation) = pair(0.01, Some(Duration::from_secs(3))).await;
    let (mut p, mut d) = (context.client().await, generation.client().await);
    let mut stream = transferring(&mut p, &mut d, "cancel-c").await;
    let abort = p.abort(pb::AbortRequest { request_id: "cancel-c".into() }).await.unwrap().into_inner();
    assert!(abort.success, "the finished context's blocks are found and released: {}", abort.message);
    let again = p.abort(pb::AbortRequest { request_id: "cancel-c".into() }).await.unwrap().into_inner();
    assert!(!again.success, "released once: {}", again.message);
    // The generation leg either had its cache already or fails with the handoff gone; either
    // way exactly one terminal item.
    let (messages, status) = drain(&mut stream).await;
    let (_, completes) = chunks_and_completes(&messages);
    match status {
        None => assert_eq!(completes.len(), 1, "{messages:?}"),
        Some(status) => {
            assert!(completes.is_empty(), "{messages:?}");
            assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        }
    }
    context.wait_executor_idle(Duration::from_secs(5)).await;
    generation.wait_executor_idle(Duration::from_secs(5)).await;
    settles(&mut p, &["cancel-c"]).await;
    settles(&mut d, &["cancel-c"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_context_can_be_released_by_abort_before_any_decode() {
    let (context, generation) = pair(100.0, None).await;
    let (mut p, mut d) = (context.client().await, generation.client().await);
    let base = greedy("early", prompt(4, 64), 8);
    let done = prefill(&mut p, &base).await;
    assert_eq!(disaggregation(&mut p).await.prefill_inflight_queue_reqs, 1, "the finished context waits");
    let abort = p.abort(pb::AbortRequest { request_id: "early".into() }).await.unwrap().into_inner();
    assert!(abort.success, "{}", abort.message);
    let mut stream = d.generate(generation_leg(&base, &done)).await.unwrap().into_inner();
    let (messages, status) = drain(&mut stream).await;
    assert!(chunks_and_completes(&messages).1.is_empty());
    assert_eq!(status.map(|s| s.code()), Some(Code::FailedPrecondition), "the handoff is gone");
    settles(&mut p, &["early"]).await;
    settles(&mut d, &["early"]).await;
}
