//! Command-line flags for disaggregated serving's KV transfer: the executor's cache transceiver and,
//! on the simulated executor, the link transfers cross. Shared by `serve` and `bench`.

use std::time::Duration;

use trtllm::{CacheTransceiverBackend, CacheTransceiverConfig, KvLinkPreset};

/// The cache transceiver (`CacheTransceiverConfig`) and the simulated link; any transceiver flag turns the
/// transceiver on, so that the executor runs context-only and generation-only requests.
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Disaggregated serving (KV transfer)")]
pub struct KvTransferArgs {
    /// Turn the cache transceiver on with the release's default settings.
    #[arg(long)]
    cache_transceiver: bool,
    /// The cache transceiver's transport (both workers of a pair must use the same one).
    #[arg(long, value_enum)]
    cache_transceiver_backend: Option<CacheTransceiverBackend>,
    /// How long a context worker keeps a finished context's KV blocks for a generation request, ms.
    #[arg(long)]
    kv_transfer_timeout_ms: Option<u64>,
    /// Tokens the transceiver's transfer buffer holds (`maxTokensInBuffer`).
    #[arg(long)]
    kv_transfer_buffer_tokens: Option<u64>,
    /// Simulated executor: the link KV transfers cross (replaces simulation.json's `kv_transfer`).
    #[arg(long, value_enum)]
    kv_link: Option<KvLinkPreset>,
    /// Simulated executor: the fraction of the link's bandwidth a transfer achieves, in (0, 1]
    /// (default 0.8, an assumption; implies --kv-link nvlink4 when no link is given).
    #[arg(long)]
    kv_link_efficiency: Option<f64>,
}

impl KvTransferArgs {
    /// `base` with these flags' settings.
    pub fn apply(&self, mut base: trtllm::ExecutorConfigBuilder) -> trtllm::ExecutorConfigBuilder {
        if self.cache_transceiver
            || self.cache_transceiver_backend.is_some()
            || self.kv_transfer_timeout_ms.is_some()
            || self.kv_transfer_buffer_tokens.is_some()
        {
            base = base.cache_transceiver(CacheTransceiverConfig {
                backend: self.cache_transceiver_backend,
                max_tokens_in_buffer: self.kv_transfer_buffer_tokens,
                kv_transfer_timeout: self.kv_transfer_timeout_ms.map(Duration::from_millis),
            });
        }
        if self.kv_link.is_some() || self.kv_link_efficiency.is_some() {
            let link = self.kv_link.unwrap_or(KvLinkPreset::NvLink4).link();
            base = base.sim_kv_link(self.kv_link_efficiency.map_or(link, |e| link.with_efficiency(e)));
        }
        base
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::Parser;

    use super::KvTransferArgs;
    use trtllm::{CacheTransceiverBackend, KvLinkPreset};

    #[derive(Debug, clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: KvTransferArgs,
    }

    fn config(args: &[&str]) -> trtllm::Result<trtllm::ExecutorConfig> {
        let cli = Cli::parse_from(std::iter::once("t").chain(args.iter().copied()));
        cli.args.apply(trtllm::ExecutorConfig::builder()).build()
    }

    #[test]
    fn transceiver_and_link_flags_reach_the_config() {
        let none = config(&[]).unwrap();
        assert!(none.cache_transceiver.is_none() && none.sim_kv_link.is_none());
        let set =
            config(&["--cache-transceiver-backend", "ucx", "--kv-transfer-timeout-ms", "250", "--kv-link", "ib-400"])
                .unwrap();
        let transceiver = set.cache_transceiver.unwrap();
        assert_eq!(transceiver.backend, Some(CacheTransceiverBackend::Ucx));
        assert_eq!(transceiver.kv_transfer_timeout, Some(Duration::from_millis(250)));
        assert_eq!(set.sim_kv_link, Some(KvLinkPreset::Ib400.link()));
        let efficiency = config(&["--kv-link-efficiency", "0.5"]).unwrap();
        assert_eq!(efficiency.sim_kv_link, Some(KvLinkPreset::NvLink4.link().with_efficiency(0.5)));
        assert!(config(&["--kv-link-efficiency", "1.5"]).is_err(), "efficiency outside (0, 1] is refused");
        assert!(config(&["--cache-transceiver"]).unwrap().cache_transceiver.is_some());
    }
}
