// The simulated GPU's timing and memory: how long one executor iteration takes for the batch the scheduler
// planned, from the model's shape and the GPU's figures (first principles, see docs/simulator.md), and how
// much memory is left for the KV cache once the weights are loaded.
//
// Per iteration: overhead + max(memory time, compute time) + tensor-parallel all-reduce time, where memory
// time streams the weights once plus the KV cache the batch's attention reads and writes, and compute time
// covers 2 FLOPs per parameter per token plus attention FLOPs that grow with the context.
#pragma once

#include "engine_config.h"
#include "gpu_spec.h"

#include <cstdint>

namespace tensorrt_llm::executor::sim
{

struct BatchPlan;

/// The work of one iteration: what the scheduler planned, reduced to the sums the timing model needs.
struct BatchWork
{
    /// Rows through the linear layers: context tokens processed plus one per beam of each generation request.
    double tokens{0.0};
    /// Rows through the output head (a token is sampled): one per generation beam, one per finished prompt.
    double sampledRows{0.0};
    /// Query-key pairs attention computes over all rows (a row attends to its cached context and itself).
    double attentionPairs{0.0};
    /// Tokens of cached K/V that attention reads.
    double kvTokensRead{0.0};
    /// Tokens of K/V written to the cache.
    double kvTokensWritten{0.0};
    // ---- LoRA ----
    /// FLOPs the batch's adapters add (each adapted token: its adapter's FLOPs per token).
    double loraFlops{0.0};
    /// Bytes of adapter weights read (each distinct adapter in the batch once).
    double loraWeightBytes{0.0};
    /// Bytes of adapters copied host -> device before this iteration (device-cache misses).
    double loraCopyBytes{0.0};
    // ---- Speculative decoding ----
    /// Requests whose drafter (Medusa heads, Eagle draft layer) proposes the next step's drafts this iteration.
    double drafterRequests{0.0};

    /// A context chunk: `newTokens` prompt tokens processed this iteration after `pastTokens` already in the
    /// KV cache (earlier chunks or reused blocks); `samples` when it completes the prompt (first token).
    void addContext(double newTokens, double pastTokens, bool samples);
    /// One decoding step of a request with `beamWidth` beams, each beam over `pastTokens` cached tokens.
    void addGeneration(double pastTokens, double beamWidth);
    /// One speculative verification step: the last token plus `draftTokens` drafts over `pastTokens` cached
    /// tokens. The rows share one read of the cache; each draft attends to the cache and the drafts before it.
    void addVerification(double pastTokens, double draftTokens);
};

/// The work of a planned batch, read from its scheduled sequences (chunk sizes, positions, beams).
BatchWork describeBatch(BatchPlan const& plan);

/// One iteration's simulated time and its parts, in milliseconds.
struct IterationTime
{
    double overheadMs{0.0};
    double memoryMs{0.0};
    double computeMs{0.0};
    double allreduceMs{0.0};
    /// Host -> device copies of LoRA adapters (device-cache misses), before the forward pass.
    double loraCopyMs{0.0};
    /// Speculative decoding: the drafter's own work after the target's pass (Medusa heads, Eagle draft passes).
    double drafterMs{0.0};
    /// overhead + max(memory, compute) + all-reduce + LoRA copies + drafter.
    double totalMs{0.0};
};

class TimingModel
{
public:
    /// Throws std::runtime_error when the engine cannot run on the GPU (FP8 without FP8 tensor cores) or uses a
    /// quantization the model does not know.
    TimingModel(EngineConfig const& engine, GpuSpec gpu);

    [[nodiscard]] GpuSpec const& gpu() const { return mGpu; }

    /// The simulated duration of an iteration doing `work`.
    [[nodiscard]] IterationTime iteration(BatchWork const& work) const;

    /// Weight bytes resident on each GPU.
    [[nodiscard]] double weightBytesPerGpu() const { return mResidentWeightBytes; }
    /// Weight bytes each GPU reads per forward pass (all but the input embedding table).
    [[nodiscard]] double streamedWeightBytesPerGpu() const { return mStreamedWeightBytes; }
    /// KV-cache bytes one token occupies on each GPU.
    [[nodiscard]] double kvBytesPerTokenPerGpu() const { return mKvBytesPerToken; }
    /// Memory each GPU keeps for activations, logits and the CUDA runtime, for these engine limits.
    [[nodiscard]] double runtimeReserveBytes(
        SizeType32 maxNumTokens, SizeType32 maxBatchSize, SizeType32 maxBeamWidth) const;
    /// KV-cache tokens that fit: (GPU memory - weights - reserve) * freeFraction / KV bytes per token. Throws
    /// std::runtime_error when the weights and the reserve alone do not fit.
    [[nodiscard]] std::int64_t kvCapacityTokens(double freeFraction, double reserveBytes) const;

private:
    /// The drafter's time for `requests` drafting requests (0 for modes whose drafts cost only verified rows).
    [[nodiscard]] double drafterMs(double requests) const;

    GpuSpec mGpu;
    // ---- Speculative decoding: the drafter's weights (per GPU) and passes per step ----
    /// Parameters of one drafter pass per GPU: Medusa, every head (ResBlock + own LM head); Eagle, the draft
    /// decoder layer, its input projection and the shared LM head.
    double mDrafterParamsPerGpu{0.0};
    /// Bytes those parameters read per pass.
    double mDrafterBytesPerGpu{0.0};
    /// Sequential drafter passes per step: 1 for Medusa (the heads run side by side), the tree depth for Eagle.
    double mDrafterPasses{0.0};
    double mTp{1.0};
    double mLayers{0.0};
    double mHidden{0.0};
    double mActivationBytes{2.0};
    double mIntermediatePerGpu{0.0};
    double mVocabPerGpu{0.0};
    double mLinearParamsPerGpu{0.0};
    double mLmHeadParamsPerGpu{0.0};
    double mAttentionFlopsPerPair{0.0};
    double mLinearFlopsPerSecond{0.0};
    double mHalfFlopsPerSecond{0.0};
    double mResidentWeightBytes{0.0};
    double mStreamedWeightBytes{0.0};
    double mKvBytesPerToken{0.0};
};

} // namespace tensorrt_llm::executor::sim
