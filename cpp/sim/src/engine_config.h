// What the simulated executor enforces from the engine directory's config.json (the build limits, speculative
// decoding, LoRA). The Rust side reads and checks the file and applies TensorRT-LLM's defaults
// (src/sim/executor_files.rs); the simulator receives the result as this plain data (timing_model.h).
#pragma once

#include "tensorrt_llm/executor/types.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tensorrt_llm::executor::sim
{

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

/// One LoRA module an engine adapts: TensorRT-LLM's module id (runtime/loraModule.h) and its adapter's widths.
struct LoraModuleWidths
{
    std::int32_t id{0};
    double inDim{0.0};
    double outDim{0.0};
};

struct EngineConfig
{
    // pretrained_config
    /// The vocabulary rounded up to a multiple of the tensor-parallel size, as the engine pads it.
    SizeType32 vocabSizePadded{0};
    SizeType32 hiddenSize{0};
    SizeType32 numLayers{0};
    SizeType32 numAttentionHeads{0};
    SizeType32 numKvHeads{0};
    SizeType32 headSize{0};
    SizeType32 intermediateSize{0};
    /// Bytes per element of the weights' dtype (2 for float16/bfloat16, 4 for float32, 1 for 8-bit).
    SizeType32 dtypeBytes{2};

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
    /// Tokens of KV cache a sequence keeps (the sliding window, else max_seq_len); 0 means max_seq_len.
    SizeType32 maxAttentionWindow{0};
    bool pagedKvCache{true};
    bool usePagedContextFmha{true};

    // ---- LoRA: build_config.lora_config and plugin_config.lora_plugin ----
    /// The engine was built with the LoRA plugin, at least one target module and a positive rank.
    bool loraEnabled{false};
    /// lora_config.lora_target_modules with their widths, as the Rust side computes them (LoraModule::dims,
    /// TensorRT-LLM's createLoraModules).
    std::vector<LoraModuleWidths> loraModules;
    /// in + out of the model's widest attention or MLP module: what one module-layer slot of the adapter caches
    /// holds (at the optimal adapter size).
    double loraSlotWidth{0.0};
    /// lora_config.max_lora_rank.
    SizeType32 maxLoraRank{0};
};

} // namespace tensorrt_llm::executor::sim
