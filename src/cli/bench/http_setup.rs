//! Setting up the OpenAI-compatible HTTP target: model id, tokenizer, and the `engine` object.

use std::path::PathBuf;

use anyhow::Context;
use trtllm::bench::{BenchTarget, EngineSection, HttpOptions, OpenAiApi, OpenAiTarget};
use trtllm::text::Tokenizer;

use super::args::RunArgs;
use super::target_info::{Setup, TokenizerSource};

/// The model id our built-in engine serves under; its tokenizer ships with the binary.
const BUILTIN_MODEL_ID: &str = "trtllm-builtin-sim";

/// Connects to an OpenAI-compatible endpoint at `url` (`http://HOST:PORT/v1`).
pub async fn http(args: &RunArgs, url: &str, scratch: tempfile::TempDir) -> anyhow::Result<Setup> {
    let api = if args.completions { OpenAiApi::Completions } else { OpenAiApi::Chat };
    // One pooled connection per stream the run keeps in flight (HTTP/1.1 carries one at a time).
    let streams = args.concurrency.iter().flatten().chain(&args.max_concurrency).copied().max().unwrap_or(0);
    let options = HttpOptions { streams, http2_prior_knowledge: args.http2 };
    let target = OpenAiTarget::connect_with(url, args.model.clone(), api, args.api_key.clone(), options)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    let model = target.model().to_owned();
    // Prompts are token ids: they become text through the model's tokenizer (as vLLM's random
    // dataset does), which also counts output tokens on this side.
    let (dir, id) = match &args.tokenizer {
        Some(dir) => (dir.clone(), dir.display().to_string()),
        None if model == BUILTIN_MODEL_ID => {
            let dir =
                trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), &scratch.path().join("builtin"))?;
            (dir.join("tokenizer"), format!("{model} (built-in)"))
        }
        None => anyhow::bail!(
            "the HTTP target serves {model:?}: pass --tokenizer DIR (its tokenizer turns prompts into text and \
             counts output tokens)"
        ),
    };
    let tokenizer = Tokenizer::from_dir(&dir).with_context(|| format!("loading the tokenizer in {}", dir.display()))?;
    let vocab_size = tokenizer.vocab_size();
    let target = target.with_tokenizer(tokenizer);
    eprintln!("target {url}: model {model}, {} API", api.path());
    let engine = EngineSection {
        target: Some(url.to_owned()),
        api: Some(api.path().to_owned()),
        model_id: model.clone(),
        vocab_size: Some(vocab_size as i64),
        ..EngineSection::new("OpenAI /v1/models")
    };
    Ok(Setup {
        target: BenchTarget::OpenAi(target),
        engine,
        model_id: model,
        vocab_size,
        max_seq_len: 0,
        max_input_len: 0,
        backend: format!("openai-compatible ({url})"),
        gpu: None,
        engine_dir: None,
        loaded_dir: None,
        simulation: None,
        tokenizer_source: Some((TokenizerSource::Dir(PathBuf::from(&dir)), id)),
        _scratch: scratch,
    })
}
