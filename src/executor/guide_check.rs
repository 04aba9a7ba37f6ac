//! Guides compiled before enqueue: a guide the grammar engine cannot compile is refused as that
//! request's error (INVALID_ARGUMENT) and never reaches the executor, whose failure for it would
//! read as an executor error.

use crate::error::InvalidRequest;
use crate::guided::{GrammarMatcherFactory, GuidedError};
use crate::types::guided::{GuidedDecodingBackend, GuidedDecodingConfig, GuidedDecodingParams};

/// Compiles guides against the executor's vocabulary with llguidance, the grammar engine the
/// simulated executor runs and TensorRT-LLM's `kLLGUIDANCE` backend uses. The factory is the one
/// the simulated executor uses too ([`GrammarMatcherFactory::shared`]), so the grammar compiled
/// here is the one that runs: its compile at admission is a cache hit.
#[derive(Debug, Clone)]
pub(crate) struct GuideCompiler {
    factory: GrammarMatcherFactory,
}

impl GuideCompiler {
    /// A compiler for an executor's guided decoding config; `None` without one, or when the
    /// executor compiles guides with another engine (xgrammar), whose grammars may differ.
    pub(crate) fn for_config(config: Option<&GuidedDecodingConfig>) -> crate::Result<Option<Self>> {
        let Some(config) = config.filter(|c| c.backend == GuidedDecodingBackend::Llguidance) else {
            return Ok(None);
        };
        let factory = GrammarMatcherFactory::shared(
            &config.encoded_vocab,
            config.tokenizer_str.as_deref(),
            &config.stop_token_ids,
        )?;
        Ok(Some(GuideCompiler { factory }))
    }

    /// Compiles the guide (or takes it from the cache). A guide the engine refuses is the request's
    /// [`InvalidRequest::Guide`], naming the guide type's field and the typed reason; any other
    /// failure of the engine is its own error.
    pub(crate) fn check(&self, params: &GuidedDecodingParams) -> crate::Result<()> {
        match self.factory.matcher(params.guide_type, params.guide.as_deref()) {
            Ok(_) => Ok(()),
            Err(GuidedError::Guide { reason, .. }) => {
                Err(InvalidRequest::Guide { field: params.guide_type.name(), reason }.into())
            }
            Err(other) => Err(other.into()),
        }
    }
}
