// The real-mode check's stand-in for TensorRT-LLM (scripts/real-mode-check.sh): the simulated executor built as
// libtensorrt_llm.so without the Rust bridges, so it has the C++ timing stand-in of timing_bridge.cpp (a fixed
// iteration time) and knows an engine only once it is described. This file describes one at load time: the
// directory named by TRTLLM_STANDIN_ENGINE_DIR, with a fixed description instead of parsing its config.json in
// C++. The description is TinyLlama-1.1B's shape with the vocabulary of the shipped tokenizer
// (assets/sim-tokenizer, 3,677 tokens), so that every generated id detokenizes; the check writes that directory
// with `trtllm sim build --model tinyllama-1.1b` and passes the same tokenizer.
#include "timing_model.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace
{

using tensorrt_llm::executor::sim::EngineConfig;
using tensorrt_llm::executor::sim::SimConfig;

EngineConfig standInEngine()
{
    EngineConfig engine;
    engine.vocabSizePadded = 3677;
    engine.hiddenSize = 2048;
    engine.numLayers = 22;
    engine.numAttentionHeads = 32;
    engine.numKvHeads = 4;
    engine.headSize = 64;
    engine.intermediateSize = 5632;
    return engine;
}

/// Runs when the library is loaded, before the shim can ask for an engine.
struct DescribeEngine
{
    DescribeEngine()
    {
        char const* dir = std::getenv("TRTLLM_STANDIN_ENGINE_DIR");
        if (dir == nullptr || *dir == '\0')
        {
            return;
        }
        // The shim passes the directory as the caller wrote it: describe the absolute spelling too.
        std::filesystem::path const given(dir);
        tensorrt_llm::executor::sim::describeStandInEngine(given, standInEngine(), SimConfig{});
        std::error_code error;
        auto const absolute = std::filesystem::absolute(given, error);
        if (!error && absolute != given)
        {
            tensorrt_llm::executor::sim::describeStandInEngine(absolute, standInEngine(), SimConfig{});
        }
    }
};

DescribeEngine const describeAtLoad;

} // namespace
