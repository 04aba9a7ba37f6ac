//! The gRPC server's text handling: every eos id stops generation, stop strings (special tokens
//! included) reach the executor and cut non-streaming requests.

use crate::common;

use std::time::Duration;

use futures::{FutureExt, StreamExt};
use serde_json::json;
use tokio::sync::oneshot;
use trtllm::proto::trtllm as pb;
use trtllm::proto::trtllm::generate_response::Response as Kind;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
use trtllm::server::{ServeOptions, serve};
use trtllm::text::Tokenizer;
use trtllm::{AsyncExecutor, ExecutorConfig};

use common::sim::eventually_some;
use common::text::{engine_with_tokenizer, word_level_tokenizer};

type Client = TrtllmServiceClient<tonic::transport::Channel>;

/// A server over the 13-token word-level tokenizer's engine, its tokenizer configured with
/// `<|im_end|>` as eos and generation_config.json eos ids 2, 3 and 0.
struct WordsServer {
    _dir: tempfile::TempDir,
    tokenizer: Tokenizer,
    client: Client,
    _shutdown: oneshot::Sender<()>,
}

async fn start() -> WordsServer {
    let dir = engine_with_tokenizer(
        &word_level_tokenizer(),
        &[
            ("tokenizer_config.json", json!({"eos_token": "<|im_end|>"}).to_string()),
            ("generation_config.json", json!({"eos_token_id": [2, 3, 0]}).to_string()),
        ],
    );
    let executor = AsyncExecutor::load(dir.path(), ExecutorConfig::default()).await.unwrap();
    let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let served = tokenizer.clone();
    tokio::spawn(async move {
        let options = ServeOptions { addr, ..ServeOptions::default() };
        let stop = async {
            let _ = rx.await;
        };
        serve(executor, Some(served), options, listener, stop).await.unwrap();
    });
    let url = format!("http://{addr}");
    let connect = || TrtllmServiceClient::connect(url.clone()).map(Result::ok);
    let client = eventually_some(Duration::from_secs(1), Duration::from_millis(10), connect).await;
    let client = client.unwrap_or_else(|| panic!("server at {url} did not come up"));
    WordsServer { _dir: dir, tokenizer, client, _shutdown: tx }
}

fn request(tokenizer: &Tokenizer, seed: u64, streaming: bool) -> pb::GenerateRequest {
    pb::GenerateRequest {
        request_id: format!("seed-{seed}-{streaming}"),
        tokenized: Some(pb::TokenizedInput {
            input_token_ids: tokenizer.encode("red cat sat", false).unwrap(),
            ..Default::default()
        }),
        sampling_config: Some(pb::SamplingConfig { seed: Some(seed), ..Default::default() }),
        max_tokens: 40,
        streaming,
        ..Default::default()
    }
}

/// The streamed token ids and the complete messages of one call.
async fn generate(client: &mut Client, req: pb::GenerateRequest) -> (Vec<u32>, Vec<pb::GenerateComplete>) {
    let mut stream = client.generate(req).await.unwrap().into_inner();
    let (mut streamed, mut completes) = (Vec::new(), Vec::new());
    while let Some(message) = stream.next().await {
        match message.unwrap().response.unwrap() {
            Kind::Chunk(chunk) => streamed.extend(chunk.token_ids),
            Kind::Complete(done) => completes.push(done),
        }
    }
    assert_eq!(completes.len(), 1);
    (streamed, completes)
}

/// The first seed whose generated ids (eos ignored) satisfy `wanted`, with those ids.
async fn find_seed(server: &mut WordsServer, wanted: impl Fn(&[u32]) -> bool) -> (u64, Vec<u32>) {
    for seed in 0..200 {
        let req = pb::GenerateRequest { ignore_eos: true, ..request(&server.tokenizer, seed, true) };
        let (ids, _) = generate(&mut server.client, req).await;
        if wanted(&ids) {
            return (seed, ids);
        }
    }
    panic!("no seed in 0..200 generates the ids wanted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_eos_id_stops_generation_and_is_left_out() {
    let mut server = start().await;
    let eos = [0, 2, 3];
    let (seed, ids) =
        find_seed(&mut server, |ids| ids.iter().position(|id| eos.contains(id)).is_some_and(|p| p >= 2 && ids[p] != 2))
            .await;
    let end = ids.iter().position(|id| eos.contains(id)).unwrap();
    // Without stop strings (tokens only) and with one that never matches (text matched too).
    for stop in [vec![], vec!["never".to_string()]] {
        for streaming in [true, false] {
            let req = pb::GenerateRequest { stop: stop.clone(), ..request(&server.tokenizer, seed, streaming) };
            let (streamed, completes) = generate(&mut server.client, req).await;
            if streaming {
                assert_eq!(streamed, ids[..end], "no chunk carries the eos id");
            }
            let done = &completes[0];
            assert_eq!(done.finish_reason, "stop", "stop {stop:?}, streaming {streaming}");
            assert_eq!(done.matched_stop, None, "an eos id is neither a stop string nor a stop token");
            assert_eq!(done.output_token_ids, ids[..end], "stop {stop:?}, streaming {streaming}");
            assert_eq!(done.completion_tokens as usize, end);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_special_token_stop_string_ends_a_non_streaming_request() {
    let mut server = start().await;
    let (seed, ids) = find_seed(&mut server, |ids| ids.iter().position(|&id| id == 1).is_some_and(|p| p >= 2)).await;
    let at = ids.iter().position(|&id| id == 1).unwrap();
    let req = pb::GenerateRequest {
        stop: vec!["<|im_start|>".into()],
        ignore_eos: true,
        ..request(&server.tokenizer, seed, false)
    };
    let (streamed, completes) = generate(&mut server.client, req).await;
    assert!(streamed.is_empty(), "a non-streaming call gets no chunks");
    let done = &completes[0];
    assert_eq!(done.finish_reason, "stop");
    assert_eq!(done.matched_stop, Some(pb::generate_complete::MatchedStop::MatchedStopStr("<|im_start|>".into())));
    assert_eq!(done.output_token_ids, ids[..=at]);
    assert_eq!(done.completion_tokens as usize, at + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_stop_string_cuts_a_non_streaming_request_at_the_stop() {
    let mut server = start().await;
    let (seed, ids) = find_seed(&mut server, |ids| ids.len() == 40).await;
    let tokenizer = server.tokenizer.clone();
    let text = tokenizer.decode(&ids, true).unwrap();
    // "x y": the end of one word, the space, the start of the next; not token-aligned.
    let middle = text.len() / 2;
    let space = middle + text[middle..].find(' ').unwrap();
    let stop = text[space - 1..space + 2].to_string();
    let first = text.find(&stop).unwrap();
    let through =
        (1..=ids.len()).find(|&n| tokenizer.decode(&ids[..n], true).unwrap().len() >= first + stop.len()).unwrap();
    let req = pb::GenerateRequest { stop: vec![stop.clone()], ignore_eos: true, ..request(&tokenizer, seed, false) };
    let (streamed, completes) = generate(&mut server.client, req).await;
    assert!(streamed.is_empty());
    let done = &completes[0];
    assert_eq!(done.matched_stop, Some(pb::generate_complete::MatchedStop::MatchedStopStr(stop.clone())));
    assert_eq!(done.output_token_ids, ids[..through], "cut at the token completing {stop:?}");
    assert_eq!(done.completion_tokens as usize, through);
}
