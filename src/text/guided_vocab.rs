//! The tokenizer as a source of a guided decoding config: its vocabulary as tokenizer.json spells
//! each token, its tokenizer.json text and its EOS ids.

use crate::types::guided::GuidedVocabulary;

use super::tokenizer::Tokenizer;

impl GuidedVocabulary for Tokenizer {
    fn encoded_vocab(&self) -> Vec<String> {
        // Ids without a token (holes in a sparse vocabulary) get a name that no text produces.
        (0..self.vocab_size() as u32).map(|id| self.id_to_token(id).unwrap_or_else(|| format!("<[{id}]>"))).collect()
    }

    fn tokenizer_json(&self) -> Option<String> {
        self.inner().to_string(false).ok()
    }

    fn stop_token_ids(&self) -> Vec<u32> {
        self.eos_token_ids().to_vec()
    }
}
