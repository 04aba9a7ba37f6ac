//! The doctor's checks of the engine directory against the library, the tokenizer against the
//! engine, and one request through the executor (its TTFT).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use trtllm::text::Tokenizer;
use trtllm::{AsyncExecutor, Backend, EngineConfig, ExecutorConfig, GenerationRequest, ParallelConfig, ShutdownMode};

use super::report::{Check, Report};

/// The multi-GPU settings of the smoke request.
#[derive(Debug)]
pub struct Parallel {
    pub orchestrator: bool,
    pub worker: Option<PathBuf>,
    pub device_ids: Vec<i32>,
}

/// The engine's quantization as its description resolved it (`quant_algo`, `kv_cache_quant_algo`).
fn quantization(engine: &EngineConfig) -> Value {
    let precision = engine.description().precision();
    serde_json::json!({
        "quant_algo": precision.weights.quant_algo(),
        "kv_cache_quant_algo": precision.kv_cache.quant_algo(),
    })
}

/// Reads the engine directory (the built-in engine on the simulated build when none is given) and
/// checks it against the library and the GPUs.
pub fn check_engine(report: &mut Report, dir: Option<&Path>, scratch: &Path) -> Option<EngineConfig> {
    let backend = Backend::current();
    let dir = match dir {
        Some(dir) => dir.to_path_buf(),
        None if backend.is_simulated() => {
            match trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), scratch) {
                Ok(dir) => dir,
                Err(e) => {
                    report.push(Check::fail("engine", format!("writing the built-in engine: {e}"), "check TMPDIR"));
                    return None;
                }
            }
        }
        None => {
            report.push(Check::fail(
                "engine",
                "no engine directory given",
                "pass --engine-dir DIR, the directory trtllm-build wrote (config.json and rank0.engine)",
            ));
            return None;
        }
    };
    if !dir.join("config.json").is_file() {
        report.push(Check::fail(
            "engine",
            format!("{} has no config.json", dir.display()),
            "pass the directory trtllm-build wrote with --output_dir (it holds config.json and rank<N>.engine)",
        ));
        return None;
    }
    let engine = match EngineConfig::from_dir(&dir) {
        Ok(engine) => engine,
        Err(e) => {
            report.push(Check::fail(
                "engine",
                format!("{}: {e}", dir.display()),
                "rebuild the engine with trtllm-build from the same TensorRT-LLM as the library",
            ));
            return None;
        }
    };
    let library = backend.release();
    let mut problems = Vec::new();
    let mut fixes = Vec::new();
    if !backend.same_release(engine.version()) {
        problems.push(format!("built by TensorRT-LLM {} but the library is {}", engine.version(), backend.version));
        fixes.push(format!("rebuild the engine with trtllm-build from TensorRT-LLM {library} (an engine loads only with the version that built it)"));
    }
    if !backend.is_simulated() {
        let missing: Vec<String> = (0..engine.world_size())
            .map(|rank| format!("rank{rank}.engine"))
            .filter(|file| !dir.join(file).is_file())
            .collect();
        if !missing.is_empty() {
            problems.push(format!("missing {}", missing.join(", ")));
            fixes.push("rerun trtllm-build; an engine of world size N writes rank0..rankN-1.engine".into());
        }
        let gpus = super::system::gpus().map_or(0, |g| g.len());
        if engine.world_size() > gpus {
            problems.push(format!(
                "needs {} GPUs (tp {} x pp {}), {gpus} visible",
                engine.world_size(),
                engine.tp_size(),
                engine.pp_size()
            ));
            fixes.push(
                "run on a machine (or with CUDA_VISIBLE_DEVICES) that shows as many GPUs as the engine's world size"
                    .into(),
            );
        }
    }
    let check = if problems.is_empty() {
        Check::ok("engine", format!("{} ({})", engine.model_name(), dir.display()))
    } else {
        Check::fail("engine", problems.join("; "), fixes.join("; "))
    };
    report.push(
        check
            .fact("dir", dir.display().to_string())
            .fact("built_by", engine.version().to_string())
            .fact("library", backend.version.clone())
            .fact("architecture", engine.architecture().to_string())
            .fact("dtype", engine.dtype().to_string())
            .fact("quantization", quantization(&engine))
            .fact(
                "tp_pp_cp",
                format!(
                    "{} x {} x {} (world size {})",
                    engine.tp_size(),
                    engine.pp_size(),
                    engine.cp_size(),
                    engine.world_size()
                ),
            )
            .fact(
                "limits",
                format!(
                    "max_batch_size {}, max_input_len {}, max_seq_len {}, max_num_tokens {}, max_beam_width {}",
                    engine.max_batch_size(),
                    engine.max_input_len(),
                    engine.max_seq_len(),
                    engine.max_num_tokens(),
                    engine.max_beam_width()
                ),
            )
            .fact("vocab_size", engine.vocab_size())
            .fact("tokens_per_block", engine.tokens_per_block())
            .fact("lora", engine.lora().is_some()),
    );
    problems.is_empty().then_some(engine)
}

/// Loads the tokenizer and checks that it fits the engine's vocabulary.
pub fn check_tokenizer(report: &mut Report, engine: &EngineConfig, given: Option<&Path>) -> Option<Tokenizer> {
    let Some(dir) = given.map(Path::to_path_buf).or_else(|| engine.tokenizer_dir().map(Path::to_path_buf)) else {
        report.push(Check::warn(
            "tokenizer",
            "none given and the engine directory names none; the smoke test sends token ids",
            "pass --tokenizer DIR (the model's Hugging Face directory) to check text in and out",
        ));
        return None;
    };
    let tokenizer = match Tokenizer::from_dir(&dir) {
        Ok(t) => t,
        Err(e) => {
            report.push(Check::fail(
                "tokenizer",
                format!("{}: {e}", dir.display()),
                "pass the model's Hugging Face directory (with tokenizer.json) as --tokenizer",
            ));
            return None;
        }
    };
    let fits = trtllm::Engine::check_tokenizer(engine, &tokenizer);
    let check = match &fits {
        Err(e) => Check::fail(
            "tokenizer",
            format!("{}: {e}", dir.display()),
            "pass the tokenizer of the model the engine was built from",
        ),
        Ok(()) => Check::ok("tokenizer", dir.display().to_string()),
    };
    report.push(
        check
            .fact("vocab_size", tokenizer.vocab_size())
            .fact("eos_token_ids", tokenizer.eos_token_ids().to_vec())
            .fact("chat_template", tokenizer.chat_template().is_some()),
    );
    fits.is_ok().then_some(tokenizer)
}

/// Loads the engine and runs one request: load time, TTFT, end-to-end time and the output.
pub async fn smoke_test(
    report: &mut Report,
    engine: &EngineConfig,
    tokenizer: Option<&Tokenizer>,
    parallel: &Parallel,
    tokens: u32,
) {
    let mut config = ExecutorConfig::builder();
    if parallel.orchestrator || parallel.worker.is_some() || !parallel.device_ids.is_empty() {
        config = config.parallel(ParallelConfig {
            orchestrator: parallel.orchestrator,
            worker_executable_path: parallel.worker.as_ref().map(|p| p.display().to_string()).unwrap_or_default(),
            device_ids: parallel.device_ids.clone(),
            participant_ids: Vec::new(),
        });
    }
    let config = match config.build() {
        Ok(c) => c,
        Err(e) => return report.push(Check::fail("smoke test", format!("settings: {e}"), "check --device-ids")),
    };
    let started = std::time::Instant::now();
    let executor = match AsyncExecutor::load(engine.dir(), config).await {
        Ok(executor) => executor,
        Err(e) => {
            return report.push(Check::fail(
                "smoke test",
                format!("loading the engine failed: {e}"),
                "fix the failed checks above first; otherwise rerun with RUST_LOG=debug and attach the output and \
                 this report to an issue",
            ));
        }
    };
    let load = started.elapsed();
    if !executor.executor().can_enqueue() {
        // Leader mode under `mpirun`: the leader (rank 0) sends the request; this rank computes for it
        // until the leader's executor shuts down.
        let _ = executor.shutdown(ShutdownMode::Cancel).await;
        return report.push(
            Check::ok("smoke test", "this rank is a leader-mode worker; the leader ran the request")
                .fact("load_seconds", (load.as_secs_f64() * 100.0).round() / 100.0),
        );
    }
    let prompt = match tokenizer {
        Some(t) => t.encode("The capital of France is", true).unwrap_or_else(|_| vec![1, 2, 3, 4]),
        None => vec![1, 2, 3, 4],
    };
    let tokens = tokens.clamp(1, (engine.max_seq_len().saturating_sub(prompt.len())).max(1) as u32);
    let request = GenerationRequest::new(prompt.clone(), tokens).with_end_id(None).with_perf_metrics(true);
    let result = match executor.enqueue(request) {
        Ok(stream) => tokio::time::timeout(Duration::from_secs(120), stream.collect_final()).await,
        Err(e) => Ok(Err(e)),
    };
    let _ = executor.shutdown(ShutdownMode::Cancel).await;
    let check = match result {
        Ok(Ok(done)) => {
            let text = tokenizer.and_then(|t| t.decode(done.token_ids(), true).ok());
            let ttft = done.ttft().map(|d| d.as_secs_f64() * 1e3);
            Check::ok(
                "smoke test",
                format!(
                    "{} tokens, TTFT {} ms",
                    done.completion_tokens,
                    ttft.map_or("n/a".into(), |t| format!("{t:.1}"))
                ),
            )
            .fact("load_seconds", (load.as_secs_f64() * 100.0).round() / 100.0)
            .fact("ttft_ms", ttft)
            .fact("e2e_ms", done.e2e_latency().as_secs_f64() * 1e3)
            .fact("finish_reason", format!("{:?}", done.finish_reason))
            .fact("prompt_ids", prompt)
            .fact("output_ids", done.token_ids().to_vec())
            .fact("output_text", text)
        }
        Ok(Err(e)) => Check::fail(
            "smoke test",
            format!("the request failed: {e}"),
            "rerun with RUST_LOG=debug and attach the output and this report to an issue",
        ),
        Err(_) => Check::fail(
            "smoke test",
            "no answer within 120 s",
            "check GPU utilisation with nvidia-smi; attach this report and RUST_LOG=debug output to an issue",
        ),
    };
    report.push(check);
}
