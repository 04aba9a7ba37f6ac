//! Multi-turn sessions: conversations whose every turn resends the history so far (the previous
//! prompt, the previous answer and a new user message), so the KV cache can reuse it.

use std::sync::Arc;
use std::time::Duration;

use crate::text::{ChatMessage, Tokenizer};

/// One user message of a scripted conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserMessage {
    /// The message as token ids (without a chat template: appended to the history as they are).
    pub token_ids: Vec<u32>,
    /// The message as text, when the script has it (ShareGPT); synthetic messages are the
    /// decoded `token_ids`.
    pub text: Option<String>,
    /// Output tokens the answer to this message should have (ShareGPT: the reference reply's
    /// length); `None` uses the workload's output length.
    pub output_len: Option<u32>,
}

/// Where the user messages of sessions come from.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionScript {
    /// Random token-id messages: the first `first_len` tokens long (its first `shared_prefix`
    /// tokens shared by every session, like a system prompt), each later one `turn_len`.
    Synthetic {
        /// Vocabulary to draw token ids from.
        vocab_size: usize,
        /// Tokens of the first user message.
        first_len: usize,
        /// Tokens of each later user message.
        turn_len: usize,
        /// Tokens at the start of every session's first message that all sessions share.
        shared_prefix: usize,
        /// Draw whole-word tokens that round-trip through the tokenizer (text targets) instead
        /// of any id below `vocab_size`.
        words: Option<super::words::WordVocabulary>,
    },
    /// Conversations of a dataset (ShareGPT): each one's human turns in order.
    Conversations(Arc<[Vec<UserMessage>]>),
}

/// How a workload's sessions go: what users say, how many turns, how long they think, and how
/// the history becomes a prompt.
///
/// Without a chat template the history is token ids: turn `k + 1`'s prompt is turn `k`'s prompt,
/// then its answer's token ids, then the new message's ids, so every turn's prompt starts with
/// the whole previous one. With one (`chat_template`, and a tokenizer), the history is messages
/// (user, assistant, user, ...) rendered by the template with its generation prompt and encoded;
/// a chat-completions HTTP target is sent those messages themselves.
#[derive(Debug, Clone)]
pub struct SessionPlan {
    /// The user messages.
    pub script: SessionScript,
    /// Turns per session at most (a dataset conversation with fewer human turns ends sooner).
    pub turns: u32,
    /// How long a user waits after an answer before sending the session's next turn.
    pub think_time: Duration,
    /// Tokenizer for text (decoding answers and synthetic messages, encoding rendered
    /// histories); without it sessions are token ids only.
    pub tokenizer: Option<Arc<Tokenizer>>,
    /// Render each turn's history with the tokenizer's chat template.
    pub chat_template: bool,
}

impl PartialEq for SessionPlan {
    fn eq(&self, other: &Self) -> bool {
        let same_tokenizer = match (&self.tokenizer, &other.tokenizer) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        };
        self.script == other.script
            && self.turns == other.turns
            && self.think_time == other.think_time
            && self.chat_template == other.chat_template
            && same_tokenizer
    }
}

/// Which session and turn a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionTurn {
    /// The session's number within its point and phase (from 0).
    pub session: u64,
    /// The turn, from 1.
    pub turn: u32,
    /// Whether it is the session's last turn (no think time after it).
    pub last: bool,
}

/// One turn to send: the whole history as a prompt, its tag and the output length it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnPrompt {
    /// Prompt token ids: the session's history and the new user message.
    pub prompt: Vec<u32>,
    /// Which session and turn.
    pub tag: SessionTurn,
    /// The turn's own output length (ShareGPT), if any.
    pub output_len: Option<u32>,
}

/// What came back for a turn, as the target gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Generated token ids (in process, gRPC).
    TokenIds(Vec<u32>),
    /// Generated text (an OpenAI-compatible HTTP target).
    Text(String),
}

/// The history of one session as it goes: the messages and the last prompt.
#[derive(Debug, Clone)]
pub struct Session {
    plan: Arc<SessionPlan>,
    id: u64,
    script: Vec<UserMessage>,
    /// Turns sent so far.
    sent: u32,
    prompt: Vec<u32>,
    messages: Vec<ChatMessage>,
}

/// Why a session cannot go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// Rendering or tokenizing the history failed.
    #[error("session history: {0}")]
    Text(#[from] crate::text::TextError),
    /// `chat_template` without a tokenizer that has one.
    #[error("sessions through a chat template need a tokenizer with one")]
    NoChatTemplate,
}

impl Session {
    /// A session numbered `id` that says `script` (at most `plan.turns` of it).
    pub fn new(plan: Arc<SessionPlan>, id: u64, mut script: Vec<UserMessage>) -> Self {
        script.truncate(plan.turns.max(1) as usize);
        Session { plan, id, script, sent: 0, prompt: Vec::new(), messages: Vec::new() }
    }

    /// The session's number.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Turns this session will send.
    pub fn turns(&self) -> u32 {
        self.script.len() as u32
    }

    /// The messages so far (user and assistant, in order), as a chat target is sent them.
    pub fn messages(&self) -> &[ChatMessage] {
        &self.messages
    }

    /// The first turn's prompt and tag.
    pub fn first(&mut self) -> Result<TurnPrompt, SessionError> {
        self.sent = 0;
        self.prompt.clear();
        self.messages.clear();
        self.turn(None)
    }

    /// The next turn after `answer` to the previous one; `None` when the session is over.
    pub fn next(&mut self, answer: &Answer) -> Option<Result<TurnPrompt, SessionError>> {
        if self.sent as usize >= self.script.len() {
            return None;
        }
        Some(self.turn(Some(answer)))
    }

    fn text_of(&self, ids: &[u32]) -> Option<String> {
        self.plan.tokenizer.as_ref().and_then(|t| t.decode(ids, true).ok())
    }

    fn turn(&mut self, answer: Option<&Answer>) -> Result<TurnPrompt, SessionError> {
        let message = self.script[self.sent as usize].clone();
        let tokenizer = self.plan.tokenizer.clone();
        if let Some(answer) = answer {
            let (ids, text) = match answer {
                Answer::TokenIds(ids) => (Some(ids.clone()), self.text_of(ids)),
                Answer::Text(text) => (tokenizer.as_ref().and_then(|t| t.encode(text, false).ok()), Some(text.clone())),
            };
            self.messages.push(ChatMessage::assistant(text.unwrap_or_default()));
            if !self.plan.chat_template {
                self.prompt.extend(ids.unwrap_or_default());
            }
        }
        let user_text = message.text.clone().or_else(|| self.text_of(&message.token_ids)).unwrap_or_default();
        self.messages.push(ChatMessage::user(user_text));
        if self.plan.chat_template {
            let tokenizer = tokenizer.ok_or(SessionError::NoChatTemplate)?;
            let template = tokenizer.chat_template().ok_or(SessionError::NoChatTemplate)?;
            let rendered = template.render(&self.messages, true)?;
            self.prompt = tokenizer.encode(&rendered, false)?;
        } else {
            self.prompt.extend_from_slice(&message.token_ids);
        }
        self.sent += 1;
        let tag = SessionTurn { session: self.id, turn: self.sent, last: self.sent as usize == self.script.len() };
        Ok(TurnPrompt { prompt: self.prompt.clone(), tag, output_len: message.output_len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(turns: u32) -> Arc<SessionPlan> {
        Arc::new(SessionPlan {
            script: SessionScript::Synthetic {
                vocab_size: 100,
                first_len: 4,
                turn_len: 2,
                shared_prefix: 0,
                words: None,
            },
            turns,
            think_time: Duration::ZERO,
            tokenizer: None,
            chat_template: false,
        })
    }

    fn message(ids: &[u32]) -> UserMessage {
        UserMessage { token_ids: ids.to_vec(), text: None, output_len: None }
    }

    #[test]
    fn each_turn_is_the_previous_prompt_its_answer_and_the_new_message() {
        let mut s = Session::new(plan(3), 7, vec![message(&[1, 2, 3, 4]), message(&[5, 6]), message(&[7, 8])]);
        let t1 = s.first().unwrap();
        assert_eq!((t1.prompt.as_slice(), t1.tag.turn, t1.tag.last, t1.tag.session), (&[1, 2, 3, 4][..], 1, false, 7));
        let t2 = s.next(&Answer::TokenIds(vec![90, 91])).unwrap().unwrap();
        assert_eq!(t2.prompt, [1, 2, 3, 4, 90, 91, 5, 6]);
        assert_eq!(t2.tag.turn, 2);
        let t3 = s.next(&Answer::TokenIds(vec![92])).unwrap().unwrap();
        assert_eq!(t3.prompt, [1, 2, 3, 4, 90, 91, 5, 6, 92, 7, 8]);
        assert!(t3.tag.last);
        assert!(s.next(&Answer::TokenIds(vec![93])).is_none(), "three turns, then done");
        assert_eq!(s.messages().len(), 5, "user, assistant, user, assistant, user");
    }

    #[test]
    fn turns_cap_the_script() {
        let mut s = Session::new(plan(1), 0, vec![message(&[1]), message(&[2])]);
        assert_eq!(s.turns(), 1);
        assert!(s.first().unwrap().tag.last);
        assert!(s.next(&Answer::TokenIds(vec![3])).is_none());
    }
}
