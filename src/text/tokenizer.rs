//! A Hugging Face tokenizer plus the metadata around it (special tokens, eos ids, chat template, files).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::chat_template::ChatTemplate;
use super::error::{Result, TextError};
use super::hf_config::{self, SpecialTokens};

/// A tokenizer loaded from a Hugging Face model directory.
///
/// Cloning is cheap: the vocabulary is shared. The executor's vocabulary may be padded beyond
/// [`vocab_size`](Self::vocab_size); ids the tokenizer does not know decode to nothing, as in
/// Hugging Face's `decode`.
///
/// ```rust
/// # use std::collections::HashMap;
/// # use tokenizers::models::bpe::{BPE, Vocab};
/// # use tokenizers::pre_tokenizers::byte_level::ByteLevel;
/// # let vocab: Vocab = ByteLevel::alphabet().into_iter().enumerate()
/// #     .map(|(id, c)| (c.to_string(), id as u32)).collect();
/// # let model = BPE::builder().vocab_and_merges(vocab, vec![]).build().unwrap();
/// # let mut hf = tokenizers::Tokenizer::new(model);
/// # hf.with_pre_tokenizer(Some(ByteLevel::default().add_prefix_space(false)));
/// # hf.with_decoder(Some(ByteLevel::default()));
/// use trtllm::text::Tokenizer;
///
/// // Usually `Tokenizer::from_dir("path/to/model")`; here a tiny byte-level tokenizer.
/// let tokenizer = Tokenizer::from_tokenizer(hf);
/// let ids = tokenizer.encode("héllo", false)?;
/// assert_eq!(ids.len(), 6); // one token per byte: "é" takes two
/// assert_eq!(tokenizer.decode(&ids, true)?, "héllo");
/// # Ok::<(), trtllm::text::TextError>(())
/// ```
#[derive(Clone)]
pub struct Tokenizer {
    inner: Arc<tokenizers::Tokenizer>,
    special: SpecialTokens,
    add_bos_token: Option<bool>,
    eos_token_ids: Vec<u32>,
    chat_template: Option<ChatTemplate>,
    chat_template_error: Option<Arc<TextError>>,
    files: Vec<PathBuf>,
}

impl Tokenizer {
    /// Loads `tokenizer.json` (required) from `dir`, plus `tokenizer_config.json`,
    /// `special_tokens_map.json`, `generation_config.json` and `chat_template.jinja`/`.json` when present.
    ///
    /// A chat template that does not compile does not fail loading (plain completions still
    /// work); it is reported by [`chat_template_error`](Self::chat_template_error) instead.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        let json_path = dir.join("tokenizer.json");
        if !json_path.is_file() {
            return Err(TextError::MissingTokenizerJson { dir: dir.to_path_buf() });
        }
        let inner = tokenizers::Tokenizer::from_file(&json_path)
            .map_err(|e| TextError::TokenizerLoad { path: json_path.clone(), message: e.to_string() })?;
        let config = hf_config::read_dir_config(dir)?;

        let mut tokenizer = Self::from_tokenizer(inner);
        tokenizer.special = config.special;
        tokenizer.add_bos_token = config.add_bos_token;
        tokenizer.files = config.files;
        // The tokenizer's own eos token first, then generation_config's (which often lists more,
        // e.g. an end-of-turn token), without repeats.
        let config_eos = tokenizer.special.eos.as_deref().and_then(|eos| tokenizer.inner.token_to_id(eos));
        let mut eos_ids = Vec::new();
        for id in config_eos.into_iter().chain(config.generation_eos_ids) {
            if !eos_ids.contains(&id) {
                eos_ids.push(id);
            }
        }
        tokenizer.eos_token_ids = eos_ids;
        if let Some(source) = config.chat_template {
            match ChatTemplate::new(source, None, None) {
                Ok(template) => {
                    // Like Hugging Face, every special token the configuration names is a variable.
                    let template = tokenizer
                        .special
                        .named()
                        .fold(template, |template, (name, token)| template.with_special_token(name, token))
                        .with_additional_special_tokens(tokenizer.special.additional.iter().cloned());
                    tokenizer.chat_template = Some(template);
                }
                Err(err) => {
                    tracing::warn!(dir = %dir.display(), error = %err, "ignoring chat template");
                    tokenizer.chat_template_error = Some(Arc::new(err));
                }
            }
        }
        Ok(tokenizer)
    }

    /// Wraps an already built `tokenizers::Tokenizer`, with no special-token metadata, no eos ids,
    /// no chat template and no files. Add those with the `with_*` methods.
    pub fn from_tokenizer(tokenizer: tokenizers::Tokenizer) -> Self {
        Self {
            inner: Arc::new(tokenizer),
            special: SpecialTokens::default(),
            add_bos_token: None,
            eos_token_ids: Vec::new(),
            chat_template: None,
            chat_template_error: None,
            files: Vec::new(),
        }
    }

    /// Replaces the eos token ids (see [`eos_token_ids`](Self::eos_token_ids)).
    pub fn with_eos_token_ids(mut self, ids: impl Into<Vec<u32>>) -> Self {
        self.eos_token_ids = ids.into();
        self
    }

    /// Replaces the chat template.
    pub fn with_chat_template(mut self, template: ChatTemplate) -> Self {
        self.chat_template = Some(template);
        self.chat_template_error = None;
        self
    }

    /// Encodes `text` into token ids.
    ///
    /// With `add_special_tokens`, the tokenizer's post-processor adds its special tokens; if
    /// `tokenizer_config.json` says `"add_bos_token": true` and the post-processor did not add the
    /// bos token, it is prepended. Render chat templates and encode the result with
    /// `add_special_tokens = false`: templates write their own bos token.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        let encoding =
            self.inner.encode_fast(text, add_special_tokens).map_err(|e| TextError::Encode(e.to_string()))?;
        let mut ids = encoding.get_ids().to_vec();
        if add_special_tokens
            && self.add_bos_token == Some(true)
            && let Some(bos) = self.bos_token_id()
            && ids.first() != Some(&bos)
        {
            ids.insert(0, bos);
        }
        Ok(ids)
    }

    /// Decodes `ids` into text in one go; `skip_special_tokens` drops special tokens such as eos.
    ///
    /// For streamed output use [`incremental_decoder`](Self::incremental_decoder) instead.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.inner.decode(ids, skip_special_tokens).map_err(|e| TextError::Decode(e.to_string()))
    }

    /// Number of tokens in the vocabulary, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The id of `token`, if the vocabulary has it.
    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The token string of `id`, if the vocabulary has it.
    pub fn id_to_token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// Ids that end generation: the configured `eos_token` followed by generation_config's
    /// `eos_token_id` entries, without repeats. Empty when no configuration names any.
    pub fn eos_token_ids(&self) -> &[u32] {
        &self.eos_token_ids
    }

    /// The beginning-of-sequence token string, if configured.
    pub fn bos_token(&self) -> Option<&str> {
        self.special.bos.as_deref()
    }

    /// The id of the beginning-of-sequence token, if configured and in the vocabulary.
    pub fn bos_token_id(&self) -> Option<u32> {
        self.bos_token().and_then(|bos| self.inner.token_to_id(bos))
    }

    /// The end-of-sequence token string, if configured.
    pub fn eos_token(&self) -> Option<&str> {
        self.special.eos.as_deref()
    }

    /// The padding token string, if configured.
    pub fn pad_token(&self) -> Option<&str> {
        self.special.pad.as_deref()
    }

    /// The unknown-token string, if configured.
    pub fn unk_token(&self) -> Option<&str> {
        self.special.unk.as_deref()
    }

    /// `additional_special_tokens` from the configuration files (empty when not configured).
    pub fn additional_special_tokens(&self) -> &[String] {
        &self.special.additional
    }

    /// `add_bos_token` from `tokenizer_config.json`, if present.
    pub fn add_bos_token(&self) -> Option<bool> {
        self.add_bos_token
    }

    /// The default chat template, if the directory provides one that compiles.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.chat_template.as_ref()
    }

    /// Why the directory's chat template was not usable, if it had one that failed to compile.
    pub fn chat_template_error(&self) -> Option<&TextError> {
        self.chat_template_error.as_deref()
    }

    /// The tokenizer files found in the directory (tokenizer.json first), for shipping them to clients.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    /// The wrapped `tokenizers::Tokenizer`.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    pub(crate) fn shared_inner(&self) -> Arc<tokenizers::Tokenizer> {
        Arc::clone(&self.inner)
    }
}

impl fmt::Debug for Tokenizer {
    // The vocabulary is large and says little; show what identifies this tokenizer instead.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tokenizer")
            .field("vocab_size", &self.vocab_size())
            .field("bos_token", &self.special.bos)
            .field("eos_token", &self.special.eos)
            .field("eos_token_ids", &self.eos_token_ids)
            .field("add_bos_token", &self.add_bos_token)
            .field("has_chat_template", &self.chat_template.is_some())
            .field("files", &self.files)
            .finish()
    }
}
