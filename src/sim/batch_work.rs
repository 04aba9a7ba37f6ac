//! [`BatchWork`]: one iteration's work as the plain sums the timing model prices, so that the C++
//! simulator can describe each iteration without allocating.

use serde::Serialize;

/// The work of one iteration, reduced to the sums the model needs. Plain numbers, so that the C++
/// simulator can describe each iteration without allocating.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct BatchWork {
    /// Rows through the linear layers: context tokens plus one per beam (and draft) of each generation request.
    pub tokens: f64,
    /// Of those, context (prefill) rows.
    pub context_tokens: f64,
    /// Rows through the output head: one per generation beam, one per prompt completed.
    pub sampled_rows: f64,
    /// Query-key pairs context attention computes.
    pub context_pairs: f64,
    /// Query-key pairs decode attention computes (one per cached token per generation row).
    pub attention_pairs: f64,
    /// Tokens of cached K/V read by decode attention.
    pub kv_tokens_read: f64,
    /// Tokens of K/V written.
    pub kv_tokens_written: f64,
    /// FLOPs the batch's LoRA adapters add.
    pub lora_flops: f64,
    /// Bytes of adapter weights read (each distinct adapter once).
    pub lora_weight_bytes: f64,
    /// Bytes of adapters copied host -> device before this iteration.
    pub lora_copy_bytes: f64,
    /// Requests whose speculative drafter (Medusa heads, Eagle layer) runs this iteration.
    pub drafter_requests: f64,
}

impl BatchWork {
    /// Adds a context chunk of `new_tokens` after `past_tokens` already cached; `samples` when it completes
    /// the prompt.
    pub fn add_context(&mut self, new_tokens: f64, past_tokens: f64, samples: bool) -> &mut Self {
        self.tokens += new_tokens;
        self.context_tokens += new_tokens;
        self.sampled_rows += if samples { 1.0 } else { 0.0 };
        // Causal attention: the i-th new token (1-based) sees the cached context and i new tokens.
        self.context_pairs += new_tokens * past_tokens + new_tokens * (new_tokens + 1.0) / 2.0;
        self.kv_tokens_written += new_tokens;
        self
    }

    /// Adds one decoding step of a request with `beam_width` beams over `past_tokens` cached tokens each.
    pub fn add_generation(&mut self, past_tokens: f64, beam_width: f64) -> &mut Self {
        self.tokens += beam_width;
        self.sampled_rows += beam_width;
        self.attention_pairs += beam_width * (past_tokens + 1.0);
        self.kv_tokens_read += beam_width * past_tokens;
        self.kv_tokens_written += beam_width;
        self
    }

    /// Adds one speculative verification step: the last token plus `draft_tokens` drafts over `past_tokens`
    /// cached tokens; the rows share one read of the cache.
    pub fn add_verification(&mut self, past_tokens: f64, draft_tokens: f64) -> &mut Self {
        let rows = 1.0 + draft_tokens;
        self.tokens += rows;
        self.sampled_rows += rows;
        self.attention_pairs += rows * past_tokens + rows * (rows + 1.0) / 2.0;
        self.kv_tokens_read += past_tokens;
        self.kv_tokens_written += rows;
        self
    }
}
