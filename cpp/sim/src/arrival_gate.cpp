// Scheduled arrivals on the virtual clock (see arrival_gate.h).
#include "arrival_gate.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

namespace tensorrt_llm::executor::sim
{

std::uint64_t ArrivalGate::hold(TimePoint bound)
{
    std::uint64_t const key = mNextHold++;
    setBound(mLeases[key], bound);
    return key;
}

void ArrivalGate::expectFollowUp(IdType request, double delayMs)
{
    auto const lease = mLeases.find(request);
    if (lease != mLeases.end())
    {
        erase(lease);
    }
    mLeases[request].delayMs = delayMs;
}

bool ArrivalGate::hasEnded(IdType parent) const
{
    auto const lease = mLeases.find(parent);
    if (lease == mLeases.end() || lease->second.chained)
    {
        throw std::invalid_argument(
            "request " + std::to_string(parent) + " has no follow-up lease (enqueue it with a follow-up delay)");
    }
    return lease->second.bound.has_value();
}

void ArrivalGate::chain(IdType parent, ChainedFollowUp followUp)
{
    if (hasEnded(parent))
    {
        throw std::invalid_argument("request " + std::to_string(parent) + " has ended: its follow-up is not chained");
    }
    mChainedParents[followUp.id] = parent;
    mLeases[parent].chained = std::make_unique<ChainedFollowUp>(std::move(followUp));
}

std::optional<ReleasedFollowUp> ArrivalGate::ended(IdType request, TimePoint end)
{
    auto const lease = mLeases.find(request);
    if (lease == mLeases.end() || lease->second.bound)
    {
        return std::nullopt;
    }
    TimePoint const arrival = end
        + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(lease->second.delayMs));
    if (!lease->second.chained)
    {
        setBound(lease->second, arrival);
        return std::nullopt;
    }
    ReleasedFollowUp released{arrival, std::move(*lease->second.chained)};
    mChainedParents.erase(released.followUp.id);
    erase(lease);
    return released;
}

TimePoint ArrivalGate::takeFollowUp(IdType parent)
{
    if (!hasEnded(parent))
    {
        throw std::invalid_argument("request " + std::to_string(parent) + " has not ended: no follow-up yet");
    }
    auto const lease = mLeases.find(parent);
    TimePoint const arrival = *lease->second.bound;
    erase(lease);
    return arrival;
}

std::optional<ChainedFollowUp> ArrivalGate::unchain(IdType id)
{
    auto const parent = mChainedParents.find(id);
    if (parent == mChainedParents.end())
    {
        return std::nullopt;
    }
    auto const lease = mLeases.find(parent->second);
    mChainedParents.erase(parent);
    if (lease == mLeases.end() || !lease->second.chained)
    {
        return std::nullopt;
    }
    ChainedFollowUp followUp = std::move(*lease->second.chained);
    erase(lease);
    return followUp;
}

void ArrivalGate::release(std::uint64_t key)
{
    auto const lease = mLeases.find(key);
    if (lease != mLeases.end() && !lease->second.chained)
    {
        erase(lease);
    }
}

std::optional<TimePoint> ArrivalGate::bound() const
{
    if (mBounds.empty())
    {
        return std::nullopt;
    }
    return *mBounds.begin();
}

void ArrivalGate::setBound(Lease& lease, TimePoint bound)
{
    lease.bound = bound;
    mBounds.insert(bound);
}

void ArrivalGate::erase(std::unordered_map<std::uint64_t, Lease>::iterator lease)
{
    if (lease->second.bound)
    {
        mBounds.erase(mBounds.find(*lease->second.bound));
    }
    mLeases.erase(lease);
}

} // namespace tensorrt_llm::executor::sim
