// Loads and checks an engine directory's config.json (see engine_config.h).
#include "engine_config.h"

#include "json_fields.h"
#include "speculation.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace tensorrt_llm::executor::sim
{

namespace
{

constexpr std::int64_t kMaxSize32 = std::numeric_limits<SizeType32>::max();

SizeType32 readSize(JsonFields const& fields, std::string_view key, SizeType32 fallback, std::int64_t min = 1)
{
    return static_cast<SizeType32>(fields.integer(key, min, kMaxSize32).value_or(fallback));
}

SizeType32 requireSize(JsonFields const& fields, std::string_view key)
{
    auto const value = fields.integer(key, 1, kMaxSize32);
    if (!value)
    {
        fields.fail(key, "is required");
    }
    return static_cast<SizeType32>(*value);
}

} // namespace

std::string readTextFile(std::filesystem::path const& path)
{
    std::ifstream stream(path, std::ios::binary);
    if (!stream)
    {
        throw std::runtime_error("cannot open " + path.string());
    }
    std::ostringstream contents;
    contents << stream.rdbuf();
    if (stream.bad())
    {
        throw std::runtime_error("cannot read " + path.string());
    }
    return contents.str();
}

SizeType32 EngineConfig::vocabSizePadded() const
{
    return (vocabSize + tpSize - 1) / tpSize * tpSize;
}

SizeType32 EngineConfig::dtypeBytes() const
{
    if (dtype == "float32")
    {
        return 4;
    }
    if (dtype == "int8" || dtype == "fp8")
    {
        return 1;
    }
    return 2;
}

EngineConfig EngineConfig::parse(std::string_view text, std::string const& file)
{
    Json const document = parseJson(text, file);
    JsonFields const root(document, file, "");

    EngineConfig config;
    config.version = root.string("version").value_or("");

    auto const pretrained = root.object("pretrained_config");
    if (!pretrained)
    {
        root.fail("pretrained_config", "is required (is this a TensorRT-LLM engine directory?)");
    }
    config.architecture = pretrained->string("architecture").value_or("");
    config.dtype = pretrained->string("dtype").value_or(config.dtype);
    config.vocabSize = requireSize(*pretrained, "vocab_size");
    config.hiddenSize = requireSize(*pretrained, "hidden_size");
    config.numLayers = requireSize(*pretrained, "num_hidden_layers");
    config.numAttentionHeads = requireSize(*pretrained, "num_attention_heads");
    config.numKvHeads = readSize(*pretrained, "num_key_value_heads", config.numAttentionHeads);
    config.headSize = readSize(*pretrained, "head_size", config.hiddenSize / config.numAttentionHeads);
    config.intermediateSize = readSize(*pretrained, "intermediate_size", 4 * config.hiddenSize);
    if (auto const maxPos = pretrained->integer("max_position_embeddings", 1, kMaxSize32))
    {
        config.maxPositionEmbeddings = static_cast<SizeType32>(*maxPos);
    }
    config.tieWordEmbeddings = pretrained->boolean("tie_word_embeddings").value_or(false);
    config.useParallelEmbedding = pretrained->boolean("use_parallel_embedding").value_or(false);
    if (auto const quantization = pretrained->object("quantization"))
    {
        config.quantAlgo = quantization->string("quant_algo");
        config.kvCacheQuantAlgo = quantization->string("kv_cache_quant_algo");
    }
    if (auto const mapping = pretrained->object("mapping"))
    {
        config.tpSize = readSize(*mapping, "tp_size", 1);
        config.ppSize = readSize(*mapping, "pp_size", 1);
        config.cpSize = readSize(*mapping, "cp_size", 1);
        config.worldSize = readSize(*mapping, "world_size", config.tpSize * config.ppSize * config.cpSize);
        if (config.worldSize != config.tpSize * config.ppSize * config.cpSize)
        {
            mapping->fail("world_size", "(" + std::to_string(config.worldSize)
                                            + ") must equal tp_size * pp_size * cp_size ("
                                            + std::to_string(config.tpSize * config.ppSize * config.cpSize) + ")");
        }
        // Tensor parallelism splits the attention heads across the ranks: each needs a whole number of query
        // heads, and of KV heads unless there are fewer KV heads than ranks, which then share replicated ones.
        if (config.numAttentionHeads % config.tpSize != 0)
        {
            mapping->fail("tp_size", "(" + std::to_string(config.tpSize)
                                         + ") must divide pretrained_config.num_attention_heads ("
                                         + std::to_string(config.numAttentionHeads)
                                         + "): every tensor-parallel rank runs a whole number of attention heads");
        }
        bool const kvHeadsSplit = config.numKvHeads % config.tpSize == 0;
        bool const kvHeadsReplicated = config.numKvHeads < config.tpSize && config.tpSize % config.numKvHeads == 0;
        if (!kvHeadsSplit && !kvHeadsReplicated)
        {
            mapping->fail("tp_size", "(" + std::to_string(config.tpSize)
                                         + ") must divide pretrained_config.num_key_value_heads ("
                                         + std::to_string(config.numKvHeads)
                                         + "), or be a multiple of it (each KV head then replicated on tp_size / "
                                           "num_key_value_heads ranks)");
        }
    }

    auto const build = root.object("build_config");
    if (!build)
    {
        root.fail("build_config", "is required (is this a TensorRT-LLM engine directory?)");
    }
    config.maxInputLen = readSize(*build, "max_input_len", config.maxInputLen);
    config.maxSeqLen = readSize(*build, "max_seq_len",
        config.maxPositionEmbeddings.value_or(std::max(config.maxSeqLen, config.maxInputLen + 1)));
    config.maxBatchSize = readSize(*build, "max_batch_size", config.maxBatchSize);
    config.maxBeamWidth = readSize(*build, "max_beam_width", config.maxBeamWidth);
    config.maxNumTokens = readSize(*build, "max_num_tokens", config.maxNumTokens);
    config.gatherContextLogits = build->boolean("gather_context_logits").value_or(false);
    readSpeculativeEngine(*build, *pretrained, config);
    if (config.maxInputLen > config.maxSeqLen)
    {
        build->fail("max_input_len", "(" + std::to_string(config.maxInputLen) + ") must not exceed max_seq_len ("
                                         + std::to_string(config.maxSeqLen) + ")");
    }
    if (auto const plugins = build->object("plugin_config"))
    {
        config.tokensPerBlock = readSize(*plugins, "tokens_per_block", config.tokensPerBlock);
        config.pagedKvCache = plugins->boolean("paged_kv_cache").value_or(config.pagedKvCache);
        config.usePagedContextFmha = plugins->boolean("use_paged_context_fmha").value_or(config.usePagedContextFmha);
        config.contextFmha = plugins->boolean("context_fmha").value_or(config.contextFmha);
        config.removeInputPadding = plugins->boolean("remove_input_padding").value_or(config.removeInputPadding);
        // ---- LoRA: the plugin is a dtype name ("auto", "float16", ...), or null / false when off ----
        if (plugins->has("lora_plugin"))
        {
            auto const& plugin = plugins->value()["lora_plugin"];
            config.loraEnabled = !(plugin.is_boolean() && !plugin.get<bool>());
        }
    }
    if (auto const lora = build->object("lora_config"); lora && config.loraEnabled)
    {
        config.maxLoraRank = readSize(*lora, "max_lora_rank", 0, 0);
        auto const& modules = lora->value()["lora_target_modules"];
        if (modules.is_array())
        {
            for (auto const& module : modules)
            {
                if (!module.is_string())
                {
                    lora->fail("lora_target_modules", "must be a list of module names");
                }
                config.loraTargetModules.push_back(module.get<std::string>());
            }
        }
    }
    config.loraEnabled = config.loraEnabled && !config.loraTargetModules.empty() && config.maxLoraRank > 0;
    return config;
}

EngineConfig EngineConfig::load(std::filesystem::path const& engineDir)
{
    std::error_code error;
    if (!std::filesystem::is_directory(engineDir, error))
    {
        throw std::runtime_error("Engine directory " + engineDir.string() + " does not exist or is not a directory");
    }
    auto const configPath = engineDir / "config.json";
    if (!std::filesystem::is_regular_file(configPath, error))
    {
        throw std::runtime_error("Engine config " + configPath.string()
                                 + " not found: the engine directory must hold "
                                   "the config.json written by trtllm-build");
    }
    return parse(readTextFile(configPath), configPath.string());
}

} // namespace tensorrt_llm::executor::sim
