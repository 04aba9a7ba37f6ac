//! Loads an engine directory (creating a small simulated one when none is given), streams the
//! tokens of one request, and prints TTFT and TPOT.
//!
//! ```text
//! cargo run --example generate                          # simulated engine in a temp dir
//! cargo run --example generate -- /path/to/engine_dir   # a trtllm-build engine (GPU build)
//! ```

use std::io::Write;
use std::time::Duration;

use futures::StreamExt;
use trtllm::{AsyncExecutor, ExecutorConfig, GenerationRequest, StreamEvent};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arg = std::env::args().nth(1);
    let scratch = tempfile::tempdir()?;
    let engine_dir = match arg {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            // A TinyLlama-shaped simulated engine with 20 ms iterations in real time.
            trtllm::sim::SimulatedEngine::builder().build().write_to(scratch.path())?;
            println!("no engine dir given: created a simulated engine in {}", scratch.path().display());
            scratch.path().to_path_buf()
        }
    };
    let executor = AsyncExecutor::load(&engine_dir, ExecutorConfig::default()).await?;
    println!("backend: {}", executor.executor().backend());

    let prompt: Vec<u32> = (1..=64).collect();
    let request = GenerationRequest::new(prompt, 32).with_end_id(-1);
    let mut stream = executor.enqueue(request)?;
    let mut stdout = std::io::stdout();
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
    executor.shutdown(trtllm::ShutdownMode::Drain { timeout: Duration::from_secs(5) }).await?;
    Ok(())
}
