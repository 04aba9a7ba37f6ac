//! Stop strings: setup time, CPU per streamed token and memory, for a typical small set and for
//! the documented limit (1,024 stop strings of 4 KiB).
//!
//! Prints, for each set:
//! - `build`: compiling a `StopMatcher` (median of a few runs);
//! - `text request`: `TextRequest::new` with the built-in tokenizer, which also encodes the short
//!   stop strings (up to `TextRequest::TOKEN_STOP_MAX_BYTES`) to find the token-aligned ones (what
//!   a Generate call pays before it is enqueued; the server does it on the blocking pool when the
//!   set is large);
//! - `per token`: `StopMatcher::push` of one token-sized delta, mean and worst, over ordinary text
//!   and over text full of near misses (stop-string prefixes that diverge), which makes the
//!   matcher hold text back and give it up again;
//! - `RSS`: resident memory added by 8 requests' matchers held at once (as 8 concurrent requests).
//!
//! Run with `cargo bench --bench stop_strings`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use trtllm::GenerationRequest;
use trtllm::text::{StopMatcher, Tokenizer};
use trtllm::text::{TextOptions, TextRequest};

/// A small deterministic generator (SplitMix64), so every run measures the same text.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Lowercase words separated by spaces, `len` bytes.
    fn words(&mut self, len: usize) -> String {
        let mut text = String::with_capacity(len);
        while text.len() < len {
            if !text.is_empty() && self.below(6) == 0 {
                text.push(' ');
            } else {
                text.push((b'a' + self.below(26) as u8) as char);
            }
        }
        text
    }
}

fn small_set() -> Vec<String> {
    ["\n\n", "User:", "</s>", "###"].map(String::from).to_vec()
}

fn large_set(rng: &mut Rng) -> Vec<String> {
    (0..1024).map(|_| rng.words(4096)).collect()
}

/// Token-sized deltas (1 to 6 bytes) of ordinary words.
fn plain_deltas(rng: &mut Rng, count: usize) -> Vec<String> {
    (0..count)
        .map(|_| {
            let len = 1 + rng.below(6);
            rng.words(len)
        })
        .collect()
}

/// Token-sized deltas of text made of stop-string prefixes (up to 256 bytes) that then diverge.
fn near_miss_deltas(rng: &mut Rng, stops: &[String], count: usize) -> Vec<String> {
    let mut text = String::new();
    while text.len() < count * 6 {
        let stop = &stops[rng.below(stops.len())];
        let prefix = 1 + rng.below(stop.len().min(256));
        let mut cut = prefix.min(stop.len() - 1);
        while !stop.is_char_boundary(cut) {
            cut -= 1;
        }
        text.push_str(&stop[..cut]);
        text.push('\u{2603}'); // in no stop string
    }
    let mut deltas = Vec::with_capacity(count);
    let mut at = 0;
    while deltas.len() < count && at < text.len() {
        let mut end = (at + 1 + rng.below(6)).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        deltas.push(text[at..end].to_owned());
        at = end;
    }
    deltas
}

fn matcher(stops: &[String]) -> StopMatcher {
    match StopMatcher::builder().stop_strings(stops.iter().cloned()).build() {
        Ok(matcher) => matcher,
        Err(err) => panic!("building the matcher: {err}"),
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort_unstable();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Mean and worst time of one push, over `deltas` (restarting the matcher if a stop matches).
fn per_token(stops: &[String], deltas: &[String]) -> (Duration, Duration) {
    let mut m = matcher(stops);
    let mut worst = Duration::ZERO;
    let started = Instant::now();
    for delta in deltas {
        let one = Instant::now();
        let step = m.push(black_box(delta));
        worst = worst.max(one.elapsed());
        if step.is_stop() {
            m = matcher(stops);
        }
        black_box(step);
    }
    (started.elapsed() / deltas.len().max(1) as u32, worst)
}

fn report(name: &str, stops: &[String], tokenizer: &Tokenizer, rng: &mut Rng, tokens: usize, runs: usize) {
    let total: usize = stops.iter().map(String::len).sum();
    println!("{name}: {} stop strings, {total} bytes", stops.len());

    let build = median((0..runs).map(|_| timed(|| drop(black_box(matcher(stops))))).collect());
    println!("  build              {:>10.3} ms", ms(build));

    let text_request = median(
        (0..runs)
            .map(|_| {
                timed(|| {
                    let request = GenerationRequest::new(vec![1, 2, 3], 16);
                    let options = TextOptions::new().stop_strings(stops.iter().cloned());
                    match TextRequest::new(request, tokenizer, options) {
                        Ok(request) => drop(black_box(request)),
                        Err(err) => panic!("setting the request up: {err}"),
                    }
                })
            })
            .collect(),
    );
    println!("  text request       {:>10.3} ms", ms(text_request));

    for (kind, deltas) in [("plain", plain_deltas(rng, tokens)), ("near misses", near_miss_deltas(rng, stops, tokens))]
    {
        let (mean, worst) = per_token(stops, &deltas);
        println!(
            "  per token ({kind:<11}) mean {:>8.2} us, worst {:>8.2} us over {} deltas",
            mean.as_secs_f64() * 1e6,
            worst.as_secs_f64() * 1e6,
            deltas.len()
        );
    }

    let before = rss_bytes();
    let held: Vec<StopMatcher> = (0..8).map(|_| matcher(stops)).collect();
    let after = rss_bytes();
    black_box(&held);
    println!("  RSS for 8 requests {:>10.1} MB", (after.saturating_sub(before)) as f64 / 1e6);
}

fn timed(f: impl FnOnce()) -> Duration {
    let started = Instant::now();
    f();
    started.elapsed()
}

fn main() {
    if std::env::args().any(|arg| arg == "--list") {
        return; // `cargo test --benches` lists benches: nothing to list
    }
    println!("build profile: {}", env!("TRTLLM_BUILD_PROFILE"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temporary directory: {e}"));
    if let Err(err) = trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path()) {
        panic!("writing the built-in engine: {err}");
    }
    let tokenizer = Tokenizer::from_dir(dir.path().join("tokenizer")).unwrap_or_else(|e| panic!("tokenizer: {e}"));
    let mut rng = Rng(18);
    report("typical (4 short strings)", &small_set(), &tokenizer, &mut rng, 20_000, 9);
    let large = large_set(&mut rng);
    report("documented limit (1,024 x 4 KiB)", &large, &tokenizer, &mut rng, 300, 3);
}
