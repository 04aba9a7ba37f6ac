//! `trtllm bench --draft-engine-dir DIR`: the workload runs through the draft-target loop
//! (`SpeculativeExecutor`) over a draft engine and the target engine.

use std::path::PathBuf;

use anyhow::{Context, bail};
use trtllm::bench::{BenchTarget, DraftTargetBench, DraftTargetSetup, EngineSimulation};
use trtllm::speculative::{DraftLength, SpeculativeExecutor};
use trtllm::{AsyncExecutor, ExecutorConfig};

/// The draft-target options of `trtllm bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct DraftTargetArgs {
    /// A draft model's engine directory: every request runs the draft-target loop in process
    /// (the draft proposes `--draft-len` tokens, the target engine, built with
    /// speculative_decoding_mode draft_tokens_external, verifies them).
    #[arg(long, value_name = "DIR")]
    pub draft_engine_dir: Option<PathBuf>,
    /// Tokens the draft proposes per round (the first round's when adaptive).
    #[arg(long, default_value_t = 4, requires = "draft_engine_dir")]
    pub draft_len: u32,
    /// Adapt the draft length within MIN,MAX: one more after a round that accepted every draft,
    /// one fewer after a round that accepted none.
    #[arg(long, value_name = "MIN,MAX", value_delimiter = ',', num_args = 2, requires = "draft_engine_dir")]
    pub adaptive_draft: Option<Vec<u32>>,
}

impl DraftTargetArgs {
    fn length(&self) -> DraftLength {
        match self.adaptive_draft.as_deref() {
            Some([min, max]) => DraftLength::adaptive(self.draft_len, *min, *max),
            _ => DraftLength::fixed(self.draft_len),
        }
    }
}

/// With `--draft-engine-dir`, wraps the loaded target executor in the draft-target loop: the new
/// target and what the summary's `engine` records about it. `None` without the option.
pub async fn wrap(
    args: &DraftTargetArgs,
    target: &AsyncExecutor,
) -> anyhow::Result<Option<(BenchTarget, DraftTargetSetup)>> {
    let Some(dir) = &args.draft_engine_dir else {
        return Ok(None);
    };
    // Two executors on virtual clocks would each keep their own time: the loop needs the wall clock.
    for engine_dir in [dir.as_path(), target.executor().engine().dir()] {
        if EngineSimulation::from_engine_dir(engine_dir)?.is_some_and(|s| s.is_virtual()) {
            bail!(
                "the draft-target loop runs two executors, which a virtual clock cannot time together: build {} with --clock real",
                engine_dir.display()
            );
        }
    }
    let draft = AsyncExecutor::load(dir, ExecutorConfig::default())
        .await
        .with_context(|| format!("loading the draft engine in {}", dir.display()))?;
    let length = args.length();
    let speculative = SpeculativeExecutor::new(draft.clone(), target.clone(), length)?;
    eprintln!("draft-target loop: draft {} ({}), {length:?}", draft.executor().engine().model_name(), dir.display());
    let described = DraftTargetSetup {
        draft_engine_dir: dir.clone(),
        draft_model_id: draft.executor().engine().model_name().to_owned(),
        draft_len: length.initial,
        adaptive: length.adaptive,
        min_draft_len: length.min,
        max_draft_len: length.max,
    };
    Ok(Some((BenchTarget::DraftTarget(DraftTargetBench::new(speculative)), described)))
}
