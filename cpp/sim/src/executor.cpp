// The public Executor (a thin forwarder to Executor::Impl) and the Impl's client-facing methods: construction,
// enqueue, await, cancel, stats and shutdown. The execution loop itself is in execution_loop.cpp.
#include "executor_impl.h"
#include "gpu_telemetry.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace tensorrt_llm::executor
{

char const* version() noexcept
{
    return kSimulatorVersion;
}

char const* sim::faultMethodName(FaultMethod method)
{
    switch (method)
    {
    case FaultMethod::kConstructor: return "constructor";
    case FaultMethod::kEnqueueRequest: return "enqueueRequest";
    case FaultMethod::kAwaitResponses: return "awaitResponses";
    case FaultMethod::kCancelRequest: return "cancelRequest";
    case FaultMethod::kGetLatestIterationStats: return "getLatestIterationStats";
    case FaultMethod::kGetLatestRequestStats: return "getLatestRequestStats";
    case FaultMethod::kShutdown: return "shutdown";
    }
    return "unknown";
}

// ---------------------------------------------------------------------------------------------------------------
// Executor::Impl — construction and teardown

namespace
{

/// Longest wait honoured, so that "wait forever" values cannot overflow the clock arithmetic.
constexpr std::chrono::milliseconds kMaxWait = std::chrono::hours(24 * 365);

std::chrono::milliseconds clampWait(std::chrono::milliseconds timeout)
{
    return std::clamp(timeout, std::chrono::milliseconds(0), kMaxWait);
}

/// Sequences a request turns into: numReturnSequences independent ones with beam width 1, else one.
SizeType32 sequencesOf(Request const& request)
{
    auto const sampling = request.getSamplingConfig();
    return sampling.getBeamWidth() > 1 ? 1 : std::max<SizeType32>(1, sampling.getNumReturnSequences().value_or(1));
}

} // namespace

Executor::Impl::Settings Executor::Impl::deriveSettings(sim::EngineConfig const& engine,
    sim::SimConfig const& simConfig, sim::TimingModel const& timing, ModelType modelType, ExecutorConfig const& config)
{
    if (modelType != ModelType::kDECODER_ONLY)
    {
        throw std::runtime_error("The simulated executor supports only ModelType::kDECODER_ONLY");
    }
    if (config.getBatchingType() == BatchingType::kSTATIC)
    {
        throw std::runtime_error(
            "BatchingType::kSTATIC is no longer supported; use CapacitySchedulerPolicy::kSTATIC_BATCH instead");
    }
    Settings settings;
    settings.maxBeamWidth = config.getMaxBeamWidth();
    if (settings.maxBeamWidth < 1 || settings.maxBeamWidth > engine.maxBeamWidth)
    {
        throw std::runtime_error("ExecutorConfig maxBeamWidth (" + std::to_string(settings.maxBeamWidth)
                                 + ") must be between 1 and the engine's max_beam_width ("
                                 + std::to_string(engine.maxBeamWidth) + ")");
    }
    // As TensorRT-LLM's KV-cache manager: a cyclic (sliding-window) cache cannot serve beam search.
    if (engine.maxAttentionWindow > 0 && engine.maxAttentionWindow < engine.maxSeqLen && settings.maxBeamWidth > 1)
    {
        throw std::runtime_error("Can't support cyclic kv cache with beam search.");
    }
    // Runtime caps never exceed what the engine was built for.
    auto const cap = [](std::optional<SizeType32> requested, SizeType32 engineLimit, char const* name)
    {
        if (requested && *requested < 1)
        {
            throw std::runtime_error(
                std::string("ExecutorConfig ") + name + " (" + std::to_string(*requested) + ") must be positive");
        }
        return std::min(requested.value_or(engineLimit), engineLimit);
    };
    settings.maxBatchSize = cap(config.getMaxBatchSize(), engine.maxBatchSize, "maxBatchSize");
    settings.maxNumTokens = cap(config.getMaxNumTokens(), engine.maxNumTokens, "maxNumTokens");
    settings.maxNumActiveRequests = settings.maxBatchSize;
    settings.maxQueueSize = config.getMaxQueueSize();
    settings.gatherGenerationLogits = config.getGatherGenerationLogits();

    auto const fraction = config.getKvCacheConfig().getFreeGpuMemoryFraction().value_or(0.9f);
    if (!(fraction > 0.f && fraction <= 1.f))
    {
        throw std::runtime_error("KvCacheConfig freeGpuMemoryFraction (" + std::to_string(fraction)
                                 + ") must be in (0, 1]");
    }
    // As in TensorRT-LLM: the memory left after the weights and the runtime's activations, times the fraction,
    // unless simulation.json fixes the capacity. Throws when the weights do not fit.
    double const reserve = timing.runtimeReserveBytes(engine.maxNumTokens, engine.maxBatchSize, engine.maxBeamWidth);
    std::int64_t const fromMemory = std::min<std::int64_t>(timing.kvCapacityTokens(fraction, reserve),
        std::int64_t{std::numeric_limits<SizeType32>::max()} * engine.tokensPerBlock);
    std::int64_t capacity = simConfig.kvCacheMaxTokens.value_or(fromMemory);
    if (auto const maxTokens = config.getKvCacheConfig().getMaxTokens())
    {
        capacity = std::min<std::int64_t>(capacity, *maxTokens);
    }
    std::int64_t const blocks = capacity / engine.tokensPerBlock;
    if (blocks < 1 || blocks > std::numeric_limits<SizeType32>::max())
    {
        throw std::runtime_error("KV-cache capacity of " + std::to_string(capacity)
                                 + " tokens does not make a usable "
                                   "number of blocks of "
                                 + std::to_string(engine.tokensPerBlock) + " tokens");
    }
    settings.kvCacheTokens = blocks * engine.tokensPerBlock;

    auto const scheduler = config.getSchedulerConfig();
    settings.scheduler.policy = scheduler.getCapacitySchedulerPolicy();
    settings.scheduler.chunkingPolicy
        = scheduler.getContextChunkingPolicy().value_or(ContextChunkingPolicy::kFIRST_COME_FIRST_SERVED);
    // As in TensorRT-LLM, chunked context silently turns off without a paged KV cache and paged context FMHA.
    settings.scheduler.chunkedContext
        = config.getEnableChunkedContext() && engine.pagedKvCache && engine.usePagedContextFmha;
    settings.scheduler.maxBatchSize = settings.maxBatchSize;
    settings.scheduler.maxNumTokens = settings.maxNumTokens;
    settings.memory = sim::estimateMemory(timing, settings.kvCacheTokens, reserve);
    return settings;
}

Executor::Impl::Impl(std::filesystem::path const& modelPath, ModelType modelType, ExecutorConfig const& executorConfig)
    : Impl(sim::loadEngine(modelPath, executorConfig.getExtendedRuntimePerfKnobConfig().getCudaGraphMode()), modelPath,
        modelType, executorConfig)
{
}

Executor::Impl::Impl(sim::LoadedEngine loaded, std::filesystem::path const& modelPath, ModelType modelType,
    ExecutorConfig const& executorConfig)
    : mEngine(std::move(loaded.engine))
    , mSim(std::move(loaded.sim))
    , mTiming(std::move(loaded.timing))
    , mSettings(deriveSettings(mEngine, mSim, mTiming, modelType, executorConfig))
    , mIterationStats(static_cast<std::size_t>(std::max<SizeType32>(0, executorConfig.getIterStatsMaxIterations())))
    , mRequestStats(static_cast<std::size_t>(std::max<SizeType32>(0, executorConfig.getRequestStatsMaxIterations())))
    , mClock(mSim.clock, mSim.timeScale)
    , mKvEvents(std::make_shared<batch_manager::kv_cache_manager::BaseKVCacheManager>(
          executorConfig.getKvCacheConfig().getEventBufferMaxSize(), mEngine.maxSeqLen))
    , mPool(static_cast<SizeType32>(mSettings.kvCacheTokens / mEngine.tokensPerBlock), mEngine.tokensPerBlock,
          mEngine.maxAttentionWindow, sim::KvReuseConfig::from(executorConfig.getKvCacheConfig()), mKvEvents)
    , mScheduler(mSettings.scheduler, mPool)
    , mTokens(mEngine.vocabSizePadded, mSim.seed)
    , mSpeculator(mEngine, mSim.draftAcceptance, mSim.seed, executorConfig)
    , mLora(mEngine, executorConfig.getPeftCacheConfig(), mTiming.gpuMemoryBytes())
    , mTransceiver(sim::TransferModel::load(modelPath, mEngine), executorConfig.getCacheTransceiverConfig(),
          [this]()
          {
              // Another executor took or abandoned blocks this one holds (its mail flag is set): wake the loop.
              {
                  std::lock_guard<std::mutex> lock(mQueueMutex);
              }
              mQueueCv.notify_one();
          })
{
    if (auto const guided = executorConfig.getGuidedDecodingConfig())
    {
        mGrammar = sim::makeGrammarBackend(*guided);
    }
    // ---- LoRA: a request starts only once its adapter is (pinned) in the device cache ----
    mScheduler.setStartGate(
        [this](sim::Sequence& sequence)
        {
            auto& request = *sequence.request;
            return !request.loraPin || mLora.ensureOnDevice(*request.loraPin, request.loraCopyBytes);
        });
    maybeInjectFault(sim::FaultMethod::kConstructor);
    mTokens.configureDrafting(mSim.contextTokens || mSim.draftAgreement.has_value()
            || mEngine.speculativeDecodingMode == sim::SpecMode::kDraftTokensExternal,
        mSim.draftAgreement);
    // The Created event is readable before any request runs.
    mKvEvents->flush();
    mThread = std::thread([this]() { executionLoop(); });
}

Executor::Impl::~Impl()
{
    stopAndJoin();
}

// ---------------------------------------------------------------------------------------------------------------
// Executor::Impl — guards

void Executor::Impl::throwIfShutdown(char const* message) const
{
    if (mShutdownCalled.load())
    {
        throw std::runtime_error(message);
    }
}

void Executor::Impl::maybeInjectFault(sim::FaultMethod method)
{
    auto const& faults = mSim.faults;
    if (!faults.throwIn || *faults.throwIn != method)
    {
        return;
    }
    std::uint64_t const call = mFaultCalls.at(static_cast<std::size_t>(method)).fetch_add(1) + 1;
    if (call <= faults.throwAfterCalls)
    {
        return;
    }
    if (faults.throwNonStd)
    {
        throw static_cast<int>(call);
    }
    throw std::runtime_error(std::string("Simulated fault in ") + sim::faultMethodName(method) + " (call "
                             + std::to_string(call) + ", simulation.json faults.throw_in)");
}

// ---------------------------------------------------------------------------------------------------------------
// Executor::Impl — client API

std::vector<IdType> Executor::Impl::enqueueRequests(std::vector<Request> const& requests)
{
    throwIfShutdown("Shutdown called, cannot enqueue requests");
    maybeInjectFault(sim::FaultMethod::kEnqueueRequest);
    std::vector<IdType> ids;
    ids.reserve(requests.size());
    {
        std::lock_guard<std::mutex> lock(mQueueMutex);
        if (mStopRequested)
        {
            throw std::runtime_error("Shutdown called, cannot enqueue requests");
        }
        // With scheduled arrivals simulated time follows the client's stamps, not the wall clock.
        if (mLoopIdle && !mScheduledMode.load())
        {
            mClock.catchUpWithWall();
        }
        auto const now = mClock.now();
        SizeType32 incoming = 0;
        for (auto const& request : requests)
        {
            incoming += sequencesOf(request);
        }
        if (mSettings.maxQueueSize && *mSettings.maxQueueSize > 0
            && mQueuedSequences + incoming > *mSettings.maxQueueSize)
        {
            throw std::runtime_error("Maximum queue size of " + std::to_string(*mSettings.maxQueueSize)
                                     + " has been reached, please try again later");
        }
        for (auto const& request : requests)
        {
            QueuedRequest queued{mNextId++, {}, request, now, sequencesOf(request)};
            for (SizeType32 child = 1; child < queued.numSequences; ++child)
            {
                queued.childIds.push_back(mNextId++);
            }
            ids.push_back(queued.id);
            if (!queued.childIds.empty())
            {
                // Recorded before the loop can see the request, so its final always finds it (lock order:
                // mQueueMutex, then mResponsesMutex; nothing takes them the other way round).
                std::lock_guard<std::mutex> responsesLock(mResponsesMutex);
                mChildIdCounts.emplace(queued.id, static_cast<IdType>(queued.childIds.size()));
            }
            // Higher priority first; first come first served among equals.
            auto const position = std::find_if(mQueue.begin(), mQueue.end(),
                [&](QueuedRequest const& other) { return other.request.getPriority() < request.getPriority(); });
            mQueue.insert(position, std::move(queued));
        }
        mQueuedSequences += incoming;
    }
    mQueueCv.notify_one();
    return ids;
}

std::vector<Response> Executor::Impl::awaitResponses(std::optional<std::chrono::milliseconds> const& timeout)
{
    throwIfShutdown("Shutdown called");
    maybeInjectFault(sim::FaultMethod::kAwaitResponses);
    std::unique_lock<std::mutex> lock(mResponsesMutex);
    auto const ready = [this]() { return !mReady.empty() || mShutdownCalled.load(); };
    if (timeout)
    {
        mResponsesCv.wait_for(lock, clampWait(*timeout), ready);
    }
    else
    {
        mResponsesCv.wait(lock, ready);
    }
    std::vector<Response> out;
    out.swap(mReady);
    rememberTerminated(out);
    return out;
}

std::vector<Response> Executor::Impl::awaitResponses(
    IdType requestId, std::optional<std::chrono::milliseconds> const& timeout)
{
    throwIfShutdown("Shutdown called");
    maybeInjectFault(sim::FaultMethod::kAwaitResponses);
    std::unique_lock<std::mutex> lock(mResponsesMutex);
    if (mTerminatedIds.contains(requestId))
    {
        return {Response(
            requestId, "ReqId " + std::to_string(requestId) + " has already been processed and was terminated.")};
    }
    auto const matches = [requestId](Response const& response) { return response.getRequestId() == requestId; };
    auto const ready = [&]() { return std::any_of(mReady.begin(), mReady.end(), matches) || mShutdownCalled.load(); };
    if (timeout)
    {
        mResponsesCv.wait_for(lock, clampWait(*timeout), ready);
    }
    else
    {
        mResponsesCv.wait(lock, ready);
    }
    std::vector<Response> out;
    std::vector<Response> rest;
    for (auto& response : mReady)
    {
        (matches(response) ? out : rest).push_back(std::move(response));
    }
    mReady.swap(rest);
    rememberTerminated(out);
    return out;
}

void Executor::Impl::rememberTerminated(std::vector<Response> const& responses)
{
    for (auto const& response : responses)
    {
        if (!response.hasError() && !response.getResult().isFinal)
        {
            continue;
        }
        IdType const id = response.getRequestId();
        IdType last = id;
        if (auto const children = mChildIdCounts.find(id); children != mChildIdCounts.end())
        {
            // The child ids were reserved right after the parent's and end with it, as upstream's do.
            last += children->second;
            mChildIdCounts.erase(children);
        }
        mTerminatedIds.insert(id, last);
    }
}

SizeType32 Executor::Impl::getNumResponsesReady(std::optional<IdType> const& requestId) const
{
    throwIfShutdown("Shutdown called");
    std::lock_guard<std::mutex> lock(mResponsesMutex);
    if (!requestId)
    {
        return static_cast<SizeType32>(mReady.size());
    }
    return static_cast<SizeType32>(std::count_if(
        mReady.begin(), mReady.end(), [&](Response const& response) { return response.getRequestId() == *requestId; }));
}

void Executor::Impl::cancelRequest(IdType requestId)
{
    throwIfShutdown("Shutdown called");
    maybeInjectFault(sim::FaultMethod::kCancelRequest);
    // A context-only request whose final went out but whose blocks wait for a transfer: cancelling releases them.
    if (mTransceiver.cancelHeld(requestId))
    {
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mResponsesMutex);
        if (mTerminatedIds.contains(requestId))
        {
            return;
        }
    }
    {
        std::lock_guard<std::mutex> lock(mQueueMutex);
        mCancelled.insert(requestId);
    }
    mQueueCv.notify_one();
}

void Executor::Impl::shutdown()
{
    if (!mShutdownCalled.load())
    {
        maybeInjectFault(sim::FaultMethod::kShutdown);
    }
    stopAndJoin();
}

void Executor::Impl::stopAndJoin()
{
    // Concurrent callers all return only once the loop has drained and stopped.
    std::lock_guard<std::mutex> shutdownLock(mShutdownMutex);
    mShutdownCalled.store(true);
    {
        std::lock_guard<std::mutex> lock(mQueueMutex);
        mStopRequested = true;
    }
    mQueueCv.notify_one();
    {
        // Wake awaitResponses callers; taking the lock orders this after their predicate check.
        std::lock_guard<std::mutex> lock(mResponsesMutex);
    }
    mResponsesCv.notify_all();
    if (mThread.joinable())
    {
        mThread.join();
    }
    // After the last iteration's events: readers get what is left and stop waiting.
    mKvEvents->stop();
}

std::deque<IterationStats> Executor::Impl::getLatestIterationStats()
{
    throwIfShutdown("Shutdown called");
    maybeInjectFault(sim::FaultMethod::kGetLatestIterationStats);
    return mIterationStats.take();
}

std::deque<RequestStatsPerIteration> Executor::Impl::getLatestRequestStats()
{
    throwIfShutdown("Shutdown called");
    maybeInjectFault(sim::FaultMethod::kGetLatestRequestStats);
    return mRequestStats.take();
}

bool Executor::Impl::canEnqueueRequests() const
{
    return !mShutdownCalled.load();
}

bool Executor::Impl::isParticipant() const
{
    // A single simulated process runs the whole model.
    return true;
}

std::optional<std::shared_ptr<KVCacheEventManager>> Executor::Impl::getKVCacheEventManager() const
{
    // As in TensorRT-LLM there is a manager whenever there is a KV cache, also when events are off (it then returns
    // nothing) and after shutdown.
    return std::make_shared<KVCacheEventManager>(mKvEvents);
}

// ---------------------------------------------------------------------------------------------------------------
// Executor — forwards to Impl

namespace
{

template <typename ImplPtr>
auto& implOf(ImplPtr const& impl)
{
    if (!impl)
    {
        throw std::runtime_error("Executor has been moved from");
    }
    return *impl;
}

} // namespace

Executor::Executor(std::filesystem::path const& modelPath, ModelType modelType, ExecutorConfig const& executorConfig)
    : mImpl(std::make_unique<Impl>(modelPath, modelType, executorConfig))
{
    sim::registerLoraCounters(this, implOf(mImpl).loraCounters());
    sim::registerGpuTelemetry(this, implOf(mImpl).gpuTelemetryKey());
    sim::control::registerExecutor(this, mImpl.get());
    sim::registerTransceiver(this, &implOf(mImpl).transceiver());
}

Executor::~Executor()
{
    sim::unregisterLoraCounters(this);
    sim::unregisterGpuTelemetry(this);
    sim::control::unregisterExecutor(this);
    sim::unregisterTransceiver(this);
}

IdType Executor::enqueueRequest(Request const& request)
{
    return implOf(mImpl).enqueueRequests({request}).at(0);
}

std::vector<IdType> Executor::enqueueRequests(std::vector<Request> const& requests)
{
    return implOf(mImpl).enqueueRequests(requests);
}

std::vector<Response> Executor::awaitResponses(std::optional<std::chrono::milliseconds> const& timeout)
{
    return implOf(mImpl).awaitResponses(timeout);
}

std::vector<Response> Executor::awaitResponses(
    IdType const& requestId, std::optional<std::chrono::milliseconds> const& timeout)
{
    return implOf(mImpl).awaitResponses(requestId, timeout);
}

SizeType32 Executor::getNumResponsesReady(std::optional<IdType> const& requestId) const
{
    return implOf(mImpl).getNumResponsesReady(requestId);
}

void Executor::cancelRequest(IdType requestId)
{
    implOf(mImpl).cancelRequest(requestId);
}

void Executor::shutdown()
{
    implOf(mImpl).shutdown();
}

std::deque<IterationStats> Executor::getLatestIterationStats()
{
    return implOf(mImpl).getLatestIterationStats();
}

std::deque<RequestStatsPerIteration> Executor::getLatestRequestStats()
{
    return implOf(mImpl).getLatestRequestStats();
}

bool Executor::canEnqueueRequests() const
{
    return mImpl && mImpl->canEnqueueRequests();
}

bool Executor::isParticipant() const
{
    return mImpl && mImpl->isParticipant();
}

std::optional<std::shared_ptr<KVCacheEventManager>> Executor::getKVCacheEventManager() const
{
    if (!mImpl)
    {
        return std::nullopt;
    }
    return mImpl->getKVCacheEventManager();
}

} // namespace tensorrt_llm::executor
