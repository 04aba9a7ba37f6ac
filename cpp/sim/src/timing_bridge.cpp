// loadEngine and TimingModel (timing_model.h) over the Rust side. The crate's build compiles this file against
// the sim-only bridge (src/sim/bridge.rs, TRTLLM_SIM_RUST_TIMING): Rust reads and checks the engine directory and
// times every iteration. The simulator's C++ test programs, which link no Rust, get a stand-in: engines the test
// describes directly (describeStandInEngine), a fixed iteration time (20 ms) and an unbounded GPU, so that they
// test the executor's behaviour and never a second copy of the parsing or the model.
#include "timing_model.h"

#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#ifdef TRTLLM_SIM_RUST_TIMING
#include "rust/cxx.h"
#include "trtllm/src/sim/bridge.rs.h"
#endif

namespace tensorrt_llm::executor::sim
{

#ifdef TRTLLM_SIM_RUST_TIMING

namespace bridge = trtllm::sim::timing;

struct TimingModel::Impl
{
    rust::Box<bridge::SimTiming> model;
    /// Reused for every iteration: the per-iteration call allocates nothing.
    mutable bridge::SimBatchWork work{};
};

namespace
{

SpecMode specModeOf(bridge::SimSpecMode mode)
{
    switch (mode)
    {
    case bridge::SimSpecMode::DraftTokensExternal: return SpecMode::kDraftTokensExternal;
    case bridge::SimSpecMode::Medusa: return SpecMode::kMedusa;
    case bridge::SimSpecMode::Lookahead: return SpecMode::kLookahead;
    case bridge::SimSpecMode::ExplicitDraftTokens: return SpecMode::kExplicitDraftTokens;
    case bridge::SimSpecMode::Eagle: return SpecMode::kEagle;
    default: return SpecMode::kNone;
    }
}

// Mapped by name, so neither side depends on the other's enumerator order.
std::optional<FaultMethod> faultMethodOf(bridge::SimFaultMethod method)
{
    switch (method)
    {
    case bridge::SimFaultMethod::Constructor: return FaultMethod::kConstructor;
    case bridge::SimFaultMethod::EnqueueRequest: return FaultMethod::kEnqueueRequest;
    case bridge::SimFaultMethod::AwaitResponses: return FaultMethod::kAwaitResponses;
    case bridge::SimFaultMethod::CancelRequest: return FaultMethod::kCancelRequest;
    case bridge::SimFaultMethod::GetLatestIterationStats: return FaultMethod::kGetLatestIterationStats;
    case bridge::SimFaultMethod::GetLatestRequestStats: return FaultMethod::kGetLatestRequestStats;
    case bridge::SimFaultMethod::Shutdown: return FaultMethod::kShutdown;
    default: return std::nullopt;
    }
}

EngineConfig engineConfigOf(bridge::SimEngineLimits const& l)
{
    EngineConfig e;
    e.vocabSizePadded = l.vocab_size_padded;
    e.hiddenSize = l.hidden_size;
    e.numLayers = l.num_layers;
    e.numAttentionHeads = l.num_heads;
    e.numKvHeads = l.num_kv_heads;
    e.headSize = l.head_size;
    e.intermediateSize = l.intermediate_size;
    e.dtypeBytes = l.dtype_bytes;
    e.maxInputLen = l.max_input_len;
    e.maxSeqLen = l.max_seq_len;
    e.maxBatchSize = l.max_batch_size;
    e.maxBeamWidth = l.max_beam_width;
    e.maxNumTokens = l.max_num_tokens;
    e.gatherContextLogits = l.gather_context_logits;
    e.speculativeDecodingMode = specModeOf(l.speculative_mode);
    e.maxDraftLen = l.max_draft_len;
    e.numMedusaHeads = l.num_medusa_heads;
    e.tokensPerBlock = l.tokens_per_block;
    e.maxAttentionWindow = l.attention_window;
    e.pagedKvCache = l.paged_kv_cache;
    e.usePagedContextFmha = l.paged_context_fmha;
    e.loraEnabled = l.lora_enabled;
    e.maxLoraRank = l.max_lora_rank;
    return e;
}

void addLoraWidths(EngineConfig& e, bridge::SimLoraWidths const& widths)
{
    for (auto const& module : widths.modules)
    {
        e.loraModules.push_back(LoraModuleWidths{module.id, static_cast<double>(module.in_dim), static_cast<double>(module.out_dim)});
    }
    e.loraSlotWidth = widths.slot_width;
}

SimConfig simConfigOf(bridge::SimSettings const& s)
{
    SimConfig c;
    if (s.has_iteration_ms)
    {
        c.iterationMs = s.iteration_ms;
    }
    c.timeScale = s.time_scale;
    c.clock = s.virtual_clock ? ClockMode::kVirtual : ClockMode::kReal;
    if (s.has_kv_cache_max_tokens)
    {
        c.kvCacheMaxTokens = s.kv_cache_max_tokens;
    }
    c.seed = s.seed;
    auto& f = c.faults;
    f.throwIn = faultMethodOf(s.throw_in);
    f.throwAfterCalls = s.throw_after_calls;
    f.throwNonStd = s.throw_non_std;
    if (s.has_fail_prompt_token)
    {
        f.failPromptToken = s.fail_prompt_token;
    }
    if (s.has_fail_all_from_iteration)
    {
        f.failAllFromIteration = s.fail_all_from_iteration;
    }
    if (s.has_stall_iteration)
    {
        f.stallIteration = s.stall_iteration;
    }
    f.stallMs = s.stall_ms;
    c.draftAcceptance.assign(s.draft_acceptance.begin(), s.draft_acceptance.end());
    c.contextTokens = s.context_tokens;
    if (s.has_draft_agreement)
    {
        c.draftAgreement = s.draft_agreement;
    }
    return c;
}

} // namespace

LoadedEngine loadEngine(std::filesystem::path const& engineDir, bool cudaGraphs)
{
    try
    {
        auto model = bridge::load_timing(engineDir.string(), cudaGraphs);
        auto engine = engineConfigOf(bridge::engine_limits(*model));
        addLoraWidths(engine, bridge::lora_widths(*model));
        auto sim = simConfigOf(bridge::sim_settings(*model));
        return LoadedEngine{std::move(engine), std::move(sim),
            TimingModel(std::make_unique<TimingModel::Impl>(TimingModel::Impl{std::move(model), {}}))};
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

std::uint64_t TimingModel::telemetryKey() const
{
    return trtllm::sim::timing::telemetry_key(*mImpl->model);
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

/// The engines the test program described, by path.
std::map<std::string, std::pair<EngineConfig, SimConfig>>& standInEngines(std::mutex*& lock)
{
    static std::mutex mutex;
    static std::map<std::string, std::pair<EngineConfig, SimConfig>> engines;
    lock = &mutex;
    return engines;
}

} // namespace

void describeStandInEngine(std::filesystem::path const& engineDir, EngineConfig engine, SimConfig sim)
{
    std::mutex* mutex = nullptr;
    auto& engines = standInEngines(mutex);
    std::lock_guard<std::mutex> guard(*mutex);
    engines[engineDir.string()] = {std::move(engine), std::move(sim)};
}

LoadedEngine loadEngine(std::filesystem::path const& engineDir, bool /*cudaGraphs*/)
{
    std::mutex* mutex = nullptr;
    auto& engines = standInEngines(mutex);
    std::lock_guard<std::mutex> guard(*mutex);
    auto const found = engines.find(engineDir.string());
    if (found == engines.end())
    {
        throw std::runtime_error("Engine directory " + engineDir.string() + " was not described to the stand-in");
    }
    return LoadedEngine{found->second.first, found->second.second, TimingModel(std::make_unique<TimingModel::Impl>())};
}

IterationTime TimingModel::iteration(BatchWork const& work) const
{
    return IterationTime{0.0, work.tokens > 0.0 ? kStandInIterationMs : 0.0};
}

double TimingModel::gpuMemoryBytes() const
{
    return kStandInMemoryBytes;
}

std::uint64_t TimingModel::telemetryKey() const
{
    return 0;
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

TimingModel::TimingModel(std::unique_ptr<Impl> impl)
    : mImpl(std::move(impl))
{
}

TimingModel::~TimingModel() = default;
TimingModel::TimingModel(TimingModel&&) noexcept = default;
TimingModel& TimingModel::operator=(TimingModel&&) noexcept = default;

} // namespace tensorrt_llm::executor::sim
