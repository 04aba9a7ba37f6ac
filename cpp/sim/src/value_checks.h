// Argument checks shared by the simulated value classes: they throw as TensorRT-LLM's TLLM_CHECK does, with
// "Assertion failed: <condition>" messages. Implementation-only (not part of the simulated public headers).
#pragma once

#include "tensorrt_llm/executor/types.h"

#include <optional>
#include <stdexcept>
#include <string>

namespace tensorrt_llm::executor::sim
{

/// TensorRT-LLM's kernels support at most this beam width.
constexpr SizeType32 kMaxBeamWidthSupported = 1024;

inline void check(bool condition, char const* what)
{
    if (!condition)
    {
        throw std::runtime_error(std::string("Assertion failed: ") + what);
    }
}

template <typename T>
std::optional<T> const& checkAtLeast(std::optional<T> const& value, T min, char const* what)
{
    check(!value || *value >= min, what);
    return value;
}

} // namespace tensorrt_llm::executor::sim
