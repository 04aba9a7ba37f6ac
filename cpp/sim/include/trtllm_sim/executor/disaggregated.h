// Simulator-private part of the simulated `tensorrt_llm/executor/executor.h`: disaggregated serving's
// ContextPhaseParams (what a context-only request hands to a generation-only one) and CacheTransceiverConfig.
// TensorRT-LLM declares these in executor.h itself; the simulator keeps them here only to keep its files small.
// Include `tensorrt_llm/executor/executor.h`, never this file. Same names and signatures as the real 1.1/1.2
// classes, nothing they lack (the real ones have the same members; the state behind `void*` is the simulator's
// own, see cpp/sim/src/cache_transceiver.h).
#pragma once

#include "tensorrt_llm/executor/types.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace tensorrt_llm::executor
{

class ContextPhaseParams
{
public:
    using RequestIdType = std::uint64_t;

    ContextPhaseParams(VecTokens firstGenTokens, RequestIdType reqId, std::optional<VecTokens> draftTokens);
    ContextPhaseParams(
        VecTokens firstGenTokens, RequestIdType reqId, void* state, std::optional<VecTokens> draftTokens);
    ContextPhaseParams(VecTokens firstGenTokens, RequestIdType reqId, std::vector<char> const& serializedState,
        std::optional<VecTokens> draftTokens);

    ContextPhaseParams(ContextPhaseParams const&);
    ContextPhaseParams(ContextPhaseParams&&) noexcept;
    ContextPhaseParams& operator=(ContextPhaseParams const&);
    ContextPhaseParams& operator=(ContextPhaseParams&&) noexcept;
    ~ContextPhaseParams();

    [[nodiscard]] bool operator==(ContextPhaseParams const&) const noexcept;

    [[nodiscard]] VecTokens const& getFirstGenTokens() const& noexcept;
    [[nodiscard]] std::optional<VecTokens> const& getDraftTokens() const& noexcept;
    [[nodiscard]] VecTokens popFirstGenTokens() && noexcept;
    [[nodiscard]] RequestIdType getReqId() const noexcept;

    [[nodiscard]] void const* getState() const noexcept;
    [[nodiscard]] void* getState() noexcept;
    [[nodiscard]] void* releaseState() noexcept;
    [[nodiscard]] std::vector<char> getSerializedState() const noexcept;

private:
    static void deleter(void const* data);
    using StatePtr = std::unique_ptr<void, decltype(&deleter)>;

    RequestIdType mReqId{0};
    VecTokens mFirstGenTokens;
    /// The simulator's state: its serialized bytes (a std::vector<char>), owned.
    StatePtr mState{nullptr, deleter};
    std::optional<VecTokens> mDraftTokens;
};

class CacheTransceiverConfig
{
public:
    enum class BackendType : std::uint8_t
    {
        DEFAULT = 0,
        MPI = 1,
        UCX = 2,
        NIXL = 3
    };

    explicit CacheTransceiverConfig(std::optional<BackendType> backendType = std::nullopt,
        std::optional<std::size_t> maxNumTokens = std::nullopt, std::optional<int> kvTransferTimeoutMs = std::nullopt);

    bool operator==(CacheTransceiverConfig const& other) const;
    void setBackendType(std::optional<BackendType> backendType);
    void setMaxTokensInBuffer(std::optional<std::size_t> maxTokensInBuffer);
    void setKvTransferTimeoutMs(std::optional<int> kvTransferTimeoutMs);

    [[nodiscard]] std::optional<int> getKvTransferTimeoutMs() const;
    [[nodiscard]] std::optional<std::size_t> getMaxTokensInBuffer() const;
    [[nodiscard]] std::optional<BackendType> getBackendType() const;

private:
    std::optional<BackendType> mBackendType;
    std::optional<std::size_t> mMaxTokensInBuffer;
    std::optional<int> mKvTransferTimeoutMs;
};

} // namespace tensorrt_llm::executor
