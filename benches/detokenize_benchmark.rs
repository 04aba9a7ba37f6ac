//! Incremental detokenization throughput, in tokens per second on one core.
//!
//! Setup trains a byte-level BPE of about 32k tokens on generated text (ASCII words, CJK,
//! emoji), then measures `IncrementalDecoder::push` one token at a time:
//! - `1_stream`: one long stream;
//! - `256_streams`: 256 decoders fed round-robin on one thread, as a server interleaves
//!   responses of concurrent requests.
//!
//! Criterion's `thrpt` line is tokens/s on one core (`elem/s`).

#[path = "../tests/common/text.rs"]
mod text_helpers;

use std::hint::black_box;
use std::time::Instant;

// The allocator the `trtllm` command uses (src/main.rs), so the figures are the command's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use trtllm::text::{IncrementalDecoder, Tokenizer};

use text_helpers::{SplitMix, mixed_corpus, mixed_line, train_byte_level_bpe};

const VOCAB_SIZE: usize = 32_000;
const TRAINING_LINES: usize = 60_000;
const SINGLE_STREAM_TOKENS: usize = 4_096;
const STREAMS: usize = 256;
const TOKENS_PER_STREAM: usize = 64;

fn trained_tokenizer() -> Tokenizer {
    let started = Instant::now();
    let corpus = mixed_corpus(TRAINING_LINES, 42);
    let trained = train_byte_level_bpe(&corpus, VOCAB_SIZE);
    // For a comparison with another implementation of the same tokenizer (the Python binding:
    // scripts/detokenize_python.py), the trained tokenizer can be written out.
    if let Some(dir) = std::env::var_os("TRTLLM_DETOKENIZE_EXPORT") {
        let path = std::path::Path::new(&dir).join("tokenizer.json");
        trained.save(&path, false).expect("writing the trained tokenizer");
        println!("wrote {}", path.display());
    }
    let tokenizer = Tokenizer::from_tokenizer(trained);
    let vocab = tokenizer.vocab_size();
    println!(
        "trained byte-level BPE: vocab {vocab} from {TRAINING_LINES} lines in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // The figures are quoted for a 32k vocabulary: a corpus too small to learn that many merges
    // would quietly measure a smaller one.
    assert!(
        (VOCAB_SIZE * 99 / 100..=VOCAB_SIZE).contains(&vocab),
        "the trained vocabulary has {vocab} tokens, not about {VOCAB_SIZE}"
    );
    tokenizer
}

/// Token ids of fresh text (a different seed from the training corpus), at least `tokens` long.
fn generated_ids(tokenizer: &Tokenizer, rng: &mut SplitMix, tokens: usize) -> Vec<u32> {
    let mut ids = Vec::with_capacity(tokens);
    while ids.len() < tokens {
        let line = mixed_line(rng, 16);
        match tokenizer.encode(&line, false) {
            Ok(line_ids) => ids.extend(line_ids),
            Err(err) => panic!("encoding benchmark text: {err}"),
        }
    }
    ids.truncate(tokens);
    ids
}

fn push_one(decoder: &mut IncrementalDecoder, id: u32) -> usize {
    match decoder.push(&[id]) {
        Ok(delta) => delta.len(),
        Err(err) => panic!("decoding: {err}"),
    }
}

fn detokenize(c: &mut Criterion) {
    println!("build profile: {}", env!("TRTLLM_BUILD_PROFILE"));
    let tokenizer = trained_tokenizer();
    let mut rng = SplitMix::new(7);
    let single = generated_ids(&tokenizer, &mut rng, SINGLE_STREAM_TOKENS);
    if let Some(dir) = std::env::var_os("TRTLLM_DETOKENIZE_EXPORT") {
        let path = std::path::Path::new(&dir).join("ids.json");
        std::fs::write(&path, serde_json::to_string(&single).unwrap()).expect("writing the ids");
    }
    let streams: Vec<Vec<u32>> = (0..STREAMS).map(|_| generated_ids(&tokenizer, &mut rng, TOKENS_PER_STREAM)).collect();

    let mut group = c.benchmark_group("detokenize_tokens_per_core");
    group.throughput(Throughput::Elements(SINGLE_STREAM_TOKENS as u64));
    group.bench_function("1_stream", |b| {
        b.iter(|| {
            let mut decoder = tokenizer.incremental_decoder(true);
            let mut bytes = 0;
            for &id in &single {
                bytes += push_one(&mut decoder, id);
            }
            bytes += decoder.finish().len();
            black_box(bytes)
        });
    });

    group.throughput(Throughput::Elements((STREAMS * TOKENS_PER_STREAM) as u64));
    group.bench_function("256_streams", |b| {
        b.iter(|| {
            let mut decoders: Vec<IncrementalDecoder> =
                (0..STREAMS).map(|_| tokenizer.incremental_decoder(true)).collect();
            let mut bytes = 0;
            for step in 0..TOKENS_PER_STREAM {
                for (decoder, ids) in decoders.iter_mut().zip(&streams) {
                    bytes += push_one(decoder, ids[step]);
                }
            }
            for decoder in &mut decoders {
                bytes += decoder.finish().len();
            }
            black_box(bytes)
        });
    });
    group.finish();
}

criterion_group!(benches, detokenize);
criterion_main!(benches);
