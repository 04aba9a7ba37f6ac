//! Guided decoding on the command line: the `--json-schema` / `--regex` / `--grammar` flags of
//! `generate` and `bench`, and turning it on for `serve`.

use std::path::PathBuf;

use anyhow::Context;
use trtllm::guided::{GuidedDecodingConfig, GuidedDecodingParams, GuidedVocabulary};
use trtllm::text::Tokenizer;

/// Flags that constrain the output (at most one).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GuideArgs {
    /// Constrain the output to JSON validating against the JSON Schema in FILE.
    #[arg(long, value_name = "FILE", group = "guide")]
    pub json_schema: Option<PathBuf>,
    /// Constrain the output to text fully matching the regular expression R.
    #[arg(long, value_name = "R", group = "guide")]
    pub regex: Option<String>,
    /// Constrain the output to the EBNF grammar (GBNF, `root ::= ...`) in FILE.
    #[arg(long, value_name = "FILE", group = "guide")]
    pub grammar: Option<PathBuf>,
}

impl GuideArgs {
    /// The guide the flags ask for, read and checked; `None` without any.
    pub fn params(&self) -> anyhow::Result<Option<GuidedDecodingParams>> {
        let read =
            |path: &PathBuf| std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()));
        let (flag, params) = match (&self.json_schema, &self.regex, &self.grammar) {
            (Some(path), _, _) => ("--json-schema", GuidedDecodingParams::json_schema(read(path)?)),
            (_, Some(regex), _) => ("--regex", GuidedDecodingParams::regex(regex.clone())),
            (_, _, Some(path)) => ("--grammar", GuidedDecodingParams::ebnf_grammar(read(path)?)),
            _ => return Ok(None),
        };
        params.validate().context(flag)?;
        Ok(Some(params))
    }
}

/// The guided decoding config built from `tokenizer`, or `None` (with the reason logged) when it is
/// turned off or the tokenizer names no end-of-sequence token.
pub fn serve_guided_decoding(tokenizer: &Tokenizer, disabled: bool) -> Option<GuidedDecodingConfig> {
    if disabled {
        tracing::info!("guided decoding off (--no-guided-decoding)");
        return None;
    }
    if tokenizer.stop_token_ids().is_empty() {
        tracing::warn!("guided decoding off: the tokenizer names no end-of-sequence token");
        return None;
    }
    Some(GuidedDecodingConfig::from_vocabulary(tokenizer))
}

/// The guided decoding config a one-shot command needs for `guide`, or an error saying why it cannot have it.
pub fn guided_config_for(tokenizer: &Tokenizer) -> anyhow::Result<GuidedDecodingConfig> {
    serve_guided_decoding(tokenizer, false)
        .context("guided decoding needs a tokenizer with an end-of-sequence token (eos_token)")
}
