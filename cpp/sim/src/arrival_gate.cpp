// Scheduled arrivals on the virtual clock (see arrival_gate.h).
#include "arrival_gate.h"

#include <chrono>
#include <stdexcept>
#include <string>

namespace tensorrt_llm::executor::sim
{

std::uint64_t ArrivalGate::hold(TimePoint bound)
{
    std::uint64_t const key = mNextHold++;
    mLeases[key] = Lease{bound, 0.0};
    return key;
}

void ArrivalGate::expectFollowUp(IdType request, double delayMs)
{
    mLeases[request] = Lease{std::nullopt, delayMs};
}

void ArrivalGate::ended(IdType request, TimePoint end)
{
    auto const lease = mLeases.find(request);
    if (lease != mLeases.end() && !lease->second.bound)
    {
        lease->second.bound = end
            + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(lease->second.delayMs));
    }
}

TimePoint ArrivalGate::takeFollowUp(IdType parent)
{
    auto const lease = mLeases.find(parent);
    if (lease == mLeases.end())
    {
        throw std::invalid_argument(
            "request " + std::to_string(parent) + " has no follow-up lease (enqueue it with a follow-up delay)");
    }
    if (!lease->second.bound)
    {
        throw std::invalid_argument("request " + std::to_string(parent) + " has not ended: no follow-up yet");
    }
    TimePoint const arrival = *lease->second.bound;
    mLeases.erase(lease);
    return arrival;
}

void ArrivalGate::release(std::uint64_t key)
{
    mLeases.erase(key);
}

std::optional<TimePoint> ArrivalGate::bound() const
{
    std::optional<TimePoint> earliest;
    for (auto const& [key, lease] : mLeases)
    {
        if (lease.bound && (!earliest || *lease.bound < *earliest))
        {
            earliest = lease.bound;
        }
    }
    return earliest;
}

} // namespace tensorrt_llm::executor::sim
