// The engine directory and the simulated GPU's timing and memory, asked of the Rust side through the sim-only
// bridge src/sim/bridge.rs: loadEngine receives config.json's limits and simulation.json's settings, read and
// checked in Rust, as plain data; the C++ simulator then describes each planned iteration's batch (BatchWork) and
// receives its time from the Rust model (src/sim/perf_model.rs), with the engine's memory figures (weights, KV
// bytes per token, runtime reserve, KV capacity). docs/simulator.md derives every term.
#pragma once

#include "tensorrt_llm/executor/types.h"

#include "engine_config.h"
#include "sim_config.h"

#include <cstdint>
#include <filesystem>
#include <memory>

namespace tensorrt_llm::executor::sim
{

struct BatchPlan;

/// The work of one iteration: what the scheduler planned, reduced to the sums the timing model prices.
struct BatchWork
{
    /// Rows through the linear layers: context tokens processed plus one per beam (and draft) of each generation.
    double tokens{0.0};
    /// Of those, context (prefill) rows.
    double contextTokens{0.0};
    /// Rows through the output head (a token is sampled): one per generation beam, one per finished prompt.
    double sampledRows{0.0};
    /// Query-key pairs context attention computes.
    double contextPairs{0.0};
    /// Query-key pairs decode attention computes.
    double attentionPairs{0.0};
    /// Tokens of cached K/V that decode attention reads.
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

/// The work of a planned batch, read from its scheduled sequences (chunk sizes, positions, beams); each token
/// attends to at most `attentionWindow` cached tokens (0: all).
BatchWork describeBatch(BatchPlan const& plan, SizeType32 attentionWindow);

/// One iteration's simulated time and the drafter's share of it, in milliseconds.
struct IterationTime
{
    /// Speculative decoding: the drafter's own work after the target's pass (Medusa heads, Eagle draft passes).
    double drafterMs{0.0};
    /// The whole iteration.
    double totalMs{0.0};
};

/// The engine's timing and memory model, held by the Rust side (made by loadEngine).
class TimingModel
{
public:
    /// The Rust model's handle (opaque here).
    struct Impl;

    explicit TimingModel(std::unique_ptr<Impl> impl);
    ~TimingModel();
    TimingModel(TimingModel&&) noexcept;
    TimingModel& operator=(TimingModel&&) noexcept;

    /// The simulated duration of an iteration doing `work`.
    [[nodiscard]] IterationTime iteration(BatchWork const& work) const;

    /// Device memory of one GPU, bytes.
    [[nodiscard]] double gpuMemoryBytes() const;
    /// Weight bytes resident on each GPU.
    [[nodiscard]] double weightBytesPerGpu() const;
    /// KV-cache bytes one token occupies on each GPU.
    [[nodiscard]] double kvBytesPerTokenPerGpu() const;
    /// Memory each GPU keeps for activations, logits and the CUDA runtime, for these engine limits.
    [[nodiscard]] double runtimeReserveBytes(
        SizeType32 maxNumTokens, SizeType32 maxBatchSize, SizeType32 maxBeamWidth) const;
    /// KV-cache tokens that fit: (GPU memory - weights - reserve) * freeFraction / KV bytes per token. Throws
    /// std::runtime_error when the weights and the reserve alone do not fit.
    [[nodiscard]] std::int64_t kvCapacityTokens(double freeFraction, double reserveBytes) const;
    /// The key under which the Rust side keeps this engine's GPU telemetry (gpu_telemetry.h); 0 for none.
    [[nodiscard]] std::uint64_t telemetryKey() const;

private:
    std::unique_ptr<Impl> mImpl;
};

/// An engine directory as the simulated executor runs it.
struct LoadedEngine
{
    EngineConfig engine;
    SimConfig sim;
    TimingModel timing;
};

/// Reads and checks `<engineDir>`'s config.json and simulation.json and builds the engine's timing model. Throws
/// std::runtime_error, naming the file and the member, when the directory or config.json is missing, a document
/// is malformed or out of range, the engine cannot run on the GPU (FP8 without FP8 tensor cores), uses a
/// quantization the model does not know, or names an unknown GPU or figure. `cudaGraphs` (the executor's CUDA
/// graph mode) times kernel launches as graph replays, as simulation.json's `cuda_graphs` does.
LoadedEngine loadEngine(std::filesystem::path const& engineDir, bool cudaGraphs = false);

#ifndef TRTLLM_SIM_RUST_TIMING
/// The C++ test programs' stand-in (no Rust linked): loadEngine(engineDir) returns this description, with a
/// stand-in timing model, for a directory that does not need to exist. A later call for the same path replaces it.
void describeStandInEngine(std::filesystem::path const& engineDir, EngineConfig engine, SimConfig sim);
#endif

} // namespace tensorrt_llm::executor::sim
