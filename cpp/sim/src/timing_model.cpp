// The simulated GPU's timing and memory model (see timing_model.h and docs/simulator.md).
#include "timing_model.h"

#include "scheduler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace tensorrt_llm::executor::sim
{

namespace
{

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
/// CUDA context, cuBLAS/NCCL workspaces and runtime buffers that every GPU keeps besides activations.
constexpr double kRuntimeBytes = 1.0 * kGib;
/// Host -> device copy bandwidth for LoRA adapters (pinned host memory over PCIe Gen5 x16, effective), GB/s.
constexpr double kHostToDeviceGbS = 25.0;

bool startsWith(std::string const& text, std::string_view prefix)
{
    return text.compare(0, prefix.size(), prefix) == 0;
}

/// How the linear layers' weights are stored and multiplied.
struct WeightFormat
{
    double bytesPerParam;
    bool fp8Math;
};

WeightFormat weightFormat(EngineConfig const& engine)
{
    if (!engine.quantAlgo)
    {
        return {static_cast<double>(engine.dtypeBytes()), false};
    }
    std::string const& algo = *engine.quantAlgo;
    if (startsWith(algo, "FP8"))
    {
        return {1.0, true};
    }
    if (startsWith(algo, "W8A16"))
    {
        return {1.0, false};
    }
    if (startsWith(algo, "W4A16"))
    {
        return {0.5, false};
    }
    throw std::runtime_error("config.json: pretrained_config.quantization.quant_algo \"" + algo
                             + "\" is not modelled by the simulator (modelled: none, FP8, W8A16, W4A16)");
}

double kvElementBytes(EngineConfig const& engine)
{
    if (!engine.kvCacheQuantAlgo)
    {
        return static_cast<double>(engine.dtypeBytes());
    }
    std::string const& algo = *engine.kvCacheQuantAlgo;
    if (algo == "FP8" || algo == "INT8")
    {
        return 1.0;
    }
    throw std::runtime_error("config.json: pretrained_config.quantization.kv_cache_quant_algo \"" + algo
                             + "\" is not modelled by the simulator (modelled: none, FP8, INT8)");
}

void requireFp8(GpuSpec const& gpu, std::string const& what)
{
    if (!gpu.hasFp8())
    {
        throw std::runtime_error("FP8 tensor cores are needed for " + what + ", and the simulated GPU " + gpu.id
                                 + " (" + gpu.name + ", " + gpu.architecture
                                 + ") has none: choose an Ada or Hopper GPU preset, or 16-bit precision");
    }
}

} // namespace

void BatchWork::addContext(double newTokens, double pastTokens, bool samples)
{
    tokens += newTokens;
    sampledRows += samples ? 1.0 : 0.0;
    // Causal attention: the i-th new token (1-based) sees the cached context and i new tokens.
    attentionPairs += newTokens * pastTokens + newTokens * (newTokens + 1.0) / 2.0;
    kvTokensRead += pastTokens;
    kvTokensWritten += newTokens;
}

void BatchWork::addGeneration(double pastTokens, double beamWidth)
{
    tokens += beamWidth;
    sampledRows += beamWidth;
    attentionPairs += beamWidth * (pastTokens + 1.0);
    kvTokensRead += beamWidth * pastTokens;
    kvTokensWritten += beamWidth;
}

void BatchWork::addVerification(double pastTokens, double draftTokens)
{
    double const rows = 1.0 + draftTokens;
    tokens += rows;
    sampledRows += rows;
    attentionPairs += rows * pastTokens + rows * (rows + 1.0) / 2.0;
    kvTokensRead += pastTokens;
    kvTokensWritten += rows;
}

BatchWork describeBatch(BatchPlan const& plan)
{
    BatchWork work;
    std::vector<IdType> adapters;
    for (Sequence const* sequence : plan.scheduled)
    {
        // ---- LoRA: the adapter's FLOPs for this sequence's rows, its weights once per distinct adapter ----
        if (auto const& task = sequence->request->loraTaskId)
        {
            double const rows = sequence->state == SequenceState::kContext
                ? static_cast<double>(sequence->chunkTokens)
                : static_cast<double>(sequence->request->beamWidth);
            work.loraFlops += rows * sequence->request->loraFlopsPerToken;
            if (std::find(adapters.begin(), adapters.end(), *task) == adapters.end())
            {
                adapters.push_back(*task);
                work.loraWeightBytes += sequence->request->loraWeightBytes;
            }
        }
        if (sequence->state == SequenceState::kContext)
        {
            bool const samples = sequence->contextPosition + sequence->chunkTokens >= sequence->contextLength;
            work.addContext(sequence->chunkTokens, sequence->contextPosition, samples);
            if (samples && sequence->request->speculative)
            {
                // Medusa / Eagle: the first drafts come from the prompt's last hidden state.
                work.drafterRequests += 1.0;
            }
            if (samples && sequence->stepDraftTokens > 0)
            {
                // Draft-target: the drafts ride along with the prompt's last chunk.
                work.addContext(sequence->stepDraftTokens, sequence->contextPosition + sequence->chunkTokens, true);
            }
        }
        else if (sequence->stepDraftTokens > 0)
        {
            // The drafter proposes the next step's drafts from this step's hidden state.
            work.drafterRequests += 1.0;
            double const past = static_cast<double>(sequence->request->prompt.size()) + sequence->numGenerated() - 1;
            work.addVerification(std::max(0.0, past), sequence->stepDraftTokens);
        }
        else
        {
            // Every token but the last generated one is in the cache; the last one is this step's input.
            double const past = static_cast<double>(sequence->request->prompt.size()) + sequence->numGenerated() - 1;
            work.addGeneration(std::max(0.0, past), sequence->request->beamWidth);
        }
    }
    return work;
}

TimingModel::TimingModel(EngineConfig const& engine, GpuSpec gpu)
    : mGpu(std::move(gpu))
{
    WeightFormat const weights = weightFormat(engine);
    double const kvBytes = kvElementBytes(engine);
    if (weights.fp8Math)
    {
        requireFp8(mGpu, "FP8 weights (quant_algo " + *engine.quantAlgo + ")");
    }
    if (engine.kvCacheQuantAlgo && *engine.kvCacheQuantAlgo == "FP8")
    {
        requireFp8(mGpu, "an FP8 KV cache (kv_cache_quant_algo FP8)");
    }

    mTp = engine.tpSize;
    double const ranks = mTp * engine.ppSize;
    mLayers = engine.numLayers;
    mHidden = engine.hiddenSize;
    mActivationBytes = engine.dtypeBytes();
    double const qWidth = static_cast<double>(engine.numAttentionHeads) * engine.headSize;
    double const kvWidth = static_cast<double>(engine.numKvHeads) * engine.headSize;
    double const intermediate = engine.intermediateSize;
    // Q, K, V and O projections and the gated MLP's three matrices, split across the tensor-parallel ranks.
    double const linearPerLayer = mHidden * qWidth + 2.0 * mHidden * kvWidth + qWidth * mHidden
                                  + 3.0 * mHidden * intermediate;
    double const vocab = engine.vocabSizePadded();
    mIntermediatePerGpu = intermediate / mTp;
    mVocabPerGpu = vocab / mTp;
    mLinearParamsPerGpu = linearPerLayer * mLayers / mTp;
    mLmHeadParamsPerGpu = vocab * mHidden / mTp;
    // QK^T and attention x V: 2 FLOPs per multiply-add, per head dimension, per query-key pair.
    mAttentionFlopsPerPair = 4.0 * qWidth * mLayers / mTp;

    double const half = mGpu.bf16Tflops * 1e12;
    mHalfFlopsPerSecond = half;
    mLinearFlopsPerSecond = weights.fp8Math ? *mGpu.fp8Tflops * 1e12 : half;

    // The output head and the embedding stay in 16 bits (quantization recipes leave them out); the norms are
    // replicated. Layers are divided among pipeline stages for memory; the embedding table is replicated
    // across tensor-parallel ranks unless the engine shards it (use_parallel_embedding).
    double const norms = (2.0 * mLayers + 1.0) * mHidden * mActivationBytes;
    double const lmHeadBytes = mLmHeadParamsPerGpu * mActivationBytes;
    double const linearBytes = mLinearParamsPerGpu * weights.bytesPerParam;
    mStreamedWeightBytes = linearBytes + lmHeadBytes + norms;
    double embeddingBytes = 0.0;
    if (!engine.tieWordEmbeddings)
    {
        embeddingBytes = vocab * mHidden * mActivationBytes / (engine.useParallelEmbedding ? mTp : 1.0);
    }
    mResidentWeightBytes = (linearBytes * mTp + lmHeadBytes * mTp + norms) / ranks + embeddingBytes;

    // K and V per layer and KV head; with more ranks than KV heads each rank keeps a copy of one head.
    double const kvHeadsPerGpu = std::ceil(static_cast<double>(engine.numKvHeads) / mTp);
    mKvBytesPerToken = 2.0 * mLayers * kvHeadsPerGpu * engine.headSize * kvBytes / engine.ppSize;

    // ---- Speculative decoding: what the drafter reads and computes per step (see docs/speculative.md) ----
    if (engine.speculativeDecodingMode == SpecMode::kMedusa)
    {
        // Each head: a hidden x hidden residual block and its own LM head, kept in 16 bits; they all read the
        // same last hidden state, so one pass.
        double const heads = engine.numMedusaHeads > 0 ? engine.numMedusaHeads : engine.maxDraftLen;
        mDrafterParamsPerGpu = heads * (mHidden * mHidden + vocab * mHidden) / mTp;
        mDrafterBytesPerGpu = mDrafterParamsPerGpu * mActivationBytes;
        mDrafterPasses = 1.0;
    }
    else if (engine.speculativeDecodingMode == SpecMode::kEagle)
    {
        // One decoder layer over [embedding, hidden] projected back to hidden, then the target's LM head, run
        // once per tree level (the draft chain's depth).
        double const fc = 2.0 * mHidden * mHidden / mTp;
        double const layer = linearPerLayer / mTp;
        mDrafterParamsPerGpu = layer + fc + mLmHeadParamsPerGpu;
        mDrafterBytesPerGpu = layer * weights.bytesPerParam + (fc + mLmHeadParamsPerGpu) * mActivationBytes;
        mDrafterPasses = engine.maxDraftLen;
    }
}

double TimingModel::drafterMs(double requests) const
{
    if (requests <= 0.0 || mDrafterPasses <= 0.0)
    {
        return 0.0;
    }
    double const memoryS = mDrafterBytesPerGpu / (mGpu.bandwidthGbS * 1e9 * mGpu.bandwidthEfficiency);
    double const computeS = 2.0 * mDrafterParamsPerGpu * requests / mHalfFlopsPerSecond / mGpu.mfu;
    return mDrafterPasses * std::max(memoryS, computeS) * 1e3;
}

IterationTime TimingModel::iteration(BatchWork const& work) const
{
    IterationTime time;
    time.overheadMs = mGpu.iterationOverheadMs;
    if (work.tokens <= 0.0)
    {
        // Nothing scheduled: no forward pass.
        time.totalMs = time.overheadMs;
        return time;
    }
    double const bytes = mStreamedWeightBytes + mKvBytesPerToken * (work.kvTokensRead + work.kvTokensWritten)
                         + work.loraWeightBytes / mTp;
    time.memoryMs = bytes / (mGpu.bandwidthGbS * 1e9 * mGpu.bandwidthEfficiency) * 1e3;

    double const linearSeconds = 2.0 * mLinearParamsPerGpu * work.tokens / mLinearFlopsPerSecond;
    double const halfSeconds
        = (2.0 * mLmHeadParamsPerGpu * work.sampledRows + mAttentionFlopsPerPair * work.attentionPairs)
          / mHalfFlopsPerSecond;
    // LoRA's small-rank GEMMs run at half-precision rate, split across tensor-parallel ranks like the base.
    double const loraSeconds = work.loraFlops / mTp / mHalfFlopsPerSecond;
    time.computeMs = (linearSeconds + halfSeconds + loraSeconds) / mGpu.mfu * 1e3;

    if (mTp > 1.0)
    {
        // Two all-reduces of the hidden state per layer (after attention, after the MLP), ring algorithm.
        double const payload = work.tokens * mHidden * mActivationBytes;
        double const transfer = 2.0 * (mTp - 1.0) / mTp * payload / (mGpu.interconnectGbS * 1e9);
        time.allreduceMs = 2.0 * mLayers * (mGpu.allreduceLatencyUs * 1e-6 + transfer) * 1e3;
    }
    time.loraCopyMs = work.loraCopyBytes / (kHostToDeviceGbS * 1e9) * 1e3;
    time.drafterMs = drafterMs(work.drafterRequests);
    time.totalMs = time.overheadMs + std::max(time.memoryMs, time.computeMs) + time.allreduceMs + time.loraCopyMs
                   + time.drafterMs;
    return time;
}

double TimingModel::runtimeReserveBytes(
    SizeType32 maxNumTokens, SizeType32 maxBatchSize, SizeType32 maxBeamWidth) const
{
    // Activations of the largest iteration (a few hidden-sized tensors and the MLP's two intermediate ones per
    // token) and float32 logits for every sequence of the largest batch.
    double const activations = static_cast<double>(maxNumTokens) * (4.0 * mHidden + 2.0 * mIntermediatePerGpu)
                               * mActivationBytes;
    double const logits = static_cast<double>(maxBatchSize) * maxBeamWidth * mVocabPerGpu * 4.0;
    return kRuntimeBytes + activations + logits;
}

std::int64_t TimingModel::kvCapacityTokens(double freeFraction, double reserveBytes) const
{
    double const free = mGpu.memoryBytes() - mResidentWeightBytes - reserveBytes;
    if (free <= 0.0)
    {
        auto const gib = [](double bytes)
        {
            char text[32];
            std::snprintf(text, sizeof(text), "%.1f", bytes / kGib);
            return std::string(text);
        };
        throw std::runtime_error("The model does not fit the simulated GPU: " + gib(mResidentWeightBytes)
                                 + " GiB of weights per GPU plus " + gib(reserveBytes)
                                 + " GiB of activations and runtime exceed the " + mGpu.id + "'s "
                                 + gib(mGpu.memoryBytes()) + " GiB; use more tensor-parallel GPUs, FP8 weights "
                                 + "or a larger GPU");
    }
    return static_cast<std::int64_t>(std::floor(free * freeFraction / mKvBytesPerToken));
}

} // namespace tensorrt_llm::executor::sim
