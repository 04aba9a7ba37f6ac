// Scheduled arrivals on the virtual clock: the bookkeeping that lets a client (the bench runner) and the
// simulated executor share simulated time. The client stamps each request with its arrival time; the executor
// admits it at the first iteration starting at or after that time, and never starts an iteration before every
// arrival up to its start is known. Arrivals the client cannot stamp yet are announced as leases:
//  - a hold: "I may still send requests arriving at or after `bound`" (e.g. while enqueueing the first batch);
//  - a follow-up: "when request R ends, I may send its follow-up `delay` after R's end" (a closed-loop user).
// An iteration may start at time s only while s < every lease's bound; a running request's follow-up has no
// bound yet (its end, and so its follow-up, lies beyond the iteration in flight).
// A client that already knows the follow-up may chain it before R ends: the gate keeps it and hands it back when
// R ends, stamped with R's end plus the delay, so the executor admits it without waiting for the client (a
// closed loop then runs without a round trip per request). Guarded by the executor's queue mutex; no locking of
// its own.
#pragma once

#include "sequence.h"

#include "tensorrt_llm/executor/executor.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

namespace tensorrt_llm::executor::sim
{

/// A follow-up enqueued before the request it follows ended.
struct ChainedFollowUp
{
    IdType id{0};
    Request request;
};

/// A chained follow-up released by its parent's end, stamped with its arrival.
struct ReleasedFollowUp
{
    TimePoint arrival;
    ChainedFollowUp followUp;
};

class ArrivalGate
{
public:
    /// True once a client used scheduled arrivals: the loop then follows them instead of the wall clock.
    [[nodiscard]] bool active() const { return mActive; }

    void activate() { mActive = true; }

    /// Holds back iterations starting at or after `bound` until released; returns the key to release it by.
    std::uint64_t hold(TimePoint bound);

    /// Request `request` may have a follow-up arriving `delayMs` after it ends.
    void expectFollowUp(IdType request, double delayMs);

    /// Whether `parent` holds a follow-up lease that its end has already bounded. Throws when it has no lease
    /// (never had one, or its follow-up was taken, chained or released).
    [[nodiscard]] bool hasEnded(IdType parent) const;

    /// Keeps `followUp` until `parent` ends (its lease must be unbounded and unchained; throws otherwise).
    void chain(IdType parent, ChainedFollowUp followUp);

    /// Request `request` ended at `end`: its follow-up lease, if any, now bounds the iterations; a follow-up
    /// chained to it is returned instead, stamped `end` plus the delay, and the lease is consumed.
    std::optional<ReleasedFollowUp> ended(IdType request, TimePoint end);

    /// The arrival of the follow-up to `parent` (its end plus the stated delay); consumes the lease. Throws when
    /// `parent` has no follow-up lease or has not ended.
    TimePoint takeFollowUp(IdType parent);

    /// Removes the chained follow-up with id `id`, if one waits, with its parent's lease (its follow-up has come).
    std::optional<ChainedFollowUp> unchain(IdType id);

    /// Drops a hold or a follow-up lease (by request id). Unknown keys are ignored, and so is a lease whose
    /// follow-up is chained (that follow-up was sent: it arrives when the lease's request ends).
    void release(std::uint64_t key);

    /// The earliest bound among the leases: no iteration may start at or after it.
    [[nodiscard]] std::optional<TimePoint> bound() const;

private:
    struct Lease
    {
        std::optional<TimePoint> bound;
        double delayMs{0.0};
        std::unique_ptr<ChainedFollowUp> chained;
    };

    void setBound(Lease& lease, TimePoint bound);
    void erase(std::unordered_map<std::uint64_t, Lease>::iterator lease);

    /// Holds use keys above every request id.
    static constexpr std::uint64_t kHoldKeyBase = std::uint64_t{1} << 62;

    bool mActive{false};
    std::uint64_t mNextHold{kHoldKeyBase};
    std::unordered_map<std::uint64_t, Lease> mLeases;
    /// Every bound in mLeases, so that the earliest is found without a scan (the loop asks every iteration).
    std::multiset<TimePoint> mBounds;
    /// Chained follow-up id -> the parent it waits for.
    std::unordered_map<IdType, IdType> mChainedParents;
};

} // namespace tensorrt_llm::executor::sim
