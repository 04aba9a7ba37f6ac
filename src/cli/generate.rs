//! `trtllm generate`: a prompt or chat messages in, streamed text out, a one-line summary on stderr.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use futures::StreamExt;
use serde_json::json;
use trtllm::text::{ChatMessage, Tokenizer};
use trtllm::text::{TextEvent, TextOptions, TextStream};
use trtllm::{AsyncExecutor, ExecutorConfig, FinishReason, GenerationRequest, SamplingParams};

/// Arguments of `trtllm generate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The prompt text; `-` reads it from stdin. Omit it when giving --messages.
    prompt: Option<String>,
    /// Chat messages as a JSON array of {"role", "content"}, or @FILE to read them from a file.
    #[arg(long, conflicts_with = "prompt")]
    messages: Option<String>,
    /// Wrap a plain prompt as one user message and apply the chat template.
    #[arg(long)]
    chat: bool,
    /// A system message (with --chat or --messages).
    #[arg(long)]
    system: Option<String>,
    /// The engine directory; without it the built-in simulated engine is used.
    #[arg(long, env = "TRTLLM_ENGINE_DIR")]
    engine_dir: Option<PathBuf>,
    /// The tokenizer directory (default: the one the engine directory names).
    #[arg(long)]
    tokenizer: Option<PathBuf>,
    /// Maximum new tokens.
    #[arg(long, default_value_t = 128)]
    max_tokens: u32,
    /// Sampling temperature.
    #[arg(long)]
    temperature: Option<f32>,
    /// Top-k sampling.
    #[arg(long)]
    top_k: Option<u32>,
    /// Top-p sampling.
    #[arg(long)]
    top_p: Option<f32>,
    /// Random seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Minimum new tokens before an end token may stop generation.
    #[arg(long)]
    min_tokens: Option<u32>,
    /// Keep generating past the end tokens (up to --max-tokens).
    #[arg(long)]
    ignore_eos: bool,
    /// Stop when this text is generated (repeatable); it is not printed unless --include-stop.
    #[arg(long = "stop")]
    stops: Vec<String>,
    /// Print the matched stop string too.
    #[arg(long)]
    include_stop: bool,
    /// Show special tokens (such as <|im_start|>) in the text instead of leaving them out.
    #[arg(long)]
    no_skip_special_tokens: bool,
    /// Print one JSON object (text, token ids, counts, timings) instead of streaming text.
    #[arg(long)]
    json: bool,
    // Boxed: this variant of the command enum is already the largest.
    #[command(flatten)]
    guide: Box<super::guided::GuideArgs>,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::tempdir().context("creating a scratch directory")?;
    let engine_dir = match &args.engine_dir {
        Some(dir) => dir.clone(),
        None => {
            eprintln!("no --engine-dir: using the {}", trtllm::builtin::BUILTIN_DESCRIPTION);
            trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), scratch.path())?
        }
    };
    let engine = trtllm::EngineConfig::from_dir(&engine_dir)?;
    let tokenizer_dir =
        args.tokenizer.clone().or(engine.tokenizer_dir().map(std::path::Path::to_path_buf)).with_context(|| {
            format!(
                "{} names no tokenizer: pass --tokenizer DIR (a Hugging Face tokenizer directory)",
                engine_dir.display()
            )
        })?;
    let tokenizer = Tokenizer::from_dir(&tokenizer_dir)
        .with_context(|| format!("loading the tokenizer in {}", tokenizer_dir.display()))?;
    let prompt_ids = prompt_ids(&args, &tokenizer)?;
    let guide = args.guide.params()?;

    let request = GenerationRequest::new(prompt_ids, args.max_tokens).with_sampling(
        SamplingParams::default()
            .temperature(args.temperature)
            .top_k(args.top_k)
            .top_p(args.top_p)
            .seed(args.seed)
            .min_tokens(args.min_tokens),
    );
    let mut config = ExecutorConfig::default();
    let request = match guide {
        Some(guide) => {
            config.guided_decoding = Some(super::guided::guided_config_for(&tokenizer)?);
            request.with_guided_decoding(guide)
        }
        None => request,
    };
    let options = TextOptions::new()
        .stop_strings(args.stops.iter().cloned())
        .include_stop_string(args.include_stop)
        .ignore_eos(args.ignore_eos)
        .skip_special_tokens(!args.no_skip_special_tokens);
    let executor = AsyncExecutor::load(&engine_dir, config).await?;
    if executor.executor().backend().is_simulated() {
        // Said first, on stderr: the text itself is all a reader of stdout sees.
        eprintln!(
            "note: {} is a simulated engine: its text is random tokens of its vocabulary (within the guide, if \
             one is given), not a model's answer; its timings are what the simulator models",
            engine.model_name()
        );
    }
    let mut stream = TextStream::generate(&executor, request, &tokenizer, options)?;
    let mut out = std::io::stdout().lock();
    let mut outcome = None;
    while let Some(event) = stream.next().await {
        match event? {
            TextEvent::Chunk { text, .. } => {
                if !args.json && !text.is_empty() {
                    out.write_all(text.as_bytes())?;
                    out.flush()?;
                }
            }
            TextEvent::Final { output, texts, deltas, matched_stops } => {
                // The end of the text that no chunk carried (a held-back character or stop-string start).
                if !args.json
                    && let Some(delta) = deltas.first()
                {
                    out.write_all(delta.as_bytes())?;
                }
                outcome = Some((output, texts, matched_stops.into_iter().next().flatten()));
            }
        }
    }
    let (done, texts, matched_stop) = outcome.context("the stream ended without a final result")?;
    executor.shutdown(trtllm::ShutdownMode::Cancel).await?;

    // Every count and time comes from the executor's final output; after a stop string it covers
    // the tokens up to and including the one that completed the stop.
    let ms = |d: Option<Duration>| d.map(|d| d.as_secs_f64() * 1e3);
    let finish_reason = done.finish_reason.as_openai_str();
    if args.json {
        let doc = json!({
            "text": texts.first().cloned().unwrap_or_default(),
            "token_ids": done.token_ids(),
            "prompt_tokens": done.prompt_tokens,
            "completion_tokens": done.completion_tokens,
            "finish_reason": finish_reason,
            "matched_stop": matched_stop,
            "ttft_ms": ms(done.ttft()),
            "tpot_ms": ms(done.tpot()),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else {
        writeln!(out)?;
        let fmt = |d: Option<f64>| d.map_or("n/a".to_string(), |v| format!("{v:.1} ms"));
        eprintln!(
            "prompt tokens {}, completion tokens {}, TTFT {}, TPOT {}, finish reason {}{}",
            done.prompt_tokens,
            done.completion_tokens,
            fmt(ms(done.ttft())),
            fmt(ms(done.tpot())),
            finish_reason,
            matched_stop.map(|s| format!(" (matched {s:?})")).unwrap_or_default()
        );
    }
    let failed = done.finish_reason == FinishReason::TimedOut;
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The prompt token ids: raw text, or chat messages rendered with the tokenizer's chat template.
fn prompt_ids(args: &Args, tokenizer: &Tokenizer) -> anyhow::Result<Vec<u32>> {
    let mut messages: Option<Vec<ChatMessage>> = match &args.messages {
        Some(spec) => {
            let text = match spec.strip_prefix('@') {
                Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?,
                None => spec.clone(),
            };
            Some(serde_json::from_str(&text).context("--messages must be a JSON array of {\"role\", \"content\"}")?)
        }
        None => None,
    };
    let prompt = match args.prompt.as_deref() {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).context("reading the prompt from stdin")?;
            Some(text)
        }
        other => other.map(str::to_string),
    };
    if messages.is_none() && args.chat {
        let text = prompt.clone().context("--chat needs a prompt")?;
        messages = Some(vec![ChatMessage::user(text)]);
    }
    let Some(mut messages) = messages else {
        let text = prompt.context("give a prompt (or - for stdin) or --messages")?;
        if args.system.is_some() {
            bail!("--system needs --chat or --messages");
        }
        return Ok(tokenizer.encode(&text, true)?);
    };
    if let Some(system) = &args.system {
        messages.insert(0, ChatMessage::system(system.clone()));
    }
    let template = tokenizer.chat_template().context("the tokenizer has no chat template")?;
    let rendered = template.render(&messages, true)?;
    // The template writes its own special tokens; don't add them twice.
    Ok(tokenizer.encode(&rendered, false)?)
}
