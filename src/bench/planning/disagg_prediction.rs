//! The predicted TTFT split of a disaggregated request beside the measured one: the timing model's
//! prefill, the one transfer formula ([`kv_transfer`]), and one decode step.

use serde_json::{Value, json};

use crate::engine::kv_link::KvLink;
use crate::sim::PerfModel;
use crate::sim::transfer::{KvTransfer, kv_transfer};

/// What the simulator predicts for one request alone on an idle 1p1d pair.
///
/// ```
/// use trtllm::KvLinkPreset;
/// use trtllm::bench::DisaggPrediction;
/// use trtllm::sim::{GpuPreset, KvCacheDtype, ModelPreset, PerfModel, WeightDtype};
///
/// let shape = ModelPreset::by_id("llama-3.1-8b")?.shape;
/// let model = PerfModel::new(&shape, GpuPreset::by_id("h100-sxm")?, WeightDtype::Bf16, KvCacheDtype::Auto, 1)?;
/// let nvlink = DisaggPrediction::new(&model, 8192, 8192, 32, KvLinkPreset::NvLink4.link(), None);
/// let ib = DisaggPrediction::new(&model, 8192, 8192, 32, KvLinkPreset::Ib400.link(), None);
/// // The same prefill and decode; only the transfer differs, by about the links' bandwidth ratio.
/// assert_eq!(nvlink.prefill_ms, ib.prefill_ms);
/// assert!(ib.transfer.ms > 8.0 * nvlink.transfer.ms);
/// assert!(ib.ttft_ms() > nvlink.ttft_ms());
/// # Ok::<(), trtllm::sim::SimError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DisaggPrediction {
    /// Prompt tokens the prediction is for.
    pub prompt_tokens: usize,
    /// The prefill iterations on the context worker, ms.
    pub prefill_ms: f64,
    /// The KV-cache transfer (bytes per rank, ms).
    pub transfer: KvTransfer,
    /// One decode step at the prompt's context on the generation worker, ms.
    pub first_decode_ms: f64,
    /// The link the transfer was timed over.
    pub link: KvLink,
}

impl DisaggPrediction {
    /// Predicts a `prompt`-token request on an engine chunking prompts into `max_num_tokens`-token
    /// iterations of whole `tokens_per_block` blocks, its KV cache moved over `link` in rounds of
    /// `buffer_tokens` (the transceiver's `max_tokens_in_buffer`) when given.
    pub fn new(
        model: &PerfModel,
        prompt: usize,
        max_num_tokens: usize,
        tokens_per_block: usize,
        link: KvLink,
        buffer_tokens: Option<u64>,
    ) -> Self {
        DisaggPrediction {
            prompt_tokens: prompt,
            prefill_ms: model.ttft_ms(prompt, max_num_tokens, tokens_per_block),
            transfer: kv_transfer(prompt as u64, model.kv_bytes_per_token_per_gpu(), buffer_tokens, &link),
            first_decode_ms: model.decode_step_ms(prompt + 1),
            link,
        }
    }

    /// Prefill, transfer and first decode step together (no wait for the transfer on an idle pair).
    pub fn ttft_ms(&self) -> f64 {
        self.prefill_ms + self.transfer.ms + self.first_decode_ms
    }

    /// The `prediction.disaggregated` object: predicted parts beside the measured means of
    /// `split` (the summary's `disaggregation.ttft_split`), with measured/predicted ratios; the
    /// predictions are multiplied by `time_scale` first (the simulator's real-time scale).
    pub fn section(&self, split: &Value, time_scale: f64) -> Value {
        let measured = |part: &str| split.get(format!("mean_{part}_ms")).and_then(Value::as_f64);
        let parts = [
            ("prefill", self.prefill_ms),
            ("transfer_wait", 0.0),
            ("transfer", self.transfer.ms),
            ("first_decode", self.first_decode_ms),
        ];
        let measured_ttft: Option<f64> = parts.iter().map(|(p, _)| measured(p)).sum();
        let row = |predicted: f64, measured: Option<f64>| {
            let predicted = predicted * time_scale;
            json!({
                "predicted_ms": predicted,
                "measured_ms": measured,
                "ratio": measured.filter(|_| predicted > 0.0).map(|m| m / predicted),
            })
        };
        let mut section = serde_json::Map::new();
        for (part, predicted) in parts {
            section.insert(part.to_string(), row(predicted, measured(part)));
        }
        section.insert("ttft".into(), row(self.ttft_ms(), measured_ttft));
        section.insert("prompt_tokens".into(), json!(self.prompt_tokens));
        section.insert("transfer_bytes_per_rank".into(), json!(self.transfer.bytes_per_rank));
        section.insert(
            "link".into(),
            json!({
                "bandwidth_gb_s": self.link.bandwidth_gb_s,
                "latency_us": self.link.latency_us,
                "efficiency": self.link.efficiency,
            }),
        );
        section.insert(
            "assumes".into(),
            json!("one request alone on an idle pair: the transfer starts as soon as the context is done (no wait), and the first token after it takes one decode step"),
        );
        Value::Object(section)
    }

    /// One console line: each part predicted beside measured.
    pub fn console_line(&self, stem: &str, section: &Value) -> String {
        let fmt = |v: &Value| v.as_f64().map_or("-".to_owned(), |x| format!("{x:.2}"));
        let parts: Vec<String> = ["prefill", "transfer_wait", "transfer", "first_decode", "ttft"]
            .iter()
            .map(|p| {
                let row = &section[*p];
                format!("{p} {} / {}", fmt(&row["predicted_ms"]), fmt(&row["measured_ms"]))
            })
            .collect();
        format!("disaggregated {stem} (predicted / measured ms): {}", parts.join(", "))
    }
}
