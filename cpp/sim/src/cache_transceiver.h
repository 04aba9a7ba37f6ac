// The simulated cache transceiver: disaggregated serving's KV-cache hand-over between a context executor and a
// generation executor, as TensorRT-LLM's CacheTransceiver runs it.
//
// Context side: a context-only request ends after its first token with ContextPhaseParams, and its sequence keeps
// its KV blocks (they count in the pool's usage) until a generation executor has taken them, the request is
// cancelled, or the transfer timeout (CacheTransceiverConfig::kvTransferTimeoutMs) passes.
// Generation side: a generation-only request reserves and allocates its prompt's blocks, then waits for the
// transfer: the prompt's KV bytes per rank over the link, timed by the Rust model (src/sim/transfer.rs) through the
// sim-only bridge; then it decodes on from the first token.
//
// The serialized state (ContextPhaseParams::getSerializedState) carries what the receiver needs: the context
// side's identity (process and executor instance), the context request id, the engine's fingerprint (model, TP,
// PP, KV dtype, tokens per block), the prompt length and when the context side gives up on it (wall clock, so a
// receiver in another process can tell). Within one process a registry lets the generation side tell the context
// side its blocks were taken (or abandoned) and refuse a handoff the context side no longer holds. Across processes
// nothing can reach the other side's memory: the receiver trusts an unexpired state, and the context side frees the
// blocks when the timeout passes.
#pragma once

#include "tensorrt_llm/executor/executor.h"

#include "engine_config.h"
#include "kv_cache.h"
#include "sequence.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tensorrt_llm::executor::sim
{

/// A link's figures per GPU and direction (see trtllm_sim/kv_transfer.h).
struct KvLink
{
    double bandwidthGbS{0.0};
    double latencyUs{0.0};
    double efficiency{1.0};
};

/// What the serialized ContextPhaseParams state says.
struct TransferState
{
    std::uint64_t processId{0};
    std::uint64_t instanceId{0};
    IdType contextRequestId{0};
    std::string fingerprint;
    SizeType32 promptLength{0};
    /// Unix milliseconds after which the context side no longer holds the blocks; 0: never.
    std::int64_t expiresAtUnixMs{0};
};

std::vector<char> serializeState(TransferState const& state);
/// The state in `bytes`, or nullopt with the reason in `why`.
std::optional<TransferState> parseState(std::vector<char> const& bytes, std::string& why);

/// The transfer's time and size, from the Rust model (or the C++ test programs' stand-in).
class TransferModel
{
public:
    struct Impl;

    /// Loads the model of the engine in `engineDir` (its fingerprint, KV bytes per token per rank, and
    /// simulation.json's link); the stand-in describes `engine` instead.
    static TransferModel load(std::filesystem::path const& engineDir, EngineConfig const& engine);

    explicit TransferModel(std::unique_ptr<Impl> impl);
    ~TransferModel();
    TransferModel(TransferModel&&) noexcept;
    TransferModel& operator=(TransferModel&&) noexcept;

    /// Model, TP, PP, KV dtype and tokens per block, as one string: a handoff pairs only with an equal one.
    [[nodiscard]] std::string fingerprint() const;
    /// The link simulation.json chose.
    [[nodiscard]] KvLink defaultLink() const;

    struct Transfer
    {
        double ms{0.0};
        double bytesPerRank{0.0};
    };
    /// Moving `promptTokens` tokens' KV (each rank its slice) over `link`, in rounds of `bufferTokens` when set.
    [[nodiscard]] Transfer time(SizeType32 promptTokens, std::optional<std::size_t> bufferTokens, KvLink const& link) const;

private:
    std::unique_ptr<Impl> mImpl;
};

/// The transceiver of one executor. Every method but setLink and cancelHeld belongs to the loop thread.
class CacheTransceiver
{
public:
    /// `wake` wakes the executor's loop (when another executor takes or abandons blocks this one holds).
    CacheTransceiver(TransferModel model, std::optional<CacheTransceiverConfig> config, std::function<void()> wake);
    ~CacheTransceiver();

    CacheTransceiver(CacheTransceiver const&) = delete;
    CacheTransceiver& operator=(CacheTransceiver const&) = delete;

    /// Any thread: the link transfers into this executor cross from now on.
    void setLink(KvLink const& link);

    /// The request-type checks of admission; fills `state`'s request type. A generation-only request's handoff
    /// must parse, come from an engine with this fingerprint, and still be held (in this process) or unexpired.
    [[nodiscard]] std::optional<std::string> admit(Request const& request, RequestState& state) const;

    // ---- Context side ----
    /// A context-only sequence's final: attaches the params (first token, serialized state) when it generated one.
    void attachParams(Sequence const& sequence, Result& result, TimePoint now);
    /// Whether a finished sequence keeps its blocks for a transfer (its params went out).
    [[nodiscard]] bool keeps(Sequence const& sequence) const;
    /// Takes the blocks of a finished context-only sequence (the sequence leaves as any other) until they are taken,
    /// abandoned, cancelled or expired.
    void hold(Sequence& sequence);
    /// Any thread: a cancel of a held context releases its blocks. True when `id` was held.
    bool cancelHeld(IdType id);

    // ---- Generation side ----
    /// Takes a generation-only sequence admit() accepted (`request` is its request); its transfer starts once its
    /// blocks fit.
    void addIncoming(std::unique_ptr<Sequence> sequence, Request const& request);
    [[nodiscard]] bool isIncoming(IdType id) const;
    /// A transfer is under way: the loop waits for it even with nothing else to run.
    [[nodiscard]] bool hasPendingTransfer() const;

    /// Once per iteration (and on wake-ups): releases held contexts that were taken, abandoned, cancelled or
    /// expired; starts incoming transfers whose blocks fit; ends cancelled incoming requests; moves finished
    /// transfers into `ready` (generation sequences, first token generated) or fails refused ones. Returns whether
    /// the pool changed. A transfer's simulated time counts `clockScale` times on the executor's clock (real clock:
    /// time_scale; virtual: 1).
    bool service(TimePoint now, double clockScale, std::unordered_set<IdType> const& cancelled, KvCachePool& pool,
        std::vector<Response>& responses, std::vector<std::unique_ptr<Sequence>>& ready);
    /// The earliest time service() has something to do (a transfer ends, a held context expires).
    [[nodiscard]] std::optional<TimePoint> nextEvent() const;
    /// Any thread: another executor or a cancel left work for service().
    [[nodiscard]] bool hasMail() const { return mMail->load(); }

private:
    struct Held
    {
        std::unique_ptr<Sequence> sequence;
        std::optional<TimePoint> deadline;
    };
    struct Incoming
    {
        std::unique_ptr<Sequence> sequence;
        TransferState origin;
        VecTokens firstTokens;
        bool started{false};
        TimePoint readyAt;
        TransferModel::Transfer transfer;
    };

    void releaseHeld(IdType id, KvCachePool& pool);
    [[nodiscard]] KvLink link() const;

    TransferModel mModel;
    std::optional<CacheTransceiverConfig> mConfig;
    std::string mFingerprint;
    std::uint64_t mInstanceId;
    std::shared_ptr<std::atomic<bool>> mMail;
    mutable std::mutex mLinkMutex;
    KvLink mLink;

    std::unordered_map<IdType, Held> mHeld;
    /// Contexts whose params went out with their final, until their blocks are held.
    std::unordered_set<IdType> mHandedOff;
    /// Their transfer deadlines, from the final.
    std::unordered_map<IdType, TimePoint> mDeadlines;
    std::vector<Incoming> mIncoming;
};

/// The link control's map from each live Executor to its transceiver (kv_link_control.cpp).
void registerTransceiver(Executor const* executor, CacheTransceiver* transceiver);
void unregisterTransceiver(Executor const* executor);

} // namespace tensorrt_llm::executor::sim
