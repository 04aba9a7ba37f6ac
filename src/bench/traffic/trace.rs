//! Trace replay: Mooncake-style JSONL request traces, their prompts synthesised block by block so
//! that equal hash ids give equal token blocks, and their arrival times.
//!
//! Each line is one request: `{"timestamp": ms, "input_length": tokens, "output_length": tokens,
//! "hash_ids": [...]}`. A hash id names one block of `block_size` prompt tokens (512 in
//! Mooncake's published traces); two requests whose `hash_ids` start alike share that prefix, so
//! replaying the trace reuses the KV cache as the traced service did. Prompts carry no text: the
//! tokens of a block are drawn from a generator seeded by its hash id, and tokens past the last
//! hashed block (or every token of a request without hash ids) are drawn per request.

use std::io::BufRead;
use std::path::Path;
use std::sync::Arc;

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};
use serde::Deserialize;

use super::prompt::SampledPrompt;

/// Block size of Mooncake's traces, tokens per hash id.
pub const MOONCAKE_BLOCK_SIZE: usize = 512;

/// Errors reading or synthesising a trace.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The file could not be read.
    #[error("reading trace {path}: {source}")]
    Io {
        /// The trace file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line is not a trace record.
    #[error("trace {path} line {line}: {message}")]
    Parse {
        /// The trace file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// The trace has no requests.
    #[error("trace {0} has no requests")]
    Empty(String),
    /// A replay option out of range.
    #[error("{0}")]
    Options(String),
}

/// One traced request.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceRecord {
    /// Arrival, milliseconds since the trace's epoch.
    pub timestamp: f64,
    /// Prompt tokens.
    pub input_length: usize,
    /// Output tokens.
    pub output_length: u32,
    /// One id per block of prompt tokens; equal ids are equal blocks (a shared prefix).
    #[serde(default)]
    pub hash_ids: Vec<u64>,
}

/// A parsed trace, in file order (sorted by timestamp when read).
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// The requests, by arrival.
    pub records: Vec<TraceRecord>,
}

/// How a trace is turned into requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceOptions {
    /// Tokens per hash id.
    pub block_size: usize,
    /// Token ids are drawn from `1..vocab_size`.
    pub vocab_size: usize,
    /// Multiplies every arrival offset: 0.5 replays twice as fast, 2 half as fast.
    pub time_scale: f64,
    /// Seed of the synthesised tokens.
    pub seed: u64,
}

/// A trace ready to replay: one prompt per request and its arrival offset.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceReplay {
    /// Prompts in arrival order (with the trace's output lengths).
    pub prompts: Arc<[SampledPrompt]>,
    /// Arrival of each prompt, seconds after the first (time-scaled), non-decreasing.
    pub offsets_s: Arc<[f64]>,
}

impl Trace {
    /// Reads a JSONL trace (blank lines skipped), sorted by timestamp (stable).
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| TraceError::Io { path: name.clone(), source })?;
        let mut records = Vec::new();
        for (index, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.map_err(|source| TraceError::Io { path: name.clone(), source })?;
            if line.trim().is_empty() {
                continue;
            }
            let parse = |message: String| TraceError::Parse { path: name.clone(), line: index + 1, message };
            let record: TraceRecord = serde_json::from_str(&line).map_err(|e| parse(e.to_string()))?;
            if !record.timestamp.is_finite() || record.timestamp < 0.0 {
                return Err(parse(format!("timestamp must be a non-negative number of ms, got {}", record.timestamp)));
            }
            if record.input_length == 0 || record.output_length == 0 {
                return Err(parse("input_length and output_length must be at least 1".into()));
            }
            records.push(record);
        }
        if records.is_empty() {
            return Err(TraceError::Empty(name));
        }
        records.sort_by(|a, b| a.timestamp.total_cmp(&b.timestamp));
        Ok(Trace { records })
    }

    /// The prompts and arrival offsets under `options`.
    ///
    /// ```rust
    /// use trtllm::bench::{Trace, TraceOptions, TraceRecord};
    ///
    /// let record = |timestamp, input_length, hash_ids: &[u64]| TraceRecord {
    ///     timestamp,
    ///     input_length,
    ///     output_length: 4,
    ///     hash_ids: hash_ids.to_vec(),
    /// };
    /// let trace = Trace { records: vec![record(1000.0, 6, &[1, 2]), record(1500.0, 5, &[1, 3])] };
    /// let options = TraceOptions { block_size: 4, vocab_size: 1000, time_scale: 2.0, seed: 0 };
    /// let replay = trace.replay(&options).unwrap();
    /// let (a, b) = (&replay.prompts[0].token_ids, &replay.prompts[1].token_ids);
    /// assert_eq!((a.len(), b.len()), (6, 5));
    /// assert_eq!(a[..4], b[..4], "hash id 1: the same block");
    /// assert_ne!(a[4..], b[4..5], "hash ids 2 and 3 differ");
    /// assert_eq!(&*replay.offsets_s, &[0.0, 1.0], "500 ms apart, replayed at half speed");
    /// ```
    pub fn replay(&self, options: &TraceOptions) -> Result<TraceReplay, TraceError> {
        if options.block_size == 0 {
            return Err(TraceError::Options("--trace-block-size must be at least 1".into()));
        }
        if !(options.time_scale.is_finite() && options.time_scale >= 0.0) {
            return Err(TraceError::Options(format!(
                "--trace-time-scale must be a non-negative number, got {}",
                options.time_scale
            )));
        }
        let vocab = options.vocab_size.max(2) as u32;
        let first = self.records.first().map_or(0.0, |r| r.timestamp);
        let mut prompts = Vec::with_capacity(self.records.len());
        let mut offsets = Vec::with_capacity(self.records.len());
        for (index, record) in self.records.iter().enumerate() {
            prompts.push(SampledPrompt {
                token_ids: synthesise(record, index as u64, options.block_size, vocab, options.seed),
                output_len: Some(record.output_length),
            });
            offsets.push((record.timestamp - first) / 1e3 * options.time_scale);
        }
        Ok(TraceReplay { prompts: prompts.into(), offsets_s: offsets.into() })
    }
}

impl TraceReplay {
    /// The arrivals a point replays: the first `plan.num_prompts`, or with a duration every one
    /// before it. Seconds after the point's start.
    pub fn arrivals_s(&self, plan: &super::load::LoadPlan) -> Vec<f64> {
        match plan.duration {
            Some(d) => self.offsets_s.iter().copied().take_while(|&t| t < d.as_secs_f64()).collect(),
            None => self.offsets_s.iter().copied().take(plan.num_prompts).collect(),
        }
    }
}

/// One request's prompt: the blocks of its hash ids, then tokens of its own, cut to its length.
fn synthesise(record: &TraceRecord, index: u64, block_size: usize, vocab: u32, seed: u64) -> Vec<u32> {
    let mut tokens = Vec::with_capacity(record.input_length);
    for &hash in &record.hash_ids {
        if tokens.len() >= record.input_length {
            break;
        }
        let mut rng = StdRng::seed_from_u64(mix(seed ^ mix(hash)));
        let take = block_size.min(record.input_length - tokens.len());
        tokens.extend((0..take).map(|_| rng.random_range(1..vocab)));
    }
    // The rest is this request's own (a different stream from any block's).
    let mut rng = StdRng::seed_from_u64(mix(!seed ^ mix(index.wrapping_add(0x5eed))));
    tokens.extend((tokens.len()..record.input_length).map(|_| rng.random_range(1..vocab)));
    tokens
}

/// SplitMix64's finaliser: nearby ids give unrelated seeds.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
