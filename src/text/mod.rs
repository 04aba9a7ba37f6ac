//! The text layer: tokenizer, incremental detokenization, chat templates and stop strings.
//!
//! Users work in text, the executor in token ids. The pieces below convert between the two and
//! know nothing about the executor:
//!
//! - [`Tokenizer`] loads a Hugging Face tokenizer directory (`tokenizer.json` plus its
//!   configuration files) and encodes/decodes;
//! - [`IncrementalDecoder`] turns one stream of generated ids into text deltas, holding back
//!   partial characters;
//! - [`ChatTemplate`] renders a conversation of [`ChatMessage`]s into a prompt;
//! - [`StopMatcher`] finds stop strings in the streamed text, and [`token_stop_sequences`]
//!   gives the executor the token sequences it can stop on by itself.
//!
//! Token counts always come from the executor: nothing here counts tokens from text.
//! [`TextRequest`] and [`TextStream`] put these pieces
//! on top of an executor request (eos ids, stop words, text deltas).
//!
//! ```rust
//! # use tokenizers::models::bpe::{BPE, Vocab};
//! # use tokenizers::pre_tokenizers::byte_level::ByteLevel;
//! # let vocab: Vocab = ByteLevel::alphabet().into_iter().enumerate()
//! #     .map(|(id, c)| (c.to_string(), id as u32)).collect();
//! # let model = BPE::builder().vocab_and_merges(vocab, vec![]).build().unwrap();
//! # let mut hf = tokenizers::Tokenizer::new(model);
//! # hf.with_pre_tokenizer(Some(ByteLevel::default().add_prefix_space(false)));
//! # hf.with_decoder(Some(ByteLevel::default()));
//! use trtllm::text::{ChatMessage, ChatTemplate, StopMatcher, StopStep, Tokenizer};
//!
//! // Normally `Tokenizer::from_dir(model_dir)?`; here a tiny byte-level tokenizer.
//! let tokenizer = Tokenizer::from_tokenizer(hf);
//!
//! // Prompt: render the conversation, then encode it (the template adds any special tokens).
//! let template = ChatTemplate::new(
//!     "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}\
//!      {% if add_generation_prompt %}assistant:{% endif %}",
//!     None,
//!     None,
//! )?;
//! let prompt = template.render(&[ChatMessage::user("Say hi")], true)?;
//! assert_eq!(prompt, "user: Say hi\nassistant:");
//! let _prompt_ids = tokenizer.encode(&prompt, false)?;
//!
//! // Output: pretend the executor streams these ids back, one per response.
//! let generated = tokenizer.encode(" Hi 👋\nuser: more", false)?;
//! let mut decoder = tokenizer.incremental_decoder(true);
//! let mut stop = StopMatcher::new(["\nuser:"])?;
//! let mut reply = String::new();
//! for id in generated {
//!     let delta = decoder.push(&[id])?;
//!     match stop.push(&delta) {
//!         StopStep::Continue(text) => reply.push_str(&text),
//!         step => {
//!             reply.push_str(step.text());
//!             break; // and cancel the request
//!         }
//!     }
//! }
//! assert_eq!(reply, " Hi 👋");
//! # Ok::<(), trtllm::text::TextError>(())
//! ```

mod chat_message;
mod chat_template;
mod detokenizer;
pub(crate) mod error;
mod guided_vocab;
mod hf_config;
mod py_json;
mod request;
mod stop;
#[cfg(test)]
mod stop_reference_tests;
mod stop_set;
mod stream;
mod token_ids;
mod tokenizer;

pub use chat_message::ChatMessage;
pub use chat_template::ChatTemplate;
pub use detokenizer::IncrementalDecoder;
pub use error::TextError;
pub use request::{TextOptions, TextPlan, TextRequest};
pub use stop::{StopMatcher, StopMatcherBuilder, StopStep, TokenStopSequences, token_stop_sequences};
pub use stream::{TextEvent, TextStream};
pub use token_ids::{token_ids_from_i32, token_ids_to_i32};
pub use tokenizer::Tokenizer;
