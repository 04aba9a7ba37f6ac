//! Prompt files: JSONL of text or token ids, and ShareGPT-style conversations, tokenized for the runner.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::workload::SampledPrompt;
use crate::text::{ChatMessage, TextError, Tokenizer};

/// Errors from reading or tokenizing a dataset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A JSONL line (1-based) that is not a valid entry.
    #[error("{path}:{line}: {message}")]
    Line {
        /// The file.
        path: PathBuf,
        /// Line number, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// A ShareGPT file that is not a JSON array of conversations.
    #[error("{path}: {message}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The file holds no usable entry.
    #[error("{0}: no prompts in the file")]
    Empty(PathBuf),
    /// Text prompts need a tokenizer.
    #[error("text prompts need a tokenizer (pass --tokenizer DIR)")]
    NoTokenizer,
    /// `--chat-template` with a tokenizer that has none.
    #[error("the tokenizer has no chat template")]
    NoChatTemplate,
    /// Rendering or tokenizing a prompt failed.
    #[error("entry {index}: {source}")]
    Text {
        /// Index of the entry in the file.
        index: usize,
        /// The underlying error.
        source: TextError,
    },
}

/// A prompt as a file gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptInput {
    /// Text, tokenized by the benchmark's tokenizer.
    Text(String),
    /// Token ids, enqueued as they are.
    TokenIds(Vec<u32>),
}

/// One entry of a dataset before tokenization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetEntry {
    /// The prompt.
    pub prompt: PromptInput,
    /// Expected output length in tokens, when the file states it.
    pub output_len: Option<u32>,
    /// The reference reply (ShareGPT's first `gpt` turn), whose token count can serve as the
    /// expected output length.
    pub reply: Option<String>,
}

/// Reads a JSONL prompt file: one object per line with `"prompt"` (text) or
/// `"prompt_token_ids"` (an array of ids), and optionally `"output_len"`. Blank lines are
/// skipped.
///
/// ```rust
/// use trtllm::bench::{load_jsonl, PromptInput};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("prompts.jsonl");
/// std::fs::write(&path, "{\"prompt\": \"Hello\", \"output_len\": 12}\n\n{\"prompt_token_ids\": [5, 6, 7]}\n").unwrap();
/// let entries = load_jsonl(&path).unwrap();
/// assert_eq!(entries[0].prompt, PromptInput::Text("Hello".into()));
/// assert_eq!(entries[0].output_len, Some(12));
/// assert_eq!(entries[1].prompt, PromptInput::TokenIds(vec![5, 6, 7]));
/// ```
pub fn load_jsonl(path: &Path) -> Result<Vec<DatasetEntry>, DatasetError> {
    let text = read(path)?;
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| DatasetError::Line { path: path.to_owned(), line: i + 1, message };
        let value: Value = serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let object = value.as_object().ok_or_else(|| bad("expected a JSON object".into()))?;
        let prompt = match (object.get("prompt"), object.get("prompt_token_ids")) {
            (Some(Value::String(text)), None) => PromptInput::Text(text.clone()),
            (None, Some(Value::Array(ids))) => PromptInput::TokenIds(
                ids.iter()
                    .map(|v| v.as_u64().and_then(|id| u32::try_from(id).ok()))
                    .collect::<Option<Vec<u32>>>()
                    .ok_or_else(|| bad("prompt_token_ids must be non-negative 32-bit integers".into()))?,
            ),
            (Some(_), Some(_)) => return Err(bad("give either \"prompt\" or \"prompt_token_ids\", not both".into())),
            (Some(_), None) => return Err(bad("\"prompt\" must be a string".into())),
            (None, Some(_)) => return Err(bad("\"prompt_token_ids\" must be an array".into())),
            (None, None) => return Err(bad("expected \"prompt\" or \"prompt_token_ids\"".into())),
        };
        let output_len = match object.get("output_len") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| n > 0)
                    .ok_or_else(|| bad("\"output_len\" must be a positive integer".into()))?,
            ),
        };
        entries.push(DatasetEntry { prompt, output_len, reply: None });
    }
    if entries.is_empty() {
        return Err(DatasetError::Empty(path.to_owned()));
    }
    Ok(entries)
}

/// Reads a ShareGPT-style JSON file: an array of objects whose `"conversations"` list
/// `{"from": "human" | "gpt", "value": text}` turns. The first human turn is the prompt and the
/// first gpt turn after it the reference reply; conversations without a human turn are skipped.
///
/// ```rust
/// use trtllm::bench::{load_sharegpt, PromptInput};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("sharegpt.json");
/// std::fs::write(&path, r#"[
///   {"id": "a", "conversations": [{"from": "human", "value": "Hi there"}, {"from": "gpt", "value": "Hello!"}]},
///   {"id": "b", "conversations": [{"from": "gpt", "value": "no question"}]}
/// ]"#).unwrap();
/// let entries = load_sharegpt(&path).unwrap();
/// assert_eq!(entries.len(), 1);
/// assert_eq!(entries[0].prompt, PromptInput::Text("Hi there".into()));
/// assert_eq!(entries[0].reply.as_deref(), Some("Hello!"));
/// ```
pub fn load_sharegpt(path: &Path) -> Result<Vec<DatasetEntry>, DatasetError> {
    let text = read(path)?;
    let format = |message: String| DatasetError::Format { path: path.to_owned(), message };
    let value: Value = serde_json::from_str(&text).map_err(|e| format(format!("not JSON: {e}")))?;
    let conversations = value.as_array().ok_or_else(|| format("expected a JSON array of conversations".into()))?;
    let mut entries = Vec::new();
    for conversation in conversations {
        let Some(turns) = conversation.get("conversations").and_then(Value::as_array) else { continue };
        let turn = |t: &Value| -> Option<(String, String)> {
            Some((t.get("from")?.as_str()?.to_ascii_lowercase(), t.get("value")?.as_str()?.to_owned()))
        };
        let turns: Vec<(String, String)> = turns.iter().filter_map(turn).collect();
        let Some(human) = turns.iter().position(|(from, _)| from == "human" || from == "user") else { continue };
        let reply = turns[human + 1..].iter().find(|(from, _)| from == "gpt" || from == "assistant");
        entries.push(DatasetEntry {
            prompt: PromptInput::Text(turns[human].1.clone()),
            output_len: None,
            reply: reply.map(|(_, text)| text.clone()),
        });
    }
    if entries.is_empty() {
        return Err(DatasetError::Empty(path.to_owned()));
    }
    Ok(entries)
}

/// Reads a ShareGPT-style JSON file as whole conversations: each one's human turns in order,
/// each with the gpt reply that follows it (the reference for its output length).
/// Conversations without a human turn are skipped.
///
/// ```rust
/// use trtllm::bench::{load_sharegpt_sessions, PromptInput};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("sharegpt.json");
/// std::fs::write(&path, r#"[{"conversations": [
///   {"from": "human", "value": "Hi"}, {"from": "gpt", "value": "Hello!"},
///   {"from": "human", "value": "How are you?"}, {"from": "gpt", "value": "Fine."}]}]"#).unwrap();
/// let sessions = load_sharegpt_sessions(&path).unwrap();
/// assert_eq!(sessions[0].len(), 2);
/// assert_eq!(sessions[0][1].prompt, PromptInput::Text("How are you?".into()));
/// assert_eq!(sessions[0][1].reply.as_deref(), Some("Fine."));
/// ```
pub fn load_sharegpt_sessions(path: &Path) -> Result<Vec<Vec<DatasetEntry>>, DatasetError> {
    let text = read(path)?;
    let format = |message: String| DatasetError::Format { path: path.to_owned(), message };
    let value: Value = serde_json::from_str(&text).map_err(|e| format(format!("not JSON: {e}")))?;
    let conversations = value.as_array().ok_or_else(|| format("expected a JSON array of conversations".into()))?;
    let mut sessions = Vec::new();
    for conversation in conversations {
        let Some(turns) = conversation.get("conversations").and_then(Value::as_array) else { continue };
        let mut entries: Vec<DatasetEntry> = Vec::new();
        for t in turns {
            let (Some(from), Some(value)) =
                (t.get("from").and_then(Value::as_str), t.get("value").and_then(Value::as_str))
            else {
                continue;
            };
            match from.to_ascii_lowercase().as_str() {
                "human" | "user" => entries.push(DatasetEntry {
                    prompt: PromptInput::Text(value.to_owned()),
                    output_len: None,
                    reply: None,
                }),
                "gpt" | "assistant" => {
                    if let Some(last) = entries.last_mut().filter(|e| e.reply.is_none()) {
                        last.reply = Some(value.to_owned());
                    }
                }
                _ => {}
            }
        }
        if !entries.is_empty() {
            sessions.push(entries);
        }
    }
    if sessions.is_empty() {
        return Err(DatasetError::Empty(path.to_owned()));
    }
    Ok(sessions)
}

/// Tokenizes conversations into session scripts: each human turn's text encoded (special
/// tokens on the first turn only: later ones continue the history) and, when
/// `reply_output_len`, its reply's token count as the turn's output length.
pub fn tokenize_sessions(
    sessions: &[Vec<DatasetEntry>],
    tokenizer: &Tokenizer,
    reply_output_len: bool,
) -> Result<Vec<Vec<super::session::UserMessage>>, DatasetError> {
    sessions
        .iter()
        .enumerate()
        .map(|(index, entries)| {
            let text_err = |source| DatasetError::Text { index, source };
            entries
                .iter()
                .enumerate()
                .map(|(turn, entry)| {
                    let (token_ids, text) = match &entry.prompt {
                        PromptInput::TokenIds(ids) => (ids.clone(), None),
                        PromptInput::Text(text) => {
                            (tokenizer.encode(text, turn == 0).map_err(text_err)?, Some(text.clone()))
                        }
                    };
                    let output_len = match (&entry.reply, reply_output_len) {
                        (Some(reply), true) => {
                            let n = tokenizer.encode(reply, false).map_err(text_err)?.len();
                            u32::try_from(n).ok().filter(|&n| n > 0)
                        }
                        _ => None,
                    };
                    Ok(super::session::UserMessage { token_ids, text, output_len: entry.output_len.or(output_len) })
                })
                .collect()
        })
        .collect()
}

/// How text entries become token ids.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokenizeOptions<'a> {
    /// The tokenizer (required for text prompts).
    pub tokenizer: Option<&'a Tokenizer>,
    /// Render text prompts as one user message with the tokenizer's chat template (and its
    /// generation prompt) before encoding; token-id prompts are used as they are.
    pub chat_template: bool,
    /// Use the token count of each entry's reference reply as its expected output length
    /// (when the entry states none itself).
    pub reply_output_len: bool,
}

/// Tokenizes dataset entries into prompts.
///
/// Without a chat template, text is encoded with the tokenizer's special tokens (as a plain
/// completion prompt); with it, the template writes them.
pub fn tokenize_entries(
    entries: &[DatasetEntry],
    options: TokenizeOptions<'_>,
) -> Result<Vec<SampledPrompt>, DatasetError> {
    let template = match (options.chat_template, options.tokenizer) {
        (false, _) => None,
        (true, None) => return Err(DatasetError::NoTokenizer),
        (true, Some(t)) => Some(t.chat_template().ok_or(DatasetError::NoChatTemplate)?),
    };
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let text_err = |source| DatasetError::Text { index, source };
            let token_ids = match &entry.prompt {
                PromptInput::TokenIds(ids) => ids.clone(),
                PromptInput::Text(text) => {
                    let tokenizer = options.tokenizer.ok_or(DatasetError::NoTokenizer)?;
                    match template {
                        Some(template) => {
                            let rendered =
                                template.render(&[ChatMessage::user(text.clone())], true).map_err(text_err)?;
                            tokenizer.encode(&rendered, false).map_err(text_err)?
                        }
                        None => tokenizer.encode(text, true).map_err(text_err)?,
                    }
                }
            };
            let reply_len = match (&entry.reply, options.reply_output_len, options.tokenizer) {
                (Some(reply), true, Some(tokenizer)) => {
                    let n = tokenizer.encode(reply, false).map_err(text_err)?.len();
                    u32::try_from(n).ok().filter(|&n| n > 0)
                }
                _ => None,
            };
            Ok(SampledPrompt { token_ids, output_len: entry.output_len.or(reply_len) })
        })
        .collect()
}

fn read(path: &Path) -> Result<String, DatasetError> {
    std::fs::read_to_string(path).map_err(|source| DatasetError::Read { path: path.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn jsonl_errors_name_the_line() {
        let (_d, path) = write("{\"prompt\": \"ok\"}\n{\"prompt\": 5}\n");
        let err = load_jsonl(&path).unwrap_err().to_string();
        assert!(err.ends_with(":2: \"prompt\" must be a string"), "{err}");
        let (_d, path) = write("{\"prompt_token_ids\": [1, -2]}\n");
        assert!(load_jsonl(&path).unwrap_err().to_string().contains("non-negative"));
        let (_d, path) = write("{\"prompt\": \"a\", \"prompt_token_ids\": [1]}\n");
        assert!(load_jsonl(&path).unwrap_err().to_string().contains("not both"));
        let (_d, path) = write("{\"prompt\": \"a\", \"output_len\": 0}\n");
        assert!(load_jsonl(&path).unwrap_err().to_string().contains("positive"));
        let (_d, path) = write("\n\n");
        assert!(matches!(load_jsonl(&path), Err(DatasetError::Empty(_))));
        assert!(matches!(load_jsonl(Path::new("/nonexistent/x.jsonl")), Err(DatasetError::Read { .. })));
    }

    #[test]
    fn sharegpt_rejects_non_arrays_and_empty_files() {
        let (_d, path) = write("{\"conversations\": []}");
        assert!(matches!(load_sharegpt(&path), Err(DatasetError::Format { .. })));
        let (_d, path) = write("[{\"conversations\": []}]");
        assert!(matches!(load_sharegpt(&path), Err(DatasetError::Empty(_))));
    }

    #[test]
    fn text_needs_a_tokenizer_but_ids_do_not() {
        let ids = DatasetEntry { prompt: PromptInput::TokenIds(vec![3, 4]), output_len: Some(7), reply: None };
        let prompts = tokenize_entries(std::slice::from_ref(&ids), TokenizeOptions::default()).unwrap();
        assert_eq!(prompts, [SampledPrompt { token_ids: vec![3, 4], output_len: Some(7) }]);
        let text = DatasetEntry { prompt: PromptInput::Text("hi".into()), output_len: None, reply: None };
        assert!(matches!(tokenize_entries(&[text], TokenizeOptions::default()), Err(DatasetError::NoTokenizer)));
    }
}
