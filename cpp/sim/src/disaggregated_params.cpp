// The simulated ContextPhaseParams and CacheTransceiverConfig, and the disaggregated-serving members of Request
// and ExecutorConfig. The params' state is the simulator's serialized transfer state (cache_transceiver.h) held as
// bytes, so copying params and serializing them are the same thing.
#include "tensorrt_llm/executor/executor.h"

#include <utility>

namespace tensorrt_llm::executor
{

// ---------------------------------------------------------------------------------------------------------------
// ContextPhaseParams

namespace
{

using StateBytes = std::vector<char>;

void* copyState(void const* state)
{
    return state == nullptr ? nullptr : new StateBytes(*static_cast<StateBytes const*>(state));
}

} // namespace

void ContextPhaseParams::deleter(void const* data)
{
    delete static_cast<StateBytes const*>(data);
}

ContextPhaseParams::ContextPhaseParams(
    VecTokens firstGenTokens, RequestIdType reqId, std::optional<VecTokens> draftTokens)
    : mReqId(reqId)
    , mFirstGenTokens(std::move(firstGenTokens))
    , mDraftTokens(std::move(draftTokens))
{
}

ContextPhaseParams::ContextPhaseParams(
    VecTokens firstGenTokens, RequestIdType reqId, void* state, std::optional<VecTokens> draftTokens)
    : mReqId(reqId)
    , mFirstGenTokens(std::move(firstGenTokens))
    , mState(state, deleter)
    , mDraftTokens(std::move(draftTokens))
{
}

ContextPhaseParams::ContextPhaseParams(VecTokens firstGenTokens, RequestIdType reqId,
    std::vector<char> const& serializedState, std::optional<VecTokens> draftTokens)
    : mReqId(reqId)
    , mFirstGenTokens(std::move(firstGenTokens))
    , mState(new StateBytes(serializedState), deleter)
    , mDraftTokens(std::move(draftTokens))
{
}

ContextPhaseParams::ContextPhaseParams(ContextPhaseParams const& other)
    : mReqId(other.mReqId)
    , mFirstGenTokens(other.mFirstGenTokens)
    , mState(copyState(other.mState.get()), deleter)
    , mDraftTokens(other.mDraftTokens)
{
}

ContextPhaseParams::ContextPhaseParams(ContextPhaseParams&&) noexcept = default;

ContextPhaseParams& ContextPhaseParams::operator=(ContextPhaseParams const& other)
{
    if (this != &other)
    {
        mReqId = other.mReqId;
        mFirstGenTokens = other.mFirstGenTokens;
        mState = StatePtr(copyState(other.mState.get()), deleter);
        mDraftTokens = other.mDraftTokens;
    }
    return *this;
}

ContextPhaseParams& ContextPhaseParams::operator=(ContextPhaseParams&&) noexcept = default;

ContextPhaseParams::~ContextPhaseParams() = default;

bool ContextPhaseParams::operator==(ContextPhaseParams const& other) const noexcept
{
    return mReqId == other.mReqId && mFirstGenTokens == other.mFirstGenTokens && mDraftTokens == other.mDraftTokens
        && getSerializedState() == other.getSerializedState();
}

VecTokens const& ContextPhaseParams::getFirstGenTokens() const& noexcept
{
    return mFirstGenTokens;
}

std::optional<VecTokens> const& ContextPhaseParams::getDraftTokens() const& noexcept
{
    return mDraftTokens;
}

VecTokens ContextPhaseParams::popFirstGenTokens() && noexcept
{
    return std::move(mFirstGenTokens);
}

ContextPhaseParams::RequestIdType ContextPhaseParams::getReqId() const noexcept
{
    return mReqId;
}

void const* ContextPhaseParams::getState() const noexcept
{
    return mState.get();
}

void* ContextPhaseParams::getState() noexcept
{
    return mState.get();
}

void* ContextPhaseParams::releaseState() noexcept
{
    return mState.release();
}

std::vector<char> ContextPhaseParams::getSerializedState() const noexcept
{
    try
    {
        return mState ? *static_cast<StateBytes const*>(mState.get()) : StateBytes{};
    }
    catch (...)
    {
        return {}; // noexcept, as upstream: an allocation failure gives an empty state
    }
}

// ---------------------------------------------------------------------------------------------------------------
// CacheTransceiverConfig

CacheTransceiverConfig::CacheTransceiverConfig(std::optional<BackendType> backendType,
    std::optional<std::size_t> maxNumTokens, std::optional<int> kvTransferTimeoutMs)
    : mBackendType(backendType)
    , mMaxTokensInBuffer(maxNumTokens)
    , mKvTransferTimeoutMs(kvTransferTimeoutMs)
{
}

bool CacheTransceiverConfig::operator==(CacheTransceiverConfig const& other) const
{
    return mBackendType == other.mBackendType && mMaxTokensInBuffer == other.mMaxTokensInBuffer
        && mKvTransferTimeoutMs == other.mKvTransferTimeoutMs;
}

void CacheTransceiverConfig::setBackendType(std::optional<BackendType> backendType)
{
    mBackendType = backendType;
}

void CacheTransceiverConfig::setMaxTokensInBuffer(std::optional<std::size_t> maxTokensInBuffer)
{
    mMaxTokensInBuffer = maxTokensInBuffer;
}

void CacheTransceiverConfig::setKvTransferTimeoutMs(std::optional<int> kvTransferTimeoutMs)
{
    mKvTransferTimeoutMs = kvTransferTimeoutMs;
}

std::optional<int> CacheTransceiverConfig::getKvTransferTimeoutMs() const
{
    return mKvTransferTimeoutMs;
}

std::optional<std::size_t> CacheTransceiverConfig::getMaxTokensInBuffer() const
{
    return mMaxTokensInBuffer;
}

std::optional<CacheTransceiverConfig::BackendType> CacheTransceiverConfig::getBackendType() const
{
    return mBackendType;
}

// ---------------------------------------------------------------------------------------------------------------
// Request and ExecutorConfig: disaggregated serving

std::optional<ContextPhaseParams> const& Request::getContextPhaseParams() const
{
    return mContextPhaseParams;
}

RequestType Request::getRequestType() const
{
    return mRequestType;
}

void Request::setRequestType(RequestType const& requestType)
{
    mRequestType = requestType;
}

void Request::setContextPhaseParams(ContextPhaseParams contextPhaseParams)
{
    mContextPhaseParams = std::move(contextPhaseParams);
}

std::optional<CacheTransceiverConfig> ExecutorConfig::getCacheTransceiverConfig() const
{
    return mCacheTransceiverConfig;
}

void ExecutorConfig::setCacheTransceiverConfig(CacheTransceiverConfig const& cacheTransceiverConfig)
{
    mCacheTransceiverConfig = cacheTransceiverConfig;
}

} // namespace tensorrt_llm::executor
