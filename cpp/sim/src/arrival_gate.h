// Scheduled arrivals on the virtual clock: the bookkeeping that lets a client (the bench runner) and the
// simulated executor share simulated time. The client stamps each request with its arrival time; the executor
// admits it at the first iteration starting at or after that time, and never starts an iteration before every
// arrival up to its start is known. Arrivals the client cannot stamp yet are announced as leases:
//  - a hold: "I may still send requests arriving at or after `bound`" (e.g. while enqueueing the first batch);
//  - a follow-up: "when request R ends, I may send its follow-up `delay` after R's end" (a closed-loop user).
// An iteration may start at time s only while s < every lease's bound; a running request's follow-up has no
// bound yet (its end, and so its follow-up, lies beyond the iteration in flight). Guarded by the executor's
// queue mutex; no locking of its own.
#pragma once

#include "sequence.h"

#include "tensorrt_llm/executor/types.h"

#include <cstdint>
#include <optional>
#include <unordered_map>

namespace tensorrt_llm::executor::sim
{

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

    /// Request `request` ended at `end`: its follow-up lease, if any, now bounds the iterations.
    void ended(IdType request, TimePoint end);

    /// The arrival of the follow-up to `parent` (its end plus the stated delay); consumes the lease. Throws when
    /// `parent` has no follow-up lease or has not ended.
    TimePoint takeFollowUp(IdType parent);

    /// Drops a hold or a follow-up lease (by request id). Unknown keys are ignored.
    void release(std::uint64_t key);

    /// The earliest bound among the leases: no iteration may start at or after it.
    [[nodiscard]] std::optional<TimePoint> bound() const;

private:
    struct Lease
    {
        std::optional<TimePoint> bound;
        double delayMs{0.0};
    };

    /// Holds use keys above every request id.
    static constexpr std::uint64_t kHoldKeyBase = std::uint64_t{1} << 62;

    bool mActive{false};
    std::uint64_t mNextHold{kHoldKeyBase};
    std::unordered_map<std::uint64_t, Lease> mLeases;
};

} // namespace tensorrt_llm::executor::sim
