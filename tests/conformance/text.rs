//! Text with the engine's own tokenizer: streamed deltas that add up to a full decode, and stop
//! strings that end the text where they start (they are matched in text, by this crate, since the
//! executor knows only token-id stop words).

use futures::StreamExt;
use trtllm::FinishReason;
use trtllm::text::{TextEvent, TextOptions, TextStream};

use crate::harness::{skip, target};

/// Every chunk text, then the final's text, delta, matched stop and finish reason.
struct TextRun {
    shown: String,
    text: String,
    tokens: Vec<u32>,
    matched: Option<String>,
    finish: FinishReason,
}

async fn run(prompt: &str, max_tokens: u32, options: TextOptions) -> TextRun {
    let t = target();
    let ids = t.tokenizer.encode(prompt, true).expect("encode the prompt");
    let request = t.request(ids, max_tokens);
    let mut stream = TextStream::generate(&t.executor, request, &t.tokenizer, options).expect("a text request");
    let mut shown = String::new();
    let mut finals = 0;
    let mut result = None;
    while let Some(item) = stream.next().await {
        match item.expect("no error") {
            TextEvent::Chunk { text, .. } => shown.push_str(&text),
            TextEvent::Final { output, texts, deltas, matched_stops } => {
                finals += 1;
                shown.push_str(&deltas[0]);
                result = Some(TextRun {
                    shown: String::new(),
                    text: texts[0].clone(),
                    tokens: output.sequences[0].token_ids.clone(),
                    matched: matched_stops[0].clone(),
                    finish: output.finish_reason,
                });
            }
        }
    }
    assert_eq!(finals, 1, "exactly one final");
    TextRun { shown, ..result.unwrap() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_text_adds_up_to_the_full_decode() {
    let t = target();
    let out = run("The quick brown fox", 48, TextOptions::new().ignore_eos(true)).await;
    assert_eq!(out.tokens.len(), 48);
    assert_eq!(out.finish, FinishReason::Length);
    let decoded = t.tokenizer.decode(&out.tokens, true).unwrap();
    assert_eq!(out.text, decoded, "the final text is the tokenizer's decode of the tokens");
    assert_eq!(out.shown, decoded, "chunk texts followed by the final delta show exactly that text");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_string_ends_the_text_before_it() {
    let t = target();
    let prompt = "Once upon a time";
    let free = run(prompt, 64, TextOptions::new().ignore_eos(true)).await;
    // A stop string from the middle of what the model says anyway, at its first occurrence.
    let chars: Vec<(usize, char)> = free.text.char_indices().collect();
    let candidate = (chars.len() / 3..chars.len().saturating_sub(3)).find_map(|i| {
        let (start, end) = (chars[i].0, chars[i + 3].0);
        let stop = &free.text[start..end];
        (!stop.trim().is_empty() && !stop.contains('\u{FFFD}') && free.text.find(stop) == Some(start))
            .then(|| (start, stop.to_string()))
    });
    let Some((start, stop)) = candidate else {
        return skip(
            "a_stop_string_ends_the_text_before_it",
            "the model's output has no usable 3-character stop string",
        );
    };
    let _ = t;
    let out = run(prompt, 64, TextOptions::new().ignore_eos(true).stop_strings([stop.clone()])).await;
    assert_eq!(out.finish, FinishReason::StopWords);
    assert_eq!(out.matched.as_deref(), Some(stop.as_str()));
    assert_eq!(out.text, free.text[..start], "the text ends where the stop string starts");
    assert_eq!(out.shown, out.text, "no chunk showed any of the stop string");
    assert!(out.tokens.len() < free.tokens.len());

    let kept =
        run(prompt, 64, TextOptions::new().ignore_eos(true).stop_strings([stop.clone()]).include_stop_string(true))
            .await;
    assert_eq!(kept.text, free.text[..start + stop.len()], "include_stop_string keeps it");
}
