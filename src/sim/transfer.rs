//! The time a disaggregated KV-cache transfer takes in the simulator: the one formula the simulated
//! executor (through `transfer_bridge`), predictions and the bench use.
//!
//! A prompt's KV cache moves from the context worker's GPUs to the generation worker's, each rank its
//! own slice (tensor parallelism splits the KV heads, pipeline parallelism the layers) over its own link
//! (one NIC or NVLink port per GPU), all ranks at once:
//!
//! ```text
//! bytes_per_rank = prompt_tokens × KV bytes per token per GPU
//! rounds         = ceil(prompt_tokens / max_tokens_in_buffer)   (1 without a buffer limit)
//! time           = rounds × latency + bytes_per_rank / (bandwidth × efficiency)
//! ```
//!
//! Assumed, not measured: the link's efficiency (default [`KvLink::DEFAULT_EFFICIENCY`]) and setup latency
//! ([`KvLinkPreset::link`](crate::KvLinkPreset::link)); no overlap with the context's compute (the
//! transfer starts once the context is done, as TensorRT-LLM's transceiver sends a finished context);
//! transfers of different requests do not share a link's bandwidth.

use crate::engine::kv_link::KvLink;

/// One transfer's size and duration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KvTransfer {
    /// Bytes each rank moves.
    pub bytes_per_rank: f64,
    /// How long it takes, milliseconds.
    pub ms: f64,
}

/// The transfer of `prompt_tokens` tokens' KV cache at `kv_bytes_per_token_per_gpu` over `link`, in rounds
/// of `buffer_tokens` (the transceiver's `max_tokens_in_buffer`) when given.
///
/// ```
/// use trtllm::KvLinkPreset;
/// use trtllm::sim::transfer::kv_transfer;
/// // 1,000 tokens of 128 KiB each over 400 Gb/s InfiniBand at 80%: 131 MB in 3.3 ms, plus 50 µs.
/// let t = kv_transfer(1000, 131_072.0, None, &KvLinkPreset::Ib400.link());
/// assert_eq!(t.bytes_per_rank, 131_072_000.0);
/// assert!((t.ms - (0.05 + 131.072e6 / 40e9 * 1e3)).abs() < 1e-9);
/// ```
pub fn kv_transfer(
    prompt_tokens: u64,
    kv_bytes_per_token_per_gpu: f64,
    buffer_tokens: Option<u64>,
    link: &KvLink,
) -> KvTransfer {
    let bytes_per_rank = prompt_tokens as f64 * kv_bytes_per_token_per_gpu;
    let rounds = match buffer_tokens {
        Some(buffer) if buffer > 0 => prompt_tokens.div_ceil(buffer).max(1),
        _ => 1,
    };
    let seconds =
        rounds as f64 * link.latency_us * 1e-6 + bytes_per_rank / (link.bandwidth_gb_s * 1e9 * link.efficiency);
    KvTransfer { bytes_per_rank, ms: seconds * 1e3 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::kv_link::KvLinkPreset;

    #[test]
    fn a_faster_link_and_a_smaller_prompt_take_less_time() {
        let per_token = 64.0 * 1024.0;
        let nvlink = kv_transfer(8192, per_token, None, &KvLinkPreset::NvLink4.link());
        let ib = kv_transfer(8192, per_token, None, &KvLinkPreset::Ib400.link());
        let short = kv_transfer(1024, per_token, None, &KvLinkPreset::Ib400.link());
        assert!(nvlink.ms < ib.ms && short.ms < ib.ms);
        // Bandwidth-bound: 9× the link, almost 9× faster.
        assert!((ib.ms / nvlink.ms) > 8.0, "{} vs {}", ib.ms, nvlink.ms);
    }

    #[test]
    fn a_small_buffer_pays_the_latency_per_round() {
        let link = KvLinkPreset::Eth100.link();
        let whole = kv_transfer(1000, 1.0, None, &link);
        let rounds = kv_transfer(1000, 1.0, Some(100), &link);
        let expected = 9.0 * link.latency_us * 1e-3;
        assert!((rounds.ms - whole.ms - expected).abs() < 1e-9);
        assert_eq!(kv_transfer(0, 1.0, Some(100), &link).bytes_per_rank, 0.0);
    }

    #[test]
    fn efficiency_is_a_parameter() {
        let link = KvLinkPreset::Pcie5.link();
        let full = kv_transfer(4096, 1e5, None, &link.with_efficiency(1.0));
        let half = kv_transfer(4096, 1e5, None, &link.with_efficiency(0.5));
        let latency = link.latency_us * 1e-3;
        assert!(((half.ms - latency) / (full.ms - latency) - 2.0).abs() < 1e-9);
    }
}
