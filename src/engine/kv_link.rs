//! The link a disaggregated KV-cache transfer crosses in the simulator: presets of nominal figures, and
//! the efficiency and setup latency the simulator assumes (plain data; the time it takes is
//! `trtllm::sim::transfer`'s one formula).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A named link between a context (prefill) worker and a generation (decode) worker, with its nominal
/// bandwidth per GPU and direction. A TP-t worker moves its KV over t such links at once (one NIC or
/// NVLink port per GPU, rail-optimised), so each rank sends its own slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum KvLinkPreset {
    /// NVLink 4 (H100/H200 SXM): 450 GB/s per GPU.
    #[serde(rename = "nvlink4")]
    #[cfg_attr(feature = "cli", value(name = "nvlink4"))]
    NvLink4,
    /// NVLink 3 (A100 SXM): 300 GB/s per GPU.
    #[serde(rename = "nvlink3")]
    #[cfg_attr(feature = "cli", value(name = "nvlink3"))]
    NvLink3,
    /// PCIe Gen5 x16: 64 GB/s.
    #[serde(rename = "pcie5")]
    #[cfg_attr(feature = "cli", value(name = "pcie5"))]
    Pcie5,
    /// PCIe Gen4 x16: 32 GB/s.
    #[serde(rename = "pcie4")]
    #[cfg_attr(feature = "cli", value(name = "pcie4"))]
    Pcie4,
    /// InfiniBand NDR, 400 Gb/s per port: 50 GB/s.
    #[serde(rename = "ib-400")]
    #[cfg_attr(feature = "cli", value(name = "ib-400"))]
    Ib400,
    /// InfiniBand HDR, 200 Gb/s per port: 25 GB/s.
    #[serde(rename = "ib-200")]
    #[cfg_attr(feature = "cli", value(name = "ib-200"))]
    Ib200,
    /// RoCE at 400 Gb/s: 50 GB/s.
    #[serde(rename = "roce-400")]
    #[cfg_attr(feature = "cli", value(name = "roce-400"))]
    Roce400,
    /// RoCE at 200 Gb/s: 25 GB/s.
    #[serde(rename = "roce-200")]
    #[cfg_attr(feature = "cli", value(name = "roce-200"))]
    Roce200,
    /// Ethernet at 100 Gb/s (TCP): 12.5 GB/s.
    #[serde(rename = "eth-100")]
    #[cfg_attr(feature = "cli", value(name = "eth-100"))]
    Eth100,
}

impl KvLinkPreset {
    /// Every preset, in the order `trtllm sim presets` lists them.
    pub const ALL: [KvLinkPreset; 9] = [
        KvLinkPreset::NvLink4,
        KvLinkPreset::NvLink3,
        KvLinkPreset::Pcie5,
        KvLinkPreset::Pcie4,
        KvLinkPreset::Ib400,
        KvLinkPreset::Ib200,
        KvLinkPreset::Roce400,
        KvLinkPreset::Roce200,
        KvLinkPreset::Eth100,
    ];

    /// The name simulation.json and the command line use (`nvlink4`, `ib-400`, ...).
    pub fn name(self) -> &'static str {
        match self {
            KvLinkPreset::NvLink4 => "nvlink4",
            KvLinkPreset::NvLink3 => "nvlink3",
            KvLinkPreset::Pcie5 => "pcie5",
            KvLinkPreset::Pcie4 => "pcie4",
            KvLinkPreset::Ib400 => "ib-400",
            KvLinkPreset::Ib200 => "ib-200",
            KvLinkPreset::Roce400 => "roce-400",
            KvLinkPreset::Roce200 => "roce-200",
            KvLinkPreset::Eth100 => "eth-100",
        }
    }

    /// The link with this preset's nominal bandwidth, its assumed setup latency and the default
    /// efficiency ([`KvLink::DEFAULT_EFFICIENCY`]).
    ///
    /// Setup latency (assumed, not measured): 10 µs over NVLink, 20 µs over PCIe, 50 µs over
    /// InfiniBand/RoCE (an RDMA handshake and descriptor exchange per transfer), 100 µs over TCP Ethernet.
    pub fn link(self) -> KvLink {
        let (bandwidth_gb_s, latency_us) = match self {
            KvLinkPreset::NvLink4 => (450.0, 10.0),
            KvLinkPreset::NvLink3 => (300.0, 10.0),
            KvLinkPreset::Pcie5 => (64.0, 20.0),
            KvLinkPreset::Pcie4 => (32.0, 20.0),
            KvLinkPreset::Ib400 | KvLinkPreset::Roce400 => (50.0, 50.0),
            KvLinkPreset::Ib200 | KvLinkPreset::Roce200 => (25.0, 50.0),
            KvLinkPreset::Eth100 => (12.5, 100.0),
        };
        KvLink { bandwidth_gb_s, latency_us, efficiency: KvLink::DEFAULT_EFFICIENCY }
    }
}

impl fmt::Display for KvLinkPreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for KvLinkPreset {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        KvLinkPreset::ALL.into_iter().find(|p| p.name() == text).ok_or_else(|| {
            let names: Vec<_> = KvLinkPreset::ALL.iter().map(|p| p.name()).collect();
            format!("unknown KV link preset \"{text}\" (known: {})", names.join(", "))
        })
    }
}

/// A link's figures, per GPU and direction: nominal bandwidth, the fraction of it a KV transfer
/// achieves, and a setup latency each transfer pays once.
///
/// ```
/// use trtllm::{KvLink, KvLinkPreset};
/// let ib = KvLinkPreset::Ib400.link();
/// assert_eq!(ib.bandwidth_gb_s, 50.0);
/// assert_eq!(ib.efficiency, KvLink::DEFAULT_EFFICIENCY);
/// let calibrated = ib.with_efficiency(0.65);
/// assert!(calibrated.validate().is_ok());
/// assert!(KvLink { efficiency: 1.5, ..ib }.validate().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KvLink {
    /// Nominal bandwidth in GB/s (10⁹ bytes per second) per GPU and direction.
    pub bandwidth_gb_s: f64,
    /// Setup latency each transfer pays once, microseconds.
    pub latency_us: f64,
    /// Fraction of the nominal bandwidth a KV transfer achieves, in (0, 1].
    pub efficiency: f64,
}

impl KvLink {
    /// The efficiency the presets assume: 0.8 of nominal (NCCL and UCX/NIXL benchmarks reach 0.7-0.9
    /// of the link on large messages; a KV transfer moves many per-layer blocks, so it is an assumption,
    /// not a measurement: calibrate it with [`KvLink::with_efficiency`]).
    pub const DEFAULT_EFFICIENCY: f64 = 0.8;

    /// The same link at another efficiency.
    #[must_use]
    pub fn with_efficiency(mut self, efficiency: f64) -> Self {
        self.efficiency = efficiency;
        self
    }

    /// Checks the figures: positive finite bandwidth, a latency of zero or more, efficiency in (0, 1].
    pub fn validate(&self) -> Result<(), String> {
        if !(self.bandwidth_gb_s.is_finite() && self.bandwidth_gb_s > 0.0) {
            return Err(format!("KV link bandwidth_gb_s {} must be positive", self.bandwidth_gb_s));
        }
        if !(self.latency_us.is_finite() && self.latency_us >= 0.0) {
            return Err(format!("KV link latency_us {} must be zero or more", self.latency_us));
        }
        if !(self.efficiency > 0.0 && self.efficiency <= 1.0) {
            return Err(format!("KV link efficiency {} is outside (0, 1]", self.efficiency));
        }
        Ok(())
    }
}

impl Default for KvLink {
    /// NVLink 4 ([`KvLinkPreset::NvLink4`]): both workers on one node.
    fn default() -> Self {
        KvLinkPreset::NvLink4.link()
    }
}

/// simulation.json's `kv_transfer`: the link a simulated executor's KV transfers cross, a preset with any
/// of its figures replaced.
///
/// ```
/// use trtllm::{KvLinkPreset, SimKvTransfer};
/// let json = r#"{"link": "ib-400", "efficiency": 0.7}"#;
/// let transfer: SimKvTransfer = serde_json::from_str(json)?;
/// assert_eq!(transfer.link(), KvLinkPreset::Ib400.link().with_efficiency(0.7));
/// assert_eq!(SimKvTransfer::default().link(), KvLinkPreset::NvLink4.link());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimKvTransfer {
    /// The preset (default `nvlink4`).
    pub link: KvLinkPreset,
    /// Replaces the preset's bandwidth, GB/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bandwidth_gb_s: Option<f64>,
    /// Replaces the preset's setup latency, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<f64>,
    /// Replaces the default efficiency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub efficiency: Option<f64>,
}

impl Default for SimKvTransfer {
    fn default() -> Self {
        SimKvTransfer { link: KvLinkPreset::NvLink4, bandwidth_gb_s: None, latency_us: None, efficiency: None }
    }
}

impl SimKvTransfer {
    /// The preset with the replaced figures.
    pub fn link(&self) -> KvLink {
        let preset = self.link.link();
        KvLink {
            bandwidth_gb_s: self.bandwidth_gb_s.unwrap_or(preset.bandwidth_gb_s),
            latency_us: self.latency_us.unwrap_or(preset.latency_us),
            efficiency: self.efficiency.unwrap_or(preset.efficiency),
        }
    }

    /// Whether nothing differs from the default (simulation.json then omits it).
    pub fn is_default(&self) -> bool {
        *self == SimKvTransfer::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_round_trips_through_its_name_and_is_valid() {
        for preset in KvLinkPreset::ALL {
            assert_eq!(preset.name().parse::<KvLinkPreset>(), Ok(preset));
            let json = serde_json::to_string(&preset).unwrap();
            assert_eq!(json, format!("\"{}\"", preset.name()));
            assert!(preset.link().validate().is_ok(), "{preset}");
        }
        assert!("infiniband".parse::<KvLinkPreset>().unwrap_err().contains("ib-400"));
    }

    #[test]
    fn nominal_figures_follow_the_line_rates() {
        // 400 Gb/s is 50 GB/s; 100 Gb/s is 12.5 GB/s.
        assert_eq!(KvLinkPreset::Ib400.link().bandwidth_gb_s, 400.0 / 8.0);
        assert_eq!(KvLinkPreset::Roce200.link().bandwidth_gb_s, 200.0 / 8.0);
        assert_eq!(KvLinkPreset::Eth100.link().bandwidth_gb_s, 100.0 / 8.0);
    }
}
