// TimingModel (timing_model.h) over the Rust timing model. The crate's build compiles this file against the
// sim-only bridge (src/sim/bridge.rs, TRTLLM_SIM_RUST_TIMING); the simulator's C++ test programs, which link no
// Rust, get a stand-in with a fixed iteration time (20 ms) and an unbounded GPU, so that they test the executor's
// behaviour and never a second copy of the model.
#include "timing_model.h"

#include <stdexcept>
#include <string>

#ifdef TRTLLM_SIM_RUST_TIMING
#include "rust/cxx.h"
#include "trtllm/src/sim/bridge.rs.h"
#endif

namespace tensorrt_llm::executor::sim
{

#ifdef TRTLLM_SIM_RUST_TIMING

struct TimingModel::Impl
{
    rust::Box<trtllm::sim::timing::SimTiming> model;
    /// Reused for every iteration: the per-iteration call allocates nothing.
    mutable trtllm::sim::timing::SimBatchWork work{};
};

TimingModel::TimingModel(std::filesystem::path const& engineDir)
{
    try
    {
        mImpl = std::make_unique<Impl>(Impl{trtllm::sim::timing::load_timing(engineDir.string()), {}});
    }
    catch (rust::Error const& e)
    {
        throw std::runtime_error(e.what());
    }
}

IterationTime TimingModel::iteration(BatchWork const& work) const
{
    auto& w = mImpl->work;
    w.tokens = work.tokens;
    w.context_tokens = work.contextTokens;
    w.sampled_rows = work.sampledRows;
    w.context_pairs = work.contextPairs;
    w.attention_pairs = work.attentionPairs;
    w.kv_tokens_read = work.kvTokensRead;
    w.kv_tokens_written = work.kvTokensWritten;
    w.lora_flops = work.loraFlops;
    w.lora_weight_bytes = work.loraWeightBytes;
    w.lora_copy_bytes = work.loraCopyBytes;
    w.drafter_requests = work.drafterRequests;
    auto const time = trtllm::sim::timing::iteration_time(*mImpl->model, w);
    return IterationTime{time.drafter_ms, time.total_ms};
}

double TimingModel::gpuMemoryBytes() const
{
    return trtllm::sim::timing::gpu_memory_bytes(*mImpl->model);
}

double TimingModel::weightBytesPerGpu() const
{
    return trtllm::sim::timing::weight_bytes_per_gpu(*mImpl->model);
}

double TimingModel::kvBytesPerTokenPerGpu() const
{
    return trtllm::sim::timing::kv_bytes_per_token_per_gpu(*mImpl->model);
}

double TimingModel::runtimeReserveBytes(SizeType32 maxNumTokens, SizeType32 maxBatchSize, SizeType32 maxBeamWidth) const
{
    return trtllm::sim::timing::runtime_reserve_bytes(*mImpl->model, maxNumTokens, maxBatchSize, maxBeamWidth);
}

std::int64_t TimingModel::kvCapacityTokens(double freeFraction, double reserveBytes) const
{
    try
    {
        return trtllm::sim::timing::kv_capacity_tokens(*mImpl->model, freeFraction, reserveBytes);
    }
    catch (rust::Error const& e)
    {
        throw std::runtime_error(e.what());
    }
}

#else

/// The C++ test programs' stand-in: every forward pass takes 20 ms (a 7B decode step on a workstation GPU), weights take nothing, the GPU holds 2^20 KV
/// tokens of 1 KiB.
struct TimingModel::Impl
{
};

namespace
{
constexpr double kStandInIterationMs = 20.0;
constexpr double kStandInKvBytesPerToken = 1024.0;
constexpr double kStandInMemoryBytes = 1024.0 * 1024.0 * kStandInKvBytesPerToken;
} // namespace

TimingModel::TimingModel(std::filesystem::path const& /*engineDir*/)
    : mImpl(std::make_unique<Impl>())
{
}

IterationTime TimingModel::iteration(BatchWork const& work) const
{
    return IterationTime{0.0, work.tokens > 0.0 ? kStandInIterationMs : 0.0};
}

double TimingModel::gpuMemoryBytes() const
{
    return kStandInMemoryBytes;
}

double TimingModel::weightBytesPerGpu() const
{
    return 0.0;
}

double TimingModel::kvBytesPerTokenPerGpu() const
{
    return kStandInKvBytesPerToken;
}

double TimingModel::runtimeReserveBytes(SizeType32, SizeType32, SizeType32) const
{
    return 0.0;
}

std::int64_t TimingModel::kvCapacityTokens(double freeFraction, double reserveBytes) const
{
    return static_cast<std::int64_t>((kStandInMemoryBytes - reserveBytes) * freeFraction / kStandInKvBytesPerToken);
}

#endif

TimingModel::~TimingModel() = default;
TimingModel::TimingModel(TimingModel&&) noexcept = default;
TimingModel& TimingModel::operator=(TimingModel&&) noexcept = default;

} // namespace tensorrt_llm::executor::sim
