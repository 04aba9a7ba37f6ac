// The simulated GPU: hardware figures and the timing model's efficiency factors, from a named preset
// (gpu_presets.inc, shared with the Rust crate) with optional per-figure overrides from simulation.json.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorrt_llm::executor::sim
{

struct GpuSpec
{
    /// Preset id, e.g. "h100-sxm".
    std::string id;
    /// Marketing name, e.g. "NVIDIA H100 SXM 80GB".
    std::string name;
    /// "Ampere", "Ada" or "Hopper".
    std::string architecture;
    /// Device memory in GiB.
    double memoryGib{0.0};
    /// Peak memory bandwidth in GB/s (10^9 bytes/s).
    double bandwidthGbS{0.0};
    /// Dense BF16/FP16 tensor-core TFLOP/s.
    double bf16Tflops{0.0};
    /// Dense FP8 tensor-core TFLOP/s; absent when the GPU has no FP8 tensor cores.
    std::optional<double> fp8Tflops;
    /// The link tensor-parallel all-reduces use, for display.
    std::string interconnect;
    /// Interconnect bandwidth per GPU and direction, GB/s.
    double interconnectGbS{0.0};
    /// Fixed cost of one all-reduce, microseconds.
    double allreduceLatencyUs{0.0};
    /// Fraction of peak bandwidth that streaming weights and KV achieves.
    double bandwidthEfficiency{1.0};
    /// Fraction of peak tensor FLOP/s that prefill achieves (model FLOPs utilisation).
    double mfu{1.0};
    /// Fixed cost of one executor iteration (scheduling, sampling, kernel launches), milliseconds.
    double iterationOverheadMs{0.0};

    [[nodiscard]] bool hasFp8() const { return fp8Tflops.has_value(); }
    [[nodiscard]] double memoryBytes() const;

    /// The preset called `id`; throws std::runtime_error listing the known ids when there is none.
    static GpuSpec preset(std::string_view id);
    /// Every preset, in the document's order.
    static std::vector<GpuSpec> presets();

    /// Names of the numeric figures simulation.json may override (gpu_overrides members).
    static std::vector<std::string_view> const& overridableFigures();
    /// Replaces figures by name (names from overridableFigures(); values already range-checked).
    void applyOverrides(std::map<std::string, double> const& overrides);
};

} // namespace tensorrt_llm::executor::sim
