//! The one place the suite touches the library's loading API: which engine it runs on, the shared
//! executor, and small helpers. When the public API moves, adapt this file only.
//!
//! The target is chosen by environment variables, the same ones a GPU user sets:
//!
//! | variable | meaning |
//! |---|---|
//! | `TRTLLM_TEST_ENGINE_DIR` | engine directory to test (unset: a simulated engine made here) |
//! | `TRTLLM_TEST_TOKENIZER` | tokenizer directory (default: the one the engine directory names) |
//! | `TRTLLM_TEST_ORCHESTRATOR=1` | multi-GPU orchestrator mode (spawns `executorWorker` processes) |
//! | `TRTLLM_TEST_WORKER_EXECUTABLE` | path of `executorWorker` for orchestrator mode |
//! | `TRTLLM_TEST_DEVICE_IDS` | GPU ids, comma-separated (e.g. `0,1` for TP=2) |
//! | `TRTLLM_TEST_KV_CACHE_TOKENS` | KV-cache size cap in tokens (default 16384, so eviction is quick to reach) |
//!
//! Leader mode (`mpirun -n N` over this binary) works too: ranks other than the leader only compute
//! and exit when the leader's executor shuts down at the end of the run.
//!
//! Every test shares one executor: a real engine takes seconds to load and one executor already
//! claims most of the GPU's free memory. Tests therefore run beside each other's traffic and
//! assert only on their own requests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use tempfile::TempDir;
use trtllm::text::Tokenizer;
use trtllm::{AsyncExecutor, Backend, EngineConfig, Executor, ExecutorConfig, GenerationRequest, ParallelConfig};

/// Names the engine directory under test.
pub const ENGINE_DIR_ENV: &str = "TRTLLM_TEST_ENGINE_DIR";
/// Names the tokenizer directory under test.
pub const TOKENIZER_ENV: &str = "TRTLLM_TEST_TOKENIZER";
const ORCHESTRATOR_ENV: &str = "TRTLLM_TEST_ORCHESTRATOR";
const WORKER_ENV: &str = "TRTLLM_TEST_WORKER_EXECUTABLE";
const DEVICE_IDS_ENV: &str = "TRTLLM_TEST_DEVICE_IDS";
const KV_TOKENS_ENV: &str = "TRTLLM_TEST_KV_CACHE_TOKENS";
/// The KV-cache cap unless `TRTLLM_TEST_KV_CACHE_TOKENS` says otherwise.
const DEFAULT_KV_CACHE_TOKENS: u32 = 16384;
/// Beam width asked of the executor when the engine allows beams.
pub const MAX_TEST_BEAMS: u32 = 4;

/// The engine under test, its tokenizer and the executor every test shares.
pub struct Target {
    /// Where the engine came from, for messages.
    pub origin: String,
    /// The engine's config.json as the library reads it.
    pub engine: EngineConfig,
    /// The engine's tokenizer.
    pub tokenizer: Tokenizer,
    /// The shared executor.
    pub executor: AsyncExecutor,
    /// The KV-cache cap the executor was given, in tokens.
    pub kv_cache_tokens: u32,
    /// Keeps a generated engine directory alive.
    _generated: Option<TempDir>,
}

/// The target, loaded on first use. Panics with the reason (and what to set) when the variables
/// name something unusable: a misconfigured real-engine run must fail, never fall back.
pub fn target() -> &'static Target {
    TARGET.get_or_init(|| {
        let target = load().unwrap_or_else(|e| panic!("conformance target: {e}"));
        // SAFETY: `shutdown_at_exit` is a plain `extern "C" fn` that catches every panic; atexit only
        // stores the pointer and calls it once during exit.
        unsafe {
            libc::atexit(shutdown_at_exit);
        }
        target
    })
}

static TARGET: OnceLock<Target> = OnceLock::new();

/// Shuts the shared executor down when the test process exits, before the libraries' own static
/// destructors run: a real executor (and, in multi-GPU runs, its worker processes) then stops in
/// order instead of being torn down under its running threads.
extern "C" fn shutdown_at_exit() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(target) = TARGET.get() {
            let _ = target.executor.executor().shutdown(trtllm::ShutdownMode::Cancel);
        }
    });
}

/// The executor (sync view) of the target.
pub fn executor() -> &'static Executor {
    target().executor.executor()
}

fn load() -> Result<Target, String> {
    let (dir, generated, origin) = match std::env::var_os(ENGINE_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            let origin = format!("{ENGINE_DIR_ENV}={}", dir.display());
            (dir, None, origin)
        }
        None if !Backend::current().is_simulated() => {
            return Err(format!(
                "this build links {}: set {ENGINE_DIR_ENV} to an engine built by it (and {TOKENIZER_ENV} to its tokenizer)",
                Backend::current()
            ));
        }
        None => {
            let generated = default_simulated_engine()?;
            (generated.path().to_path_buf(), Some(generated), "a simulated engine made by the suite".to_string())
        }
    };
    let engine = EngineConfig::from_dir(&dir).map_err(|e| format!("{origin}: {e}"))?;
    let tokenizer_dir = match std::env::var_os(TOKENIZER_ENV).filter(|v| !v.is_empty()) {
        Some(t) => PathBuf::from(t),
        None => engine.tokenizer_dir().map(std::path::Path::to_path_buf).ok_or_else(|| {
            format!("{origin} names no tokenizer: set {TOKENIZER_ENV} to the model's Hugging Face directory")
        })?,
    };
    let tokenizer =
        Tokenizer::from_dir(&tokenizer_dir).map_err(|e| format!("{TOKENIZER_ENV}={}: {e}", tokenizer_dir.display()))?;
    // A tokenizer may have fewer ids than the engine's (padded) vocabulary, never more.
    if tokenizer.vocab_size() > engine.vocab_size() {
        return Err(format!(
            "the tokenizer in {} has {} tokens but the engine's vocabulary is {}: wrong tokenizer for this engine",
            tokenizer_dir.display(),
            tokenizer.vocab_size(),
            engine.vocab_size()
        ));
    }
    let kv_cache_tokens = match std::env::var(KV_TOKENS_ENV) {
        Ok(v) => v.parse().map_err(|e| format!("{KV_TOKENS_ENV}={v}: {e}"))?,
        Err(_) => DEFAULT_KV_CACHE_TOKENS,
    };
    let config = executor_config(&engine, &tokenizer, kv_cache_tokens)?;
    let executor = Executor::load(&dir, config).map_err(|e| format!("{origin}: loading failed: {e}"))?;
    if !executor.can_enqueue() {
        // Leader mode under `mpirun`: this rank only computes for the leader (rank 0), which runs the
        // tests. Its executor stops when the leader's does (as upstream's executorWorker waits for the
        // orchestrator's termination signal, cpp/tensorrt_llm/executor_worker/executorWorker.cpp).
        note("conformance: this rank is a leader-mode worker; serving the leader until it shuts down");
        let _ = executor.shutdown(trtllm::ShutdownMode::Cancel);
        std::process::exit(0);
    }
    let target = Target {
        origin,
        engine,
        tokenizer,
        executor: AsyncExecutor::new(executor),
        kv_cache_tokens,
        _generated: generated,
    };
    note(&format!(
        "conformance target: {} ({}, {} on {}; tp {} pp {}; beams {}; lora {}; speculative {})",
        target.origin,
        target.engine.model_name(),
        target.engine.dtype(),
        Backend::current(),
        target.engine.tp_size(),
        target.engine.pp_size(),
        target.engine.max_beam_width(),
        target.engine.lora().is_some(),
        target.speculative_mode().unwrap_or("none"),
    ));
    Ok(target)
}

/// Everything the tests use switched on: quick stats, per-request stats, KV events, guided decoding
/// over the tokenizer, beams when the engine has them, and the multi-GPU mode the variables ask for.
fn executor_config(
    engine: &EngineConfig,
    tokenizer: &Tokenizer,
    kv_cache_tokens: u32,
) -> Result<ExecutorConfig, String> {
    let mut config = ExecutorConfig::builder()
        .stats_poll_interval(Duration::from_millis(10))
        .request_stats_max_iterations(1000)
        .kv_cache_event_buffer_max_size(16384)
        .kv_cache_max_tokens(kv_cache_tokens)
        .kv_cache_enable_block_reuse(true)
        .max_beam_width((engine.max_beam_width() as u32).clamp(1, MAX_TEST_BEAMS))
        .guided_decoding_from_tokenizer(tokenizer);
    let orchestrator = std::env::var(ORCHESTRATOR_ENV).is_ok_and(|v| v == "1");
    let worker = std::env::var(WORKER_ENV).unwrap_or_default();
    let device_ids = match std::env::var(DEVICE_IDS_ENV) {
        Ok(list) => list
            .split(',')
            .map(|id| id.trim().parse::<i32>().map_err(|e| format!("{DEVICE_IDS_ENV}={list}: {e}")))
            .collect::<Result<Vec<_>, _>>()?,
        Err(_) => Vec::new(),
    };
    if orchestrator || !worker.is_empty() || !device_ids.is_empty() {
        config = config.parallel(ParallelConfig {
            orchestrator,
            worker_executable_path: worker,
            device_ids,
            participant_ids: Vec::new(),
        });
    }
    config.build().map_err(|e| format!("executor settings: {e}"))
}

/// The suite's own target in CI: the built-in engine (TinyLlama's shape, the shipped tokenizer,
/// LoRA) with 1 ms iterations and beams up to 4.
fn default_simulated_engine() -> Result<TempDir, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    write_simulated_engine(dir.path(), |engine| engine)?;
    Ok(dir)
}

/// Writes the suite's simulated engine, adjusted by `tune`, with its tokenizer in `tokenizer/`.
pub fn write_simulated_engine(
    dir: &Path,
    tune: impl FnOnce(trtllm::sim::SimulatedEngine) -> trtllm::sim::SimulatedEngine,
) -> Result<(), String> {
    let mut engine = trtllm::sim::SimulatedEngine { iteration_ms: Some(1.0), ..trtllm::builtin::builtin_engine() };
    engine.limits.max_beam_width = MAX_TEST_BEAMS as usize;
    trtllm::builtin::write_engine(&tune(engine), dir).map(|_| ()).map_err(|e| e.to_string())
}

impl Target {
    /// The engine's speculative-decoding mode, when it was built with one.
    pub fn speculative_mode(&self) -> Option<&'static str> {
        let text = std::fs::read_to_string(self.engine.dir().join("config.json")).ok()?;
        let json: serde_json::Value = serde_json::from_str(&text).ok()?;
        let mode = &json["build_config"]["speculative_decoding_mode"];
        // trtllm-build writes the mode as a flag value; names are accepted too.
        let name = match mode.as_u64() {
            Some(flag) => match flag {
                2 => "draft_tokens_external",
                4 => "medusa",
                8 => "lookahead_decoding",
                16 => "explicit_draft_tokens",
                32 => "eagle",
                _ => return None,
            },
            None => mode.as_str()?,
        };
        trtllm::speculative::SpeculativeDecodingMode::from_name(name)
            .filter(|m| *m != trtllm::speculative::SpeculativeDecodingMode::None)
            .map(|m| m.name())
    }

    /// `len` prompt ids that no other test sends (`tag` picks them), inside the tokenizer's vocabulary
    /// and clear of the special tokens at its start.
    pub fn unique_prompt(&self, tag: u64, len: usize) -> Vec<u32> {
        let low = 16u64;
        let span = (self.tokenizer.vocab_size() as u64).saturating_sub(low + 1).max(1);
        let mut state = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
        (0..len)
            .map(|_| {
                state ^= state >> 33;
                state = state.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
                state ^= state >> 29;
                (low + state % span) as u32
            })
            .collect()
    }

    /// A plain request: greedy, no end id (so it runs to `max_tokens`), perf metrics on.
    pub fn request(&self, prompt: Vec<u32>, max_tokens: u32) -> GenerationRequest {
        GenerationRequest::new(prompt, max_tokens).with_end_id(None).with_perf_metrics(true)
    }

    /// Why KV blocks cannot be reused (so no stored events), if they cannot: upstream reuses blocks only
    /// for engines built for paged context attention (docs/source/advanced/kv-cache-reuse.md:
    /// `trtllm-build --use_paged_context_fmha enable`).
    pub fn no_block_reuse(&self) -> Option<&'static str> {
        (!self.engine.paged_context_fmha()).then_some(
            "the engine was built without paged context attention (trtllm-build --use_paged_context_fmha enable)",
        )
    }

    /// Tokens per KV-cache block.
    pub fn block(&self) -> usize {
        self.engine.tokens_per_block()
    }
}

/// Prints a line that a run always shows, even with the test harness capturing output (the skip
/// reasons and the target description belong in a bug report).
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Reports a test that does not apply to this engine and why.
pub fn skip(test: &str, reason: &str) {
    note(&format!("SKIPPED {test}: {reason}"));
}
