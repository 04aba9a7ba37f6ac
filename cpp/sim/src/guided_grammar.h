// The simulator's grammar engine behind guided decoding: compiles a request's guide against the executor's
// GuidedDecodingConfig and, each step, picks a token the grammar allows. Implementation-only: nothing here is
// part of the simulated TensorRT-LLM headers.
//
// With TRTLLM_SIM_RUST_GRAMMAR defined (the trtllm crate's simulated build) the engine is llguidance, reached
// through the sim-only cxx bridge in src/sim/guided/bridge.rs; without it (the standalone C++ build) a fallback
// accepts the configuration but refuses every guided request with a message saying why.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include <cstdint>
#include <memory>

namespace tensorrt_llm::executor::sim
{

/// The grammar state of one guided sequence. Methods throw std::runtime_error when the engine fails.
class GrammarState
{
public:
    virtual ~GrammarState() = default;

    /// The next token for `seed` among those the grammar allows now (deterministic per seed and step); a stop
    /// id only where the grammar accepts. Does not advance.
    [[nodiscard]] virtual TokenIdType chooseToken(std::uint64_t seed) = 0;
    /// Advances by `token`, which must be allowed.
    virtual void consume(TokenIdType token) = 0;
    /// True once a stop id was consumed (the sequence ends with END_ID).
    [[nodiscard]] virtual bool isFinished() const = 0;
};

/// Compiles guides against one vocabulary; built once per executor from its GuidedDecodingConfig.
class GrammarBackend
{
public:
    virtual ~GrammarBackend() = default;

    /// A fresh matcher for one sequence; throws std::runtime_error naming the problem when the guide does not
    /// compile.
    [[nodiscard]] virtual std::unique_ptr<GrammarState> compile(GuidedDecodingParams const& params) const = 0;
};

/// Builds the backend for `config`; throws std::runtime_error when the configuration is unusable.
std::unique_ptr<GrammarBackend> makeGrammarBackend(GuidedDecodingConfig const& config);

} // namespace tensorrt_llm::executor::sim
