// The engine directory's config.json as written by trtllm-build: the model shape and the build limits that
// the simulated executor enforces exactly as the real one does (max_input_len, max_batch_size, ...).
#pragma once

#include "tensorrt_llm/executor/types.h"

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tensorrt_llm::executor::sim
{

/// Reads a whole file; throws std::runtime_error naming the path when it cannot be read.
std::string readTextFile(std::filesystem::path const& path);

/// build_config.speculative_decoding_mode.
enum class SpecMode
{
    kNone,
    kDraftTokensExternal,
    kMedusa,
    kLookahead,
    kExplicitDraftTokens,
    kEagle,
};

struct EngineConfig
{
    /// TensorRT-LLM version that built the engine (top-level "version"), empty when absent.
    std::string version;

    // pretrained_config
    std::string architecture;
    std::string dtype{"float16"};
    SizeType32 vocabSize{0};
    SizeType32 hiddenSize{0};
    SizeType32 numLayers{0};
    SizeType32 numAttentionHeads{0};
    SizeType32 numKvHeads{0};
    SizeType32 headSize{0};
    SizeType32 intermediateSize{0};
    std::optional<SizeType32> maxPositionEmbeddings;
    std::optional<std::string> quantAlgo;
    std::optional<std::string> kvCacheQuantAlgo;
    /// The output head shares the input embedding's weights.
    bool tieWordEmbeddings{false};
    /// The embedding table is split across tensor-parallel ranks (otherwise every rank holds all of it).
    bool useParallelEmbedding{false};

    // pretrained_config.mapping
    SizeType32 worldSize{1};
    SizeType32 tpSize{1};
    SizeType32 ppSize{1};
    SizeType32 cpSize{1};

    // build_config
    SizeType32 maxInputLen{1024};
    SizeType32 maxSeqLen{2048};
    SizeType32 maxBatchSize{2048};
    SizeType32 maxBeamWidth{1};
    SizeType32 maxNumTokens{8192};
    bool gatherContextLogits{false};
    // Speculative decoding (speculation.cpp)
    SpecMode speculativeDecodingMode{SpecMode::kNone};
    /// build_config.max_draft_len: draft tokens verified per step.
    SizeType32 maxDraftLen{0};
    /// pretrained_config.num_medusa_heads (Medusa: the longest draft chain), 0 when absent.
    SizeType32 numMedusaHeads{0};

    // build_config.plugin_config
    SizeType32 tokensPerBlock{32};
    bool pagedKvCache{true};
    bool usePagedContextFmha{true};
    bool contextFmha{true};
    bool removeInputPadding{true};

    // ---- LoRA: build_config.lora_config and plugin_config.lora_plugin ----
    /// The engine was built with the LoRA plugin and at least one target module.
    bool loraEnabled{false};
    /// lora_config.lora_target_modules (TensorRT-LLM module names).
    std::vector<std::string> loraTargetModules;
    /// lora_config.max_lora_rank.
    SizeType32 maxLoraRank{0};

    /// The vocabulary rounded up to a multiple of the tensor-parallel size, as the engine pads it.
    [[nodiscard]] SizeType32 vocabSizePadded() const;

    /// Bytes per element of the weights' dtype (2 for float16/bfloat16, 4 for float32, 1 for 8-bit).
    [[nodiscard]] SizeType32 dtypeBytes() const;

    /// Parses config.json text; `file` names the source in error messages.
    static EngineConfig parse(std::string_view text, std::string const& file);

    /// Reads `<engineDir>/config.json`; throws std::runtime_error naming the path when the directory or the
    /// file is missing or invalid.
    static EngineConfig load(std::filesystem::path const& engineDir);
};

} // namespace tensorrt_llm::executor::sim
