// GPU presets (see gpu_spec.h). The presets document is compiled in from gpu_presets.inc.
#include "gpu_spec.h"

#include "json_fields.h"

#include <stdexcept>

namespace tensorrt_llm::executor::sim
{

namespace
{

constexpr char kPresetsJson[] =
#include "gpu_presets.inc"
    ;

constexpr char kPresetsFile[] = "gpu_presets.inc";

GpuSpec parsePreset(Json const& value, std::size_t index)
{
    JsonFields const fields(value, kPresetsFile, "[" + std::to_string(index) + "]");
    auto const require = [&](std::string_view key)
    {
        auto const number = fields.number(key, 0.0);
        if (!number)
        {
            fields.fail(key, "is required");
        }
        return *number;
    };
    GpuSpec spec;
    spec.id = fields.string("id").value_or("");
    spec.name = fields.string("name").value_or(spec.id);
    spec.architecture = fields.string("architecture").value_or("");
    spec.interconnect = fields.string("interconnect").value_or("");
    spec.memoryGib = require("memory_gib");
    spec.bandwidthGbS = require("bandwidth_gb_s");
    spec.bf16Tflops = require("bf16_tflops");
    spec.fp8Tflops = fields.number("fp8_tflops", 0.0);
    spec.interconnectGbS = require("interconnect_gb_s");
    spec.allreduceLatencyUs = require("allreduce_latency_us");
    spec.bandwidthEfficiency = require("bandwidth_efficiency");
    spec.mfu = require("mfu");
    spec.iterationOverheadMs = require("iteration_overhead_ms");
    return spec;
}

std::vector<GpuSpec> const& allPresets()
{
    static std::vector<GpuSpec> const presets = []()
    {
        Json const document = parseJson(kPresetsJson, kPresetsFile);
        std::vector<GpuSpec> out;
        std::size_t index = 0;
        for (auto const& item : document)
        {
            out.push_back(parsePreset(item, index++));
        }
        return out;
    }();
    return presets;
}

} // namespace

double GpuSpec::memoryBytes() const
{
    return memoryGib * 1024.0 * 1024.0 * 1024.0;
}

GpuSpec GpuSpec::preset(std::string_view id)
{
    std::string known;
    for (auto const& spec : allPresets())
    {
        if (spec.id == id)
        {
            return spec;
        }
        known += (known.empty() ? "" : ", ") + spec.id;
    }
    throw std::runtime_error("unknown GPU preset \"" + std::string(id) + "\" (known: " + known + ")");
}

std::vector<GpuSpec> GpuSpec::presets()
{
    return allPresets();
}

std::vector<std::string_view> const& GpuSpec::overridableFigures()
{
    static std::vector<std::string_view> const names{"memory_gib", "bandwidth_gb_s", "bf16_tflops", "fp8_tflops",
        "interconnect_gb_s", "allreduce_latency_us", "bandwidth_efficiency", "mfu", "iteration_overhead_ms"};
    return names;
}

void GpuSpec::applyOverrides(std::map<std::string, double> const& overrides)
{
    for (auto const& [figure, value] : overrides)
    {
        if (figure == "memory_gib")
        {
            memoryGib = value;
        }
        else if (figure == "bandwidth_gb_s")
        {
            bandwidthGbS = value;
        }
        else if (figure == "bf16_tflops")
        {
            bf16Tflops = value;
        }
        else if (figure == "fp8_tflops")
        {
            fp8Tflops = value;
        }
        else if (figure == "interconnect_gb_s")
        {
            interconnectGbS = value;
        }
        else if (figure == "allreduce_latency_us")
        {
            allreduceLatencyUs = value;
        }
        else if (figure == "bandwidth_efficiency")
        {
            bandwidthEfficiency = value;
        }
        else if (figure == "mfu")
        {
            mfu = value;
        }
        else if (figure == "iteration_overhead_ms")
        {
            iterationOverheadMs = value;
        }
        else
        {
            throw std::runtime_error("unknown GPU figure \"" + figure + "\"");
        }
    }
}

} // namespace tensorrt_llm::executor::sim
