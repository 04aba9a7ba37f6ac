// TransferModel (cache_transceiver.h) over the Rust side: the crate's build compiles this file against the
// sim-only bridge src/sim/transfer_bridge.rs (TRTLLM_SIM_RUST_TIMING), where the transfer's one formula lives
// (src/sim/transfer.rs). The simulator's C++ test programs, which link no Rust, get a stand-in: the fingerprint
// from the engine they describe and a fixed 1 ms per transfer, so that they test the hand-over and never a second
// copy of the model.
#include "cache_transceiver.h"

#include <string>
#include <utility>

#ifdef TRTLLM_SIM_RUST_TIMING
#include "rust/cxx.h"
#include "trtllm/src/sim/transfer_bridge.rs.h"
#endif

namespace tensorrt_llm::executor::sim
{

#ifdef TRTLLM_SIM_RUST_TIMING

namespace bridge = trtllm::sim::transfer;

struct TransferModel::Impl
{
    rust::Box<bridge::SimTransferModel> model;
};

TransferModel TransferModel::load(std::filesystem::path const& engineDir, EngineConfig const& /*engine*/)
{
    try
    {
        return TransferModel(std::make_unique<Impl>(Impl{bridge::load_transfer_model(engineDir.string())}));
    }
    catch (rust::Error const& e)
    {
        throw std::runtime_error(std::string("KV transfer model: ") + e.what());
    }
}

std::string TransferModel::fingerprint() const
{
    return std::string(bridge::transfer_fingerprint(*mImpl->model));
}

KvLink TransferModel::defaultLink() const
{
    auto const link = bridge::transfer_default_link(*mImpl->model);
    return KvLink{link.bandwidth_gb_s, link.latency_us, link.efficiency};
}

TransferModel::Transfer TransferModel::time(
    SizeType32 promptTokens, std::optional<std::size_t> bufferTokens, KvLink const& link) const
{
    bridge::SimKvLink const crossing{link.bandwidthGbS, link.latencyUs, link.efficiency};
    auto const buffer = bufferTokens ? static_cast<std::int64_t>(*bufferTokens) : std::int64_t{0};
    auto const transfer = bridge::transfer_time(*mImpl->model, promptTokens, buffer, crossing);
    return Transfer{transfer.ms, transfer.bytes_per_rank};
}

#else

struct TransferModel::Impl
{
    std::string fingerprint;
};

TransferModel TransferModel::load(std::filesystem::path const& /*engineDir*/, EngineConfig const& engine)
{
    std::string fingerprint = "stand-in " + std::to_string(engine.numLayers) + "L h" + std::to_string(engine.hiddenSize)
        + " kv" + std::to_string(engine.numKvHeads) + " v" + std::to_string(engine.vocabSizePadded) + " tpb "
        + std::to_string(engine.tokensPerBlock) + " b" + std::to_string(engine.dtypeBytes);
    return TransferModel(std::make_unique<Impl>(Impl{std::move(fingerprint)}));
}

std::string TransferModel::fingerprint() const
{
    return mImpl->fingerprint;
}

KvLink TransferModel::defaultLink() const
{
    return KvLink{450.0, 10.0, 0.8};
}

TransferModel::Transfer TransferModel::time(SizeType32 promptTokens, std::optional<std::size_t>, KvLink const&) const
{
    return Transfer{1.0, static_cast<double>(promptTokens)};
}

#endif

TransferModel::TransferModel(std::unique_ptr<Impl> impl)
    : mImpl(std::move(impl))
{
}

TransferModel::~TransferModel() = default;
TransferModel::TransferModel(TransferModel&&) noexcept = default;
TransferModel& TransferModel::operator=(TransferModel&&) noexcept = default;

} // namespace tensorrt_llm::executor::sim
