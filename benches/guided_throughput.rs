//! Guided decoding in the simulated executor, end to end through the Rust bindings: tokens/s of
//! guided (JSON schema) vs unguided streaming requests at 1, 64 and 256 concurrent streams on the
//! zero-latency (virtual clock) simulator, so the figures are the cost of the simulator plus the mask;
//! and the wall-clock time from enqueue to first token of the first request with a new schema (grammar
//! compilation) next to a repeat of it (a copy from the simulator's grammar cache) and an unguided
//! request. A synthetic 32k byte-level vocabulary.
//!
//! `cargo bench --bench guided_throughput`

#[cfg(not(trtllm_real))]
mod bench {
    use std::time::{Duration, Instant};

    use futures::StreamExt;
    use futures::stream::FuturesUnordered;
    use trtllm::guided::{GuidedDecodingParams, GuidedVocabulary};
    use trtllm::sim::{ClockMode, SimulatedEngine};
    use trtllm::{AsyncExecutor, ExecutorConfig, GenerationRequest, SamplingParams, StreamEvent};

    const VOCAB: usize = 32_000;
    const OUTPUT: u32 = 128;
    const STOP: u32 = 0;

    /// A synthetic byte-level vocabulary: id 0 is the stop token, then printable bytes, then distinct
    /// pieces (letters, digits, punctuation, `Ġ`-prefixed words).
    struct Synthetic(Vec<String>);

    impl Synthetic {
        fn new(size: usize) -> Self {
            let alphabet: Vec<char> = (b'!'..=b'~').map(char::from).chain("ĠĊ".chars()).collect();
            let mut vocab = vec!["<|endoftext|>".to_string()];
            let mut seen = std::collections::HashSet::new();
            for c in &alphabet {
                vocab.push(c.to_string());
                seen.insert(c.to_string());
            }
            let mut state = 0x2545_F491_4F6C_DD1Du64;
            while vocab.len() < size {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let mut word = if state.is_multiple_of(3) { "Ġ".to_string() } else { String::new() };
                let mut s = state;
                for _ in 0..2 + (state % 7) as usize {
                    s = s.rotate_left(9) ^ 0x9E37_79B9;
                    word.push(alphabet[(b'a' - b'!') as usize + (s as usize / 7) % 26]);
                }
                if seen.insert(word.clone()) {
                    vocab.push(word);
                }
            }
            Synthetic(vocab)
        }
    }

    impl GuidedVocabulary for Synthetic {
        fn encoded_vocab(&self) -> Vec<String> {
            self.0.clone()
        }
        fn tokenizer_json(&self) -> Option<String> {
            None
        }
        fn stop_token_ids(&self) -> Vec<u32> {
            vec![STOP]
        }
    }

    fn schema(variant: usize) -> String {
        format!(
            r#"{{"type": "object", "properties": {{"name_{variant}": {{"type": "string", "maxLength": 24}},
            "age": {{"type": "integer", "minimum": 0, "maximum": 120}},
            "tags": {{"type": "array", "items": {{"enum": ["red", "green", "blue"]}}, "maxItems": 4}}}},
            "required": ["name_{variant}", "age"]}}"#
        )
    }

    async fn executor(vocab: &Synthetic, dir: &std::path::Path) -> AsyncExecutor {
        SimulatedEngine::builder()
            .vocab_size(VOCAB)
            .max_batch_size(256)
            .max_input_len(256)
            .max_seq_len(1024)
            .max_num_tokens(8192)
            .clock(ClockMode::Virtual)
            .build()
            .write_to(dir)
            .unwrap();
        let config = ExecutorConfig::builder()
            .stream_buffer(4 * OUTPUT as usize)
            .guided_decoding_from_tokenizer(vocab)
            .build()
            .unwrap();
        AsyncExecutor::load(dir, config).await.unwrap()
    }

    /// Completion tokens and wall seconds for `streams` concurrent streaming requests.
    async fn throughput(executor: &AsyncExecutor, streams: usize, guided: bool) -> (u64, f64) {
        let start = Instant::now();
        let mut finals: FuturesUnordered<_> = (0..streams)
            .map(|i| {
                let prompt: Vec<u32> = (0..32u32).map(|t| 1 + (t * 31 + i as u32 * 7) % 30_000).collect();
                let mut request = GenerationRequest::new(prompt, OUTPUT)
                    .with_streaming(true)
                    .with_sampling(SamplingParams::default().seed(i as u64));
                if guided {
                    request = request.with_guided_decoding(GuidedDecodingParams::json_schema(schema(0)));
                }
                executor.enqueue(request).unwrap().collect_final()
            })
            .collect();
        let mut tokens = 0u64;
        while let Some(done) = finals.next().await {
            tokens += u64::from(done.unwrap().completion_tokens);
        }
        (tokens, start.elapsed().as_secs_f64())
    }

    /// Wall time from enqueue to the first token.
    async fn first_token(executor: &AsyncExecutor, guide: Option<GuidedDecodingParams>) -> Duration {
        let mut request = GenerationRequest::new(vec![5, 6, 7], 16).with_streaming(true);
        if let Some(guide) = guide {
            request = request.with_guided_decoding(guide);
        }
        let start = Instant::now();
        let mut stream = executor.enqueue(request).unwrap();
        let mut first = None;
        while let Some(event) = stream.next().await {
            if let Ok(StreamEvent::Chunk(_)) = event {
                first.get_or_insert_with(|| start.elapsed());
            }
        }
        first.unwrap_or_else(|| start.elapsed())
    }

    pub fn main() {
        println!("build profile: {}", env!("TRTLLM_BUILD_PROFILE"));
        let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let vocab = Synthetic::new(VOCAB);
        let dir = tempfile::tempdir().unwrap();
        let built = Instant::now();
        let executor = runtime.block_on(executor(&vocab, dir.path()));
        println!(
            "Guided decoding in the simulator: {VOCAB}-token vocabulary, virtual clock, streaming, up to {OUTPUT} tokens"
        );
        println!("  executor load with the guided decoding config: {:.0} ms", built.elapsed().as_secs_f64() * 1e3);
        // Warm-up: the first request pays one-off costs.
        runtime.block_on(throughput(&executor, 4, true));
        for streams in [1usize, 64, 256] {
            let (plain_tokens, plain_s) = runtime.block_on(throughput(&executor, streams, false));
            let (guided_tokens, guided_s) = runtime.block_on(throughput(&executor, streams, true));
            let plain = plain_tokens as f64 / plain_s;
            let guided = guided_tokens as f64 / guided_s;
            println!(
                "  {streams:>3} streams: unguided {plain:>9.0} tokens/s ({plain_tokens} tokens), guided JSON schema \
                 {guided:>8.0} tokens/s ({guided_tokens} tokens): {:.1} us per guided token",
                1e6 / guided
            );
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let unguided = runtime.block_on(first_token(&executor, None));
        let fresh = runtime.block_on(first_token(&executor, Some(GuidedDecodingParams::json_schema(schema(7)))));
        let again = runtime.block_on(first_token(&executor, Some(GuidedDecodingParams::json_schema(schema(7)))));
        println!(
            "  enqueue to first token (wall): unguided {:.2} ms, first request of a new schema {:.2} ms, \
             the same schema again {:.2} ms (a copy of the cached grammar)",
            ms(unguided),
            ms(fresh),
            ms(again)
        );
        runtime.block_on(executor.shutdown(trtllm::ShutdownMode::Cancel)).unwrap();
    }
}

fn main() {
    #[cfg(not(trtllm_real))]
    bench::main();
}
