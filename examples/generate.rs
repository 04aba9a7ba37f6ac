//! Loads an engine with its tokenizer (the built-in simulated one when no directory is given),
//! streams the text of one prompt, then shows the token-level API under it and prints TTFT and TPOT.
//!
//! ```text
//! cargo run --example generate                          # the built-in simulated engine
//! cargo run --example generate -- /path/to/engine_dir   # an engine directory with its tokenizer
//! ```

use std::io::Write;
use std::time::Duration;

use futures::StreamExt;
use trtllm::text::TextEvent;
use trtllm::{Engine, GenerateOptions, GenerationRequest, StreamEvent};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = match std::env::args().nth(1) {
        Some(dir) => Engine::load(dir).await?,
        None => Engine::builtin().await?,
    };
    println!("backend: {}", engine.executor().executor().backend());

    // Text in, text out.
    let mut stdout = std::io::stdout();
    let mut stream = engine.generate("Once upon a time", GenerateOptions::new().max_tokens(32))?;
    while let Some(event) = stream.next().await {
        match event? {
            TextEvent::Chunk { text, .. } => {
                write!(stdout, "{text}")?;
                stdout.flush()?;
            }
            TextEvent::Final { output, deltas, .. } => {
                println!("{}", deltas[0]);
                println!("{} tokens, finish reason {}", output.completion_tokens, output.finish_reason);
            }
        }
    }

    // Token ids in, token ids out, with the timings the executor measured.
    let prompt: Vec<u32> = (1..=64).collect();
    let request = GenerationRequest::new(prompt, 32).with_end_id(None);
    let mut stream = engine.executor().enqueue(request)?;
    while let Some(event) = stream.next().await {
        match event? {
            StreamEvent::Chunk(chunk) => {
                for id in chunk.token_ids {
                    write!(stdout, "{id} ")?;
                }
                stdout.flush()?;
            }
            StreamEvent::Final(done) => {
                println!();
                let ms =
                    |d: Option<Duration>| d.map_or("n/a".to_string(), |d| format!("{:.2} ms", d.as_secs_f64() * 1e3));
                println!(
                    "{} prompt tokens, {} completion tokens, finish reason {}",
                    done.prompt_tokens, done.completion_tokens, done.finish_reason
                );
                println!("TTFT {}  TPOT {}  E2E {}", ms(done.ttft()), ms(done.tpot()), ms(Some(done.e2e_latency())));
                if let Some(perf) = done.perf {
                    println!("executor-side TTFT {} (queue {})", ms(perf.ttft()), ms(perf.queue_time()));
                }
            }
        }
    }
    engine.shutdown(trtllm::ShutdownMode::Drain { timeout: Duration::from_secs(5) }).await?;
    Ok(())
}
