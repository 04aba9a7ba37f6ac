//! Guides compiled before enqueue: a guide the grammar engine cannot compile is refused as that
//! request's error (INVALID_ARGUMENT) and never reaches the executor, whose failure for it would
//! read as an executor error.

use crate::error::InvalidRequest;
use crate::sim::guided::{GrammarMatcherFactory, GuideType as EngineGuideType};
use crate::types::guided::{GuideType, GuidedDecodingBackend, GuidedDecodingConfig, GuidedDecodingParams};

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

    /// Compiles the guide (or takes it from the cache), naming the guide type's field on failure.
    pub(crate) fn check(&self, params: &GuidedDecodingParams) -> Result<(), InvalidRequest> {
        let guide_type = match params.guide_type {
            GuideType::Json => EngineGuideType::Json,
            GuideType::JsonSchema => EngineGuideType::JsonSchema,
            GuideType::Regex => EngineGuideType::Regex,
            GuideType::EbnfGrammar => EngineGuideType::EbnfGrammar,
            GuideType::StructuralTag => EngineGuideType::StructuralTag,
        };
        self.factory.matcher(guide_type, params.guide.as_deref()).map(|_| ()).map_err(|e| {
            let reason = e.to_string();
            InvalidRequest::Guide {
                field: params.guide_type.name(),
                reason: reason.strip_prefix("guide: ").unwrap_or(&reason).to_string(),
            }
        })
    }
}
