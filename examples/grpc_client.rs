//! Streams one generation from a running `trtllm serve` over gRPC.
//!
//! ```text
//! cargo run --release -- serve &                  # built-in simulated engine on 127.0.0.1:50051
//! cargo run --example grpc_client -- http://127.0.0.1:50051
//! ```

use futures::StreamExt;
use trtllm::proto::trtllm::generate_response::Response;
use trtllm::proto::trtllm::trtllm_service_client::TrtllmServiceClient;
use trtllm::proto::trtllm::{GenerateRequest, GetModelInfoRequest, OutputConfig, SamplingConfig, TokenizedInput};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args().nth(1).unwrap_or_else(|| "http://127.0.0.1:50051".to_string());
    let mut client = TrtllmServiceClient::connect(url).await?;
    let model = client.get_model_info(GetModelInfoRequest {}).await?.into_inner();
    println!("model {} (vocab {}, max_input_len {})", model.model_id, model.vocab_size, model.max_input_len);

    let request = GenerateRequest {
        request_id: "example-1".into(),
        tokenized: Some(TokenizedInput { input_token_ids: vec![1, 2, 3, 4], ..Default::default() }),
        sampling_config: Some(SamplingConfig { temperature: Some(0.8), ..Default::default() }),
        output_config: Some(OutputConfig { return_perf_metrics: true, ..Default::default() }),
        max_tokens: 16,
        streaming: true,
        ..Default::default()
    };
    let mut stream = client.generate(request).await?.into_inner();
    while let Some(message) = stream.next().await {
        match message?.response {
            Some(Response::Chunk(chunk)) => {
                println!("chunk {:?} ({} so far)", chunk.token_ids, chunk.completion_tokens)
            }
            Some(Response::Complete(done)) => {
                println!("complete: {} tokens, finish reason {:?}", done.completion_tokens, done.finish_reason);
                if let Some(perf) = done.perf_metrics {
                    println!("server TTFT {:.1} ms", (perf.first_token_time - perf.arrival_time) * 1e3);
                }
            }
            None => {}
        }
    }
    Ok(())
}
