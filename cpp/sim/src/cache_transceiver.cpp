// The simulated cache transceiver (see cache_transceiver.h): the serialized state, the process-wide registry of
// held contexts, and both sides' bookkeeping.
#include "cache_transceiver.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace tensorrt_llm::executor::sim
{

namespace
{

constexpr char kRefused[] = "KV cache handoff refused: ";
constexpr char kCorrupt[] = "KV cache handoff is corrupt: ";
constexpr char kFetchError[] = "Encountered an error when fetching new request: ";

std::uint64_t processId()
{
    static std::uint64_t const id = static_cast<std::uint64_t>(::getpid());
    return id;
}

std::int64_t unixMsNow()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// ---- The process-wide registry of context executors and the blocks they hold ----

enum class Notice
{
    kTaken,
    kAbandoned,
    kCancelled,
};

enum class Lookup
{
    kHeld,
    kNotHeld,
    kNoExecutor,
};

class Registry
{
public:
    static Registry& get()
    {
        static Registry registry;
        return registry;
    }

    std::uint64_t add(std::shared_ptr<std::atomic<bool>> mail, std::function<void()> wake)
    {
        std::lock_guard<std::mutex> lock(mMutex);
        std::uint64_t const id = mNext++;
        mSides.emplace(id, Side{{}, {}, std::move(mail), std::move(wake)});
        return id;
    }

    void remove(std::uint64_t instance)
    {
        std::lock_guard<std::mutex> lock(mMutex);
        mSides.erase(instance);
    }

    void hold(std::uint64_t instance, IdType id)
    {
        std::lock_guard<std::mutex> lock(mMutex);
        if (auto found = mSides.find(instance); found != mSides.end())
        {
            found->second.held.insert(id);
        }
    }

    void unhold(std::uint64_t instance, IdType id)
    {
        std::lock_guard<std::mutex> lock(mMutex);
        if (auto found = mSides.find(instance); found != mSides.end())
        {
            found->second.held.erase(id);
        }
    }

    Lookup lookup(std::uint64_t instance, IdType id)
    {
        std::lock_guard<std::mutex> lock(mMutex);
        auto found = mSides.find(instance);
        if (found == mSides.end())
        {
            return Lookup::kNoExecutor;
        }
        return found->second.held.count(id) > 0 ? Lookup::kHeld : Lookup::kNotHeld;
    }

    /// Tells the context side what became of its held `id` (it releases the blocks) and wakes it. The held mark
    /// goes at once, so a second generation request for the same handoff is refused.
    Lookup post(std::uint64_t instance, IdType id, Notice notice)
    {
        std::lock_guard<std::mutex> lock(mMutex);
        auto found = mSides.find(instance);
        if (found == mSides.end())
        {
            return Lookup::kNoExecutor;
        }
        Side& side = found->second;
        if (side.held.erase(id) == 0)
        {
            return Lookup::kNotHeld;
        }
        side.inbox.emplace_back(id, notice);
        side.mail->store(true);
        // Lock order: this registry, then the executor's queue lock (which its loop never holds while calling here).
        side.wake();
        return Lookup::kHeld;
    }

    std::vector<std::pair<IdType, Notice>> drain(std::uint64_t instance)
    {
        std::lock_guard<std::mutex> lock(mMutex);
        std::vector<std::pair<IdType, Notice>> out;
        if (auto found = mSides.find(instance); found != mSides.end())
        {
            found->second.mail->store(false);
            out.swap(found->second.inbox);
        }
        return out;
    }

private:
    struct Side
    {
        std::unordered_set<IdType> held;
        std::vector<std::pair<IdType, Notice>> inbox;
        std::shared_ptr<std::atomic<bool>> mail;
        std::function<void()> wake;
    };

    std::mutex mMutex;
    std::unordered_map<std::uint64_t, Side> mSides;
    std::uint64_t mNext{1};
};

double millisecondsBetween(TimePoint from, TimePoint to)
{
    return std::chrono::duration<double, std::milli>(to - from).count();
}

} // namespace

// ---------------------------------------------------------------------------------------------------------------
// CacheTransceiver

CacheTransceiver::CacheTransceiver(
    TransferModel model, std::optional<CacheTransceiverConfig> config, std::function<void()> wake)
    : mModel(std::move(model))
    , mConfig(std::move(config))
    , mFingerprint(mModel.fingerprint())
    , mMail(std::make_shared<std::atomic<bool>>(false))
    , mLink(mModel.defaultLink())
{
    mInstanceId = Registry::get().add(mMail, std::move(wake));
}

CacheTransceiver::~CacheTransceiver()
{
    Registry::get().remove(mInstanceId);
}

void CacheTransceiver::setLink(KvLink const& link)
{
    std::lock_guard<std::mutex> lock(mLinkMutex);
    mLink = link;
}

KvLink CacheTransceiver::link() const
{
    std::lock_guard<std::mutex> lock(mLinkMutex);
    return mLink;
}

std::optional<std::string> CacheTransceiver::admit(Request const& request, RequestState& state) const
{
    state.requestType = request.getRequestType();
    if (state.requestType == RequestType::REQUEST_TYPE_CONTEXT_AND_GENERATION)
    {
        return std::nullopt;
    }
    if (!mConfig)
    {
        return std::string("Context-only and generation-only requests need a cache transceiver: set a "
                           "CacheTransceiverConfig in the ExecutorConfig.");
    }
    if (state.beamWidth > 1 || state.numSequences > 1)
    {
        return std::string("Disaggregated serving runs one sequence per request (beam width 1, numReturnSequences 1).");
    }
    if (state.requestType != RequestType::REQUEST_TYPE_GENERATION_ONLY)
    {
        return std::nullopt;
    }
    auto const& params = request.getContextPhaseParams();
    if (!params)
    {
        return std::string(kCorrupt) + "a generation-only request carries no ContextPhaseParams.";
    }
    if (params->getFirstGenTokens().empty())
    {
        return std::string(kCorrupt) + "the ContextPhaseParams carry no first generated token.";
    }
    std::string why;
    auto const origin = parseState(params->getSerializedState(), why);
    if (!origin)
    {
        return std::string(kCorrupt) + why + ".";
    }
    if (origin->contextRequestId != params->getReqId())
    {
        return std::string(kCorrupt) + "the state names context request " + std::to_string(origin->contextRequestId)
            + ", the params " + std::to_string(params->getReqId()) + ".";
    }
    if (origin->fingerprint != mFingerprint)
    {
        return std::string(kRefused) + "it comes from an engine (" + origin->fingerprint
            + ") that does not pair with this one (" + mFingerprint + ").";
    }
    if (origin->promptLength != static_cast<SizeType32>(state.prompt.size()))
    {
        return std::string(kRefused) + "it covers a " + std::to_string(origin->promptLength)
            + "-token prompt, the request has " + std::to_string(state.prompt.size()) + ".";
    }
    if (origin->processId == processId())
    {
        switch (Registry::get().lookup(origin->instanceId, origin->contextRequestId))
        {
        case Lookup::kHeld: break;
        case Lookup::kNoExecutor:
            return std::string(kRefused) + "the context executor that made it is gone.";
        case Lookup::kNotHeld:
            return std::string(kRefused) + "context request " + std::to_string(origin->contextRequestId)
                + " holds no KV blocks (unknown, already taken, expired or cancelled).";
        }
    }
    else if (origin->expiresAtUnixMs != 0 && unixMsNow() > origin->expiresAtUnixMs)
    {
        return std::string(kRefused) + "it expired (the context side's transfer timeout passed).";
    }
    return std::nullopt;
}

void CacheTransceiver::attachParams(Sequence const& sequence, Result& result, TimePoint now)
{
    auto const& request = *sequence.request;
    if (request.requestType != RequestType::REQUEST_TYPE_CONTEXT_ONLY || !result.isFinal
        || sequence.generated.at(0).empty())
    {
        return;
    }
    TransferState state;
    state.processId = processId();
    state.instanceId = mInstanceId;
    state.contextRequestId = request.id;
    state.fingerprint = mFingerprint;
    state.promptLength = static_cast<SizeType32>(request.prompt.size());
    // A plain number (-1: no timeout) rather than the optional: GCC's -O1 flow analysis misreads the copy.
    int timeoutMs = -1;
    if (mConfig && mConfig->getKvTransferTimeoutMs())
    {
        timeoutMs = *mConfig->getKvTransferTimeoutMs();
    }
    state.expiresAtUnixMs = timeoutMs >= 0 ? unixMsNow() + timeoutMs : 0;
    auto* bytes = new std::vector<char>(serializeState(state));
    result.contextPhaseParams = ContextPhaseParams(
        VecTokens{sequence.generated.at(0).front()}, request.id, static_cast<void*>(bytes), std::nullopt);
    mHandedOff.insert(request.id);
    if (timeoutMs >= 0)
    {
        mDeadlines[request.id] = now + std::chrono::milliseconds(timeoutMs);
    }
    Registry::get().hold(mInstanceId, request.id);
}

bool CacheTransceiver::keeps(Sequence const& sequence) const
{
    return mHandedOff.count(sequence.request->id) > 0;
}

void CacheTransceiver::hold(Sequence& sequence)
{
    IdType const id = sequence.request->id;
    mHandedOff.erase(id);
    // A holder of the blocks alone: the finished sequence leaves the executor as any other, its blocks stay.
    auto holder = std::make_unique<Sequence>();
    holder->request = sequence.request;
    holder->id = sequence.id;
    holder->state = SequenceState::kFinished;
    holder->contextLength = sequence.contextLength;
    holder->contextPosition = sequence.contextPosition;
    holder->generated = sequence.generated;
    holder->holdsBlocks = sequence.holdsBlocks;
    holder->reservedBlocks = std::exchange(sequence.reservedBlocks, 0);
    holder->blockIds = std::move(sequence.blockIds);
    holder->heldBlocks = std::move(sequence.heldBlocks);
    sequence.blockIds.clear();
    sequence.heldBlocks.clear();
    Held held{std::move(holder), std::nullopt};
    if (auto deadline = mDeadlines.find(id); deadline != mDeadlines.end())
    {
        held.deadline = deadline->second;
        mDeadlines.erase(deadline);
    }
    mHeld[id] = std::move(held);
}

bool CacheTransceiver::cancelHeld(IdType id)
{
    return Registry::get().post(mInstanceId, id, Notice::kCancelled) == Lookup::kHeld;
}

void CacheTransceiver::releaseHeld(IdType id, KvCachePool& pool)
{
    auto found = mHeld.find(id);
    if (found == mHeld.end())
    {
        return;
    }
    pool.release(*found->second.sequence, true);
    mHeld.erase(found);
}

void CacheTransceiver::addIncoming(std::unique_ptr<Sequence> sequence, Request const& request)
{
    // admit() checked the params and their state.
    auto const& params = *request.getContextPhaseParams();
    std::string why;
    Incoming incoming;
    incoming.origin = parseState(params.getSerializedState(), why).value_or(TransferState{});
    incoming.firstTokens = VecTokens{params.getFirstGenTokens().front()};
    incoming.sequence = std::move(sequence);
    mIncoming.push_back(std::move(incoming));
}

bool CacheTransceiver::isIncoming(IdType id) const
{
    return std::any_of(
        mIncoming.begin(), mIncoming.end(), [id](Incoming const& in) { return in.sequence->request->id == id; });
}

bool CacheTransceiver::hasPendingTransfer() const
{
    return std::any_of(mIncoming.begin(), mIncoming.end(), [](Incoming const& in) { return in.started; });
}

std::optional<TimePoint> CacheTransceiver::nextEvent() const
{
    std::optional<TimePoint> next;
    auto const consider = [&next](TimePoint t) { next = next ? std::min(*next, t) : t; };
    for (auto const& [id, held] : mHeld)
    {
        if (held.deadline)
        {
            consider(*held.deadline);
        }
    }
    for (auto const& incoming : mIncoming)
    {
        if (incoming.started)
        {
            consider(incoming.readyAt);
        }
    }
    return next;
}

bool CacheTransceiver::service(TimePoint now, double clockScale, std::unordered_set<IdType> const& cancelled,
    KvCachePool& pool, std::vector<Response>& responses, std::vector<std::unique_ptr<Sequence>>& ready)
{
    bool changed = false;
    // Context side: taken, abandoned or cancelled contexts, then expired ones.
    for (auto const& [id, notice] : Registry::get().drain(mInstanceId))
    {
        changed = changed || mHeld.count(id) > 0;
        releaseHeld(id, pool);
    }
    for (auto it = mHeld.begin(); it != mHeld.end();)
    {
        if (it->second.deadline && now >= *it->second.deadline)
        {
            Registry::get().unhold(mInstanceId, it->first);
            pool.release(*it->second.sequence, true);
            it = mHeld.erase(it);
            changed = true;
        }
        else
        {
            ++it;
        }
    }

    // Generation side.
    auto const refuse = [&](Incoming& incoming, std::string const& why)
    {
        auto const& request = *incoming.sequence->request;
        responses.emplace_back(request.id, std::string(kFetchError) + kRefused + why, request.clientId);
        pool.release(*incoming.sequence, false);
    };
    for (auto it = mIncoming.begin(); it != mIncoming.end();)
    {
        Incoming& incoming = *it;
        Sequence& sequence = *incoming.sequence;
        auto const& request = *sequence.request;
        bool const local = incoming.origin.processId == processId();
        if (cancelled.count(request.id) > 0)
        {
            // Cancelled before it decoded: a final with no tokens; a transfer in flight is abandoned.
            if (incoming.started)
            {
                pool.release(sequence, false);
                if (local)
                {
                    Registry::get().post(incoming.origin.instanceId, incoming.origin.contextRequestId, Notice::kAbandoned);
                }
                changed = true;
            }
            sequence.terminate(FinishReason::kCANCELLED);
            if (auto result = makeResult(sequence))
            {
                responses.emplace_back(request.id, std::move(*result), request.clientId);
            }
            it = mIncoming.erase(it);
            continue;
        }
        if (!incoming.started)
        {
            // The receiver's blocks for the whole request, as the capacity scheduler would reserve them.
            SizeType32 const needed = pool.blocksFor(sequence.contextLength, sequence.maxTotalTokens(), 1);
            if (pool.reservedBlocks() + needed > pool.totalBlocks())
            {
                ++it;
                continue;
            }
            pool.start(sequence, needed);
            sequence.chunkTokens = sequence.contextLength;
            pool.allocateStep(sequence);
            sequence.chunkTokens = 0;
            auto const buffer = mConfig ? mConfig->getMaxTokensInBuffer() : std::nullopt;
            incoming.transfer = mModel.time(sequence.contextLength, buffer, link());
            incoming.readyAt = now
                + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double, std::milli>(incoming.transfer.ms * clockScale));
            incoming.started = true;
            sequence.everScheduled = true;
            sequence.perf.timingMetrics.firstScheduledTime = now;
            sequence.perf.timingMetrics.kvCacheTransferStart = now;
            changed = true;
        }
        if (now < incoming.readyAt)
        {
            ++it;
            continue;
        }
        // The transfer is done: the context side's blocks are taken (or were gone meanwhile).
        if (local)
        {
            if (Registry::get().post(incoming.origin.instanceId, incoming.origin.contextRequestId, Notice::kTaken)
                != Lookup::kHeld)
            {
                refuse(incoming, "the context side released the KV blocks during the transfer (cancelled or expired).");
                it = mIncoming.erase(it);
                changed = true;
                continue;
            }
        }
        else if (incoming.origin.expiresAtUnixMs != 0 && unixMsNow() > incoming.origin.expiresAtUnixMs)
        {
            refuse(incoming, "it expired during the transfer (the context side's transfer timeout passed).");
            it = mIncoming.erase(it);
            changed = true;
            continue;
        }
        auto& perf = sequence.perf.timingMetrics;
        perf.kvCacheTransferEnd = incoming.readyAt;
        perf.kvCacheSize = static_cast<std::size_t>(incoming.transfer.bytesPerRank);
        sequence.request->disServing
            = DisServingRequestStats{millisecondsBetween(perf.kvCacheTransferStart, perf.kvCacheTransferEnd),
                static_cast<std::size_t>(incoming.transfer.bytesPerRank)};
        // It decodes on from the context's first token, which its first result repeats.
        sequence.contextPosition = sequence.contextLength;
        sequence.state = SequenceState::kGeneration;
        sequence.generated.at(0) = incoming.firstTokens;
        sequence.logProbs.at(0).assign(incoming.firstTokens.size(), 0.f);
        sequence.decodingIter = 1;
        if (sequence.numGenerated() >= request.maxNewTokens)
        {
            sequence.finish(FinishReason::kLENGTH);
            if (auto result = makeResult(sequence))
            {
                responses.emplace_back(request.id, std::move(*result), request.clientId);
            }
            pool.release(sequence, true);
        }
        else
        {
            ready.push_back(std::move(incoming.sequence));
        }
        it = mIncoming.erase(it);
        changed = true;
    }
    return changed;
}

} // namespace tensorrt_llm::executor::sim
