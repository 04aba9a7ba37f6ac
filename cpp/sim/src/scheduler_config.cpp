// The simulated SchedulerConfig: the capacity scheduler policy (see scheduler.cpp for how it is applied).
#include "tensorrt_llm/executor/executor.h"

namespace tensorrt_llm::executor
{

SchedulerConfig::SchedulerConfig(
    CapacitySchedulerPolicy capacitySchedulerPolicy, std::optional<ContextChunkingPolicy> contextChunkingPolicy)
    : mCapacitySchedulerPolicy(capacitySchedulerPolicy)
    , mContextChunkingPolicy(contextChunkingPolicy)
{
}

CapacitySchedulerPolicy SchedulerConfig::getCapacitySchedulerPolicy() const
{
    return mCapacitySchedulerPolicy;
}

std::optional<ContextChunkingPolicy> SchedulerConfig::getContextChunkingPolicy() const
{
    return mContextChunkingPolicy;
}

} // namespace tensorrt_llm::executor
