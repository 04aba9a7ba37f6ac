// Internal to the shim's sources (shim.cc and the per-feature shim_*.cc files): the executor
// handle's state, the exception and conversion helpers they share, and the conversions each feature
// file provides. Never included outside cpp/src.
#pragma once

#include "trtllm/cpp/include/trtllm/shim.h"
#include "trtllm/src/ffi.rs.h"

#include "tensorrt_llm/executor/executor.h"

#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace tle = tensorrt_llm::executor;

namespace trtllm::shim
{

struct ExecutorHandle::Impl
{
    // Held by pointer: the executor's move constructor was undeclared in some releases.
    std::unique_ptr<tle::Executor> executor;
    // Set when the executor records KV-cache events; it stays readable after shutdown.
    std::shared_ptr<tle::KVCacheEventManager> kvEvents;
};

namespace detail
{

// Runs `body`, turning anything thrown that is not a std::exception into one, so that cxx (which
// catches std::exception) never lets an exception escape into Rust unconverted.
template <typename F>
inline auto guarded(char const* what, F&& body) -> decltype(body())
{
    try
    {
        return body();
    }
    catch (std::exception const&)
    {
        throw;
    }
    catch (...)
    {
        throw std::runtime_error(std::string(what) + ": unknown C++ exception (not derived from std::exception)");
    }
}

// Converts through pointer and length only: cxx's own std::string overloads are compiled with the
// default _GLIBCXX_USE_CXX11_ABI, which need not match the one TensorRT-LLM forces on this file.
inline rust::String toRust(std::string const& text)
{
    return rust::String::lossy(text.data(), text.size());
}

template <typename T, typename O>
inline std::optional<T> opt(O const& o)
{
    if (o.set)
    {
        return static_cast<T>(o.value);
    }
    return std::nullopt;
}

// Enum conversions: one case per enumerator, by name, never a cast of the number (the numbering is
// upstream's to change). The switches have no default, so that the compiler's -Wswitch points at any
// enumerator a newer upstream adds; at run time an unlisted value falls through to the error or the
// Unknown after the switch. This is the error's message.
inline std::string enumValueMessage(char const* what, int value)
{
    return std::string("unknown ") + what + " value " + std::to_string(value);
}

// The core request conversion (shim.cc), also used by the scheduled enqueue (shim_sim_control.cc).
tle::Request toRequest(RequestSpec const& spec);

// Statistics and KV-cache events (shim_stats.cc).
IterationStatsItem toIterationStats(tle::IterationStats const& s);
RequestStatsItem toRequestStats(tle::RequestStats const& s);
KvEventItem toKvEventItem(tle::KVCacheEvent const& event);
// Executor configuration (shim_executor_config.cc).
tle::ExecutorConfig toExecutorConfig(ExecutorOptions const& o);

// LoRA (shim_lora.cc): the request's adapter, and the executor's adapter cache.
std::optional<tle::LoraConfig> toLoraConfig(LoraSpec const& spec);
tle::PeftCacheConfig toPeftCacheConfig(PeftCacheOptions const& o);

// Speculative decoding (shim_speculative.cc): the executor's DecodingConfig, and a request's
// lookahead, Eagle and external draft-token configs.
void applyDecodingOptions(tle::ExecutorConfig& config, DecodingOptions const& o);
void applySpeculativeRequest(tle::Request& request, SpeculativeSpec const& s);

// Guided decoding (shim_guided.cc): a request's guide, and the executor's grammar backend and vocabulary.
tle::GuidedDecodingParams toGuidedDecodingParams(GuidedDecodingSpec const& spec);
tle::GuidedDecodingConfig toGuidedDecodingConfig(GuidedDecodingOptions const& o);

// Disaggregated serving (shim_disagg.cc): the cache transceiver, a request's type and context-phase params,
// a context-only result's params, and the transfer's request stats.
std::optional<tle::CacheTransceiverConfig> toCacheTransceiverConfig(CacheTransceiverOptions const& o);
void applyDisaggregation(tle::Request& request, RequestSpec const& spec);
ContextPhaseItem toContextPhaseItem(tle::ContextPhaseParams const& params);
void fillDisServingStats(RequestStatsItem& item, tle::RequestStats const& stats);

} // namespace detail
} // namespace trtllm::shim
