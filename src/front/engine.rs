//! [`Engine`]: an executor and the tokenizer that matches it, loaded in one call.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::StreamExt;

use super::options::GenerateOptions;
use super::prompt::Prompt;
use crate::error::{Error, Result};
use crate::executor::{AsyncExecutor, ShutdownMode};
use crate::text::{TextEvent, TextRequest, TextStream, Tokenizer};
use crate::types::config::{ExecutorConfig, ExecutorConfigBuilder};
use crate::types::guided::{GuidedDecodingConfig, GuidedVocabulary};
use crate::types::output::FinalOutput;

/// An engine ready to generate text: the executor, the tokenizer that matches it, and guided
/// decoding set up from that same tokenizer. Cheap to clone (clones share the executor, which
/// shuts down when the last one drops; prefer [`Engine::shutdown`] in async code).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> trtllm::Result<()> {
/// use futures::StreamExt;
/// use trtllm::text::TextEvent;
/// use trtllm::{Engine, GenerateOptions};
///
/// let engine = Engine::builtin().await?; // or Engine::load("path/to/engine").await?
/// let mut stream = engine.generate("The quick brown fox", GenerateOptions::new().max_tokens(16))?;
/// let mut text = String::new();
/// while let Some(event) = stream.next().await {
///     match event? {
///         TextEvent::Chunk { text: delta, .. } => text.push_str(&delta),
///         TextEvent::Final { output, .. } => assert!(output.completion_tokens <= 16),
///     }
/// }
/// # let _ = text;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Engine {
    executor: AsyncExecutor,
    tokenizer: Tokenizer,
    /// The built-in engine's files, removed when the last clone drops.
    _files: Option<Arc<tempfile::TempDir>>,
}

/// Sets up an [`Engine`]: the engine directory, and optionally the tokenizer and executor settings.
#[derive(Debug)]
#[must_use = "an engine builder does nothing until `load` is awaited"]
pub struct EngineBuilder {
    dir: PathBuf,
    tokenizer: Option<Tokenizer>,
    config: ExecutorConfigBuilder,
    guided_decoding: bool,
    files: Option<Arc<tempfile::TempDir>>,
}

/// A whole generation collected by [`Engine::complete`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Completion {
    /// The text of the first sequence.
    pub text: String,
    /// The text of every sequence (`n` > 1).
    pub texts: Vec<String>,
    /// The stop string that ended each sequence, if one did.
    pub matched_stops: Vec<Option<String>>,
    /// The executor's final output (token ids, finish reasons, timings).
    pub output: FinalOutput,
}

impl Completion {
    /// Reads `stream` to its final event.
    pub(crate) async fn collect(mut stream: TextStream) -> Result<Completion> {
        while let Some(event) = stream.next().await {
            if let TextEvent::Final { output, texts, .. } = event? {
                return Ok(Completion {
                    text: texts.first().cloned().unwrap_or_default(),
                    texts,
                    matched_stops: stream.matched_stops(),
                    output: *output,
                });
            }
        }
        Err(Error::StreamEnded)
    }
}

impl Engine {
    /// Loads the engine in `dir` with default executor settings, its tokenizer from the engine
    /// directory (`tokenizer/`, the directory itself, or config.json's `tokenizer_dir`), and
    /// guided decoding set up from that tokenizer. Use [`Engine::builder`] to give a tokenizer or
    /// executor settings.
    pub async fn load(dir: impl AsRef<Path>) -> Result<Engine> {
        Engine::builder(dir).load().await
    }

    /// The built-in simulated engine (a small model with a shipped tokenizer), in one call: for
    /// trying the API and for tests, with no engine directory and no GPU.
    pub async fn builtin() -> Result<Engine> {
        let files = tempfile::tempdir()?;
        crate::builtin::write_engine(&crate::builtin::builtin_engine(), files.path())?;
        let mut builder = Engine::builder(files.path());
        builder.files = Some(Arc::new(files));
        builder.load().await
    }

    /// A builder for the engine in `dir`.
    pub fn builder(dir: impl AsRef<Path>) -> EngineBuilder {
        EngineBuilder {
            dir: dir.as_ref().to_path_buf(),
            tokenizer: None,
            config: ExecutorConfig::builder(),
            guided_decoding: true,
            files: None,
        }
    }

    /// Checks that a tokenizer fits an engine: no more tokens than the engine's vocabulary (a
    /// tokenizer with more is another model's). [`EngineBuilder::load`] and `trtllm doctor` both
    /// run it.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let engine_dir = trtllm::builtin::write_engine(&trtllm::builtin::builtin_engine(), dir.path())?;
    /// let engine = trtllm::EngineConfig::from_dir(&engine_dir)?;
    /// let tokenizer = trtllm::text::Tokenizer::from_dir(engine.tokenizer_dir().expect("shipped"))?;
    /// assert!(trtllm::Engine::check_tokenizer(&engine, &tokenizer).is_ok());
    /// # Ok(()) }
    /// ```
    pub fn check_tokenizer(engine: &crate::EngineConfig, tokenizer: &Tokenizer) -> Result<()> {
        if tokenizer.vocab_size() > engine.vocab_size() {
            return Err(Error::InvalidConfig(format!(
                "the tokenizer has {} tokens but the engine's vocabulary is {}: wrong tokenizer for this engine",
                tokenizer.vocab_size(),
                engine.vocab_size()
            )));
        }
        Ok(())
    }

    /// Starts generating: the prompt is encoded (a conversation rendered by the tokenizer's chat
    /// template first), enqueued, and its tokens come back as text. Dropping the stream cancels
    /// the request.
    pub fn generate(&self, prompt: impl Into<Prompt>, options: GenerateOptions) -> Result<TextStream> {
        let ids = self.encode(prompt.into())?;
        let (request, text) = options.into_parts(ids);
        let (request, plan) = TextRequest::new(request, &self.tokenizer, text)?.into_parts();
        Ok(TextStream::new(self.executor.enqueue(request)?, plan))
    }

    /// Generates and waits for the whole text.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> trtllm::Result<()> {
    /// use trtllm::{Engine, GenerateOptions};
    /// use trtllm::text::ChatMessage;
    /// let engine = Engine::builtin().await?;
    /// let done = engine.complete(vec![ChatMessage::user("Hello!")], GenerateOptions::new().max_tokens(8)).await?;
    /// assert!(done.output.completion_tokens <= 8);
    /// # Ok(()) }
    /// ```
    pub async fn complete(&self, prompt: impl Into<Prompt>, options: GenerateOptions) -> Result<Completion> {
        Completion::collect(self.generate(prompt, options)?).await
    }

    /// The prompt's token ids.
    pub fn encode(&self, prompt: Prompt) -> Result<Vec<u32>> {
        Ok(match prompt {
            Prompt::Text(text) => self.tokenizer.encode(&text, true)?,
            Prompt::Messages(messages) => {
                let template =
                    self.tokenizer.chat_template().ok_or_else(|| match self.tokenizer.chat_template_error() {
                        Some(e) => Error::InvalidConfig(format!("the tokenizer's chat template does not load: {e}")),
                        None => Error::InvalidConfig("the tokenizer has no chat template: give a text prompt".into()),
                    })?;
                self.tokenizer.encode(&template.render(&messages, true)?, false)?
            }
            Prompt::Tokens(ids) => ids,
        })
    }

    /// The executor, for token-level requests, stats, KV-cache events and cancelling by id.
    pub fn executor(&self) -> &AsyncExecutor {
        &self.executor
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Stops taking requests and shuts the executor down (see [`crate::Executor::shutdown`]).
    pub async fn shutdown(&self, mode: ShutdownMode) -> Result<()> {
        self.executor.shutdown(mode).await
    }
}

impl EngineBuilder {
    /// The tokenizer to use instead of the engine directory's.
    pub fn tokenizer(mut self, tokenizer: Tokenizer) -> Self {
        self.tokenizer = Some(tokenizer);
        self
    }

    /// Executor settings (queue size, KV-cache fraction, stats, ...). A guided decoding config set
    /// here must match the tokenizer's vocabulary.
    pub fn config(mut self, tune: impl FnOnce(ExecutorConfigBuilder) -> ExecutorConfigBuilder) -> Self {
        self.config = tune(self.config);
        self
    }

    /// Whether to set guided decoding up from the tokenizer (on by default).
    pub fn guided_decoding(mut self, on: bool) -> Self {
        self.guided_decoding = on;
        self
    }

    /// Loads the tokenizer and the executor.
    pub async fn load(self) -> Result<Engine> {
        let EngineBuilder { dir, tokenizer, config, guided_decoding, files } = self;
        let engine = crate::engine::EngineConfig::from_dir(&dir)?;
        let tokenizer = match tokenizer {
            Some(tokenizer) => tokenizer,
            None => {
                let tokenizer_dir = engine.tokenizer_dir().ok_or_else(|| Error::EngineConfig {
                    path: dir.join("config.json"),
                    message: "the engine directory holds no tokenizer (tokenizer/ or tokenizer.json): give one with \
                              Engine::builder(dir).tokenizer(..)"
                        .into(),
                })?;
                Tokenizer::from_dir(tokenizer_dir)?
            }
        };
        Engine::check_tokenizer(&engine, &tokenizer)?;
        let mut config = config.build()?;
        match &config.guided_decoding {
            Some(given) => check_guided_vocabulary(given, &tokenizer)?,
            None if guided_decoding => config.guided_decoding = Some(GuidedDecodingConfig::from_vocabulary(&tokenizer)),
            None => {}
        }
        let executor = AsyncExecutor::load(&dir, config).await?;
        Ok(Engine { executor, tokenizer, _files: files })
    }
}

/// A guided decoding config given by hand must describe the tokenizer's vocabulary: otherwise the
/// grammar engine would allow tokens by other strings than the ones the text shows.
fn check_guided_vocabulary(config: &GuidedDecodingConfig, tokenizer: &Tokenizer) -> Result<()> {
    let vocab = tokenizer.encoded_vocab();
    if config.encoded_vocab != vocab {
        let first_difference = config.encoded_vocab.iter().zip(&vocab).position(|(a, b)| a != b);
        return Err(Error::InvalidConfig(match first_difference {
            Some(id) => format!(
                "guided_decoding.encoded_vocab does not match the tokenizer: token {id} is {:?} there and {:?} in the \
                 tokenizer",
                config.encoded_vocab[id], vocab[id]
            ),
            None => format!(
                "guided_decoding.encoded_vocab has {} tokens, the tokenizer {}",
                config.encoded_vocab.len(),
                vocab.len()
            ),
        }));
    }
    Ok(())
}
