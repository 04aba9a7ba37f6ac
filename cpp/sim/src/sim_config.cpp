// Loads and checks simulation.json (see sim_config.h and docs/simulation-json.md).
#include "sim_config.h"

#include "engine_config.h"
#include "json_fields.h"
#include "speculation.h"

#include <array>
#include <limits>
#include <stdexcept>

namespace tensorrt_llm::executor::sim
{

namespace
{

constexpr std::array<FaultMethod, 7> kFaultMethods{FaultMethod::kConstructor, FaultMethod::kEnqueueRequest,
    FaultMethod::kAwaitResponses, FaultMethod::kCancelRequest, FaultMethod::kGetLatestIterationStats,
    FaultMethod::kGetLatestRequestStats, FaultMethod::kShutdown};

FaultConfig parseFaults(JsonFields const& faults)
{
    faults.rejectUnknown({"throw_in", "throw_after_calls", "throw_non_std", "fail_prompt_token",
        "fail_all_from_iteration", "stall_iteration", "stall_ms"});
    FaultConfig config;
    if (auto const name = faults.string("throw_in"))
    {
        for (auto const method : kFaultMethods)
        {
            if (*name == faultMethodName(method))
            {
                config.throwIn = method;
            }
        }
        if (!config.throwIn)
        {
            std::string known;
            for (auto const method : kFaultMethods)
            {
                known += (known.empty() ? "" : ", ") + std::string(faultMethodName(method));
            }
            faults.fail("throw_in", "names an unknown method \"" + *name + "\" (known: " + known + ")");
        }
    }
    config.throwAfterCalls = static_cast<std::uint64_t>(faults.integer("throw_after_calls", 0).value_or(0));
    config.throwNonStd = faults.boolean("throw_non_std").value_or(false);
    if (auto const token = faults.integer(
            "fail_prompt_token", std::numeric_limits<TokenIdType>::min(), std::numeric_limits<TokenIdType>::max()))
    {
        config.failPromptToken = static_cast<TokenIdType>(*token);
    }
    if (auto const iteration = faults.integer("fail_all_from_iteration", 0))
    {
        config.failAllFromIteration = static_cast<IterationType>(*iteration);
    }
    if (auto const iteration = faults.integer("stall_iteration", 0))
    {
        config.stallIteration = static_cast<IterationType>(*iteration);
    }
    config.stallMs = faults.number("stall_ms", 0.0).value_or(0.0);
    return config;
}

} // namespace

char const* faultMethodName(FaultMethod method)
{
    switch (method)
    {
    case FaultMethod::kConstructor: return "constructor";
    case FaultMethod::kEnqueueRequest: return "enqueueRequest";
    case FaultMethod::kAwaitResponses: return "awaitResponses";
    case FaultMethod::kCancelRequest: return "cancelRequest";
    case FaultMethod::kGetLatestIterationStats: return "getLatestIterationStats";
    case FaultMethod::kGetLatestRequestStats: return "getLatestRequestStats";
    case FaultMethod::kShutdown: return "shutdown";
    }
    return "unknown";
}

SimConfig SimConfig::parse(std::string_view text, std::string const& file)
{
    Json const document = parseJson(text, file);
    JsonFields const root(document, file, "");
    root.rejectUnknown(
        {"gpu", "gpu_overrides", "iteration_ms", "time_scale", "clock", "kv_cache_max_tokens", "seed", "faults", "speculative"});

    SimConfig config;
    config.iterationMs = root.number("iteration_ms", 0.0);
    config.timeScale = root.number("time_scale", 0.0).value_or(config.timeScale);
    if (auto const clock = root.string("clock"))
    {
        if (*clock == "virtual")
        {
            config.clock = ClockMode::kVirtual;
        }
        else if (*clock != "real")
        {
            root.fail("clock", "must be \"real\" or \"virtual\", got \"" + *clock + "\"");
        }
    }
    config.kvCacheMaxTokens = root.integer("kv_cache_max_tokens", 1);
    config.seed = static_cast<std::uint64_t>(root.integer("seed", 0).value_or(0));
    if (auto const faults = root.object("faults"))
    {
        config.faults = parseFaults(*faults);
    }
    if (auto const speculative = root.object("speculative"))
    {
        config.draftAcceptance = readAcceptance(*speculative);
        config.contextTokens = speculative->boolean("context_tokens").value_or(false);
        config.draftAgreement = speculative->number("draft_agreement", 0.0);
        if (config.draftAgreement && *config.draftAgreement > 1.0)
        {
            speculative->fail("draft_agreement", "must be a probability in [0, 1]");
        }
    }
    return config;
}

SimConfig SimConfig::load(std::filesystem::path const& engineDir)
{
    auto const path = engineDir / "simulation.json";
    std::error_code error;
    if (!std::filesystem::exists(path, error))
    {
        return SimConfig{};
    }
    return parse(readTextFile(path), path.string());
}

} // namespace tensorrt_llm::executor::sim
