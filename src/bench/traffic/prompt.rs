//! One prompt as the workload sends it: token ids and the output length its source names.

/// One prompt, as token ids, with the output length its source expects (if any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledPrompt {
    /// The token ids to enqueue.
    pub token_ids: Vec<u32>,
    /// The output length the dataset names for it (JSONL `output_len`, or the token length of
    /// a ShareGPT conversation's reply, or a trace's `output_length`); `None` for random prompts.
    pub output_len: Option<u32>,
}
